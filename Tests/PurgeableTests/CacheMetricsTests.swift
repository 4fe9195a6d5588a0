import MemPressureCachePolicies
import CoreMetrics
import MetricsTestKit
import MemPressurePurgeable
import Testing

/// A counter's total (nil: never made).
private func total(_ m: TestMetrics, _ label: String, _ dimensions: [(String, String)]) -> Int64? {
    do {
        return try m.expectCounter(label, dimensions).totalValue
    } catch {
        return nil
    }
}

private func gauge(_ m: TestMetrics, _ label: String, _ dimensions: [(String, String)]) -> Double? {
    do {
        return try m.expectGauge(label, dimensions).lastValue
    } catch {
        return nil
    }
}

/// PurgeableCache's metrics through swift-metrics. Each test binds a factory of its own to the
/// caches it makes (`withMetricsFactory`): nothing process-global.
@Suite("purgeable cache metrics")
struct CacheMetricsTests {
    @Test("a cache with a metrics name publishes hits and misses in batches, evictions by reason, count and cost, all matching its statistics; its gauges go with it")
    func named() {
        let m = TestMetrics()
        let events = MemoryEvents()  // of this test's own: the shared one would reach other tests' caches
        let c = [("cache", "ints")]
        func evictions(_ reason: String) -> Int64? { total(m, PurgeableCacheMetrics.evictions, c + [("reason", reason)]) }
        do {
            let cache = withMetricsFactory(m) { PurgeableCache<Int, Int>(totalCostLimit: 100, events: events, metricsName: "ints") }
            for i in 0..<11 { cache.setObject(i, forKey: i, cost: 10) }  // the 11th makes the policy evict one
            cache.setObject(99, forKey: 99, cost: 200)  // more than the limit: turned away
            #expect(evictions("policy") == 1)
            #expect(evictions("rejected") == 1)
            #expect(gauge(m, PurgeableCacheMetrics.entries, c) == 10)
            #expect(gauge(m, PurgeableCacheMetrics.costBytes, c) == 100)

            var hits = 0
            for k in 0..<20 where cache.object(forKey: k) != nil { hits += 1 }
            #expect(hits == 10)
            // A lookup publishes nothing: the hits wait in the shards' counters for a batch.
            #expect(total(m, PurgeableCacheMetrics.hits, c) == 0)
            #expect(total(m, PurgeableCacheMetrics.misses, c) == 0)
            cache.publishMetrics()
            #expect(total(m, PurgeableCacheMetrics.hits, c) == 10)
            #expect(total(m, PurgeableCacheMetrics.misses, c) == 10)

            cache.countLimit = 5
            #expect(evictions("countLimit") == 5)
            events.post(.memoryWarning)
            cache.backgroundBehavior = .flush
            cache.didEnterBackground()
            for k in 0..<3 { _ = cache.object(forKey: k) }  // misses now: everything was flushed

            let stats = cache.statistics
            #expect(total(m, PurgeableCacheMetrics.hits, c) == Int64(stats.hits))
            #expect(total(m, PurgeableCacheMetrics.misses, c) == Int64(stats.misses))
            #expect(stats.misses == 13)
            let byLimits = ["policy", "rejected", "countLimit"].compactMap { evictions($0) }.reduce(0, +)
            #expect(byLimits == Int64(stats.evictions))
            #expect(evictions("memoryWarning") == Int64(stats.memoryWarningEvictions) && stats.memoryWarningEvictions > 0)
            #expect(evictions("background") == Int64(stats.backgroundEvictions) && stats.backgroundEvictions > 0)
            #expect(total(m, PurgeableCacheMetrics.discards, c) == 0)
            #expect(gauge(m, PurgeableCacheMetrics.entries, c) == Double(stats.count))
            #expect(gauge(m, PurgeableCacheMetrics.costBytes, c) == Double(stats.totalCost))
            #expect(stats.count == 0)
        }
        // The cache is gone: no gauge claims a count or a cost for it; the counters stay.
        #expect(m.recorders(label: PurgeableCacheMetrics.entries).isEmpty)
        #expect(m.recorders(label: PurgeableCacheMetrics.costBytes).isEmpty)
        #expect(total(m, PurgeableCacheMetrics.misses, c) == 13)
    }

    @Test("a cache that is only read publishes its hits and misses while it is busy, without statistics or publishMetrics")
    func readOnly() throws {
        let m = TestMetrics()
        let c = [("cache", "read-only")]
        let cache = withMetricsFactory(m) { PurgeableCache<Int, Int>(events: MemoryEvents(), metricsName: "read-only") }
        for k in 0..<64 { cache.setObject(k, forKey: k) }
        // Only lookups from here on: the batches they offer publish once the interval has passed
        // since the last (the real event waited for; the lookups keep it coming).
        let deadline = ContinuousClock.now + .seconds(30)
        var lookups = 0
        while (total(m, PurgeableCacheMetrics.hits, c) ?? 0) == 0 || (total(m, PurgeableCacheMetrics.misses, c) ?? 0) == 0 {
            try #require(ContinuousClock.now < deadline, "no hits or misses published after \(lookups) lookups")
            for k in 0..<128 { _ = cache.object(forKey: k) }  // 64 hits, 64 misses
            lookups += 128
        }
        let hits = try #require(total(m, PurgeableCacheMetrics.hits, c))
        let misses = try #require(total(m, PurgeableCacheMetrics.misses, c))
        #expect(hits > 0 && hits <= Int64(lookups / 2))
        #expect(misses > 0 && misses <= Int64(lookups / 2))
        // Published figures are the shards' counts at some moment: never more than the statistics.
        let stats = cache.statistics
        #expect(stats.hits == lookups / 2 && stats.misses == lookups / 2)
    }

    @Test("entries the kernel took are published as discards, matching the statistics")
    func discards() throws {
        let m = TestMetrics()
        let c = [("cache", "buffers")]
        let cache = withMetricsFactory(m) { PurgeableCache<Int, PurgeableBuffer>(name: "test-metrics-discards", events: MemoryEvents(), metricsName: "buffers") }
        let buffers = try (0..<8).map { i in try cache.setContent(Array(repeating: UInt8(i + 1), count: 64 * 1024), forKey: i) }
        for i in [0, 2, 4] { try Reclaim.pageOut(try #require(buffers[i].pageRange)) }
        #expect(try cache.withContent(forKey: 0) { $0[0] } == nil)
        #expect(cache.purgeDiscardedEntries() == 2)
        #expect(total(m, PurgeableCacheMetrics.discards, c) == 3, "published by the writes that removed them")
        let stats = cache.statistics
        #expect(stats.discards == 3)
        #expect(gauge(m, PurgeableCacheMetrics.entries, c) == 5)
        #expect(gauge(m, PurgeableCacheMetrics.costBytes, c) == Double(stats.totalCost))
        #expect(total(m, PurgeableCacheMetrics.misses, c) == Int64(stats.misses))
    }

    @Test("a cache without a metrics name emits nothing")
    func unnamed() {
        let m = TestMetrics()
        let events = MemoryEvents()
        let cache = withMetricsFactory(m) { PurgeableCache<Int, Int>(countLimit: 4, events: events) }
        for i in 0..<10 { cache.setObject(i, forKey: i, cost: 1) }
        for i in 0..<10 { _ = cache.object(forKey: i) }
        events.post(.memoryWarning)
        cache.publishMetrics()
        let stats = cache.statistics
        #expect(stats.hits > 0 && stats.evictions > 0)
        #expect(m.counters.isEmpty)
        #expect(m.recorders.isEmpty)
        #expect(cache.metricsName == nil)
    }
}
