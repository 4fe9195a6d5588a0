@testable import MemPressurePurgeable
import MemPressureCachePolicies
import Synchronization
import Testing

/// The shards' hash table against `Dictionary`, as a model: the same operations must give the
/// same answers and leave the same contents, also when the hashes collide, probe runs wrap
/// around the end of the table, and removals shift runs back.
@Suite("shard table")
struct ShardTableTests {
    /// A live-instance count, one per kind of object counted.
    final class Tally: Sendable {
        let alive = Atomic<Int>(0)
        var now: Int { alive.load(ordering: .relaxed) }
    }

    /// A key or an element that lives on the heap and counts its instances in a tally, to show
    /// that the table releases exactly what it removes, replaces and holds when it goes.
    final class Counted: Hashable, Sendable {
        let id: Int
        let tally: Tally
        init(_ id: Int, in tally: Tally) {
            self.id = id
            self.tally = tally
            tally.alive.wrappingAdd(1, ordering: .relaxed)
        }
        deinit { tally.alive.wrappingSubtract(1, ordering: .relaxed) }
        static func == (a: Counted, b: Counted) -> Bool { a.id == b.id }
        func hash(into hasher: inout Hasher) { hasher.combine(id) }
    }

    /// Runs `steps` random operations on a table and on a dictionary, with hashes taken from
    /// `hash` (few distinct ones make long runs that wrap around), and compares them throughout.
    static func compare(seed: UInt64, steps: Int, keys: Int, hash: (Int) -> Int) {
        var rng = SplitMix64(seed: seed)
        var table = ShardTable<String, Int>()
        var model: [String: Int] = [:]
        for step in 0..<steps {
            let k = Int.random(in: 0..<keys, using: &rng)
            let key = "key \(k)"
            switch Int.random(in: 0..<10, using: &rng) {
            case 0..<5:
                #expect(table.updateValue(step, forKey: key, hash: hash(k)) == model.updateValue(step, forKey: key), "update at step \(step)")
            case 5..<8:
                #expect(table.removeValue(forKey: key, hash: hash(k)) == model.removeValue(forKey: key), "remove at step \(step)")
            default:
                #expect(table.element(forKey: key, hash: hash(k)) == model[key], "lookup at step \(step)")
            }
            #expect(table.count == model.count)
        }
        // Every key answers as the model does, and the table holds nothing else.
        for k in 0..<keys {
            #expect(table.element(forKey: "key \(k)", hash: hash(k)) == model["key \(k)"])
        }
        var seen: [String: Int] = [:]
        table.forEach { key, element in seen[key] = element }
        #expect(seen == model)
    }

    @Test("answers as a Dictionary does, with well-spread hashes, through growth and removals")
    func matchesDictionary() {
        for seed in 1...5 as ClosedRange<UInt64> {
            Self.compare(seed: seed, steps: 20_000, keys: 3_000) { k in
                var h = Hasher()
                h.combine(k)
                h.combine(seed)
                return h.finalize()
            }
        }
    }

    @Test("answers as a Dictionary does when hashes collide and runs wrap around the table's end")
    func matchesDictionaryWhenHashesCollide() {
        // Seven distinct hashes for 200 keys: runs hundreds of buckets long. High values too, so
        // that the tag bits (50 to 56) are exercised with the low bits that pick the bucket.
        let hashes = [0, 1, 15, 16, -1, Int.max, Int.min + 15]
        for seed in 1...3 as ClosedRange<UInt64> {
            Self.compare(seed: seed, steps: 10_000, keys: 200) { hashes[$0 % hashes.count] }
        }
        // All the same hash: one run that wraps around every time the table is nearly full.
        Self.compare(seed: 9, steps: 5_000, keys: 100) { _ in 13 }
    }

    /// A hash for an integer key, spread over all 64 bits.
    static func spread(_ i: Int) -> Int { i &* Int(bitPattern: 0x9E37_79B9_7F4A_7C15) }

    @Test("releases every key and element it removes or replaces, through growth and shrinking, and the rest when it goes")
    func releasesElements() {
        let keys = Tally(), elements = Tally()
        do {
            var table = ShardTable<Counted, Counted>()
            func key(_ i: Int) -> Counted { Counted(i, in: keys) }
            for i in 0..<1_000 { table.updateValue(Counted(i, in: elements), forKey: key(i), hash: Self.spread(i)) }
            let grown = table.capacity
            #expect(elements.now == 1_000)
            #expect(keys.now == 1_000)
            for i in 0..<300 { #expect(table.removeValue(forKey: key(i), hash: Self.spread(i))?.id == i) }
            // Replacing keeps the key the table holds (as Dictionary does) and releases the old element.
            for i in 300..<400 { #expect(table.updateValue(Counted(-i, in: elements), forKey: key(i), hash: Self.spread(i))?.id == i) }
            #expect(elements.now == 700)
            #expect(keys.now == 700)
            for i in 0..<1_000 {
                let expected: Int? = i < 300 ? nil : i < 400 ? -i : i
                #expect(table.element(forKey: key(i), hash: Self.spread(i))?.id == expected, "key \(i)")
            }
            #expect(table.count == 700)
            // Removing almost everything gives the memory back: the table shrinks as it empties.
            for i in 400..<995 { #expect(table.removeValue(forKey: key(i), hash: Self.spread(i))?.id == i) }
            #expect(table.count == 105)
            #expect(table.capacity <= grown / 4, "grown to \(grown) buckets, \(table.capacity) with 105 entries")
            for i in 300..<1_000 {
                let expected: Int? = i < 400 ? -i : i >= 995 ? i : nil
                #expect(table.element(forKey: key(i), hash: Self.spread(i))?.id == expected, "key \(i) after shrinking")
            }
            #expect(elements.now == 105)
            #expect(keys.now == 105)
        }
        #expect(elements.now == 0, "the table's deinit released the elements it held")
        #expect(keys.now == 0, "and the keys")
    }

    @Test("hits waiting in their shards reach SIEVE and S3-FIFO, also more than a replay's worth", arguments: [PolicyKind.sieve, .s3fifo])
    func shardHitsReachThePolicy(policy: PolicyKind) {
        let n = 10_000
        let cache = PurgeableCache<Int, Int>(policy: policy, countLimit: n)
        let seen = Mutex<[String]>([])
        cache.setEvictionHandler { key, _, reason in seen.withLock { $0.append("\(key) \(reason.rawValue)") } }
        var model = PolicyModel(policy: policy.make(capacity: CachePolicies.maximumCapacity), countLimit: n)
        for k in 0..<n {
            cache.setObject(k, forKey: k, cost: 1)
            model.set(k, cost: 1)
        }
        // Every other key hit once: about 78 hits wait in each of the 64 shards, more than the 64
        // after which a shard replays its hits into the policy in the middle of the lookups.
        for k in stride(from: 0, to: n, by: 2) {
            #expect(cache.object(forKey: k) == k)
            let present = model.get(k)
            #expect(present)
        }
        // New keys evict: the policy must spare the keys hit, exactly as the bare policy does.
        for k in n..<(n + n / 2) {
            cache.setObject(k, forKey: k, cost: 1)
            model.set(k, cost: 1)
        }
        let log = seen.withLock { $0 }
        #expect(log.count == n / 2)
        #expect(log == model.log)
    }

    @Test("a shard full while the policy is busy drops hits, then sends them once the policy is free, before the next eviction")
    func fullShardRecovers() throws {
        let n = 400
        // 400 keys of one shard: more than the 256 hits a shard keeps while the policy is busy.
        var keys: [Int] = []
        var k = 0
        while keys.count < n {
            if PurgeableCache<Int, Int>.shard(of: k.hashValue) == 0 { keys.append(k) }
            k += 1
        }
        let cache = PurgeableCache<Int, Int>(policy: .sieve, countLimit: n)
        let gone = Mutex<[Int]>([])
        cache.setEvictionHandler { key, _, _ in gone.withLock { $0.append(key) } }
        for key in keys { cache.setObject(key, forKey: key, cost: 1) }
        // Every key hit while the policy's lock is held (here, by this thread): the shard keeps
        // 256 hits and drops the rest; its tries to empty itself into the policy fail.
        cache.state.withLock { _ in
            for key in keys { #expect(cache.object(forKey: key) == key) }
        }
        // The lock free, the same hits again: a dropped hit was not taken for sent, so it is sent
        // now (the first of them empties the full shard into the policy).
        for key in keys { #expect(cache.object(forKey: key) == key) }
        // One more entry: SIEVE's hand finds all 400 keys visited, clears them and goes on to
        // the only entry not visited, the new one. Had a hit been lost, its key would go instead.
        cache.setObject(-1, forKey: -1, cost: 1)
        #expect(gone.withLock { $0 } == [-1])
        #expect(cache.statistics.hits == 2 * n)
    }

    @Test("a cache over keys whose hashes collide keeps every entry and evicts as its policy does", arguments: PolicyKind.allCases)
    func cacheWithCollidingKeys(policy: PolicyKind) {
        // Keys whose hashes are all equal land in one shard and one probe run.
        struct Colliding: Hashable, Sendable {
            let id: Int
            func hash(into hasher: inout Hasher) { hasher.combine(7) }
        }
        let cache = PurgeableCache<Colliding, Int>(policy: policy, totalCostLimit: 50)
        var bare = policy.make(capacity: 50, keyType: Colliding.self)
        var rng = SplitMix64(seed: 3)
        for _ in 0..<5_000 {
            let key = Colliding(id: Int.random(in: 0..<120, using: &rng))
            var evicted: [Colliding] = []
            if cache.object(forKey: key) == nil {
                cache.setObject(key.id, forKey: key, cost: 1)
                bare.insert(key, cost: 1, evicted: &evicted)
            } else {
                bare.recordHit(key)
            }
        }
        #expect(cache.statistics.count == bare.count)
        for id in 0..<120 {
            #expect((cache.object(forKey: Colliding(id: id)) != nil) == bare.contains(Colliding(id: id)), "key \(id)")
        }
    }
}
