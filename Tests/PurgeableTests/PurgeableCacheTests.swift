import MemPressureCachePolicies
import MemPressurePurgeable
import Synchronization
import Testing
import MemPressureTestSupport

@Suite("purgeable cache")
struct PurgeableCacheTests {
    @Test("count and cost limits are honoured", arguments: PolicyKind.allCases)
    func limits(policy: PolicyKind) {
        let cache = PurgeableCache<Int, String>(policy: policy, countLimit: 10)
        for i in 0..<100 {
            cache.setObject("v\(i)", forKey: i, cost: 1)
            #expect(cache.statistics.count <= 10)
        }
        let byCost = PurgeableCache<Int, String>(policy: policy, totalCostLimit: 1_000)
        for i in 0..<200 {
            byCost.setObject("v\(i)", forKey: i, cost: 10 + i % 50)
            #expect(byCost.statistics.totalCost <= 1_000)
        }
        byCost.totalCostLimit = 100
        #expect(byCost.statistics.totalCost <= 100)
        byCost.countLimit = 2
        #expect(byCost.statistics.count <= 2)
    }

    @Test("a limit of zero means no limit, as in NSCache; an entry larger than the limit is turned away")
    func zeroLimit() {
        let cache = PurgeableCache<Int, Int>(totalCostLimit: 0)
        for i in 0..<1_000 { cache.setObject(i, forKey: i, cost: 1_000_000) }
        #expect(cache.statistics.count == 1_000)
        let small = PurgeableCache<String, Int>(totalCostLimit: 10)
        let reasons = Mutex<[PurgeableCache<String, Int>.EvictionReason]>([])
        small.setEvictionHandler { _, _, reason in reasons.withLock { $0.append(reason) } }
        small.setObject(1, forKey: "big", cost: 11)
        #expect(small.object(forKey: "big") == nil)
        #expect(reasons.withLock { $0 } == [.rejected])
    }

    @Test("the eviction handler runs outside the lock and may call back into the cache")
    func reentrantHandler() {
        let cache = PurgeableCache<Int, Int>(countLimit: 5)
        let seen = Mutex<[Int]>([])
        cache.setEvictionHandler { key, value, reason in
            seen.withLock { $0.append(key) }
            // Re-entering: a lookup, and moving the evicted value to a key of its own.
            _ = cache.object(forKey: key + 1)
            if reason == .policy && key < 1_000 { cache.setObject(value, forKey: key + 10_000, cost: 1) }
        }
        for i in 0..<50 { cache.setObject(i, forKey: i, cost: 1) }
        #expect(!seen.withLock { $0 }.isEmpty)
        #expect(cache.statistics.count <= 5)
    }

    @Test("keys whose hashes collide are told apart")
    func collisions() {
        struct Colliding: Hashable, Sendable {
            var id: Int
            func hash(into h: inout Hasher) { h.combine(42) }
        }
        let cache = PurgeableCache<Colliding, Int>(countLimit: 100)
        for i in 0..<100 { cache.setObject(i, forKey: Colliding(id: i)) }
        for i in 0..<100 { #expect(cache.object(forKey: Colliding(id: i)) == i) }
    }

    @Test("entries the kernel took count as discards, not evictions")
    func discards() throws {
        let cache = PurgeableCache<Int, PurgeableBuffer>(name: "test-discards", policy: .sieve)
        let buffers = try (0..<8).map { i in try cache.setContent(Array(repeating: UInt8(i + 1), count: 64 * 1024), forKey: i) }
        for i in [0, 2, 4] { try Reclaim.pageOut(try #require(buffers[i].pageRange)) }
        // Found by access...
        #expect(try cache.withContent(forKey: 0) { $0[0] } == nil)
        #expect(try cache.withContent(forKey: 1) { $0[100] } == 2)
        // ...and by probing idle entries.
        #expect(cache.purgeDiscardedEntries() == 2)
        let stats = cache.statistics
        #expect(stats.discards == 3)
        #expect(stats.evictions == 0)
        #expect(stats.count == 5)
    }

    @Test("memory warnings shrink every live cache; background can flush idle entries")
    func memoryEvents() throws {
        // A center of this test's own: posting on the shared one would shrink every other test's caches.
        let events = MemoryEvents()
        let a = PurgeableCache<Int, Int>(name: "warned", totalCostLimit: 10_000, events: events)
        for i in 0..<100 { a.setObject(i, forKey: i, cost: 10) }
        events.post(.memoryWarning)
        #expect(a.statistics.totalCost <= 500)
        #expect(a.statistics.memoryWarningEvictions >= 50)

        let b = PurgeableCache<Int, PurgeableBuffer>(name: "test-background", backgroundBehavior: .flush)
        try cache(b, entries: 4)
        let held = try #require(b.object(forKey: 3))
        #expect(held.beginContentAccess())
        b.didEnterBackground()
        #expect(b.statistics.count == 1, "only the entry being accessed stays")
        #expect(b.statistics.backgroundEvictions == 3)
        try held.endContentAccess()

        let c = PurgeableCache<Int, PurgeableBuffer>(name: "test-keep", backgroundBehavior: .keepPurgeable)
        try cache(c, entries: 4)
        c.didEnterBackground()
        #expect(c.statistics.count == 4, "idle purgeable entries stay, for the kernel to take if it must")
    }

    func cache(_ c: PurgeableCache<Int, PurgeableBuffer>, entries: Int) throws {
        for i in 0..<entries { try c.setContent(Array(repeating: UInt8(i), count: 8192), forKey: i) }
    }

    @Test("many threads at once")
    func threads() {
        let cache = PurgeableCache<Int, Int>(policy: .s3fifo, countLimit: 64)
        let bad = Atomic<Int>(0)
        let threads = (0..<4).map { t in
            TestThread {
                var rng = SplitMix64(seed: UInt64(t))
                for _ in 0..<50_000 {
                    let k = Int.random(in: 0..<256, using: &rng)
                    switch Int.random(in: 0..<4, using: &rng) {
                    case 0: cache.setObject(k * 2, forKey: k, cost: 1)
                    case 1: cache.removeObject(forKey: k)
                    default:
                        if let v = cache.object(forKey: k), v != k * 2 { bad.add(1, ordering: .relaxed) }
                    }
                }
            }
        }
        for t in threads { t.join() }
        #expect(bad.load(ordering: .relaxed) == 0)
        #expect(cache.statistics.count <= 64)
    }
}
