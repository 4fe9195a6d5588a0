// What every micro-benchmark suite shares: the metrics, the limits that keep the whole suite
// within a couple of minutes on two cores, and the tolerances `baseline check` applies.

import Benchmark

public enum Micro {
    /// Wall clock and throughput (the same figure both ways, so a report reads either) and the
    /// number of mallocs (exact, so any new allocation on a hot path shows). Instruction counts
    /// are left out: perf counters are not available on every machine (not on ours).
    public static let metrics: [BenchmarkMetric] = [.wallClock, .throughput, .mallocCountTotal]

    /// Time on a shared machine moves from run to run (on two busy cores, medians by 20% and
    /// more): a regression in time is a median at least a quarter slower, and only a repeated
    /// one is worth a look. Mallocs are counted, not timed, and the same in every run: any
    /// increase in the median is a regression.
    /// (A computed property: the package's threshold type is not `Sendable`.)
    public static var thresholds: [BenchmarkMetric: BenchmarkThresholds] {
        [
            .wallClock: BenchmarkThresholds(relative: [.p50: 25.0]),
            .throughput: BenchmarkThresholds(relative: [.p50: 25.0]),
            .mallocCountTotal: BenchmarkThresholds(absolute: [.p50: 0]),
        ]
    }

    /// Sets the suite's defaults: one second or 10 000 iterations per benchmark, whichever comes
    /// first, after a few warm-up iterations.
    public static func configure() {
        Benchmark.defaultConfiguration = .init(
            metrics: metrics, warmupIterations: 5, maxDuration: .seconds(1), maxIterations: 10_000, thresholds: thresholds)
    }
}
