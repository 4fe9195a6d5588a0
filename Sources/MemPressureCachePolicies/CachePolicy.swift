/// An eviction (and admission) policy: which keys stay resident within a capacity.
///
/// Policies are pure value types: they know keys and costs, never values, so the same policy
/// drives a real cache (`PurgeableCache`) and the trace simulator. Every policy is cost-aware:
/// each entry has a cost (its size in bytes, or 1 to count objects) and the sum of the costs of
/// resident entries never exceeds `capacity`. Capacities are at most `CachePolicies.maximumCapacity`
/// (2^60), so sums of costs can never overflow.
public protocol CachePolicy<Key>: Sendable {
    associatedtype Key: Hashable & Sendable

    /// A short name ("lru", "sieve", "s3fifo", "tinylfu").
    var name: String { get }
    /// The most the costs of resident entries may add up to.
    var capacity: Int { get }
    /// The sum of the costs of resident entries.
    var totalCost: Int { get }
    /// Resident entries.
    var count: Int { get }

    func contains(_ key: Key) -> Bool

    /// A request for a resident key (a hit).
    mutating func recordHit(_ key: Key)

    /// Where `key` lives in the policy while it stays resident, for `recordHit(_:at:)`: a cache
    /// that keeps it beside its value tells the policy of a hit without a second lookup of the
    /// key. Nil when `key` is not resident (or the policy has no such places).
    func slot(of key: Key) -> CacheSlot?

    /// A hit on `key`, which `slot(of:)` placed at `slot`: the same as `recordHit(key)`, without
    /// looking the key up while the slot still holds it. A slot that no longer holds `key` (the
    /// key was removed, its slot reused) is only a hint: the key is then looked up.
    mutating func recordHit(_ key: Key, at slot: CacheSlot)

    /// A new key of `cost`. Keys evicted to make room are appended to `evicted` (which may
    /// include `key` itself when an admission policy turns it away). Returns whether `key` is
    /// resident afterwards: a key costing more than the capacity never is.
    @discardableResult
    mutating func insert(_ key: Key, cost: Int, evicted: inout [Key]) -> Bool

    /// Removes a key (not an eviction: the owner dropped it). Returns whether it was resident.
    @discardableResult
    mutating func remove(_ key: Key) -> Bool

    /// Changes the capacity, evicting by policy until the resident entries fit.
    mutating func setCapacity(_ capacity: Int, evicted: inout [Key])

    /// Evicts one entry by policy (to shrink under memory pressure); nil when empty.
    mutating func evictOne() -> Key?
}

/// Where a resident key lives in a policy (see `CachePolicy.slot(of:)`): the same from the key's
/// insertion to its eviction or removal, whatever the policy does on hits.
public struct CacheSlot: Hashable, Sendable {
    public var rawValue: Int32
    @inlinable public init(rawValue: Int32) { self.rawValue = rawValue }
}

extension CachePolicy {
    /// No places to tell: nil.
    @inlinable public func slot(of key: Key) -> CacheSlot? { nil }

    /// The key looked up, as `recordHit(key)`.
    @inlinable public mutating func recordHit(_ key: Key, at slot: CacheSlot) { recordHit(key) }

    /// One request: a hit if resident, else a miss that inserts it. Returns whether it hit.
    @discardableResult
    @inlinable public mutating func access(_ key: Key, cost: Int, evicted: inout [Key]) -> Bool {
        if contains(key) {
            recordHit(key)
            return true
        }
        insert(key, cost: cost, evicted: &evicted)
        return false
    }
}

/// Limits every policy shares.
public enum CachePolicies {
    /// The largest capacity a policy takes (larger ones are lowered to it): costs and their sums
    /// stay far from Int.max, so no arithmetic on them can trap.
    public static let maximumCapacity = 1 << 60
}

/// What a capacity counts.
public enum CapacityUnit: String, Sendable, Hashable, Codable, CaseIterable {
    /// Every entry costs 1.
    case objects
    /// Every entry costs its size in bytes.
    case bytes
}

/// The policies this module implements, by name. `tinylfu` is W-TinyLFU with the adaptive
/// window and size-aware admission (`TinyLFUPolicy`'s defaults); the name stayed, so the CLI's
/// `--policy tinylfu` and earlier reports name the same policy family.
///
/// Every policy is deterministic: the same requests, capacity and costs give the same hits and
/// the same evictions in every process (for `TinyLFUPolicy`, whose sketch hashes keys, with
/// integer, `String` or byte-array keys, which it hashes with a fixed seed).
public enum PolicyKind: String, Sendable, Hashable, Codable, CaseIterable {
    case lru
    case sieve
    case s3fifo
    case tinylfu

    /// A new policy of this kind.
    public func make<Key: Hashable & Sendable>(capacity: Int, keyType: Key.Type = Key.self) -> AnyCachePolicy<Key> {
        switch self {
        case .lru: .lru(LRUPolicy(capacity: capacity))
        case .sieve: .sieve(SIEVEPolicy(capacity: capacity))
        case .s3fifo: .s3fifo(S3FIFOPolicy(capacity: capacity))
        case .tinylfu: .tinylfu(TinyLFUPolicy(capacity: capacity))
        }
    }
}

/// Any of the policies, dispatched by a switch rather than through an existential, so that a
/// cache can choose its policy at run time without paying for dynamic dispatch on every request.
public enum AnyCachePolicy<Key: Hashable & Sendable>: CachePolicy {
    case lru(LRUPolicy<Key>)
    case sieve(SIEVEPolicy<Key>)
    case s3fifo(S3FIFOPolicy<Key>)
    case tinylfu(TinyLFUPolicy<Key>)

    @inlinable public var name: String {
        switch self {
        case .lru(let p): p.name
        case .sieve(let p): p.name
        case .s3fifo(let p): p.name
        case .tinylfu(let p): p.name
        }
    }

    @inlinable public var capacity: Int {
        switch self {
        case .lru(let p): p.capacity
        case .sieve(let p): p.capacity
        case .s3fifo(let p): p.capacity
        case .tinylfu(let p): p.capacity
        }
    }

    @inlinable public var totalCost: Int {
        switch self {
        case .lru(let p): p.totalCost
        case .sieve(let p): p.totalCost
        case .s3fifo(let p): p.totalCost
        case .tinylfu(let p): p.totalCost
        }
    }

    @inlinable public var count: Int {
        switch self {
        case .lru(let p): p.count
        case .sieve(let p): p.count
        case .s3fifo(let p): p.count
        case .tinylfu(let p): p.count
        }
    }

    @inlinable public func contains(_ key: Key) -> Bool {
        switch self {
        case .lru(let p): p.contains(key)
        case .sieve(let p): p.contains(key)
        case .s3fifo(let p): p.contains(key)
        case .tinylfu(let p): p.contains(key)
        }
    }

    @inlinable public func slot(of key: Key) -> CacheSlot? {
        switch self {
        case .lru(let p): p.slot(of: key)
        case .sieve(let p): p.slot(of: key)
        case .s3fifo(let p): p.slot(of: key)
        case .tinylfu(let p): p.slot(of: key)
        }
    }

    // The mutating members move the payload out, mutate it and put it back, so the enum never
    // holds a second reference to a policy's storage (which would force a copy on write).

    @inlinable public mutating func recordHit(_ key: Key, at slot: CacheSlot) {
        switch consume self {
        case .lru(var p): p.recordHit(key, at: slot); self = .lru(p)
        case .sieve(var p): p.recordHit(key, at: slot); self = .sieve(p)
        case .s3fifo(var p): p.recordHit(key, at: slot); self = .s3fifo(p)
        case .tinylfu(var p): p.recordHit(key, at: slot); self = .tinylfu(p)
        }
    }

    /// Tells the policy of hits in the order given, each with its slot: one dispatch on the
    /// policy's kind for the whole batch, not one per hit (a cache replaying what it buffered).
    @inlinable public mutating func recordHits<C: Collection>(_ hits: C) where C.Element == (Key, CacheSlot) {
        switch consume self {
        case .lru(var p): for (k, s) in hits { p.recordHit(k, at: s) }; self = .lru(p)
        case .sieve(var p): for (k, s) in hits { p.recordHit(k, at: s) }; self = .sieve(p)
        case .s3fifo(var p): for (k, s) in hits { p.recordHit(k, at: s) }; self = .s3fifo(p)
        case .tinylfu(var p): p.recordHits(hits); self = .tinylfu(p)
        }
    }

    /// `recordHits(_:)` for hits in a sequence that is not a collection: gathered into an array
    /// first (a batch is read twice: W-TinyLFU prefetches ahead of the hit it records).
    @_disfavoredOverload
    @inlinable public mutating func recordHits<S: Sequence>(_ hits: S) where S.Element == (Key, CacheSlot) {
        recordHits(Array(hits))
    }

    /// `recordHit(keys[i], at: CacheSlot(rawValue: slots[i]))` for every i, in order (hits kept as
    /// two arrays, which a caller appends to without building a tuple).
    @inlinable public mutating func recordHits(keys: [Key], slots: [Int32]) {
        assert(keys.count == slots.count, "recordHits: as many slots as keys")
        switch consume self {
        case .lru(var p): for (k, s) in zip(keys, slots) { p.recordHit(k, at: CacheSlot(rawValue: s)) }; self = .lru(p)
        case .sieve(var p): for (k, s) in zip(keys, slots) { p.recordHit(k, at: CacheSlot(rawValue: s)) }; self = .sieve(p)
        case .s3fifo(var p): for (k, s) in zip(keys, slots) { p.recordHit(k, at: CacheSlot(rawValue: s)) }; self = .s3fifo(p)
        case .tinylfu(var p): for (k, s) in zip(keys, slots) { p.recordHit(k, at: CacheSlot(rawValue: s)) }; self = .tinylfu(p)
        }
    }

    @inlinable public mutating func recordHit(_ key: Key) {
        switch consume self {
        case .lru(var p): p.recordHit(key); self = .lru(p)
        case .sieve(var p): p.recordHit(key); self = .sieve(p)
        case .s3fifo(var p): p.recordHit(key); self = .s3fifo(p)
        case .tinylfu(var p): p.recordHit(key); self = .tinylfu(p)
        }
    }

    @discardableResult
    @inlinable public mutating func insert(_ key: Key, cost: Int, evicted: inout [Key]) -> Bool {
        let admitted: Bool
        switch consume self {
        case .lru(var p): admitted = p.insert(key, cost: cost, evicted: &evicted); self = .lru(p)
        case .sieve(var p): admitted = p.insert(key, cost: cost, evicted: &evicted); self = .sieve(p)
        case .s3fifo(var p): admitted = p.insert(key, cost: cost, evicted: &evicted); self = .s3fifo(p)
        case .tinylfu(var p): admitted = p.insert(key, cost: cost, evicted: &evicted); self = .tinylfu(p)
        }
        return admitted
    }

    @discardableResult
    @inlinable public mutating func remove(_ key: Key) -> Bool {
        let removed: Bool
        switch consume self {
        case .lru(var p): removed = p.remove(key); self = .lru(p)
        case .sieve(var p): removed = p.remove(key); self = .sieve(p)
        case .s3fifo(var p): removed = p.remove(key); self = .s3fifo(p)
        case .tinylfu(var p): removed = p.remove(key); self = .tinylfu(p)
        }
        return removed
    }

    @inlinable public mutating func setCapacity(_ capacity: Int, evicted: inout [Key]) {
        switch consume self {
        case .lru(var p): p.setCapacity(capacity, evicted: &evicted); self = .lru(p)
        case .sieve(var p): p.setCapacity(capacity, evicted: &evicted); self = .sieve(p)
        case .s3fifo(var p): p.setCapacity(capacity, evicted: &evicted); self = .s3fifo(p)
        case .tinylfu(var p): p.setCapacity(capacity, evicted: &evicted); self = .tinylfu(p)
        }
    }

    @inlinable public mutating func evictOne() -> Key? {
        let key: Key?
        switch consume self {
        case .lru(var p): key = p.evictOne(); self = .lru(p)
        case .sieve(var p): key = p.evictOne(); self = .sieve(p)
        case .s3fifo(var p): key = p.evictOne(); self = .s3fifo(p)
        case .tinylfu(var p): key = p.evictOne(); self = .tinylfu(p)
        }
        return key
    }
}
