// What every micro-benchmark suite shares: the metrics, the limits that keep the whole suite
// within a couple of minutes on two cores, and the tolerances `baseline check` applies.

import Benchmark
import Glibc

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

    /// The regression gate (`make bench-check`, `make bench-thresholds`; the environment's
    /// MEMPRESSURE_BENCH_GATE=1): only what is the same in every run on every machine is measured
    /// and checked against Benchmarks/Thresholds — the mallocs of a fixed number of iterations on
    /// seeded inputs. Time is left to the reports (ratios in one run); instruction counts would
    /// belong here too, but perf counters are not available on our machines (perf_event_open
    /// answers ENOENT for the hardware counters), so they are not measured anywhere.
    public static let gate: Bool = getenv("MEMPRESSURE_BENCH_GATE").map { String(cString: $0) == "1" } ?? false

    /// A benchmark's name as registered: as written, but in gate mode with spaces and slashes
    /// as underscores. `thresholds update` writes each threshold file under the name so changed
    /// while `thresholds check` looks for the name as written, so a name with a space is never
    /// found (ordo-one/benchmark#301, #373, open); names without either match.
    public static func name(_ text: String) -> String {
        gate ? String(text.map { $0 == " " || $0 == "/" ? "_" : $0 }) : text
    }

    /// The gate's tolerances: none. A malloc more on a hot path is a regression; a malloc fewer
    /// is an improvement the thresholds should record (`make bench-thresholds`).
    public static var gateThresholds: [BenchmarkMetric: BenchmarkThresholds] {
        [.mallocCountTotal: BenchmarkThresholds(absolute: [.p50: 0, .p90: 0, .p99: 0])]
    }

    /// Sets the suite's defaults: one second or 10 000 iterations per benchmark, whichever comes
    /// first, after a few warm-up iterations; for the gate, exactly 200 iterations after 5, so that
    /// every run does the same work.
    public static func configure() {
        if gate {
            Benchmark.defaultConfiguration = .init(
                metrics: [.mallocCountTotal], warmupIterations: 5, maxDuration: .seconds(3600), maxIterations: 200,
                thresholds: gateThresholds)
        } else {
            Benchmark.defaultConfiguration = .init(
                metrics: metrics, warmupIterations: 5, maxDuration: .seconds(1), maxIterations: 10_000, thresholds: thresholds)
        }
    }
}
