import CachePolicies
import Synchronization

/// A thread-safe cache in the spirit of NSCache, that evicts by a real policy (SIEVE by
/// default, or LRU, S3-FIFO, W-TinyLFU), knows when the kernel took a purgeable entry's
/// memory, and gives memory back on memory warnings and when the app goes to the background.
///
/// - Limits: `countLimit` and `totalCostLimit` (0 means no limit, as in NSCache). Costs are
///   whatever the caller says; for `PurgeableBuffer` values `setContent` uses the bytes the
///   buffer really occupies.
/// - Values that are `DiscardableContent` (such as `PurgeableBuffer`): an entry whose content
///   was discarded is removed (`evictsObjectsWithDiscardedContent`, on by default) and counted as
///   a discard, separately from evictions by the policy or the limits.
/// - The eviction handler is called for every entry that leaves the cache, with the reason,
///   never with the cache's lock held: it may call back into the cache.
/// - Keys only need to be `Hashable`: keys whose hashes collide are told apart by `==`.
public final class PurgeableCache<Key: Hashable & Sendable, Value: Sendable>: Sendable {
    public enum EvictionReason: String, Sendable, Hashable, Codable {
        /// The policy chose it to make room for another entry.
        case policy
        /// It was turned away by the policy's admission filter (W-TinyLFU) as it was set.
        case rejected
        /// The count limit was lowered or exceeded.
        case countLimit
        /// The kernel (or `discardContentIfPossible`) took its content.
        case discarded
        /// A memory warning shrank the cache.
        case memoryWarning
        /// The app entered the background with `BackgroundBehavior.flush`.
        case background
        /// Removed by `removeObject(forKey:)` or `removeAllObjects()`.
        case removed
        /// Replaced by `setObject(_:forKey:)` with the same key.
        case replaced
    }

    /// What entering the background does.
    public enum BackgroundBehavior: String, Sendable, Hashable, Codable {
        /// Keep every entry: idle purgeable entries have been reclaimable since their last access
        /// ended, so the kernel can take them while the app is suspended, and they are still
        /// there on resume if it did not.
        case keepPurgeable
        /// Evict every entry that is not being accessed, returning its memory at once.
        case flush
    }

    public struct Statistics: Sendable, Hashable, Codable {
        public var hits = 0
        public var misses = 0
        public var insertions = 0
        /// Evictions by the policy (including admission rejections) and the count limit.
        public var evictions = 0
        /// Entries whose content was discarded, detected by access or by `purgeDiscardedEntries`.
        public var discards = 0
        public var memoryWarningEvictions = 0
        public var backgroundEvictions = 0
        public var removals = 0
        public var count = 0
        public var totalCost = 0
    }

    public let name: String
    /// Where this cache hears about memory warnings and background transitions.
    public let events: MemoryEvents

    // The hot paths (lookups and stores) are @inlinable so that a cache of concrete types is
    // specialized in the module that uses it, instead of running generic code through witness
    // tables; hence the @usableFromInline internals.

    @usableFromInline
    struct Entry {
        @usableFromInline var value: Value
        @usableFromInline var cost: Int

        @inlinable init(value: Value, cost: Int) {
            self.value = value
            self.cost = cost
        }
    }

    @usableFromInline
    struct State {
        @usableFromInline var policy: AnyCachePolicy<Key>
        @usableFromInline var entries: [Key: Entry] = [:]
        @usableFromInline var countLimit: Int
        @usableFromInline var totalCostLimit: Int
        @usableFromInline var evictsDiscarded: Bool
        @usableFromInline var background: BackgroundBehavior
        @usableFromInline var shrinkFraction: Double
        @usableFromInline var statistics = Statistics()
        @usableFromInline var handler: (@Sendable (Key, Value, EvictionReason) -> Void)?
    }

    @usableFromInline typealias Departed = [(Key, Value, EvictionReason)]

    @usableFromInline let state: Mutex<State>
    @usableFromInline let valuesAreDiscardable = Value.self is any DiscardableContent.Type

    /// - Parameters:
    ///   - policy: the eviction policy.
    ///   - countLimit: most entries (0: no limit).
    ///   - totalCostLimit: most total cost (0: no limit).
    ///   - memoryWarningShrinkFraction: a memory warning evicts by policy until the total cost is
    ///     at most this fraction of what it was.
    ///   - events: where memory warnings and background transitions come from (the process-wide
    ///     `MemoryEvents.shared` unless a test or a subsystem wants its own).
    public init(
        name: String = "cache", policy: PolicyKind = .sieve, countLimit: Int = 0, totalCostLimit: Int = 0,
        evictsObjectsWithDiscardedContent: Bool = true, backgroundBehavior: BackgroundBehavior = .keepPurgeable,
        memoryWarningShrinkFraction: Double = 0.5, events: MemoryEvents = .shared
    ) {
        self.name = name
        self.events = events
        state = Mutex(State(
            policy: policy.make(capacity: Self.capacity(for: totalCostLimit)), countLimit: max(0, countLimit),
            totalCostLimit: max(0, totalCostLimit), evictsDiscarded: evictsObjectsWithDiscardedContent,
            background: backgroundBehavior, shrinkFraction: memoryWarningShrinkFraction.isFinite ? min(1, max(0, memoryWarningShrinkFraction)) : 0.5))
        events.register(self)
    }

    deinit {
        events.unregister(ObjectIdentifier(self))
    }

    /// No limit is the policies' largest capacity (2^60 bytes or entries).
    private static func capacity(for limit: Int) -> Int { limit > 0 ? limit : CachePolicies.maximumCapacity }

    // MARK: NSCache's interface

    public var countLimit: Int {
        get { state.withLock { $0.countLimit } }
        set { mutate { s, out in s.countLimit = max(0, newValue); Self.enforceCountLimit(&s, &out) } }
    }

    public var totalCostLimit: Int {
        get { state.withLock { $0.totalCostLimit } }
        set {
            mutate { s, out in
                s.totalCostLimit = max(0, newValue)
                var evicted: [Key] = []
                s.policy.setCapacity(Self.capacity(for: s.totalCostLimit), evicted: &evicted)
                for key in evicted { Self.drop(key, reason: .policy, &s, &out) }
            }
        }
    }

    public var evictsObjectsWithDiscardedContent: Bool {
        get { state.withLock { $0.evictsDiscarded } }
        set { state.withLock { $0.evictsDiscarded = newValue } }
    }

    public var backgroundBehavior: BackgroundBehavior {
        get { state.withLock { $0.background } }
        set { state.withLock { $0.background = newValue } }
    }

    /// Called for every entry that leaves the cache, outside the cache's lock.
    public func setEvictionHandler(_ handler: (@Sendable (Key, Value, EvictionReason) -> Void)?) {
        state.withLock { $0.handler = handler }
    }

    public var statistics: Statistics {
        state.withLock { s in
            var stats = s.statistics
            stats.count = s.entries.count
            stats.totalCost = s.policy.totalCost
            return stats
        }
    }

    /// The value for `key`, or nil. An entry whose content is known to be discarded is removed
    /// and counts as a miss and a discard.
    @inlinable
    public func object(forKey key: Key) -> Value? {
        mutate { s, out in
            guard let entry = s.entries[key] else {
                s.statistics.misses += 1
                return nil
            }
            if valuesAreDiscardable, s.evictsDiscarded, let d = entry.value as? any DiscardableContent, d.isContentDiscarded {
                s.statistics.misses += 1
                Self.remove(key, reason: .discarded, &s, &out)
                return nil
            }
            s.statistics.hits += 1
            s.policy.recordHit(key)
            return entry.value
        }
    }

    /// Stores `value` under `key` with `cost`; entries the policy or the limits choose are
    /// evicted. A value costing more than `totalCostLimit` is not stored (it would evict
    /// everything and still not fit): the handler sees it leave with reason `.rejected`.
    @inlinable
    public func setObject(_ value: Value, forKey key: Key, cost: Int = 0) {
        mutate { s, out in
            if s.entries[key] != nil { Self.remove(key, reason: .replaced, &s, &out) }
            let cost = min(max(0, cost), CachePolicies.maximumCapacity)
            var evicted: [Key] = []
            s.statistics.insertions += 1
            s.entries[key] = Entry(value: value, cost: cost)
            let admitted = s.policy.insert(key, cost: cost, evicted: &evicted)
            for victim in evicted { Self.drop(victim, reason: victim == key ? .rejected : .policy, &s, &out) }
            if !admitted, let entry = s.entries.removeValue(forKey: key) {
                s.statistics.evictions += 1
                out.append((key, entry.value, .rejected))
            }
            Self.enforceCountLimit(&s, &out)
        }
    }

    public func removeObject(forKey key: Key) {
        mutate { s, out in
            if s.entries[key] != nil { Self.remove(key, reason: .removed, &s, &out) }
        }
    }

    public func removeAllObjects() {
        mutate { s, out in
            for key in Array(s.entries.keys) { Self.remove(key, reason: .removed, &s, &out) }
        }
    }

    // MARK: Memory events

    /// Removes every entry whose content the kernel has taken, without touching the others
    /// (for purgeable buffers, mincore on idle ones). Returns how many were removed.
    @discardableResult
    public func purgeDiscardedEntries() -> Int {
        guard valuesAreDiscardable else { return 0 }
        return mutate { s, out in
            var n = 0
            for (key, entry) in s.entries {
                guard let d = entry.value as? any DiscardableContent else { continue }
                let lost = (d as? PurgeableBuffer)?.hasLostPages ?? d.isContentDiscarded
                if lost {
                    Self.remove(key, reason: .discarded, &s, &out)
                    n += 1
                }
            }
            return n
        }
    }

    /// Shrinks the cache: removes discarded entries, then evicts by policy until the total cost
    /// is at most `memoryWarningShrinkFraction` of what it was (and the count likewise).
    public func didReceiveMemoryWarning() {
        purgeDiscardedEntries()
        mutate { s, out in
            // totalCost <= 2^60 and the fraction is in 0...1: these conversions cannot trap.
            let targetCost = Int(Double(s.policy.totalCost) * s.shrinkFraction)
            let targetCount = Int(Double(s.entries.count) * s.shrinkFraction)
            while s.policy.totalCost > targetCost || s.entries.count > targetCount, let key = s.policy.evictOne() {
                Self.drop(key, reason: .memoryWarning, &s, &out)
            }
        }
    }

    /// The app is entering the background: see `BackgroundBehavior`.
    public func didEnterBackground() {
        purgeDiscardedEntries()
        mutate { s, out in
            guard s.background == .flush else { return }
            for (key, entry) in s.entries {
                if let buffer = entry.value as? PurgeableBuffer, buffer.accessCount > 0 { continue }
                s.policy.remove(key)
                Self.drop(key, reason: .background, &s, &out)
            }
        }
    }

    // MARK: Internals

    /// Runs `body` under the lock, then calls the handler for what left the cache, unlocked.
    @inlinable
    func mutate<R>(_ body: (inout State, inout Departed) -> R) -> R {
        var departed: Departed = []
        var handler: (@Sendable (Key, Value, EvictionReason) -> Void)?
        let result = state.withLock { s -> R in
            let r = body(&s, &departed)
            if !departed.isEmpty { handler = s.handler }
            return r
        }
        if let handler {
            for (key, value, reason) in departed { handler(key, value, reason) }
        }
        return result
    }

    /// Removes `key` from the policy and the entries.
    @inlinable
    static func remove(_ key: Key, reason: EvictionReason, _ s: inout State, _ out: inout Departed) {
        s.policy.remove(key)
        drop(key, reason: reason, &s, &out)
    }

    /// Removes an entry the policy no longer holds, counting why.
    @inlinable
    static func drop(_ key: Key, reason: EvictionReason, _ s: inout State, _ out: inout Departed) {
        guard let entry = s.entries.removeValue(forKey: key) else { return }
        switch reason {
        case .policy, .rejected, .countLimit: s.statistics.evictions += 1
        case .discarded: s.statistics.discards += 1
        case .memoryWarning: s.statistics.memoryWarningEvictions += 1
        case .background: s.statistics.backgroundEvictions += 1
        case .removed, .replaced: s.statistics.removals += 1
        }
        out.append((key, entry.value, reason))
    }

    @inlinable
    static func enforceCountLimit(_ s: inout State, _ out: inout Departed) {
        guard s.countLimit > 0 else { return }
        while s.entries.count > s.countLimit, let key = s.policy.evictOne() {
            drop(key, reason: .countLimit, &s, &out)
        }
    }
}

extension PurgeableCache: MemoryEventHandling {
    func handle(_ event: MemoryEvent) {
        switch event {
        case .memoryWarning: didReceiveMemoryWarning()
        case .didEnterBackground: didEnterBackground()
        }
    }
}

extension PurgeableCache where Value == PurgeableBuffer {
    /// The arena this cache's buffers come from: "purgeable cache: NAME", the type its regions
    /// have in VM reports.
    public func arena() throws(PurgeableError) -> PurgeableArena {
        try PurgeableArena.named("purgeable cache: \(name)")
    }

    /// Copies `bytes` into a new purgeable buffer from the cache's arena, ends its access (so it
    /// is purgeable right away) and stores it with its real size as cost.
    @discardableResult
    public func setContent(_ bytes: some Collection<UInt8>, forKey key: Key) throws(PurgeableError) -> PurgeableBuffer {
        let buffer = try PurgeableBuffer(copying: bytes, arena: arena())
        try buffer.endContentAccess()
        setObject(buffer, forKey: key, cost: buffer.allocatedBytes)
        return buffer
    }

    /// Calls `body` with the content for `key`, holding an access while it runs. Returns nil on a
    /// miss, or when the kernel took the content (the entry is then removed and counted as a
    /// discard).
    public func withContent<R>(forKey key: Key, _ body: (UnsafeMutableRawBufferPointer) throws -> R) throws -> R? {
        guard let buffer = object(forKey: key) else { return nil }
        guard buffer.beginContentAccess() else {
            mutate { s, out in
                if s.entries[key]?.value === buffer { Self.remove(key, reason: .discarded, &s, &out) }
            }
            return nil
        }
        defer {
            do { try buffer.endContentAccess() } catch { preconditionFailure("internal: balanced access failed to end") }
        }
        return try buffer.withUnsafeMutableBytes(body)
    }
}

// MARK: - Memory events

/// Something the system tells running code about memory.
public enum MemoryEvent: Sendable, Hashable {
    case memoryWarning
    case didEnterBackground
}

protocol MemoryEventHandling: AnyObject, Sendable {
    func handle(_ event: MemoryEvent)
}

/// Delivers memory warnings and background transitions to the live purgeable caches registered
/// with it: `shared` reaches every cache of the process (the app lifecycle client posts there);
/// a center of one's own reaches only the caches created with it.
public final class MemoryEvents: Sendable {
    public static let shared = MemoryEvents()

    public init() {}

    private struct Weak: @unchecked Sendable {
        weak var handler: (any MemoryEventHandling)?
    }

    private let handlers = Mutex<[ObjectIdentifier: Weak]>([:])

    func register(_ handler: any MemoryEventHandling) {
        handlers.withLock { $0[ObjectIdentifier(handler)] = Weak(handler: handler) }
    }

    func unregister(_ id: ObjectIdentifier) {
        _ = handlers.withLock { $0.removeValue(forKey: id) }
    }

    /// Tells every live cache registered here (called outside any cache lock), then advises every
    /// idle buffer of the process whose advice an arena was deferring, so the kernel can take it.
    public func post(_ event: MemoryEvent) {
        let live = handlers.withLock { table in table.values.compactMap(\.handler) }
        for handler in live { handler.handle(event) }
        PurgeableArena.adviseIdleBuffersEverywhere()
    }
}
