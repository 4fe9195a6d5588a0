/// W-TinyLFU (Einziger, Friedman and Manes, 2017; as in Caffeine): a small LRU "window" admits
/// every new entry; entries leaving the window must win a frequency contest to enter the main
/// segmented LRU (probation and protected), judged by a count-min sketch of recent popularity.
///
/// - Window: 1% of the capacity; main: the rest, of which the protected segment is 80%.
/// - A hit counts in the sketch; in the window it refreshes recency, in probation it promotes the
///   entry to protected (demoting protected's oldest back to probation when protected is full).
/// - When the window overflows, its oldest entry is the candidate. If main has room it enters
///   probation. Otherwise it is compared with main's victim (probation's oldest, else protected's):
///   the victim goes if the candidate is more frequent, else the candidate goes. Cost-aware: a
///   large candidate may have to beat several victims, each in turn. Like Caffeine, a warm
///   candidate (estimate at least 6) that loses is still admitted 1 time in 128, so a victim's
///   frequency inflated by hash collisions cannot block admission forever.
/// - The sketch halves all counters after 10 increments per counter word (aging), so
///   popularity is recent popularity.
///
/// The sketch hashes keys with Swift's per-process seeded `Hasher` (which also resists hash
/// flooding), so miss ratios vary very slightly from run to run; the other policies here are
/// deterministic.
public struct TinyLFUPolicy<Key: Hashable & Sendable>: CachePolicy {
    public let name = "tinylfu"
    public private(set) var capacity: Int
    @usableFromInline var store = NodeStore<Key>()
    @usableFromInline var window = NodeStore<Key>.List()
    @usableFromInline var probation = NodeStore<Key>.List()
    @usableFromInline var protected = NodeStore<Key>.List()
    @usableFromInline var sketch = FrequencySketch()
    @usableFromInline var random: UInt64 = 0x2545_F491_4F6C_DD1D

    @inlinable static var inWindow: UInt8 { 1 }
    @inlinable static var inProbation: UInt8 { 2 }
    @inlinable static var inProtected: UInt8 { 3 }

    public init(capacity: Int) {
        self.capacity = min(max(0, capacity), CachePolicies.maximumCapacity)
    }

    @inlinable public var totalCost: Int { window.cost + probation.cost + protected.cost }
    @inlinable public var count: Int { store.count }
    @inlinable public func contains(_ key: Key) -> Bool { store.slot(of: key) != nil }

    @inlinable var windowCapacity: Int { max(capacity / 100, capacity > 0 ? 1 : 0) }
    @inlinable var mainCapacity: Int { capacity - windowCapacity }
    @inlinable var protectedCapacity: Int { mainCapacity * 8 / 10 }

    @inlinable public mutating func recordHit(_ key: Key) {
        guard let slot = store.slot(of: key) else { return }
        sketch.increment(key.hashValue)
        switch store.lists[Int(slot)] {
        case Self.inWindow:
            store.moveToHead(slot, &window)
        case Self.inProbation:
            store.unlink(slot, &probation)
            store.lists[Int(slot)] = Self.inProtected
            store.pushHead(slot, &protected)
            while protected.cost > protectedCapacity, protected.tail != slot {
                let demoted = protected.tail
                store.unlink(demoted, &protected)
                store.lists[Int(demoted)] = Self.inProbation
                store.pushHead(demoted, &probation)
            }
        default:
            store.moveToHead(slot, &protected)
        }
    }

    @discardableResult
    @inlinable public mutating func insert(_ key: Key, cost: Int, evicted: inout [Key]) -> Bool {
        if contains(key) { remove(key) }
        let cost = max(0, cost)
        guard cost <= capacity else { return false }
        sketch.ensureCapacity(forEntries: store.count + 1)
        sketch.increment(key.hashValue)
        let slot = store.add(key, cost: cost)
        store.lists[Int(slot)] = Self.inWindow
        store.pushHead(slot, &window)
        drainWindow(evicted: &evicted)
        return contains(key)
    }

    /// Moves the window's overflow into main, through the admission contest.
    @inlinable mutating func drainWindow(evicted: inout [Key]) {
        while window.cost > windowCapacity, window.tail != NodeStore<Key>.none {
            let candidate = window.tail
            store.unlink(candidate, &window)
            let candidateCost = store.cost(candidate)
            var admitted = candidateCost <= mainCapacity
            while admitted, candidateCost > mainCapacity - (probation.cost + protected.cost) {
                let victim = probation.tail != NodeStore<Key>.none ? probation.tail : protected.tail
                guard victim != NodeStore<Key>.none else { break }
                if admits(candidate, over: victim) {
                    if store.lists[Int(victim)] == Self.inProbation { store.unlink(victim, &probation) } else { store.unlink(victim, &protected) }
                    evicted.append(store.release(victim))
                } else {
                    admitted = false
                }
            }
            if admitted {
                store.lists[Int(candidate)] = Self.inProbation
                store.pushHead(candidate, &probation)
            } else {
                evicted.append(store.release(candidate))
            }
        }
    }

    @inlinable mutating func admits(_ candidate: Int32, over victim: Int32) -> Bool {
        let c = sketch.estimate(store.key(candidate).hashValue)
        let v = sketch.estimate(store.key(victim).hashValue)
        if c > v { return true }
        if c >= 6 {
            // xorshift64
            random ^= random << 13
            random ^= random >> 7
            random ^= random << 17
            return random & 127 == 0
        }
        return false
    }

    @discardableResult
    @inlinable public mutating func remove(_ key: Key) -> Bool {
        guard let slot = store.slot(of: key) else { return false }
        unlinkFromItsList(slot)
        store.release(slot)
        return true
    }

    @inlinable mutating func unlinkFromItsList(_ slot: Int32) {
        switch store.lists[Int(slot)] {
        case Self.inWindow: store.unlink(slot, &window)
        case Self.inProbation: store.unlink(slot, &probation)
        default: store.unlink(slot, &protected)
        }
    }

    public mutating func setCapacity(_ capacity: Int, evicted: inout [Key]) {
        self.capacity = min(max(0, capacity), CachePolicies.maximumCapacity)
        while probation.cost + protected.cost > mainCapacity, let victim = evictOne() { evicted.append(victim) }
        drainWindow(evicted: &evicted)
        while totalCost > self.capacity, let victim = evictOne() { evicted.append(victim) }
    }

    @inlinable public mutating func evictOne() -> Key? {
        for list in [Self.inProbation, Self.inProtected, Self.inWindow] {
            let tail: Int32
            switch list {
            case Self.inProbation: tail = probation.tail
            case Self.inProtected: tail = protected.tail
            default: tail = window.tail
            }
            guard tail != NodeStore<Key>.none else { continue }
            unlinkFromItsList(tail)
            return store.release(tail)
        }
        return nil
    }
}

/// A count-min sketch of 4-bit counters, four per key, 16 to a 64-bit word, with conservative
/// update and periodic halving.
@usableFromInline
struct FrequencySketch: Sendable {
    @usableFromInline var table: [UInt64] = Array(repeating: 0, count: 64)
    @usableFromInline var additions = 0

    @usableFromInline var mask: Int { table.count * 16 - 1 }
    @usableFromInline var sampleSize: Int { table.count * 10 }

    /// Grows (and clears) the table so it has about one word per entry.
    @inlinable mutating func ensureCapacity(forEntries entries: Int) {
        guard entries > table.count else { return }
        var words = table.count
        while words < entries { words *= 2 }
        table = Array(repeating: 0, count: words)
        additions = 0
    }

    @inlinable func indices(_ hash: Int) -> (Int, Int, Int, Int) {
        // Four counters from one 64-bit hash, re-mixed (splitmix64 finalizer) for independence.
        var h = UInt64(bitPattern: Int64(hash))
        h = (h ^ (h >> 30)) &* 0xBF58_476D_1CE4_E5B9
        h = (h ^ (h >> 27)) &* 0x94D0_49BB_1331_11EB
        h ^= h >> 31
        let m = UInt64(mask)
        return (Int(h & m), Int((h >> 16) & m), Int((h >> 32) & m), Int(((h >> 48) ^ (h << 7)) & m))
    }

    @inlinable func counter(_ i: Int) -> UInt64 { (table[i >> 4] >> UInt64((i & 15) * 4)) & 15 }

    @inlinable func estimate(_ hash: Int) -> Int {
        let (a, b, c, d) = indices(hash)
        return Int(min(counter(a), counter(b), counter(c), counter(d)))
    }

    @inlinable mutating func increment(_ hash: Int) {
        let (a, b, c, d) = indices(hash)
        let low = min(counter(a), counter(b), counter(c), counter(d))
        guard low < 15 else { return }
        // Conservative update: only the counters at the minimum grow.
        for i in [a, b, c, d] where counter(i) == low {
            table[i >> 4] += 1 << UInt64((i & 15) * 4)
        }
        additions += 1
        if additions >= sampleSize { halve() }
    }

    @inlinable mutating func halve() {
        for i in table.indices {
            // Shift every nibble right by one: clear each nibble's top bit after the shift.
            table[i] = (table[i] >> 1) & 0x7777_7777_7777_7777
        }
        additions /= 2
    }
}
