/// S3-FIFO (Yang et al., SOSP 2023): a small FIFO (10% of the capacity) that filters out
/// one-hit wonders, a main FIFO with reinsertion, and a ghost FIFO of recently evicted keys.
///
/// - A hit increments the entry's 2-bit frequency (capped at 3); nothing moves.
/// - A new key goes to the main queue if the ghost remembers it, else to the small queue.
/// - Evicting from the small queue: its oldest entry moves to the main queue if it was hit since
///   insertion (frequency >= `promotionThreshold`, with its frequency cleared), else it is evicted
///   and its key remembered in the ghost.
/// - Evicting from the main queue: its oldest entry is reinserted at the head with its frequency
///   decremented if it is above zero, else evicted.
/// - The small queue is evicted from while it holds at least 10% of the capacity.
/// - The ghost holds keys whose costs add up to at most 90% of the capacity (the paper sizes it
///   like the main queue), forgotten oldest first.
public struct S3FIFOPolicy<Key: Hashable & Sendable>: CachePolicy {
    public let name = "s3fifo"
    public private(set) var capacity: Int
    public let smallRatio: Double
    public let promotionThreshold: UInt8
    @usableFromInline var store = NodeStore<Key>()
    @usableFromInline var small = NodeStore<Key>.List()
    @usableFromInline var main = NodeStore<Key>.List()
    @usableFromInline var ghost = GhostQueue<Key>()

    @inlinable static var inSmall: UInt8 { 1 }
    @inlinable static var inMain: UInt8 { 2 }

    public init(capacity: Int, smallRatio: Double = 0.1, promotionThreshold: UInt8 = 1) {
        self.capacity = min(max(0, capacity), CachePolicies.maximumCapacity)
        self.smallRatio = smallRatio.isFinite ? min(max(smallRatio, 0), 0.9) : 0.1
        self.promotionThreshold = promotionThreshold
    }

    @inlinable public var totalCost: Int { small.cost + main.cost }
    @inlinable public var count: Int { store.count }
    @inlinable public func contains(_ key: Key) -> Bool { store.slot(of: key) != nil }
    @inlinable var smallCapacity: Int { Int(Double(capacity) * smallRatio) }
    @inlinable var ghostCapacity: Int { capacity - smallCapacity }

    @inlinable public mutating func recordHit(_ key: Key) {
        guard let slot = store.slot(of: key) else { return }
        hit(slot)
    }

    @inlinable public func slot(of key: Key) -> CacheSlot? { store.slot(of: key).map(CacheSlot.init(rawValue:)) }

    @inlinable public mutating func recordHit(_ key: Key, at slot: CacheSlot) {
        guard store.holds(slot.rawValue, key) else { return recordHit(key) }
        hit(slot.rawValue)
    }

    /// A hit: the entry's frequency, capped at 3; nothing moves.
    @inlinable mutating func hit(_ slot: Int32) {
        let s = Int(slot)
        if store.links[s].mark < 3 { store.links[s].mark += 1 }
    }

    @discardableResult
    @inlinable public mutating func insert(_ key: Key, cost: Int, evicted: inout [Key]) -> Bool {
        if contains(key) { remove(key) }
        let cost = max(0, cost)
        guard cost <= capacity else { return false }
        // Ask the ghost first: the evictions below may push the key out of it.
        let remembered = ghost.remove(key)
        while cost > capacity - totalCost, let victim = evictOne() { evicted.append(victim) }
        let slot = store.add(key, cost: cost)
        if remembered {
            store.links[Int(slot)].list = Self.inMain
            store.pushHead(slot, &main)
        } else {
            store.links[Int(slot)].list = Self.inSmall
            store.pushHead(slot, &small)
        }
        return true
    }

    @discardableResult
    @inlinable public mutating func remove(_ key: Key) -> Bool {
        guard let slot = store.slot(of: key) else { return false }
        if store.links[Int(slot)].list == Self.inSmall { store.unlink(slot, &small) } else { store.unlink(slot, &main) }
        store.release(slot)
        return true
    }

    public mutating func setCapacity(_ capacity: Int, evicted: inout [Key]) {
        self.capacity = min(max(0, capacity), CachePolicies.maximumCapacity)
        while totalCost > self.capacity, let victim = evictOne() { evicted.append(victim) }
        ghost.trim(to: ghostCapacity)
    }

    @inlinable public mutating func evictOne() -> Key? {
        while !small.isEmpty || !main.isEmpty {
            if !small.isEmpty && (small.cost >= smallCapacity || main.isEmpty) {
                let t = small.tail
                store.unlink(t, &small)
                if store.links[Int(t)].mark >= promotionThreshold {
                    store.links[Int(t)].mark = 0
                    store.links[Int(t)].list = Self.inMain
                    store.pushHead(t, &main)
                    continue
                }
                let cost = store.cost(t)
                let key = store.release(t)
                ghost.add(key, cost: cost, capacity: ghostCapacity)
                return key
            }
            let t = main.tail
            if store.links[Int(t)].mark > 0 {
                store.links[Int(t)].mark -= 1
                store.moveToHead(t, &main)
                continue
            }
            store.unlink(t, &main)
            return store.release(t)
        }
        return nil
    }
}

/// Keys recently evicted from the small queue, oldest first, bounded by the sum of their costs.
@usableFromInline
struct GhostQueue<Key: Hashable & Sendable>: Sendable {
    @usableFromInline var ring: [(key: Key, serial: UInt64)] = []
    @usableFromInline var start = 0
    @usableFromInline var serial: UInt64 = 0
    /// Remembered keys: the serial of their ring entry and their cost.
    @usableFromInline var live: [Key: (serial: UInt64, cost: Int)] = [:]
    @usableFromInline var cost = 0

    @inlinable mutating func add(_ key: Key, cost c: Int, capacity: Int) {
        _ = remove(key)
        serial &+= 1
        live[key] = (serial, c)
        ring.append((key, serial))
        cost += c
        trim(to: capacity)
    }

    @inlinable var count: Int { live.count }

    /// Forgets `key`; returns whether it was remembered. Its ring entry becomes stale.
    @inlinable mutating func remove(_ key: Key) -> Bool {
        guard let entry = live.removeValue(forKey: key) else { return false }
        cost -= entry.cost
        return true
    }

    @inlinable mutating func trim(to capacity: Int) {
        while cost > capacity, start < ring.count {
            let e = ring[start]
            start += 1
            if let entry = live[e.key], entry.serial == e.serial {
                live.removeValue(forKey: e.key)
                cost -= entry.cost
            }
        }
        // Keep the ring proportional to what it remembers: drop the consumed front, and the stale
        // entries left by keys that were forgotten on a ghost hit.
        if ring.count - start > 2 * live.count + 1024 {
            ring = ring[start...].filter { live[$0.key]?.serial == $0.serial }
            start = 0
        } else if start > 1024 && start * 2 > ring.count {
            ring.removeFirst(start)
            start = 0
        }
    }
}
