/// SIEVE (Zhang et al., NSDI 2024): a FIFO queue with one "visited" bit per entry and a hand.
///
/// A hit only sets the entry's visited bit (no reordering, so hits are cheap). New entries go to
/// the head. To evict, the hand walks from where it last stopped towards the head (wrapping to the
/// tail), clearing visited bits, and evicts the first entry whose bit is clear. Entries that
/// survive stay in place, which is what separates SIEVE from FIFO-reinsertion (CLOCK).
public struct SIEVEPolicy<Key: Hashable & Sendable>: CachePolicy {
    public let name = "sieve"
    public private(set) var capacity: Int
    @usableFromInline var store = NodeStore<Key>()
    @usableFromInline var list = NodeStore<Key>.List()
    @usableFromInline var hand: Int32 = NodeStore<Key>.none

    public init(capacity: Int) {
        self.capacity = min(max(0, capacity), CachePolicies.maximumCapacity)
    }

    @inlinable public var totalCost: Int { list.cost }
    @inlinable public var count: Int { store.count }
    @inlinable public func contains(_ key: Key) -> Bool { store.slot(of: key) != nil }

    @inlinable public mutating func recordHit(_ key: Key) {
        guard let slot = store.slot(of: key) else { return }
        store.links[Int(slot)].mark = 1
    }

    @inlinable public func slot(of key: Key) -> CacheSlot? { store.slot(of: key).map(CacheSlot.init(rawValue:)) }

    @inlinable public mutating func recordHit(_ key: Key, at slot: CacheSlot) {
        guard store.holds(slot.rawValue, key) else { return recordHit(key) }
        store.links[Int(slot.rawValue)].mark = 1
    }

    @discardableResult
    @inlinable public mutating func insert(_ key: Key, cost: Int, evicted: inout [Key]) -> Bool {
        if contains(key) { remove(key) }
        let cost = max(0, cost)
        guard cost <= capacity else { return false }
        while cost > capacity - list.cost, let victim = evictOne() { evicted.append(victim) }
        store.pushHead(store.add(key, cost: cost), &list)
        return true
    }

    @discardableResult
    @inlinable public mutating func remove(_ key: Key) -> Bool {
        guard let slot = store.slot(of: key) else { return false }
        if hand == slot { hand = store.newerThan(slot) }
        store.unlink(slot, &list)
        store.release(slot)
        return true
    }

    public mutating func setCapacity(_ capacity: Int, evicted: inout [Key]) {
        self.capacity = min(max(0, capacity), CachePolicies.maximumCapacity)
        while list.cost > self.capacity, let victim = evictOne() { evicted.append(victim) }
    }

    @inlinable public mutating func evictOne() -> Key? {
        guard !list.isEmpty else { return nil }
        var p = hand == NodeStore<Key>.none ? list.tail : hand
        while store.links[Int(p)].mark != 0 {
            store.links[Int(p)].mark = 0
            let next = store.newerThan(p)
            p = next == NodeStore<Key>.none ? list.tail : next
        }
        hand = store.newerThan(p)
        store.unlink(p, &list)
        return store.release(p)
    }
}
