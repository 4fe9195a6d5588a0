// switching-bench: the multi-app switching evaluation. N model apps of real sizes in a device
// budget (a memory cgroup), driven by app-switching traces (by default a day of use generated
// from the LSApp dataset's published statistics, one per seed), under jetsam's policies and its
// rivals — the kernel's memcg OOM killer with the apps' states in oom_score_adj, the same killer
// blind to them, and an emulation of Android's lmkd — with no swap, zram or a swap file. Per run:
// switch time (p50/p95/p99, failed switches counted as timeouts), failed switches, relaunches,
// cached apps kept, kills per minute, refaults, PSI stall, CPU, state lost; per configuration the
// mean over seeds with a 95% bootstrap interval and a paired test against the best rival.
// Writes Reports/switching.{md,json} and switching.{gp,svg}.
//
// Needs root and a memory cgroup controller (the device budget); zram needs /dev/zram0 unused.

import MemPressureLifecycle
import ArgumentParser
import BenchSupport
import MemPressureCachePolicies
import Foundation
import Glibc
import MemPressureJetsam
import MemPressureSystem
import PeerKillers

enum TraceModel: String, ExpressibleByArgument, Codable, Sendable {
    case day, zipf, markov
}

/// The device's swap during a configuration's runs.
enum SwapSetup: String, ExpressibleByArgument, Codable, Sendable, CaseIterable {
    /// None (the machine's own, which should be none: a run that sees some says so).
    case none
    /// `/dev/zram0` with lz4, as Android and ChromeOS use it.
    case zram
    /// A swap file on the data directory's file system (/var/tmp).
    case file
}

@main
struct SwitchingBench: AsyncParsableCommand {
    /// A relaunch about 3× a resume at trim 0: PMR's (ATC '25) cold ≈ 3.1× hot on phones.
    static let defaultRelaunchRatio = 3.0
    static let configuration = CommandConfiguration(
        commandName: "switching-bench",
        abstract: "The multi-app switching evaluation; writes Reports/switching.{md,json,gp,svg}.",
        discussion: """
            Policies: default is jetsam with the library's defaults; a jetsam policy (ios, xnu, lmkd, \
            largest, lru, cost) is that policy with the defaults this evaluation began with (freeze-dry \
            under 16 MiB, a quarter of the budget freed, largest first in an ios band). Both run with \
            the kernel's OOM killer free to act (a kernel kill under jetsam is counted). Suffixes \
            combine (ios-freeze-lean): -hold holds the kernel's killer (oom_kill_disable) as the \
            library's default does; -freeze freeze-dries every suspended app before a kill when there \
            is swap; -lean frees to 5% of the budget, -freeN to N%; -lru orders an ios band least \
            recently used first, -largest largest first; -highN puts the high-memory line at N% of \
            the budget. kernel: no policy, the memory cgroup's OOM killer alone, the apps' \
            oom_score_adj set from their states; kernel-blind: the same with every app at \
            oom_score_adj 0; lmkd-emu: an emulation of Android's lmkd (PSI wake-ups, watermarks, \
            thrashing, min_score_adj levels, kill timeout); earlyoom, nohang: Debian's, with their own \
            thresholds (-matched: jetsam's, 20% and 5% available), each run in a PID namespace of its \
            own on a /proc/meminfo that shows the device. \
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
    @Option(help: "A switch trace file (CSV: 'app' or 'seconds,app' per line), replayed once per seed; default: a generated trace per seed.") var trace: String?
    @Option(help: "The generated trace's model: day (sessions after LSApp's statistics, timed), zipf (independent Zipf draws) or markov (a seeded transition matrix with returns to the previous app).") var model: TraceModel = .day
    @Option(help: "The seeds: one trace and one run per policy each (default 1-10; 1,2 with --quick).") var seeds: String?
    @Option(help: "Zipf exponent of the apps' popularity.") var alpha = 1.0
    @Option(name: .customLong("return-probability"), help: "Markov: the chance that a switch goes back to the previous app.") var returnProbability = 0.4
    @Option(help: "Switches in a zipf or markov trace (default 200; 30 with --quick).") var switches: Int?
    @Option(help: "Sessions in a day trace (default 20, about 115 switches; 5 with --quick).") var sessions: Int?
    @Option(name: .customLong("time-scale"), help: "A day trace's time scale (default 0.002: a median session of 106 s lasts 0.21 s).") var timeScale = 0.002
    @Option(name: .customLong("max-gap"), help: "Seconds an idle gap between sessions lasts at most once scaled (the screen is off; nothing runs; default 0.25).") var maxGap = 0.25
    @Option(help: "Model apps (2 to 12; default 10).") var apps = 10
    @Option(name: .customLong("relaunch-ratio"), help: "Each app draws a frame whenever it comes to the foreground (launch and resume), sized so that its relaunch costs this many times its resume at trim 0 with no pressure (default 3, PMR's cold ≈ 3.1× hot on phones; 0: no frame, a resume then costs far less).") var relaunchRatio = SwitchingBench.defaultRelaunchRatio
    @Option(name: .customLong("app-scale"), help: "Every app's sizes times this (default 4: footprints of about 35 to 150 MiB; 2 with --quick).") var appScale: Double?
    @Option(help: "Budgets, as room for this many apps of the mean footprint, for every swap configuration (3,5), or per swap configuration (none:3,none:5,zram:4; then --swap is not given). Default none:3,none:5,zram:4; 3 with --quick.") var budgets: String?
    @Option(help: "The apps' trim levels (default 0).") var trims: String?
    @Option(help: "Policies (default default,lmkd-emu,kernel,earlyoom,nohang; default,lmkd-emu,kernel,earlyoom with --quick).") var policies: String?
    @Option(help: "Swap configurations: none, zram, file (default none,zram; none with --quick).") var swap: String?
    @Option(help: "The apps rebuild what they trimmed before reporting ready on resume (eager), or after (lazy).") var restore = "eager"
    @Option(name: .customLong("decode-cost"), help: "The apps' decoding cost (rounds of mixing per KiB, as mempressure-workload's --decode-cost).") var decodeCost = 512
    @Option(name: .customLong("calibration-rounds"), help: "Resumes and relaunches per app and trim with no pressure (default 3; 1 with --quick).") var calibrationRounds: Int?
    @Option(help: "Write each run's supervisor log and jetsam episodes to DIR/run-N.json (for a closer look; not part of the report).") var logs: String?
    @Option(name: .customLong("peer-job"), help: .hidden) var peerJob: String?
    @Flag(help: "A smoke run: 2 seeds, 5 sessions, 1 budget, 3 policies, no swap (a few minutes).") var quick = false
    @Flag(name: .customLong("render-only"), help: "Re-render the Markdown and the plots from the JSON.") var renderOnly = false
    @Flag(help: "Keep every switch and every death of each run in the JSON (large); without it the JSON holds the figures only.") var raw = false
    @Flag(help: "Add the --policies given to the report in --output: the same seeds, traces, budgets, swap and trims, the same calibration and footprints (no new calibration), each seed's new runs in a seeded order; the report is rewritten with all its runs.") var add = false

    func run() async throws {
        // Ctrl-C (or SIGTERM) cancels the measurement; the run under way then kills its apps and
        // removes its cgroups, swap and files before the benchmark exits.
        let bench = self
        if let job = peerJob {
            // One run under earlyoom or nohang, as the first process of a PID namespace of its
            // own (the benchmark started it so: `replayInNamespace`).
            return try await bench.runPeerJob(job)
        }
        try await interruptible { try await bench.measure() }
    }

    static func list<T>(_ text: String, _ what: String, _ parse: (String) -> T?) throws -> [T] {
        let items = text.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }
        let out = items.compactMap(parse)
        guard !out.isEmpty, out.count == items.count else { throw ValidationError("--\(what): '\(text)' is not a comma-separated list of \(what)") }
        return out
    }

    /// The swap configurations and each one's budgets, from `--budgets` (K,... for every swap of
    /// `--swap`, default none and zram; or SWAP:K,... each for its own, `--swap` not given).
    static func configurations(budgets: String, swap: String?) throws -> [SwapConfiguration] {
        func room(_ text: Substring) -> Double? { Double(text).flatMap { $0 >= 1 && $0 <= 64 ? $0 : nil } }
        let items = budgets.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }
        if items.contains(where: { $0.contains(":") }) {
            guard swap == nil else { throw ValidationError("--budgets SWAP:K,... names the swap configurations itself: give no --swap") }
            var out: [SwapConfiguration] = []
            for item in items {
                let parts = item.split(separator: ":")
                guard parts.count == 2, let setup = SwapSetup(rawValue: String(parts[0])), let k = room(parts[1]) else {
                    throw ValidationError("--budgets: '\(item)' is not SWAP:K (SWAP none, zram or file; K from 1 to 64)")
                }
                if let i = out.firstIndex(where: { $0.swap == setup }) {
                    guard !out[i].budgets.contains(k) else { throw ValidationError("--budgets: \(item) twice") }
                    out[i].budgets.append(k)
                } else {
                    out.append(SwapConfiguration(swap: setup, budgets: [k]))
                }
            }
            return out
        }
        let ks = try list(budgets, "budgets") { room(Substring($0)) }
        let swaps = try list(swap ?? "none,zram", "swap") { SwapSetup(rawValue: $0) }
        return swaps.map { SwapConfiguration(swap: $0, budgets: ks) }
    }

    /// A policy name: kernel, kernel-blind, lmkd-emu, a jetsam policy, or a jetsam policy with -hold.
    static func isPolicy(_ p: String) -> Bool {
        if SwitchingReport.rivals.contains(p) || PeerPolicy(p) != nil { return true }
        return JetsamVariant(p) != nil
    }

    func measure() async throws {
        let tool = "switching-bench"
        if renderOnly {
            var report = try readReport(SwitchingReport.self, from: output, named: "switching")
            if !raw { report.dropRaw() }
            try writeReport(report, to: output, named: "switching", tool: tool)
            return
        }
        if add { return try await addPolicies(tool: tool) }
        guard Supervisor.canBudget() else { throw BenchError("switching-bench needs root and a memory cgroup controller (the device budget)") }
        let trimList = try Self.list(trims ?? "0", "trims") { Double($0).flatMap { (0...1).contains($0) ? $0 : nil } }
        let policyList = try Self.list(policies ?? (quick ? "default,lmkd-emu,kernel,earlyoom" : "default,lmkd-emu,kernel,earlyoom,nohang"), "policies") { Self.isPolicy($0) ? $0 : nil }
        if let missing = PeerPolicy.missingPrograms(policyList) { throw BenchError(missing) }
        let budgetText = budgets ?? (quick ? "3" : swap == nil ? "none:3,none:5,zram:4" : "4")
        let configurations = try Self.configurations(budgets: budgetText, swap: swap ?? (quick && !budgetText.contains(":") ? "none" : nil))
        let seedList = try Self.list(seeds ?? (quick ? "1,2" : "1,2,3,4,5,6,7,8,9,10"), "seeds") { UInt64($0) }
        guard restore == "eager" || restore == "lazy" else { throw ValidationError("--restore takes eager or lazy") }
        guard (2...AppProfile.catalogue.count).contains(apps) else { throw ValidationError("--apps takes 2 to \(AppProfile.catalogue.count)") }
        let switchCount = switches ?? (quick ? 30 : 200)
        guard switchCount >= 1, switchCount <= 100_000 else { throw ValidationError("--switches takes 1 to 100000") }
        let sessionCount = sessions ?? (quick ? 5 : 20)
        guard sessionCount >= 1, sessionCount <= 10_000 else { throw ValidationError("--sessions takes 1 to 10000") }
        guard timeScale > 0, timeScale <= 1, maxGap >= 0, maxGap <= 3600 else { throw ValidationError("--time-scale takes (0, 1], --max-gap 0 to 3600") }
        let scale = appScale ?? (quick ? 2 : 4)
        guard scale > 0, scale <= 64 else { throw ValidationError("--app-scale takes (0, 64]") }
        guard relaunchRatio == 0 || (relaunchRatio > 1 && relaunchRatio <= 100) else { throw ValidationError("--relaunch-ratio takes 0 (no frame) or more than 1, at most 100") }
        let rounds = calibrationRounds ?? (quick ? 1 : 3)
        guard rounds >= 1, rounds <= 100 else { throw ValidationError("--calibration-rounds takes 1 to 100") }

        // The traces (one per seed), and the apps they name.
        var traces: [(seed: UInt64, trace: SwitchTrace)] = []
        var profiles: [AppProfile]
        var notes: [String] = []
        if let file = trace {
            let bytes: [UInt8]
            do { bytes = try ProcFS.readBytes(file) } catch { throw BenchError("\(file): \(error)") }
            let t = try SwitchTraceReader.parse(bytes, name: file)
            guard t.apps.count <= AppProfile.catalogue.count else {
                throw BenchError("\(file): \(t.apps.count) apps; the benchmark has sizes for at most \(AppProfile.catalogue.count)")
            }
            if t.apps.allSatisfy({ name in AppProfile.catalogue.contains { $0.0 == name } }) {
                profiles = t.apps.map { name in AppProfile(name: name, scale: AppProfile.catalogue.first { $0.0 == name }!.1 * scale) }
            } else {
                profiles = t.apps.enumerated().map { AppProfile(name: $1, scale: AppProfile.catalogue[$0].1 * scale) }
                notes.append("the trace's apps are not the catalogue's: they were given its sizes in order of first appearance")
            }
            traces = seedList.map { ($0, t) }
        } else {
            let names = AppProfile.catalogue.prefix(apps).map(\.0)
            for seed in seedList {
                let t: SwitchTrace
                switch model {
                case .day: t = SwitchTraceGenerator.day(apps: names, alpha: alpha, sessions: sessionCount, seed: seed, timeScale: timeScale)
                case .zipf: t = SwitchTraceGenerator.zipf(apps: names, alpha: alpha, switches: switchCount, seed: seed)
                case .markov: t = SwitchTraceGenerator.markov(apps: names, alpha: alpha, returnProbability: returnProbability, switches: switchCount, seed: seed)
                }
                traces.append((seed, t))
            }
            profiles = AppProfile.catalogue.prefix(apps).map { AppProfile(name: $0.0, scale: $0.1 * scale) }
        }
        let build = URL(fileURLWithPath: self.build).standardizedFileURL.path
        for program in ["mempressure-exec", "mempressure-workload"] where access("\(build)/\(program)", X_OK) != 0 {
            throw BenchError("\(build)/\(program) not found: build the main package in release first (swift build -c release at the top)")
        }
        // The apps' data in a directory of the run's own, made exclusively (mode 0700).
        let scratch = try CheckedDirectory.makeUnique(prefix: "mempressure-switching-bench-")
        defer { scratch.removeTree() }
        let data = scratch.path
        var setup = Setup(build: build, data: data, profiles: profiles, restore: restore, decodeCost: decodeCost, maxGap: maxGap)
        let started = monotonicSeconds()
        let loadBefore = loadAverage()
        let peers = PeerVersions.read()

        let runCount = configurations.reduce(0) { $0 + $1.budgets.count } * trimList.count * traces.count * policyList.count
        let progress = BenchSupport.Progress(tool, total: trimList.count * 2 + runCount)
        // Each trim level: the apps' unloaded resume and relaunch times at that trim (the
        // model's inputs), measured before its runs, with no swap; the first calibration's
        // footprints size the budgets (an app's footprint while active does not depend on its
        // trim: it rebuilds before it is active again).
        var calibration: [Calibration] = []
        var footprints: [UInt64] = []
        var meanFootprint: UInt64 = 0
        if relaunchRatio > 0 {
            setup.profiles = try await sizeFrames(setup, ratio: relaunchRatio, rounds: rounds, progress: progress)
            profiles = setup.profiles
        }
        for trim in trimList {
            try Task.checkCancellation()
            calibration += try await calibrate(setup, trim: trim, rounds: rounds, progress: progress)
            progress.step(2)
        }
        footprints = profiles.map { p in calibration.first { $0.app == p.name }?.activeFootprintBytes ?? 0 }
        meanFootprint = footprints.reduce(0, +) / UInt64(max(1, footprints.count))
        guard meanFootprint > 0 else { throw BenchError("no footprint was sampled in the calibration") }
        let switchesPerRun = traces.map { $0.trace.switches.count }
        log(tool, "mean app footprint \(ByteFormat.fixed(Double(meanFootprint) / 1048576, 1)) MiB; \(runCount) runs of \(switchesPerRun.min() ?? 0)-\(switchesPerRun.max() ?? 0) switches")

        let runs = try await runMatrix(
            RunMatrix(configurations: configurations, trims: trimList, traces: traces, policies: policyList, meanFootprint: meanFootprint, calibration: calibration),
            setup: setup, progress: progress, tool: tool, labelPrefix: "run")
        let machine = Machine.current(loadBefore: loadBefore, loadAfter: loadAverage())
        var command = "make bench (cd Benchmarks && swift run -c release switching-bench --build ../.build/release --output ../Reports"
        if quick { command += " --quick" }
        if let trace { command += " --trace \(trace)" }
        if let seeds { command += " --seeds \(seeds)" }
        if let sessions { command += " --sessions \(sessions)" }
        if let budgets { command += " --budgets \(budgets)" }
        if let policies { command += " --policies \(policies)" }
        if let swap { command += " --swap \(swap)" }
        if let trims { command += " --trims \(trims)" }
        if relaunchRatio != Self.defaultRelaunchRatio { command += " --relaunch-ratio \(relaunchRatio)" }
        command += ")"
        let report = SwitchingReport(
            machine: machine, command: command, quick: quick, peers: peers,
            traces: traces.map { TraceInfo(seed: $0.seed, trace: $0.trace, file: trace, model: trace == nil ? model.rawValue : nil, alpha: alpha) },
            timeScale: trace == nil && model == .day ? timeScale : nil, maxGap: maxGap, appScale: scale,
            restore: restore, decodeCost: decodeCost, relaunchRatio: relaunchRatio, profiles: profiles, footprints: footprints, meanAppFootprintBytes: meanFootprint,
            budgets: configurations.flatMap(\.budgets).reduce(into: [Double]()) { if !$0.contains($1) { $0.append($1) } }, trims: trimList, policies: policyList,
            swaps: configurations.map(\.swap.rawValue), seeds: seedList, calibrationRounds: rounds,
            calibration: calibration, runs: runs, totalSeconds: monotonicSeconds() - started, notes: notes)
        try writeReport(report, to: output, named: "switching", tool: tool)
    }
}

/// The swap a configuration runs with, set up for its runs and removed after.
final class SwapDevice: Sendable {
    let zram: TemporaryZramSwap?
    let file: TemporarySwapFile?
    let setup: SwapSetup

    init(_ setup: SwapSetup, bytes: UInt64, directory: String) throws {
        self.setup = setup
        switch setup {
        case .none:
            zram = nil
            file = nil
        case .zram:
            do {
                zram = try TemporaryZramSwap(index: 0, bytes: bytes, compressor: "lz4")
            } catch {
                throw BenchError("zram swap: \(error)")
            }
            file = nil
        case .file:
            do {
                file = try TemporarySwapFile(path: "\(directory)/mempressure-switching-swap-\(getpid())", bytes: bytes)
            } catch {
                throw BenchError("swap file: \(error)")
            }
            zram = nil
        }
    }

    var description: String? {
        if let zram { return "swap: \(zram.device), \(zram.compressor), \(ByteFormat.human(zram.bytes)) (reset after these runs)" }
        if let file { return "swap: \(file.path), \(ByteFormat.human(file.bytes)) (removed after these runs)" }
        return nil
    }

    /// Removes it; a failure is said (the machine's swap is then not as it was).
    func remove() {
        for failure in [zram?.remove(), file?.remove()].compactMap({ $0 }) { log("switching-bench", "LEFT BEHIND: \(failure)") }
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

/// The rivals' versions, for the report: the kernel's (its OOM killer) and the lmkd source the
/// emulation follows.
struct PeerVersions: Codable, Sendable {
    var kernel: String
    var lmkd: String
    /// Debian's earlyoom and nohang (nil in reports written before they ran here, or not installed).
    var earlyoom: String?
    var nohang: String?

    static func read() -> PeerVersions {
        PeerVersions(kernel: "Linux \(kernelRelease()) (memcg OOM killer, cgroup v1)", lmkd: "AOSP platform/system/memory/lmkd, lmkd.cpp in PSI mode (the functions and properties cited in `LmkdEmulation`)",
                     earlyoom: debianVersion("earlyoom"), nohang: debianVersion("nohang"))
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

extension SwitchingBench {
    /// `--add`: the policies given, run on the report's own seeds, traces, budgets, swap and trims
    /// with its calibration, and added to it.
    func addPolicies(tool: String) async throws {
        var report = try readReport(SwitchingReport.self, from: output, named: "switching")
        guard let policies else { throw ValidationError("--add needs --policies: the policies to add") }
        guard report.formatVersion == SwitchingReport.currentFormat else {
            throw ValidationError("--add: the report in \(output) is of format \(report.formatVersion), this build writes \(SwitchingReport.currentFormat) (its figures are measured differently): run the whole benchmark again")
        }
        let added = try Self.list(policies, "policies") { Self.isPolicy($0) ? $0 : nil }
        if let again = added.first(where: { report.policies.contains($0) }) { throw ValidationError("--add: \(again) is in the report already") }
        if let missing = PeerPolicy.missingPrograms(added) { throw BenchError(missing) }
        // Peers added to a report written without them: their versions too.
        let versions = PeerVersions.read()
        if report.peers.earlyoom == nil { report.peers.earlyoom = versions.earlyoom }
        if report.peers.nohang == nil { report.peers.nohang = versions.nohang }
        guard trace == nil, report.traces.allSatisfy({ $0.model == "day" }), let timeScale = report.timeScale else {
            throw ValidationError("--add works on a report of generated day traces")
        }
        guard Supervisor.canBudget() else { throw BenchError("switching-bench needs root and a memory cgroup controller (the device budget)") }
        let build = URL(fileURLWithPath: self.build).standardizedFileURL.path
        let names = report.profiles.map(\.name)
        // The same traces: the generator is deterministic by seed; checked against the report.
        var traces: [(UInt64, SwitchTrace)] = []
        for info in report.traces {
            let t = SwitchTraceGenerator.day(apps: names, alpha: info.alpha ?? 1, sessions: info.sessions ?? 0, seed: info.seed, timeScale: timeScale)
            guard t.name == info.name, t.switches.count == info.switches, t.switchCounts == info.switchCounts else {
                throw BenchError("seed \(info.seed): the generator no longer gives the report's trace (\(t.name), \(t.switches.count) switches against \(info.switches))")
            }
            traces.append((info.seed, t))
        }
        let scratch = try CheckedDirectory.makeUnique(prefix: "mempressure-switching-bench-")
        defer { scratch.removeTree() }
        let setup = Setup(build: build, data: scratch.path, profiles: report.profiles, restore: report.restore, decodeCost: report.decodeCost, maxGap: report.maxGap)
        let started = monotonicSeconds()
        // The report's configurations: each swap with the budgets it has runs at.
        var configurations: [SwapConfiguration] = []
        for name in report.swaps {
            guard let setup = SwapSetup(rawValue: name) else { throw BenchError("the report's swap \(name) is unknown") }
            let ks = report.budgets.filter { k in report.runs.contains { $0.swap == name && $0.budgetApps == k } }
            if !ks.isEmpty { configurations.append(SwapConfiguration(swap: setup, budgets: ks)) }
        }
        // --swap picks some of the report's swap configurations (the others get no runs of the
        // added policies: their tables show them as not run).
        if let only = swap {
            let picked = try Self.list(only, "swap") { SwapSetup(rawValue: $0) }
            if let missing = picked.first(where: { p in !configurations.contains { $0.swap == p } }) { throw ValidationError("--add --swap: the report has no \(missing.rawValue) runs") }
            configurations = configurations.filter { picked.contains($0.swap) }
        }
        let matrix = RunMatrix(configurations: configurations, trims: report.trims, traces: traces, policies: added,
                               meanFootprint: report.meanAppFootprintBytes, calibration: report.calibration)
        let progress = BenchSupport.Progress(tool, total: matrix.count)
        report.runs += try await runMatrix(matrix, setup: setup, progress: progress, tool: tool, labelPrefix: "added run")
        report.policies += added
        report.totalSeconds += monotonicSeconds() - started
        report.notes.append("added afterwards with --add (the same traces, budgets and calibration; Linux \(kernelRelease()), load average \(ByteFormat.fixed(loadAverage(), 1)) at the end): " + added.joined(separator: ", ") + " — their runs are interleaved among themselves, not with the others, so a drift of the machine between the two sessions falls on the comparison")
        if !raw { report.dropRaw() }
        try writeReport(report, to: output, named: "switching", tool: tool)
    }
}

/// The runs of an evaluation: every swap configuration, trim, budget and seed, and in each the
/// policies in an order of the seed's own.
/// A swap configuration and the budgets its runs have.
struct SwapConfiguration: Sendable {
    var swap: SwapSetup
    var budgets: [Double]
}

struct RunMatrix {
    var configurations: [SwapConfiguration]
    var trims: [Double]
    var traces: [(seed: UInt64, trace: SwitchTrace)]
    var policies: [String]
    /// The mean app footprint: a budget of room for k apps is k times it.
    var meanFootprint: UInt64
    var calibration: [Calibration]

    var count: Int { configurations.reduce(0) { $0 + $1.budgets.count } * trims.count * traces.count * policies.count }
}

extension SwitchingBench {
    /// Runs `m`: each swap configuration set up for its runs only (removed after them, also when
    /// interrupted); the policies of one seed in an order of their own (seeded), so that a drift
    /// of the machine falls on every policy alike.
    func runMatrix(_ m: RunMatrix, setup: Setup, progress: BenchSupport.Progress, tool: String, labelPrefix: String) async throws -> [RunResult] {
        var runs: [RunResult] = []
        var index = 0
        for configuration in m.configurations {
            let swapSetup = configuration.swap
            let largestBudget = UInt64(Double(m.meanFootprint) * (configuration.budgets.max() ?? 1))
            let swapDevice = try SwapDevice(swapSetup, bytes: max(256 << 20, largestBudget * 2), directory: "/var/tmp")
            defer { swapDevice.remove() }
            if let text = swapDevice.description { log(tool, text) }
            for trim in m.trims {
                for k in configuration.budgets {
                    let budget = Int(Double(m.meanFootprint) * k) / 4096 * 4096
                    for (seed, seedTrace) in m.traces {
                        var order = m.policies
                        var g = SplitMix64(seed: seed &* 0x9E37_79B9_7F4A_7C15 &+ UInt64(index))
                        order.shuffle(using: &g)
                        for policy in order {
                            try Task.checkCancellation()
                            index += 1
                            let label = "[\(labelPrefix) \(index)/\(m.count)] \(swapSetup.rawValue), trim \(trim), room for \(ByteFormat.fixed(k, 0)) (\(budget >> 20) MiB), seed \(seed), \(policy)"
                            let run = RunSpec(setup: setup, trace: seedTrace, policy: policy, budgetApps: k, budgetBytes: budget, trim: trim, calibration: m.calibration,
                                              runName: "run-\(index)", label: label, logs: logs, zram: swapDevice.zram?.stats)
                            var r = PeerPolicy(policy) != nil
                                ? try await replayInNamespace(run, progress: progress)
                                : try await replay(run, progress: progress)
                            r.seed = seed
                            r.swap = swapSetup.rawValue
                            if !raw {
                                r.records = nil
                                r.deaths = nil
                            }
                            runs.append(r)
                            progress.step()
                            if swapSetup == .none, r.swapBytes > 0 { log(tool, "\(label): the machine had \(r.swapBytes >> 20) MiB of swap during the run (another program's?)") }
                            if r.bytesLost > 0 { log(tool, "\(label): \(r.bytesLost) bytes of state lost (\(r.losses.map { "\($0.app): \($0.death)" }.joined(separator: "; ")))") }
                        }
                    }
                }
            }
        }
        return runs
    }
}
