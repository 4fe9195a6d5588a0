// jetsam-bench: decision latency, the ranker alone, memory back after a kill (with and without
// process_mrelease), and the same allocation spike under jetsam, the lmkd emulation, earlyoom,
// nohang and the kernel's cgroup OOM killer alone, without swap and on zram. Writes
// Reports/jetsam.{md,json,svg}.
//
// Needs root, a cgroup v1 memory controller and util-linux's unshare; earlyoom and nohang from
// Debian (`make bench` installs them). Each peer runs only inside a PID namespace of its own.

import ArgumentParser
import BenchSupport
import Foundation
import Glibc
import MemPressureCachePolicies
import MemPressureSystem

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
    @Option(help: "Rounds of the spike per killer and swap configuration (default 10).") var rounds = 10
    @Option(name: .customLong("spike-swap"), help: "The spike's swap configurations, comma-separated: none, zram (/dev/zram0, lz4, set up for its rounds and reset after; default none,zram; none with --quick).") var spikeSwap: String?
    @Option(name: .customLong("latency-rounds"), help: "Rounds of the decision-latency measurement.") var latencyRounds = 20
    @Option(name: .customLong("memory-rounds"), help: "Rounds per size of the memory-back measurement.") var memoryRounds = 15
    @Flag(name: .customLong("render-only"), help: "Re-render the Markdown and SVG from the JSON.") var renderOnly = false
    @Option(help: "Measure only this part (ranker, memory, latency, spike, end-to-end) and print it; no report is written.") var only: String?
    @Option(help: "The sections to measure, comma-separated (ranker, memory, latency, spike, end-to-end; default all): the others are kept from the jetsam.json in --output, and the report says so.") var sections: String?
    @Flag(help: "A smoke run CI can afford: few rounds everywhere; the end-to-end section with 30 apps, one seed and 6 rounds per condition.") var quick = false
    @Option(name: .customLong("end-to-end-rounds"), help: "Rounds per condition and seed of the end-to-end section (default 30; 6 with --quick).") var endToEndRounds: Int?
    @Option(name: .customLong("end-to-end-seeds"), help: "Seeds of the end-to-end section, comma-separated (default 1,2,3; 1 with --quick).") var endToEndSeeds: String?
    @Option(help: "Also write jetsam's episode reports of the end-to-end section into this directory (one subdirectory per seed and condition).") var episodes: String?

    static let allSections = ["ranker", "memory", "latency", "spike", "end-to-end"]

    /// `--spike-swap`: none and/or zram, each once.
    func spikeSwaps() throws -> [String] {
        let text = spikeSwap ?? (quick ? "none" : "none,zram")
        let list = text.split(separator: ",").map { String($0).trimmingCharacters(in: .whitespaces) }
        guard !list.isEmpty, list.allSatisfy({ $0 == "none" || $0 == "zram" }), Set(list).count == list.count else {
            throw ValidationError("--spike-swap takes none, zram or both, comma-separated, each once: \(text)")
        }
        return list
    }

    func validate() throws {
        for s in chosenSections where !Self.allSections.contains(s) {
            throw ValidationError("--sections takes \(Self.allSections.joined(separator: ", ")) (got '\(s)')")
        }
        if let endToEndRounds, endToEndRounds < 1 { throw ValidationError("--end-to-end-rounds must be at least 1") }
        if let endToEndSeeds, endToEndSeeds.split(separator: ",").contains(where: { UInt64($0) == nil }) || endToEndSeeds.isEmpty {
            throw ValidationError("--end-to-end-seeds takes seeds (unsigned integers) separated by commas")
        }
        _ = try spikeSwaps()
        guard rounds >= 1 else { throw ValidationError("--rounds must be at least 1") }
    }

    var chosenSections: [String] { sections.map { $0.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) } } ?? Self.allSections }

    /// The end-to-end section's plan, as the options make it.
    var endToEndPlan: EndToEndPlan {
        var plan = quick ? EndToEndPlan.quick() : EndToEndPlan.full()
        if let endToEndRounds { plan.roundsPerCondition = endToEndRounds }
        if let endToEndSeeds { plan.seeds = endToEndSeeds.split(separator: ",").compactMap { UInt64($0) } }
        return plan
    }

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
            case "end-to-end": print(String(decoding: try encoder.encode(try await endToEndLatency(plan: endToEndPlan, quick: quick, build: build, data: data, episodes: episodes)), as: UTF8.self))
            case "spike":
                var runs = [try await runSupervised(.jetsam, Spike(), round: 1, build: build, data: data)]
                runs.append(try await runSupervised(.lmkd, Spike(), round: 1, build: build, data: data))
                for peer in Peer.allCases { runs.append(try await runPeer(peer, Spike(), round: 1, build: build, data: data, benchBinary: (ProcFS.ownExecutablePath() ?? CommandLine.arguments[0]))) }
                for var r in runs {
                    r.series = []
                    print(String(decoding: try encoder.encode(r), as: UTF8.self))
                }
            default: throw BenchError("--only takes ranker, memory, latency, spike or end-to-end")
            }
            return
        }
        let sections = chosenSections
        // The sections not measured now come from the report this one replaces.
        var previous: JetsamReport?
        if sections.count < Self.allSections.count, ProcFS.isFile("\(output)/jetsam.json") {
            previous = try readReport(JetsamReport.self, from: output, named: "jetsam")
        }
        let command = quick
            ? "cd Benchmarks && swift run -c release jetsam-bench --quick --build ../.build/release --output DIR"
            : "make bench (cd Benchmarks && swift run -c release jetsam-bench --build ../.build/release --output ../Reports)"
        var report = JetsamReport(machine: "Linux \(kernelRelease()), \(onlineCPUs) CPUs", command: previous?.command ?? command)
        if sections.contains("end-to-end") {
            log(tool, "end to end: from the allocation that crosses the critical line to SIGKILL and memory back, kernel events against polling")
            report.endToEnd = try await endToEndLatency(plan: endToEndPlan, quick: quick, build: build, data: data, episodes: episodes)
        } else {
            report.endToEnd = previous?.endToEnd
        }
        try Task.checkCancellation()
        if sections.contains("ranker") {
            log(tool, "the ranker alone")
            report.ranker = try rankerTimings()
        } else {
            report.ranker = previous?.ranker
        }
        try Task.checkCancellation()
        if sections.contains("memory") {
            log(tool, "memory back after SIGKILL, with and without process_mrelease")
            report.memoryBack = try memoryBack(sizesMB: [64, 256, 1024], rounds: quick ? 3 : memoryRounds, build: build)
        } else {
            report.memoryBack = previous?.memoryBack
        }
        try Task.checkCancellation()
        if sections.contains("latency") {
            log(tool, "decision latency with 100 apps")
            report.latency = try await decisionLatency(apps: 100, rounds: quick ? 5 : latencyRounds, build: build, data: data)
        } else {
            report.latency = previous?.latency
        }
        if sections.contains("spike") {
            let spike = Spike()
            var runs: [SpikeRun] = []
            let me = (ProcFS.ownExecutablePath() ?? CommandLine.arguments[0])
            // Every contender of a round, in an order drawn from the round's seed.
            enum Contender { case supervised(SupervisedKiller), peer(Peer) }
            let contenders = SupervisedKiller.allCases.map(Contender.supervised) + Peer.allCases.map(Contender.peer)
            let swaps = try spikeSwaps()
            for swap in swaps {
                // zram as Android and ChromeOS use it, the size of the budget; reset after its rounds
                // (also when interrupted: the task is cancelled and this scope left).
                // No swap of the machine's own: "no swap" must be none, and zram the only one.
                let machineSwaps = String(decoding: (try? ProcFS.readBytes("/proc/swaps")) ?? [], as: UTF8.self).split(separator: "\n").dropFirst()
                if let other = machineSwaps.first {
                    throw BenchError("the machine has swap (\(other.split(separator: " ").first ?? "")): the spike's swap configurations need none of its own (swapoff it first)")
                }
                var zram: TemporaryZramSwap?
                if swap == "zram" {
                    do {
                        zram = try TemporaryZramSwap(index: 0, bytes: spike.budgetBytes, compressor: "lz4")
                    } catch {
                        throw BenchError("the spike on zram needs /dev/zram0 free and root to set it up: \(error) (--spike-swap none measures without it)")
                    }
                }
                defer { if let failure = zram?.remove() { log(tool, "LEFT BEHIND: \(failure)") } }
                // Each swap configuration's files (the peers' /proc/meminfo views, registries,
                // results) in a directory of its own: a round's names repeat across them.
                let swapData = "\(data)/spike-\(swap)"
                _ = try CheckedDirectory.open(swapData, creating: true)
                for round in 1...(quick ? 1 : rounds) {
                    var order = contenders
                    var g = SplitMix64(seed: UInt64(round) &* 0x9E37_79B9 &+ (swap == "zram" ? 1 : 0))
                    for i in stride(from: order.count - 1, to: 0, by: -1) { order.swapAt(i, Int(g.next() % UInt64(i + 1))) }
                    for contender in order {
                        try Task.checkCancellation()
                        zram?.resetPeak()
                        var run: SpikeRun
                        switch contender {
                        case .supervised(let which):
                            log(tool, "spike, \(swap), round \(round): \(which.rawValue)")
                            run = try await runSupervised(which, spike, round: round, build: build, data: swapData)
                        case .peer(let peer):
                            log(tool, "spike, \(swap), round \(round): \(peer.rawValue)")
                            run = try await runPeer(peer, spike, round: round, build: build, data: swapData, benchBinary: me)
                        }
                        run.swap = swap
                        run.zramPeakBytes = zram?.peakMemoryBytes()
                        // The plot shows round 1 of the first swap configuration: the others keep
                        // their figures, not their series.
                        if round > 1 || swap != swaps.first { run.series = [] }
                        runs.append(run)
                    }
                }
            }
            report.spike = spike
            report.runs = runs
        } else {
            report.spike = previous?.spike
            report.runs = previous?.runs
        }
        if let previous {
            let names = ["end-to-end": "end to end", "latency": "decision latency", "ranker": "the ranker alone", "memory": "memory back after a kill", "spike": "the same spike under every killer"]
            let kept = Self.allSections.filter { !sections.contains($0) }.filter { s in
                switch s {
                case "end-to-end": previous.endToEnd != nil
                case "latency": previous.latency != nil
                case "ranker": previous.ranker != nil
                case "memory": previous.memoryBack != nil
                default: previous.spike != nil
                }
            }
            if let earlier = previous.kept, !earlier.isEmpty {
                // The report replaced kept these sections from a run before it: that run's words
                // and machine still say where they come from.
                report.kept = earlier
                if let r = previous.machine.range(of: " (kept sections: ") { report.machine += String(previous.machine[r.lowerBound...]) }
            } else if !kept.isEmpty {
                report.kept = ["\(kept.compactMap { names[$0] }.joined(separator: ", ")): not measured by the run that wrote this report (`--sections \(sections.joined(separator: ","))`, on \(report.machine)); their figures are those of the jetsam.json it replaced (\(previous.machine), `\(previous.command)`)"]
                report.machine = previous.machine == report.machine ? report.machine : "\(report.machine) (kept sections: \(previous.machine))"
            }
        }
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


