/// Least recently used: a hit moves the entry to the head; eviction takes the tail.
public struct LRUPolicy<Key: Hashable & Sendable>: CachePolicy {
    public let name = "lru"
    public private(set) var capacity: Int
    @usableFromInline var store = NodeStore<Key>()
    @usableFromInline var list = NodeStore<Key>.List()

    public init(capacity: Int) {
        self.capacity = min(max(0, capacity), CachePolicies.maximumCapacity)
    }

    @inlinable public var totalCost: Int { list.cost }
    @inlinable public var count: Int { store.count }
    @inlinable public func contains(_ key: Key) -> Bool { store.slot(of: key) != nil }

    @inlinable public mutating func recordHit(_ key: Key) {
        guard let slot = store.slot(of: key) else { return }
        store.moveToHead(slot, &list)
    }

    @inlinable public func slot(of key: Key) -> CacheSlot? { store.slot(of: key).map(CacheSlot.init(rawValue:)) }

    @inlinable public mutating func recordHit(_ key: Key, at slot: CacheSlot) {
        guard store.holds(slot.rawValue, key) else { return recordHit(key) }
        store.moveToHead(slot.rawValue, &list)
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
        store.unlink(slot, &list)
        store.release(slot)
        return true
    }

    public mutating func setCapacity(_ capacity: Int, evicted: inout [Key]) {
        self.capacity = min(max(0, capacity), CachePolicies.maximumCapacity)
        while list.cost > self.capacity, let victim = evictOne() { evicted.append(victim) }
    }

    @inlinable public mutating func evictOne() -> Key? {
        let slot = list.tail
        guard slot != NodeStore<Key>.none else { return nil }
        store.unlink(slot, &list)
        return store.release(slot)
    }
}
