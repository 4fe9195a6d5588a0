import CoreMetrics
import Glibc

/// The names of the metrics a `PurgeableCache` made with a `metricsName` emits through
/// swift-metrics, to whichever backend the process bootstrapped (`MetricsSystem.bootstrap`) or
/// bound to the task that made the cache (`withMetricsFactory`): the cache takes the factory
/// current when it is made. A cache without a `metricsName` emits nothing and its lookups do no
/// work for metrics at all.
///
/// Every metric has the label `cache` (the `metricsName`, which should be unique in the process).
///
/// | name | kind | labels | what (`PurgeableCache.Statistics`) |
/// |---|---|---|---|
/// | `mempressure_purgeable_cache_hits_total` | counter | `cache` | `hits` |
/// | `mempressure_purgeable_cache_misses_total` | counter | `cache` | `misses` (a discarded entry found by a lookup is a miss) |
/// | `mempressure_purgeable_cache_evictions_total` | counter | `cache`, `reason` | `evictions` by `policy` (to make room under the cost limit), `rejected` (turned away by admission), `countLimit`; and `memoryWarningEvictions` (`memoryWarning`), `backgroundEvictions` (`background`) |
/// | `mempressure_purgeable_cache_discards_total` | counter | `cache` | `discards`: entries whose content the kernel took, detected |
/// | `mempressure_purgeable_cache_cost_bytes` | gauge | `cache` | `totalCost` (bytes for `setContent`; whatever the caller says for `setObject`) |
/// | `mempressure_purgeable_cache_entries` | gauge | `cache` | `count` |
///
/// How fresh they are. A lookup never touches a metric (hits run at millions a second per
/// thread): each shard counts its hits and misses as it always does, and their sums are
/// published in batches — by a write (a store, a removal, a change of limits, a memory warning,
/// entering the background) and by every 256th lookup of a shard, at most every
/// `lookupPublishInterval` seconds; by every read of `statistics`; and by `publishMetrics()`. So
/// while the cache is written to or busy with lookups, hits and misses are at most about 0.1 s
/// old. A cache that is idle keeps its last few lookups (fewer than 256 per shard) until the
/// next batch: a process that wants them exact at a scrape calls `publishMetrics()` before it.
/// A lookup never waits for a batch: it publishes only if the cache's lock is free. Evictions, discards, the cost and the count are published by every write, when
/// they change: they are always current.
public enum PurgeableCacheMetrics {
    public static let hits = "mempressure_purgeable_cache_hits_total"
    public static let misses = "mempressure_purgeable_cache_misses_total"
    public static let evictions = "mempressure_purgeable_cache_evictions_total"
    public static let discards = "mempressure_purgeable_cache_discards_total"
    public static let costBytes = "mempressure_purgeable_cache_cost_bytes"
    public static let entries = "mempressure_purgeable_cache_entries"

    /// The most seconds a write leaves the published hits and misses behind the shards' counts.
    public static let lookupPublishInterval = 0.1
}

/// The counts by which a cache's evictions are published (`Statistics.evictions` sums the first
/// three).
@usableFromInline
struct EvictionCounts: Sendable, Hashable {
    @usableFromInline var policy = 0
    @usableFromInline var rejected = 0
    @usableFromInline var countLimit = 0

    @inlinable init() {}
}

/// What a cache last published, so that each publication adds the difference (kept under the
/// policy's lock, in `State`).
@usableFromInline
struct PublishedCounts: Sendable {
    var hits = 0
    var misses = 0
    var evictions = EvictionCounts()
    var memoryWarningEvictions = 0
    var backgroundEvictions = 0
    var discards = 0
    var count = -1
    var totalCost = -1
    /// Monotonic seconds of the last publication of the hits and misses.
    var lookupsAt = -Double.infinity

    @usableFromInline init() {}
}

/// One cache's metric handles.
@usableFromInline
final class CacheMetrics: Sendable {
    let hits: Counter
    let misses: Counter
    let policyEvictions: Counter
    let rejections: Counter
    let countLimitEvictions: Counter
    let memoryWarningEvictions: Counter
    let backgroundEvictions: Counter
    let discards: Counter
    let costBytes: Gauge
    let entries: Gauge

    init(name: String, factory: any MetricsFactory) {
        let d = [("cache", name)]
        func eviction(_ reason: String) -> Counter {
            Counter(label: PurgeableCacheMetrics.evictions, dimensions: d + [("reason", reason)], factory: factory)
        }
        hits = Counter(label: PurgeableCacheMetrics.hits, dimensions: d, factory: factory)
        misses = Counter(label: PurgeableCacheMetrics.misses, dimensions: d, factory: factory)
        policyEvictions = eviction("policy")
        rejections = eviction("rejected")
        countLimitEvictions = eviction("countLimit")
        memoryWarningEvictions = eviction("memoryWarning")
        backgroundEvictions = eviction("background")
        discards = Counter(label: PurgeableCacheMetrics.discards, dimensions: d, factory: factory)
        costBytes = Gauge(label: PurgeableCacheMetrics.costBytes, dimensions: d, factory: factory)
        entries = Gauge(label: PurgeableCacheMetrics.entries, dimensions: d, factory: factory)
    }

    /// Publishes what changed since `published`: the counters written under the policy's lock
    /// always, the lookups' sums when given.
    func publish(_ stats: PurgeableCacheStatisticsView, lookups: (hits: Int, misses: Int)?, _ published: inout PublishedCounts) {
        func add(_ counter: Counter, _ now: Int, _ then: inout Int) {
            if now > then { counter.increment(by: now - then) }
            then = max(then, now)
        }
        add(policyEvictions, stats.evictions.policy, &published.evictions.policy)
        add(rejections, stats.evictions.rejected, &published.evictions.rejected)
        add(countLimitEvictions, stats.evictions.countLimit, &published.evictions.countLimit)
        add(memoryWarningEvictions, stats.memoryWarningEvictions, &published.memoryWarningEvictions)
        add(backgroundEvictions, stats.backgroundEvictions, &published.backgroundEvictions)
        add(discards, stats.discards, &published.discards)
        if stats.count != published.count {
            entries.record(stats.count)
            published.count = stats.count
        }
        if stats.totalCost != published.totalCost {
            costBytes.record(stats.totalCost)
            published.totalCost = stats.totalCost
        }
        if let lookups {
            add(hits, lookups.hits, &published.hits)
            add(misses, lookups.misses, &published.misses)
            published.lookupsAt = Self.coarseSeconds()
        }
    }

    /// The monotonic clock at its coarse resolution (a few milliseconds): what a write asks to
    /// know whether the lookups are due, a read of the vDSO's time without the TSC.
    static func coarseSeconds() -> Double {
        var ts = timespec()
        clock_gettime(CLOCK_MONOTONIC_COARSE, &ts)
        return Double(ts.tv_sec) + Double(ts.tv_nsec) / 1e9
    }

    /// The cache is gone: its gauges no longer claim a count or a cost (the counters stay, so
    /// that a cache made again under the name goes on counting).
    func close() {
        costBytes.destroy()
        entries.destroy()
    }
}

/// The figures a publication reads, taken under the policy's lock.
struct PurgeableCacheStatisticsView {
    var evictions: EvictionCounts
    var memoryWarningEvictions: Int
    var backgroundEvictions: Int
    var discards: Int
    var count: Int
    var totalCost: Int
}
