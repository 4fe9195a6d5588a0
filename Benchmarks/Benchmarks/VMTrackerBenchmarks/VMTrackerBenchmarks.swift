// The VM Tracker's hot paths: parsing smaps text (a golden fixture captured from a real process,
// so every machine parses the same bytes) and snapshots of the whole machine from the live /proc
// (what `mempressure top` and `top --full` do; their figures depend on what the machine runs,
// hence the process count recorded beside them).

import Benchmark
import MemPressureSystem
import MicroSupport
import MemPressureVMTracker

/// The fixture captured by Tests/TestSupport/Fixtures/capture.sh: a python3 process, 157 regions.
/// Found from this file's own path (Benchmarks/Benchmarks/VMTrackerBenchmarks/ in the project).
let fixtureDirectory: String = {
    var parts = "\(#filePath)".split(separator: "/", omittingEmptySubsequences: false)
    parts.removeLast(4)
    return parts.joined(separator: "/") + "/Tests/TestSupport/Fixtures/proc/7992"
}()

func readFixture(_ name: String) throws -> [UInt8] {
    var buffer = ReadBuffer()
    try ProcFS.readFile("\(fixtureDirectory)/\(name)", into: &buffer)
    return buffer.withBytes { Array($0) }
}

/// How many processes the snapshot held: a change of machine, not of code, when it moves.
let processes = BenchmarkMetric.custom("processes", polarity: .prefersLarger, useScalingFactor: false)

let benchmarks: @Sendable () -> Void = {
    Micro.configure()

    Benchmark(Micro.name("smaps parse + classify (fixture, 157 regions)")) { (benchmark: Benchmark, text: [UInt8]) in
        for _ in benchmark.scaledIterations {
            var regions = try SmapsParser.parse(text)
            RegionClassifier.classify(&regions)
            blackHole(regions)
        }
    } setup: {
        let text = try readFixture("smaps")
        // The name says what is parsed: fail rather than measure something else.
        let regions = try SmapsParser.parse(text)
        guard regions.count == 157 else { throw FixtureChanged(regions: regions.count) }
        return text
    }

    Benchmark(Micro.name("smaps_rollup parse (fixture)"), configuration: .init(scalingFactor: .kilo)) { (benchmark: Benchmark, text: [UInt8]) in
        for _ in benchmark.scaledIterations {
            blackHole(try SmapsParser.parseRollup(text))
        }
    } setup: {
        try readFixture("smaps_rollup")
    }

    // What the machine runs decides these figures (its process count), so the regression gate,
    // which checks only what every run repeats exactly, leaves them out.
    guard !Micro.gate else { return }

    // One reader thread, so the figure does not depend on the machine's core count.
    let machine = Benchmark.Configuration(
        metrics: Micro.metrics + [processes], warmupIterations: 2, maxDuration: .seconds(3), maxIterations: 200,
        thresholds: Micro.thresholds.merging([
            // Each process read allocates: the count follows the machine's process count.
            .mallocCountTotal: BenchmarkThresholds(relative: [.p50: 10.0]),
        ]) { $1 })

    Benchmark(Micro.name("machine snapshot, smaps_rollup (top, 1 worker)"), configuration: machine) { benchmark in
        let snapshot = try Snapshotter().machine(options: .totalsOnly, workers: 1)
        benchmark.measurement(processes, snapshot.processes.count)
        blackHole(snapshot)
    }

    Benchmark(Micro.name("machine snapshot, full smaps (top --full, 1 worker)"), configuration: machine) { benchmark in
        let snapshot = try Snapshotter().machine(options: SnapshotOptions(detail: .regions), workers: 1)
        benchmark.measurement(processes, snapshot.processes.count)
        blackHole(snapshot)
    }
}

struct FixtureChanged: Error, CustomStringConvertible {
    var regions: Int
    var description: String { "the smaps fixture now has \(regions) regions, not 157: rename the benchmark" }
}
