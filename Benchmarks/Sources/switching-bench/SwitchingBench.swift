// switching-bench: the multi-app switching replay. N model apps of mixed sizes in a device
// budget (a memory cgroup), driven by an app-switching trace (Zipf popularity, a Markov model,
// or a trace file), under each jetsam policy and under the kernel's cgroup OOM killer alone;
// the budget and the apps' trim level swept. Per run: resumes against relaunches, kills,
// warnings, kernel OOM kills, switch latency (mean, p95) against the model's expectation, the
// background footprint, and every byte of state checked after each relaunch. Writes
// Reports/switching.{md,json}, switching.{gp,svg} (the Pareto frontier of background footprint
// against expected switch latency, per policy) and switching-model.{gp,svg}.
//
// Needs root and a memory cgroup controller (the device budget).

import MemPressureLifecycle
import ArgumentParser
import BenchSupport
import MemPressureCachePolicies
import Foundation
import Glibc
import MemPressureJetsam
import MemPressureSystem

enum TraceModel: String, ExpressibleByArgument, Codable, Sendable {
    case zipf, markov
}

@main
struct SwitchingBench: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "switching-bench",
        abstract: "The multi-app switching replay; writes Reports/switching.{md,json,gp,svg}.",
        discussion: """
            A trace file (--trace) is CSV, one switch per line: APP, or SECONDS,APP (seconds since the \
            trace began, non-decreasing; every line or none). An optional first line 'app' or \
            'seconds,app' is a header; empty lines and lines beginning with '#' are skipped. App names \
            are letters, digits, '.', '_', '-'; two lines in a row may not name the same app. Apps named \
            as in the catalogue (Messages, Safari, Mail, Photos, Maps, Music, Notes, Camera, Podcasts, \
            Weather, Calendar, Books) get that app's sizes; otherwise the catalogue's sizes are given \
            in order of first appearance.
            """)

    @Option(help: "The main package's release build directory (mempressure-exec, mempressure-workload).") var build = "../.build/release"
    @Option(help: "Where the report goes.") var output = "../Reports"
    @Option(help: "A switch trace file (CSV: 'app' or 'seconds,app' per line); default: a generated trace.") var trace: String?
    @Option(help: "The generated trace's model: zipf (independent Zipf draws) or markov (a seeded transition matrix with returns to the previous app).") var model: TraceModel = .markov
    @Option(help: "The generated trace's seed (SplitMix64).") var seed: UInt64 = 42
    @Option(help: "Zipf exponent of the apps' popularity.") var alpha = 1.0
    @Option(name: .customLong("return-probability"), help: "Markov: the chance that a switch goes back to the previous app.") var returnProbability = 0.4
    @Option(help: "Switches in the generated trace (default 40; 12 with --quick).") var switches: Int?
    @Option(help: "Model apps (2 to 12; default 10).") var apps = 10
    @Option(help: "Budgets, as room for this many apps of the mean footprint (default 3,5,8,12; 3,8 with --quick).") var budgets: String?
    @Option(help: "The apps' trim levels (default 0,0.5,1; 0.5 with --quick).") var trims: String?
    @Option(help: "Policies: ios, xnu, lmkd, largest, lru, cost, and kernel (no jetsam: the cgroup OOM killer alone) (default all; ios,cost,kernel with --quick).") var policies: String?
    @Option(help: "The apps rebuild what they trimmed before reporting ready on resume (eager), or after (lazy).") var restore = "eager"
    @Option(name: .customLong("decode-cost"), help: "The apps' decoding cost (rounds of mixing per KiB, as mempressure-workload's --decode-cost).") var decodeCost = 512
    @Option(name: .customLong("calibration-rounds"), help: "Resumes and relaunches per app and trim with no pressure (default 3; 1 with --quick).") var calibrationRounds: Int?
    @Option(help: "Write each run's supervisor log and jetsam episodes to DIR/run-N.json (for a closer look; not part of the report).") var logs: String?
    @Flag(help: "A smoke run: a short trace, 2 budgets, 1 trim, 3 policies (about a minute).") var quick = false
    @Flag(name: .customLong("render-only"), help: "Re-render the Markdown and the plots from the JSON.") var renderOnly = false

    func run() async throws {
        // Ctrl-C (or SIGTERM) cancels the measurement; the run under way then kills its apps and
        // removes its cgroups and files before the benchmark exits.
        let bench = self
        try await interruptible { try await bench.measure() }
    }

    static func list<T>(_ text: String, _ what: String, _ parse: (String) -> T?) throws -> [T] {
        let items = text.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }
        let out = items.compactMap(parse)
        guard !out.isEmpty, out.count == items.count else { throw ValidationError("--\(what): '\(text)' is not a comma-separated list of \(what)") }
        return out
    }

    func measure() async throws {
        let tool = "switching-bench"
        if renderOnly {
            let report = try readReport(SwitchingReport.self, from: output, named: "switching")
            try writeReport(report, to: output, named: "switching", tool: tool)
            return
        }
        guard Supervisor.canBudget() else { throw BenchError("switching-bench needs root and a memory cgroup controller (the device budget)") }
        let budgetList = try Self.list(budgets ?? (quick ? "3,8" : "3,5,8,12"), "budgets") { Double($0).flatMap { $0 >= 1 && $0 <= 64 ? $0 : nil } }
        let trimList = try Self.list(trims ?? (quick ? "0.5" : "0,0.5,1"), "trims") { Double($0).flatMap { (0...1).contains($0) ? $0 : nil } }
        let policyList = try Self.list(policies ?? (quick ? "ios,cost,kernel" : "ios,xnu,lmkd,largest,lru,cost,kernel"), "policies") { p -> String? in
            p == "kernel" || JetsamPolicyName(rawValue: p) != nil ? p : nil
        }
        guard restore == "eager" || restore == "lazy" else { throw ValidationError("--restore takes eager or lazy") }
        guard (2...AppProfile.catalogue.count).contains(apps) else { throw ValidationError("--apps takes 2 to \(AppProfile.catalogue.count)") }
        let switchCount = switches ?? (quick ? 12 : 40)
        guard switchCount >= 1, switchCount <= 100_000 else { throw ValidationError("--switches takes 1 to 100000") }
        let rounds = calibrationRounds ?? (quick ? 1 : 3)
        guard rounds >= 1, rounds <= 100 else { throw ValidationError("--calibration-rounds takes 1 to 100") }

        // The trace, and the apps it names.
        let switchTrace: SwitchTrace
        var profiles: [AppProfile]
        var notes: [String] = []
        if let file = trace {
            let bytes: [UInt8]
            do { bytes = try ProcFS.readBytes(file) } catch { throw BenchError("\(file): \(error)") }
            switchTrace = try SwitchTraceReader.parse(bytes, name: file)
            guard switchTrace.apps.count <= AppProfile.catalogue.count else {
                throw BenchError("\(file): \(switchTrace.apps.count) apps; the benchmark has sizes for at most \(AppProfile.catalogue.count)")
            }
            if switchTrace.apps.allSatisfy({ name in AppProfile.catalogue.contains { $0.0 == name } }) {
                profiles = switchTrace.apps.map { name in AppProfile(name: name, scale: AppProfile.catalogue.first { $0.0 == name }!.1) }
            } else {
                profiles = switchTrace.apps.enumerated().map { AppProfile(name: $1, scale: AppProfile.catalogue[$0].1) }
                notes.append("the trace's apps are not the catalogue's: they were given its sizes in order of first appearance")
            }
        } else {
            let names = AppProfile.catalogue.prefix(apps).map(\.0)
            switch model {
            case .zipf: switchTrace = SwitchTraceGenerator.zipf(apps: names, alpha: alpha, switches: switchCount, seed: seed)
            case .markov: switchTrace = SwitchTraceGenerator.markov(apps: names, alpha: alpha, returnProbability: returnProbability, switches: switchCount, seed: seed)
            }
            profiles = AppProfile.catalogue.prefix(apps).map { AppProfile(name: $0.0, scale: $0.1) }
        }
        let build = URL(fileURLWithPath: self.build).standardizedFileURL.path
        for program in ["mempressure-exec", "mempressure-workload"] where access("\(build)/\(program)", X_OK) != 0 {
            throw BenchError("\(build)/\(program) not found: build the main package in release first (swift build -c release at the top)")
        }
        // The apps' data in a directory of the run's own, made exclusively (mode 0700).
        let scratch = try CheckedDirectory.makeUnique(prefix: "mempressure-switching-bench-")
        defer { scratch.removeTree() }
        let data = scratch.path
        let setup = Setup(build: build, data: data, profiles: profiles, trace: switchTrace, restore: restore, decodeCost: decodeCost)
        let started = monotonicSeconds()
        let loadBefore = loadAverage()

        let runCount = trimList.count * budgetList.count * policyList.count
        let progress = BenchSupport.Progress(tool, total: trimList.count * 2 + runCount)
        // Each trim level: the apps' unloaded resume and relaunch times at that trim (the
        // model's inputs), measured just before its runs so that both see the machine alike;
        // the first calibration's footprints size the budgets (an app's footprint while
        // active does not depend on its trim: it rebuilds before it is active again).
        var calibration: [Calibration] = []
        var footprints: [UInt64] = []
        var meanFootprint: UInt64 = 0
        var runs: [RunResult] = []
        var index = 0
        for trim in trimList {
            try Task.checkCancellation()
            let cal = try await calibrate(setup, trim: trim, rounds: rounds, progress: progress)
            calibration += cal
            progress.step(2)
            if footprints.isEmpty {
                footprints = profiles.map { p in cal.first { $0.app == p.name }?.activeFootprintBytes ?? 0 }
                meanFootprint = footprints.reduce(0, +) / UInt64(max(1, footprints.count))
                guard meanFootprint > 0 else { throw BenchError("no footprint was sampled in the calibration") }
                log(tool, "mean app footprint \(ByteFormat.fixed(Double(meanFootprint) / 1048576, 1)) MiB; \(runCount) runs of \(switchTrace.switches.count) switches")
            }
            for k in budgetList {
                let budget = Int(Double(meanFootprint) * k) / 4096 * 4096
                for policy in policyList {
                    try Task.checkCancellation()
                    index += 1
                    let label = "[run \(index)/\(runCount)] trim \(trim), room for \(ByteFormat.fixed(k, 0)) (\(budget >> 20) MiB), \(policy)"
                    let r = try await replay(setup, policy: policy, budgetApps: k, budgetBytes: budget, trim: trim, calibration: calibration,
                                             runName: "run-\(index)", progress: progress, label: label, logs: logs)
                    runs.append(r)
                    progress.step()
                    if r.swapBytes > 0 { log(tool, "\(label): the machine had \(r.swapBytes >> 20) MiB of swap during the run (another program's?): its figures are not those of a machine without swap") }
                    if policy != "kernel", r.kernelOOMKills + r.warmupKernelOOMKills > 0 {
                        log(tool, "\(label): \(r.kernelOOMKills + r.warmupKernelOOMKills) kernel OOM kill(s) under jetsam")
                    }
                    if r.bytesLost > 0 { log(tool, "\(label): \(r.bytesLost) bytes of state lost (\(r.losses.map { "\($0.app): \($0.death)" }.joined(separator: "; ")))") }
                }
            }
        }
        let machine = Machine.current(loadBefore: loadBefore, loadAfter: loadAverage())
        var command = "make bench (cd Benchmarks && swift run -c release switching-bench --build ../.build/release --output ../Reports"
        if quick { command += " --quick" }
        if let trace { command += " --trace \(trace)" }
        command += ")"
        let report = SwitchingReport(
            machine: machine, command: command, quick: quick,
            trace: TraceInfo(name: switchTrace.name, file: trace, model: trace == nil ? model.rawValue : nil, seed: trace == nil ? seed : nil,
                             alpha: trace == nil ? alpha : nil, returnProbability: trace == nil && model == .markov ? returnProbability : nil,
                             apps: switchTrace.apps, switches: switchTrace.switches.count, switchCounts: switchTrace.switchCounts, timed: switchTrace.times != nil),
            restore: restore, decodeCost: decodeCost, profiles: profiles, footprints: footprints, meanAppFootprintBytes: meanFootprint,
            budgets: budgetList, trims: trimList, policies: policyList, calibrationRounds: rounds, calibration: calibration, runs: runs,
            totalSeconds: monotonicSeconds() - started, notes: notes)
        try writeReport(report, to: output, named: "switching", tool: tool)
    }
}

struct Machine: Codable, Sendable {
    var kernel: String
    var cpus: Int
    var memoryBytes: UInt64
    var swapBytes: UInt64
    /// The 1-minute load average before and after the measurement (the machine may be shared).
    var loadBefore: Double
    var loadAfter: Double

    static func current(loadBefore: Double, loadAfter: Double) -> Machine {
        var info = MemInfo()
        do {
            let bytes = try ProcFS.readBytes("/proc/meminfo")
            info = bytes.withUnsafeBytes { MemInfo.parse($0) }
        } catch {
            // Left empty: the report says 0.
        }
        return Machine(kernel: "Linux \(kernelRelease())", cpus: onlineCPUs, memoryBytes: info.totalBytes ?? 0, swapBytes: info.swapTotalBytes ?? 0,
                       loadBefore: loadBefore, loadAfter: loadAfter)
    }
}

/// SwapTotal from /proc/meminfo (0 when it cannot be read).
func swapTotalBytes() -> UInt64 {
    do {
        let bytes = try ProcFS.readBytes("/proc/meminfo")
        return bytes.withUnsafeBytes { MemInfo.parse($0) }.swapTotalBytes ?? 0
    } catch {
        return 0
    }
}

func loadAverage() -> Double {
    var loads = [Double](repeating: 0, count: 3)
    return getloadavg(&loads, 3) >= 1 ? loads[0] : 0
}

