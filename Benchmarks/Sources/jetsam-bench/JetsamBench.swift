// jetsam-bench: decision latency, the ranker alone, memory back after a kill (with and without
// process_mrelease), and the same allocation spike under jetsam, earlyoom, nohang and the
// kernel's cgroup OOM killer alone. Writes Reports/jetsam.{md,json,svg}.
//
// Needs root, a cgroup v1 memory controller and util-linux's unshare; earlyoom and nohang from
// Debian (`make bench` installs them). Each peer runs only inside a PID namespace of its own.

import ArgumentParser
import BenchSupport
import Foundation
import Glibc
import LinuxSystem

@main
struct JetsamBench: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "jetsam-bench", abstract: "Jetsam's benchmarks; writes Reports/jetsam.{md,json,svg}.",
        subcommands: [Measure.self, PeerRun.self], defaultSubcommand: Measure.self)
}

struct Measure: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "measure")

    @Option(help: "The main package's release build directory (mempressure-exec, mempressure-workload, mempressure-hog).") var build = "../.build/release"
    @Option(help: "Where the report goes.") var output = "../Reports"
    @Option(help: "Rounds of the spike per killer.") var rounds = 5
    @Option(name: .customLong("latency-rounds"), help: "Rounds of the decision-latency measurement.") var latencyRounds = 20
    @Option(name: .customLong("memory-rounds"), help: "Rounds per size of the memory-back measurement.") var memoryRounds = 15
    @Flag(name: .customLong("render-only"), help: "Re-render the Markdown and SVG from the JSON.") var renderOnly = false
    @Option(help: "Measure only this part (ranker, memory, latency, spike) and print it; no report is written.") var only: String?

    func run() async throws {
        // Ctrl-C (or SIGTERM) cancels the measurement; every section then kills what it started
        // and removes its cgroups and files before the benchmark exits.
        let measure = self
        try await interruptible { try await measure.measure() }
    }

    func measure() async throws {
        if renderOnly {
            let report = try readReport(JetsamReport.self, from: output, named: "jetsam")
            try writeReport(report, to: output, named: "jetsam", tool: "jetsam-bench")
            return
        }
        guard getuid() == 0 else { throw BenchError("jetsam-bench needs root (memory cgroups, pidfds on its own children, PID namespaces)") }
        let build = URL(fileURLWithPath: self.build).standardizedFileURL.path
        // The run's files (the apps' data, the peers' logs and configurations) in a directory of
        // its own, made exclusively (mode 0700): never a name another user could make first.
        let scratch = try CheckedDirectory.makeUnique(prefix: "mempressure-jetsam-bench-")
        defer { scratch.removeTree() }
        let data = scratch.path
        let tool = "jetsam-bench"
        if let only {
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
            switch only {
            case "ranker": print(String(decoding: try encoder.encode(try rankerTimings()), as: UTF8.self))
            case "memory": print(String(decoding: try encoder.encode(try memoryBack(sizesMB: [64, 256, 1024], rounds: memoryRounds, build: build)), as: UTF8.self))
            case "latency": print(String(decoding: try encoder.encode(try await decisionLatency(apps: 100, rounds: latencyRounds, build: build, data: data)), as: UTF8.self))
            case "spike":
                var runs = [try await runJetsam(Spike(), round: 1, build: build, data: data)]
                for peer in Peer.allCases { runs.append(try await runPeer(peer, Spike(), round: 1, build: build, data: data, benchBinary: (ProcFS.ownExecutablePath() ?? CommandLine.arguments[0]))) }
                for var r in runs {
                    r.series = []
                    print(String(decoding: try encoder.encode(r), as: UTF8.self))
                }
            default: throw BenchError("--only takes ranker, memory, latency or spike")
            }
            return
        }
        log(tool, "the ranker alone")
        let ranker = try rankerTimings()
        try Task.checkCancellation()
        log(tool, "memory back after SIGKILL, with and without process_mrelease")
        let back = try memoryBack(sizesMB: [64, 256, 1024], rounds: memoryRounds, build: build)
        try Task.checkCancellation()
        log(tool, "decision latency with 100 apps")
        let latency = try await decisionLatency(apps: 100, rounds: latencyRounds, build: build, data: data)
        let spike = Spike()
        var runs: [SpikeRun] = []
        let me = (ProcFS.ownExecutablePath() ?? CommandLine.arguments[0])
        for round in 1...rounds {
            try Task.checkCancellation()
            log(tool, "spike round \(round): jetsam")
            var roundRuns = [try await runJetsam(spike, round: round, build: build, data: data)]
            for peer in Peer.allCases {
                log(tool, "spike round \(round): \(peer.rawValue)")
                roundRuns.append(try await runPeer(peer, spike, round: round, build: build, data: data, benchBinary: me))
            }
            // The plot shows round 1: later rounds keep their figures, not their series.
            if round > 1 { for i in roundRuns.indices { roundRuns[i].series = [] } }
            runs += roundRuns
        }
        let report = JetsamReport(
            machine: "Linux \(kernelRelease()), \(onlineCPUs) CPUs", command: "make bench (cd Benchmarks && swift run -c release jetsam-bench --build ../.build/release --output ../Reports)",
            latency: latency, ranker: ranker, memoryBack: back, spike: spike, runs: runs)
        try writeReport(report, to: output, named: "jetsam", tool: tool)
    }
}

struct PeerRun: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "peer-run", abstract: "Internal: one spike under a peer, inside its PID namespace.", shouldDisplay: false)
    @Option var peer: Peer
    @Option var cgroup: String
    @Option var build: String
    @Option var data: String
    @Option var spike: String
    @Option var round: Int
    @Option var output: String

    func run() throws {
        guard getpid() == 1 else { throw BenchError("peer-run runs only as the first process of a PID namespace of its own (under unshare --pid --fork --mount-proc)") }
        let s = try JSONDecoder().decode(Spike.self, from: Data(try ProcFS.readBytes(spike)))
        try peerRun(peer: peer, cgroup: cgroup, build: build, data: data, spike: s, round: round, output: output)
    }
}

extension Peer: ExpressibleByArgument {}


