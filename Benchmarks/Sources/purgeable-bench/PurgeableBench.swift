// purgeable-bench: the purgeable cache against Foundation's NSCache and a plain dictionary plus
// LRU, in the same run; the end/begin access round trip against recreating an entry; the
// simulator's speed; and miss ratios of every policy on Zipf traces. Writes
// Reports/purgeable-cache.{md,json,svg}.

import ArgumentParser
import BenchSupport
import MemPressureCachePolicies
import Foundation
import MemPressureSystem
import MemPressurePurgeable
import Synchronization

@main
struct PurgeableBench: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "purgeable-bench")

    @Option(help: "Keys resident in the caches for the hit measurements.") var keys = 100_000
    @Option(help: "Operations per thread per measurement.") var operations = 500_000
    @Option(help: "Rounds of each throughput measurement (interleaved, in a new order each round).") var rounds = 30
    @Option(help: "Round trips (and recreations) of a 1 MiB entry per round.") var roundTrips = 500
    @Option(help: "Requests in each simulated trace.") var requests = 1_000_000
    @Option(help: "Objects in each simulated trace.") var objects = 100_000
    @Option(help: "Requests in the trace file the simulator streams (its memory is also shown for a tenth of them).") var streamRequests = 20_000_000
    @Option(help: "Objects in the trace file the simulator streams.") var streamObjects = 1_000_000
    @Option(help: .hidden) var streamMemoryProbe: String?
    @Flag(help: .hidden) var probePolicies = false
    @Option(help: "Where to write purgeable-cache.md, .json, .gp and .svg.") var output = "../Reports"
    @Flag(help: "Re-render the Markdown and SVG from the JSON already in --output.") var renderOnly = false
    @Flag(help: "Measure only the miss ratios against libCacheSim and print their tables, writing nothing (a quick check of a policy change).") var missRatiosOnly = false
    @Flag(help: "Measure only the hits' throughput and print its table, writing nothing (a quick check of a hit-path change; try --rounds 5).") var hitsOnly = false
    @Option(help: "With --hits-only: only these caches, comma-separated (nscache, dictionary, dictionary-lru, lru, sieve, s3fifo, tinylfu, harness).") var caches: String?
    @Flag(help: "With --hits-only: one thread only (no scaling check then).") var oneThread = false
    @Option(help: "Give every PurgeableCache measured this metrics name (it publishes through swift-metrics; no backend is bootstrapped, so swift-metrics' no-op one takes the figures): what publishing costs.") var metricsName: String?

    func run() async throws {
        if let streamMemoryProbe {
            // A child of the simulator section, measuring one streamed pass in a fresh process.
            try probeStreamMemory(streamMemoryProbe)
            return
        }
        if renderOnly {
            try write(try readReport(Report.self, from: output, named: "purgeable-cache"))
            return
        }
        if hitsOnly {
            var report = Report(kernel: kernelRelease(), cpus: onlineCPUs, keys: keys, operations: operations, rounds: rounds, requests: requests, objects: objects)
            let names = caches.map { $0.split(separator: ",").map(String.init) }
            let kinds = try names.map { try $0.map { name in
                guard let kind = Kind.allCases.first(where: { $0.slug == name }) else {
                    throw ValidationError("--caches: no cache named \(name); the names: \(Kind.allCases.map(\.slug).joined(separator: ", "))")
                }
                return kind
            } } ?? Kind.allCases
            report.throughput = try measureThroughput(operations: [.hit], kinds: kinds, threadCounts: oneThread ? [1] : [1, 2])
            print(report.throughputMarkdown())
            return
        }
        var report = Report(kernel: kernelRelease(), cpus: onlineCPUs, keys: keys, operations: operations, rounds: rounds, requests: requests, objects: objects)
        if missRatiosOnly {
            // Printed, not written: a partial run must not replace the whole report.
            (report.missRatios, report.libCacheSimVersion, report.libCacheSimMissing) = try measureMissRatios()
            print(report.missRatioMarkdown())
            return
        }
        report.loadAverageAtStart = Machine.loadAverage()
        report.throughput = try measureThroughput()
        report.roundTrip = try measureRoundTrip()
        report.simulatorStream = try measureSimulator()
        (report.missRatios, report.libCacheSimVersion, report.libCacheSimMissing) = try measureMissRatios()
        report.loadAverageAtEnd = Machine.loadAverage()
        try write(report)
    }

    // MARK: Report

    func write(_ report: Report) throws {
        try writeReport(report, to: output, named: "purgeable-cache", tool: "purgeable-bench")
    }
}

struct Report: RenderedReport {
    var kernel: String
    var cpus: Int
    var keys: Int
    var operations: Int
    var rounds: Int
    var requests: Int
    var objects: Int
    var throughput: [Throughput] = []
    var roundTrip: RoundTrip?
    var simulatorStream: SimulatorSection?
    var missRatios: [MissRatioRow] = []
    /// The libcachesim package's version, when its miss ratios were measured.
    var libCacheSimVersion: String?
    /// Why libCacheSim's miss ratios were not measured.
    var libCacheSimMissing: String?
    /// The machine's load average (1, 5, 15 min) when the run began and when it ended.
    var loadAverageAtStart: String?
    var loadAverageAtEnd: String?

    func markdown() -> String {
        var out = """
            # Purgeable cache performance

            Regenerate with `make bench` (or `cd Benchmarks && swift run -c release purgeable-bench`); \
            `purgeable-cache.json` holds every sample. Machine: Linux \(kernel), \(cpus) CPUs. Every figure \
            below was measured in the same run, rounds interleaved (\(rounds) rounds; medians). Load \
            average (1, 5, 15 min) \(loadAverageAtStart ?? "not recorded") when the run began, \
            \(loadAverageAtEnd ?? "not recorded") when it ended.


            """
        out += throughputMarkdown()
        out += roundTripMarkdown()
        out += simulatorMarkdown()
        out += missRatioMarkdown()
        return out
    }

    func plots() -> [Plot] {
        var rows: [(label: String, value: Double, highlight: Bool)] = []
        for kind in PurgeableBench.Kind.allCases where kind != .harness {
            for threads in [1, 2] {
                rows.append(("\(kind.rawValue), \(threads) thread\(threads == 1 ? "" : "s")", median(kind, .hit, threads) / 1e6, kind == .nscache))
            }
        }
        return [Plot.bars(name: "purgeable-cache", title: "get (hit), millions of operations per second (median)", rows: rows, unit: "", decimals: 2)]
            + simulatorPlots()
    }
}

