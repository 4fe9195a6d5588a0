import MemPressureCachePolicies
import CoreMetrics
import Glibc
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
///   exactly once, never with any of the cache's locks held: it may call back into the cache.
/// - Keys only need to be `Hashable`: keys whose hashes collide are told apart by `==`.
///
/// ## Concurrency
///
/// Lookups do not serialise on one lock. The entries live in 64 shards chosen by the top bits of
/// the key's hash, each a hash table (`ShardTable`: open addressing, a control byte per bucket,
/// key and entry side by side, filed under the same hash, so a lookup hashes its key once) under
/// a lock of its own (on cache lines of its own) with its own hit and miss counters; a lookup
/// takes only its shard's lock. The policy, which decides evictions, is a value under a separate
/// lock. A hit does not take it. Each entry keeps the slot the policy gave its key (`CacheSlot`),
/// and a hit is told to the policy with it, so the policy need not look the key up again:
/// - LRU and W-TinyLFU, where the order of hits matters: the hit is appended to a read buffer
///   (one of several, chosen by the calling thread, each under its own lock), and a buffer that
///   fills up is replayed into the policy (`recordHit`, in the order the hits happened) if the
///   policy's lock is free at that moment, as Caffeine does.
/// - SIEVE and S3-FIFO, whose state after hits does not depend on their order and stops changing
///   after a few hits on an entry (a visited bit; a frequency capped at 3): a hit that can still
///   change it since the last write waits in its shard, appended under the lock the lookup holds
///   anyway, and a shard holding 64 such hits replays them if the policy's lock is free. A hit
///   that can no longer change it is not sent at all: in a run of lookups, a hit on an entry
///   already seen costs one shard lock.
///
/// Every write (a store, a removal, a change of limits, a memory warning, entering the
/// background) takes the policy's lock, first replays every pending hit, and then takes the
/// shard locks it needs, one at a time (lock order: the policy's, then one shard's or one read
/// buffer's; a lookup holding a shard's lock only ever tries the policy's, which cannot block). Whether values can be discarded (`Value`'s conformance to `DiscardableContent`) is
/// found once, when the cache is made, so a hit does no dynamic cast.
///
/// What is exact and what is not:
/// - Exact: the entries, the limits, the eviction handler's calls (once per entry that leaves),
///   and every counter in `statistics`. Hits and misses are counted per shard and summed when
///   `statistics` is read, so a reading taken while other threads work adds up figures of
///   slightly different instants.
/// - Exact within a thread: the hits one thread makes reach the policy in the order it made
///   them (SIEVE and S3-FIFO: shard by shard, which leaves them as that order would), all before
///   the next eviction decision. Single-threaded use evicts exactly as the policy would with
///   every request applied in order (the tests check this for every policy).
/// - Lossy across threads: a hit is not sent to the policy (the value is still returned and
///   counted) when its thread's buffer is full while another thread holds the policy's lock, or
///   when every buffer is taken at that instant, or (SIEVE, S3-FIFO) when its shard already
///   holds 256 hits and the policy's lock is still busy (a hit that finds its shard full tries
///   to empty it; a dropped hit is not taken for sent, so the entry's next hit is sent).
///   Hits of different threads reach the policy buffer by buffer (shard by shard), not in the
///   order they happened, and a hit that races with a write may be taken for one the policy
///   already knows. All of this changes only which
///   entry the policy evicts next, never the limits, the entries or the counters.
///
/// ## Metrics
///
/// Made with a `metricsName`, the cache publishes its statistics through swift-metrics (hits,
/// misses, evictions by reason, discards, cost, entries: `PurgeableCacheMetrics` names them and
/// says how fresh they are). Lookups never touch a metric: the shards' counts are published in
/// batches, by writes, by every 256th lookup of a shard, by reads of `statistics` and by
/// `publishMetrics()`, at most every 0.1 s but for the last two.
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
    /// The `cache` label its metrics are published under (`PurgeableCacheMetrics`); nil: none.
    public let metricsName: String?
    /// Where this cache hears about memory warnings and background transitions.
    public let events: MemoryEvents

    // The hot paths (lookups and stores) are @inlinable so that a cache of concrete types is
    // specialized in the module that uses it, instead of running generic code through witness
    // tables; hence the @usableFromInline internals.

    @usableFromInline
    struct Entry: Sendable {
        @usableFromInline var value: Value
        /// Which hits the policy has heard of: the write epoch in which this entry's hits were
        /// last sent, times 4, plus how many were sent in it (at most 3; see `hitsThatCount`).
        /// -1 (no epoch) until the first hit.
        @usableFromInline var sent = -1
        /// Where the policy keeps this entry's key (`CacheSlot`), told with each hit so that the
        /// policy need not look the key up again; -1 until the store that made it has asked.
        @usableFromInline var slot: Int32 = -1

        @inlinable init(value: Value) {
            self.value = value
        }
    }

    /// A share of the entries (by the key's hash), and the lookups that ended there.
    @usableFromInline typealias Shard = ShardTable<Key, Entry>

    /// Keys hit since the policy last heard of them, oldest first, each with its slot in the policy.
    @usableFromInline
    struct ReadBuffer {
        @usableFromInline var keys: [(Key, CacheSlot)] = []
        /// Hits dropped while the buffer was full (the policy's lock busy).
        @usableFromInline var dropped = 0

        @inlinable init() {}
    }

    /// What the policy's lock guards: the policy, the limits and settings, and the counters that
    /// writes keep (hits and misses are counted in the shards).
    @usableFromInline
    struct State {
        @usableFromInline var policy: AnyCachePolicy<Key>
        @usableFromInline var count = 0
        @usableFromInline var countLimit: Int
        @usableFromInline var totalCostLimit: Int
        @usableFromInline var background: BackgroundBehavior
        @usableFromInline var shrinkFraction: Double
        @usableFromInline var statistics = Statistics()
        /// `statistics.evictions` by reason, for the metrics.
        @usableFromInline var evictionCounts = EvictionCounts()
        /// What the metrics were last told (only with a `metricsName`).
        var published = PublishedCounts()
        @usableFromInline var handler: (@Sendable (Key, Value, EvictionReason) -> Void)?
        /// Empty arrays (with capacity) that a shard's waiting hits are swapped into, so that the
        /// policy hears of them after the shard's lock is released (`replayShardHits`).
        @usableFromInline var spareKeys: [Key] = []
        @usableFromInline var spareSlots: [Int32] = []
    }

    @usableFromInline typealias Departed = [(Key, Value, EvictionReason)]

    /// The policy's lock: every write holds it.
    @usableFromInline let state: Mutex<State>
    /// The entries, by `shard(of:)` of their key's hash.
    @usableFromInline let shards: PaddedLocks<Shard>
    @usableFromInline let readBuffers: PaddedLocks<ReadBuffer>
    /// Bit i: read buffer i may hold keys (set and cleared with its lock held), so that a write
    /// does not lock the buffers that are empty.
    @usableFromInline let pendingReadBuffers = Atomic<UInt64>(0)
    /// Bit i: shard i may hold hits for the policy (`ShardTable.pendingKeys`; set and cleared
    /// with its lock held), so that a write locks only the shards that do.
    @usableFromInline let pendingShards = Atomic<UInt64>(0)
    @usableFromInline let evictsDiscarded: Atomic<Bool>
    /// Counts the writes. Between two writes the policy only hears of hits, and the state a hit
    /// leaves in a SIEVE or S3-FIFO policy does not depend on their order and stops changing
    /// after a few hits on the same entry: a visited bit (one hit), a frequency capped at 3.
    /// Hits beyond those since the last write are not sent to the policy: in a run of hits
    /// without writes, a hit on an entry already seen costs only its shard's lock.
    @usableFromInline let epoch = Atomic<Int>(0)
    /// How many hits on one entry between two writes can change the policy's state: 1 for SIEVE
    /// (its visited bit), 3 for S3-FIFO (its frequency saturates at 3, in S3FIFOPolicy.recordHit),
    /// Int.max for LRU and W-TinyLFU, where every hit reorders.
    @usableFromInline let hitsThatCount: Int
    /// Whether a value's content was discarded, asked through `Value`'s conformance to
    /// `DiscardableContent`, found once here (nil when `Value` does not conform): a hit asks
    /// without a dynamic cast.
    @usableFromInline let contentIsDiscarded: (@Sendable (Value) -> Bool)? = discardedContentCheck()
    @usableFromInline var valuesAreDiscardable: Bool { contentIsDiscarded != nil }
    /// The metric handles (nil without a `metricsName`: then nothing is published).
    @usableFromInline let metrics: CacheMetrics?

    /// Shards of the entries: 2^shardBits.
    @inlinable static var shardBits: Int { 6 }
    @inlinable static var shardCount: Int { 1 << shardBits }
    /// Hits a read buffer holds before it is replayed into the policy.
    @inlinable static var readBufferCapacity: Int { 64 }
    /// Every this many hits waiting in a shard (SIEVE, S3-FIFO), the lookup that adds one tries
    /// to replay them into the policy.
    @inlinable static var shardReplayBatch: Int { 64 }
    /// The most hits a shard keeps while the policy's lock is busy; beyond, hits are dropped.
    @inlinable static var shardHitsLimit: Int { 256 }

    /// Read buffers: twice the CPUs, rounded up to a power of two, at least 4 and at most 64 (the
    /// bits of `pendingReadBuffers`), so that threads running at once rarely pick the same one.
    private static var readBufferCount: Int {
        let cpus = max(1, min(32, sysconf(Int32(_SC_NPROCESSORS_ONLN))))
        var n = 4
        while n < 2 * cpus { n *= 2 }
        return n
    }

    /// - Parameters:
    ///   - name: names the cache's arena: its regions show as `purgeable cache: NAME` in the VM Tracker.
    ///   - policy: the eviction policy.
    ///   - countLimit: most entries (0: no limit).
    ///   - totalCostLimit: most total cost (0: no limit).
    ///   - evictsObjectsWithDiscardedContent: remove an entry whose purgeable content the kernel
    ///     took (as NSCache's property of that name); otherwise it stays, discarded.
    ///   - backgroundBehavior: what the cache does when the app goes to the background.
    ///   - memoryWarningShrinkFraction: a memory warning evicts by policy until the total cost is
    ///     at most this fraction of what it was.
    ///   - events: where memory warnings and background transitions come from (the process-wide
    ///     `MemoryEvents.shared` unless a test or a subsystem wants its own).
    ///   - metricsName: publish the cache's statistics through swift-metrics under this `cache`
    ///     label (`PurgeableCacheMetrics` says what and how fresh), to the metrics factory current
    ///     now; nil (the default): publish nothing.
    public init(
        name: String = "cache", policy: PolicyKind = .sieve, countLimit: Int = 0, totalCostLimit: Int = 0,
        evictsObjectsWithDiscardedContent: Bool = true, backgroundBehavior: BackgroundBehavior = .keepPurgeable,
        memoryWarningShrinkFraction: Double = 0.5, events: MemoryEvents = .shared, metricsName: String? = nil
    ) {
        self.name = name
        self.events = events
        self.metricsName = metricsName
        metrics = metricsName.map { CacheMetrics(name: $0, factory: MetricsSystem.factory) }
        state = Mutex(State(
            policy: policy.make(capacity: Self.capacity(for: totalCostLimit)), countLimit: max(0, countLimit),
            totalCostLimit: max(0, totalCostLimit),
            background: backgroundBehavior, shrinkFraction: memoryWarningShrinkFraction.isFinite ? min(1, max(0, memoryWarningShrinkFraction)) : 0.5))
        precondition(Self.shardCount <= 64, "internal: pendingShards has a bit for each of at most 64 shards")
        shards = PaddedLocks(count: Self.shardCount) { _ in Shard() }
        readBuffers = PaddedLocks(count: Self.readBufferCount) { _ in ReadBuffer() }
        evictsDiscarded = Atomic(evictsObjectsWithDiscardedContent)
        hitsThatCount = switch policy {
        case .sieve: 1
        case .s3fifo: 3
        case .lru, .tinylfu: Int.max
        }
        events.register(self)
    }

    deinit {
        events.unregister(ObjectIdentifier(self))
        if let metrics {
            state.withLock { publishMetrics(&$0, lookups: true) }
            metrics.close()
        }
    }

    private static func discardedContentCheck() -> (@Sendable (Value) -> Bool)? {
        guard let type = Value.self as? any DiscardableContent.Type else { return nil }
        return discardedContentCheck(type)
    }

    private static func discardedContentCheck<D: DiscardableContent>(_: D.Type) -> (@Sendable (Value) -> Bool)? {
        // D is Value itself (the cast above was of Value.self, not of some value), so this cast
        // of a function, made once, succeeds.
        let check: @Sendable (D) -> Bool = { $0.isContentDiscarded }
        return check as? @Sendable (Value) -> Bool
    }

    /// No limit is the policies' largest capacity (2^60 bytes or entries).
    private static func capacity(for limit: Int) -> Int { limit > 0 ? limit : CachePolicies.maximumCapacity }

    // MARK: NSCache's interface

    public var countLimit: Int {
        get { state.withLock { $0.countLimit } }
        set { mutate { s, out in s.countLimit = max(0, newValue); enforceCountLimit(&s, &out) } }
    }

    public var totalCostLimit: Int {
        get { state.withLock { $0.totalCostLimit } }
        set {
            mutate { s, out in
                s.totalCostLimit = max(0, newValue)
                var evicted: [Key] = []
                s.policy.setCapacity(Self.capacity(for: s.totalCostLimit), evicted: &evicted)
                for key in evicted { drop(key, reason: .policy, &s, &out) }
            }
        }
    }

    public var evictsObjectsWithDiscardedContent: Bool {
        get { evictsDiscarded.load(ordering: .relaxed) }
        set { evictsDiscarded.store(newValue, ordering: .relaxed) }
    }

    public var backgroundBehavior: BackgroundBehavior {
        get { state.withLock { $0.background } }
        set { state.withLock { $0.background = newValue } }
    }

    /// Called for every entry that leaves the cache, outside the cache's locks.
    public func setEvictionHandler(_ handler: (@Sendable (Key, Value, EvictionReason) -> Void)?) {
        state.withLock { $0.handler = handler }
    }

    /// The counters. Hits and misses are summed over the shards as they are read. With a
    /// `metricsName`, reading them publishes them too.
    public var statistics: Statistics {
        if metrics != nil {
            return state.withLock { s in
                publishMetrics(&s, lookups: true)
                var stats = s.statistics
                stats.count = s.count
                stats.totalCost = s.policy.totalCost
                stats.hits = s.published.hits
                stats.misses = s.published.misses
                return stats
            }
        }
        var stats = state.withLock { s in
            var stats = s.statistics
            stats.count = s.count
            stats.totalCost = s.policy.totalCost
            return stats
        }
        for i in 0..<shards.count {
            let (hits, misses) = shards.withLock(i) { ($0.hits, $0.misses) }
            stats.hits += hits
            stats.misses += misses
        }
        return stats
    }

    /// The value for `key`, or nil. An entry whose content is known to be discarded is removed
    /// and counts as a miss and a discard.
    @inlinable
    public func object(forKey key: Key) -> Value? {
        // What the lookup found, in locals the closure writes (no enum to build and copy): the
        // value is copied out of its entry once, the only reference count a hit changes.
        var value: Value? = nil
        var discarded = false
        var record = false
        var replayShard = false
        var slot: Int32 = -1
        let hash = key.hashValue
        let home = Self.shard(of: hash)
        let lookups = shards.withLock(home) { s -> Int in
            guard let index = s.find(key, hash: hash) else {
                s.misses += 1
                return s.hits &+ s.misses
            }
            // The entry in place, not a copy of it.
            // SIEVE, S3-FIFO: whether this hit can still change the policy's state (`wants`), and
            // the mark it leaves on the entry once it is on its way.
            var wants = false
            var mark = 0
            s.withElement(at: index) { entry in
                if let isDiscarded = contentIsDiscarded, evictsDiscarded.load(ordering: .relaxed), isDiscarded(entry.value) {
                    discarded = true
                } else if hitsThatCount == Int.max {
                    record = true
                } else {
                    let now = epoch.load(ordering: .relaxed) &<< 2
                    if entry.sent & ~3 != now {
                        wants = true
                        mark = now | 1
                    } else if entry.sent & 3 < hitsThatCount {
                        wants = true
                        mark = entry.sent + 1
                    }
                }
                value = entry.value
                slot = entry.slot
            }
            if discarded {
                s.misses += 1
            } else {
                s.hits += 1
                if wants {
                    // Order does not matter to this policy: the hit waits in its shard. A full
                    // shard (the policy's lock was busy at each of its replays) is emptied into
                    // the policy here if its lock is free now; if not, the hit is dropped and
                    // the entry not marked, so that its next hit is sent instead.
                    var room = s.pendingKeys.count < Self.shardHitsLimit
                    if !room { room = replayHeldShardHits(&s, home) }
                    if room {
                        s.withElement(at: index) { $0.sent = mark }
                        let pending = s.pendingKeys.count
                        s.pendingKeys.append(key)
                        s.pendingSlots.append(slot)
                        if pending == 0 { pendingShards.bitwiseOr(1 << UInt64(home), ordering: .relaxed) }
                        replayShard = (pending + 1) % Self.shardReplayBatch == 0
                    }
                }
            }
            return s.hits &+ s.misses
        }
        if lookups & (Self.lookupsPerPublishOffer - 1) == 0, metrics != nil { offerToPublishLookups() }
        if discarded {
            if let found = value { removeDiscarded(key, found) }
            return nil
        }
        // The value goes back as it is (no second copy of it held across the calls below).
        if record { recordHit(key, slot: slot) }
        if replayShard { replayShardHits(home) }
        return value
    }

    /// Stores `value` under `key` with `cost`; entries the policy or the limits choose are
    /// evicted. A value costing more than `totalCostLimit` is not stored (it would evict
    /// everything and still not fit): the handler sees it leave with reason `.rejected`.
    @inlinable
    public func setObject(_ value: Value, forKey key: Key, cost: Int = 0) {
        let hash = key.hashValue
        let home = Self.shard(of: hash)
        mutate { s, out in
            // One visit to the key's shard: the new entry takes the old one's place at once
            // (lookups find one or the other), and is taken out again in the rare case that the
            // policy turns it away.
            let entry = Entry(value: value)
            if let old = shards.withLock(home, { $0.updateValue(entry, forKey: key, hash: hash) }) {
                s.policy.remove(key)
                s.statistics.removals += 1
                out.append((key, old.value, .replaced))
            } else {
                s.count += 1
            }
            let cost = min(max(0, cost), CachePolicies.maximumCapacity)
            var evicted: [Key] = []
            s.statistics.insertions += 1
            var turnedAway = !s.policy.insert(key, cost: cost, evicted: &evicted)
            for victim in evicted {
                // The key itself among the victims: the policy took it in and let it go again.
                if victim == key { turnedAway = true } else { drop(victim, reason: .policy, &s, &out) }
            }
            if turnedAway {
                _ = shards.withLock(home) { $0.removeValue(forKey: key, hash: hash) }
                s.count -= 1
                s.statistics.evictions += 1
                s.evictionCounts.rejected += 1
                out.append((key, value, .rejected))
            } else if let slot = s.policy.slot(of: key) {
                // Kept beside the value: a hit then tells the policy where the key is.
                shards.withLock(home) { shard in
                    if let i = shard.find(key, hash: hash) { shard.withElement(at: i) { $0.slot = slot.rawValue } }
                }
            }
            enforceCountLimit(&s, &out)
        }
    }

    public func removeObject(forKey key: Key) {
        mutate { s, out in remove(key, reason: .removed, &s, &out) }
    }

    public func removeAllObjects() {
        mutate { s, out in
            for i in 0..<shards.count {
                let keys = shards.withLock(i) { shard in
                    var keys: [Key] = []
                    shard.forEach { key, _ in keys.append(key) }
                    return keys
                }
                for key in keys { remove(key, reason: .removed, &s, &out) }
            }
        }
    }

    // MARK: Memory events

    /// Removes every entry whose content the kernel has taken, without touching the others
    /// (for purgeable buffers, mincore on idle ones). Returns how many were removed.
    @discardableResult
    public func purgeDiscardedEntries() -> Int {
        guard let isDiscarded = contentIsDiscarded else { return 0 }
        return mutate { s, out in
            var n = 0
            for i in 0..<shards.count {
                // Entries change only under the policy's lock, which this holds: the contents
                // collected here are still the entries' when they are probed, outside the shard's
                // lock (mincore is a system call; lookups in the shard go on meanwhile).
                let contents = shards.withLock(i) { shard in
                    var contents: [(Key, Value)] = []
                    shard.forEach { key, entry in contents.append((key, entry.value)) }
                    return contents
                }
                for (key, value) in contents {
                    let lost = (value as? PurgeableBuffer)?.hasLostPages ?? isDiscarded(value)
                    if lost {
                        remove(key, reason: .discarded, &s, &out)
                        n += 1
                    }
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
            let targetCount = Int(Double(s.count) * s.shrinkFraction)
            while s.policy.totalCost > targetCost || s.count > targetCount, let key = s.policy.evictOne() {
                drop(key, reason: .memoryWarning, &s, &out)
            }
        }
    }

    /// The app is entering the background: see `BackgroundBehavior`.
    public func didEnterBackground() {
        purgeDiscardedEntries()
        mutate { s, out in
            guard s.background == .flush else { return }
            for i in 0..<shards.count {
                let idle = shards.withLock(i) { shard in
                    var idle: [Key] = []
                    shard.forEach { key, entry in
                        if let buffer = entry.value as? PurgeableBuffer, buffer.accessCount > 0 { return }
                        idle.append(key)
                    }
                    return idle
                }
                for key in idle {
                    s.policy.remove(key)
                    drop(key, reason: .background, &s, &out)
                }
            }
        }
    }
}
