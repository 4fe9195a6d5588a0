// programs-bench: resume against relaunch for real programs, each supervised as an app —
// redis-server, PostgreSQL and headless chromium, launched, frozen, paged out, resumed,
// terminated and relaunched by `Supervisor` like any app, their readiness told by a probe that
// also checks their data (configuration, `ReadinessProbe`; nothing in the supervisor knows them).
//
// Each round takes every condition once, in an order that turns with the round:
//
//   freeze         background (frozen by the cgroup freezer), 1.5 s away, activate
//   swap-file      frozen; a swap file on; the app's memory cgroup squeezed until its memory is
//                  on the swap device and out of the swap cache; limit restored; activate; swap off
//   zram           the same on /dev/zram0 (lz4), as Android and ChromeOS swap
//   relaunch-warm  terminate (SIGTERM: redis saves, postgres checkpoints), read every file it
//                  mapped and its data into the page cache, activate
//   relaunch-cold  terminate, drop from the page cache every file the app's processes mapped and
//                  every file of its data directory, activate
//   relaunch-killed  background (frozen), killed as jetsam kills (SIGKILL to the whole app, its
//                  memory released; nothing saved), its files read back, activate
//
// Then, once per program, jetsam's own decision (JetsamPhase.swift): under a supervisor with
// jetsam attached, the program frozen in the background and the model app in the foreground
// allocating past jetsam's critical line; jetsam must choose the program, which is then
// relaunched and its data checked.
//
// An activation returns once the readiness probe passes: the program answers ("ready"). Then the
// program's check runs until it passes: its whole dataset was read and found intact (DEBUG
// DIGEST; a hash over every row after pg_prewarm; a sum over every array of the page): "working",
// timed from the same start. A swap round proves it read from the swap device: its app's major faults
// (the cgroup's pgmajfault) and the machine's pswpin during the activation; a round whose major
// faults are below a quarter of what its swapped bytes need at one fault per readahead window is
// reported as invalid and left out of the figures.
//
// Writes Reports/real-programs.{md,json,gp,svg}. Needs root (cgroups, swapon, zram), redis-server,
// PostgreSQL with postgresql-contrib, chromium and curl (`make bench-deps`), and a machine with no
// swap of its own.

import ArgumentParser
import BenchSupport
import Foundation
import Glibc
import MemPressureLifecycle
import MemPressureLifecycleProtocol
import MemPressureSystem
import SystemPackage

@main
struct ProgramsBench: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "programs-bench",
        abstract: "Resume against relaunch for redis, PostgreSQL and chromium supervised as apps; writes Reports/real-programs.{md,json,gp,svg}.")

    @Option(help: "The main package's release build directory (mempressure-exec).") var build = "../.build/release"
    @Option(help: "Where the report goes.") var output = "../Reports"
    @Option(help: "Rounds: each takes every condition once, for each program.") var rounds = 20
    @Option(help: "The programs, separated by commas (redis, postgres, chromium).") var programs = "redis,postgres,chromium"
    @Option(help: "Each program's data, in MiB.") var megabytes = 96
    @Option(name: .customLong("pg-bin"), help: "PostgreSQL's programs (initdb, postgres).") var pgBin = "/usr/lib/postgresql/15/bin"
    @Flag(help: "A smoke run: 2 rounds, 24 MiB, redis and postgres (make bench-quick writes it to a temporary directory).") var quick = false
    @Flag(name: .customLong("render-only"), help: "Re-render the Markdown and the plot from the JSON.") var renderOnly = false

    static let reportName = "real-programs"

    func run() async throws {
        let bench = self
        try await interruptible { try await bench.measure() }
    }

    func measure() async throws {
        if renderOnly {
            let report = try readReport(ProgramsReport.self, from: output, named: Self.reportName)
            try writeReport(report, to: output, named: Self.reportName, tool: RealProgram.tool)
            return
        }
        guard getuid() == 0 else { throw BenchError("programs-bench needs root (memory cgroups, swapon, zram)") }
        guard Supervisor.canBudget() else { throw BenchError("programs-bench needs a memory cgroup controller to squeeze the apps") }
        let names = quick ? ["redis", "postgres"] : programs.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }
        for name in names where !["redis", "postgres", "chromium"].contains(name) {
            throw ValidationError("--programs takes redis, postgres and chromium: '\(name)'")
        }
        let rounds = quick ? 2 : self.rounds
        let megabytes = quick ? 24 : self.megabytes
        guard rounds >= 1, megabytes >= 8 else { throw ValidationError("--rounds takes at least 1 and --megabytes at least 8") }
        let build = URL(fileURLWithPath: self.build).standardizedFileURL.path
        guard access("\(build)/mempressure-exec", X_OK) == 0 else { throw BenchError("no \(build)/mempressure-exec: build the main package first (make build)") }
        var missing: [String] = []
        if names.contains("redis") { missing += ["/usr/bin/redis-server", "/usr/bin/redis-cli"].filter { access($0, X_OK) != 0 } }
        if names.contains("postgres") { missing += ["\(pgBin)/initdb", "\(pgBin)/postgres", "/usr/bin/psql", "/usr/bin/setpriv"].filter { access($0, X_OK) != 0 } }
        if names.contains("chromium") { missing += ["/usr/bin/chromium", "/usr/bin/curl"].filter { access($0, X_OK) != 0 } }
        guard missing.isEmpty else { throw BenchError("missing \(missing.joined(separator: ", ")): make bench-deps installs them") }
        let swaps = String(decoding: try ProcFS.readBytes("/proc/swaps"), as: UTF8.self).split(separator: "\n").count
        guard swaps <= 1 else { throw BenchError("this machine has swap of its own (/proc/swaps): the swap conditions need it off, so that they alone decide where pages go") }

        // The programs' data in a directory of the run's own (0700, made exclusively) on a disk:
        // the cold relaunch needs a page cache to drop, the swap file a file system that holds swap.
        let scratch = try CheckedDirectory.makeUnique(in: "/var/tmp", prefix: "mempressure-programs-bench-")
        defer { scratch.removeTree() }
        // postgres runs as the postgres user: it must be able to reach its directory.
        chmod(scratch.path, 0o711)
        var machine = Machine.current(scratch: scratch.path)
        let started = monotonicSeconds()
        var report = ProgramsReport(
            machine: machine, command: quick ? "programs-bench --quick" : "make bench-programs (cd Benchmarks && swift run -c release programs-bench --build ../.build/release --output ../Reports)",
            rounds: rounds, megabytes: megabytes, programs: [], cycles: [], notes: [], totalSeconds: 0)
        for name in names {
            let program: RealProgram
            switch name {
            case "redis": program = try RealProgram.redis(scratch: scratch.path, megabytes: megabytes)
            case "postgres": program = try RealProgram.postgres(scratch: scratch.path, binDirectory: pgBin, megabytes: megabytes)
            default: program = try RealProgram.chromium(scratch: scratch.path, megabytes: megabytes)
            }
            var run = ProgramRun(program: program, build: build, scratch: scratch.path, rounds: rounds, pageCluster: Int(machine.pageCluster) ?? 3)
            let (info, cycles) = try await run.measure()
            report.programs.append(info)
            report.cycles += cycles
        }
        machine.loadAverageAtEnd = Machine.loadAverage()
        report.machine = machine
        report.totalSeconds = monotonicSeconds() - started
        let impossible = report.impossibilities()
        try writeReport(report, to: output, named: Self.reportName, tool: RealProgram.tool)
        if !impossible.isEmpty { throw BenchError("IMPOSSIBLE: " + impossible.joined(separator: "; ")) }
    }
}

/// One program's rounds, under a supervisor of its own (its device cgroup holds that app alone).
struct ProgramRun {
    let program: RealProgram
    let build: String
    let scratch: String
    let rounds: Int
    let pageCluster: Int
    static let away = 1.5
    static let budget: UInt64 = 4 << 30

    mutating func measure() async throws -> (ProgramInfo, [Cycle]) {
        var c = SupervisorConfiguration()
        c.executableDirectory = build
        c.budgetBytes = Int(Self.budget)
        c.suspendMethod = .freezer
        c.sampleInterval = 10
        c.launchTimeout = 300
        c.callbackTimeout = 30
        c.terminateGrace = 120
        let s = try Supervisor(configuration: c)
        let run = self
        let (measured, cycles) = try await supervising(s) { try await run.rounds(with: $0) }
        // Then jetsam's own decision, under a supervisor of its own (JetsamPhase.swift). Its
        // budget: room for 20 times what the program held frozen (2 GiB at least), so that
        // crossing jetsam's line by half of what it holds stays short of the limit. A failure
        // there is reported, and the rounds are kept.
        var info = measured
        let held = cycles.filter { $0.condition == .freeze }.map(\.residentBeforeBytes).sorted()
        let budget = max(2 << 30, ((held.isEmpty ? 0 : held[held.count / 2]) * 20 + (256 << 20) - 1) / (256 << 20) * (256 << 20))
        do {
            info.jetsam = try await jetsamPhase(budget: budget)
        } catch is CancellationError {
            throw CancellationError()
        } catch {
            info.jetsamFailure = "\(error)"
            log(RealProgram.tool, "\(program.name): the jetsam phase failed: \(error)")
        }
        return (info, cycles)
    }

    func rounds(with s: Supervisor) async throws -> (ProgramInfo, [Cycle]) {
        guard let device = s.deviceMemoryCgroup else { throw BenchError("the supervisor made no memory cgroup") }
        let name = program.name
        let progress = Progress(RealProgram.tool, total: rounds * Condition.allCases.count + 1)
        progress.doing("\(name): first launch and its data")
        try await s.register(program.spec)
        try await s.activate(name)
        try program.fill(program)
        // The first launch that checks the data (and, for postgres, fills its shared buffers).
        try await s.terminate(name)
        try program.markActivation()
        try await s.activate(name)
        try checkWorking()
        progress.step()
        var cycles: [Cycle] = []
        var dropped: [DroppedFile] = []
        let conditions = Condition.allCases
        for round in 0..<rounds {
            for i in 0..<conditions.count {
                try Task.checkCancellation()
                let condition = conditions[(round + i) % conditions.count]
                progress.doing("\(name): round \(round + 1), \(condition.rawValue)")
                var cycle: Cycle
                if condition.isRelaunch {
                    let (c, files) = try await relaunch(condition, round: round, s: s, device: device)
                    cycle = c
                    if dropped.isEmpty { dropped = files }
                } else {
                    cycle = try await resume(condition, round: round, s: s, device: device)
                }
                cycle.program = name
                cycles.append(cycle)
                progress.step()
            }
        }
        try await s.terminate(name)
        let info = ProgramInfo(
            name: name, version: program.version, data: program.data, command: program.spec.command.joined(separator: " "),
            probe: program.spec.ready?.command.last ?? "", droppedForCold: dropped)
        return (info, cycles)
    }

    typealias Counters = SwapInCounters

    func resume(_ condition: Condition, round: Int, s: Supervisor, device: String) async throws -> Cycle {
        let name = program.name
        try await s.background(name)
        guard try await s.state(of: name) == .suspended else {
            throw BenchError("\(name) is not suspended after background (\(try await s.state(of: name)))")
        }
        let away = monotonicSeconds() + Self.away
        var swapFile: TemporarySwapFile?
        var zram: TemporaryZramSwap?
        defer {
            if let failure = swapFile?.remove() { log(RealProgram.tool, "the swap file: \(failure)") }
            if let failure = zram?.remove() { log(RealProgram.tool, "zram: \(failure)") }
        }
        var squeezedTo: UInt64?
        switch condition {
        case .swapFile: swapFile = try TemporarySwapFile(path: "\(scratch)/swap", bytes: 2 << 30)
        case .zram: zram = try TemporaryZramSwap(bytes: 2 << 30, compressor: "lz4")
        default: break
        }
        if swapFile != nil || zram != nil { squeezedTo = try squeeze(device) }
        let left = away - monotonicSeconds()
        if left > 0 { try await Task.sleep(for: .milliseconds(Int(left * 1000))) }
        try program.markActivation()
        let before = try Counters(memoryCgroup: device)
        let t0 = await s.now()
        try await s.activate(name)
        let ready = await s.now()
        try checkWorking()
        let t1 = await s.now()
        let after = try Counters(memoryCgroup: device)
        var cycle = Cycle(
            condition: condition, round: round, readyMs: (ready - t0) * 1000, ms: (t1 - t0) * 1000, swappedBytes: before.swapBytes, residentBeforeBytes: before.residentBytes,
            squeezedToBytes: squeezedTo, majorFaults: after.majorFaults &- before.majorFaults, pagesSwappedIn: after.pagesSwappedIn &- before.pagesSwappedIn)
        if condition == .swapFile || condition == .zram {
            // The check reads the whole dataset: what of it was swapped must come back.
            cycle.invalid = swapInShortfall(
                swappedBytes: before.swapBytes, mustReadBytes: program.dataBytes, majorFaults: cycle.majorFaults, pagesSwappedIn: cycle.pagesSwappedIn,
                zram: condition == .zram, pageCluster: pageCluster)
        }
        return cycle
    }

    /// Runs the program's check until it passes (at most 120 s): its whole dataset read and as
    /// it was made. A check that never passes is data lost, or a program not working: the run fails.
    func checkWorking() throws {
        let deadline = monotonicSeconds() + 120
        var tries = 0
        while true {
            tries += 1
            try Task.checkCancellation()
            let p = try ChildProcess(name: "check", tool: RealProgram.tool, argv: program.check, logPath: "\(scratch)/check-\(program.name).log")
            do {
                try p.waitForExit(timeout: 120, "running \(program.name)'s check")
            } catch {
                p.kill()
                throw error
            }
            if p.exitStatus == 0 { return }
            guard monotonicSeconds() < deadline else {
                throw BenchError("DATA CHECK FAILED: \(program.name)'s check did not pass in 120 s (\(tries) tries, the last exited \(describe(p.exitStatus ?? -1)))")
            }
            pause(0.002)
        }
    }

    /// Lowers the app's memory limit (the device cgroup holds only it) to a few MiB while it is
    /// frozen, so that the kernel writes its anonymous and shared memory to swap and drops it
    /// from the swap cache; steps up while the kernel refuses (EBUSY); restores the budget.
    /// Returns the limit reached.
    func squeeze(_ device: String) throws -> UInt64 {
        try squeezeV1MemoryLimit(device, from: 4 << 20, attempts: 256, restore: Self.budget)
    }

    func relaunch(_ condition: Condition, round: Int, s: Supervisor, device: String) async throws -> (Cycle, [DroppedFile]) {
        let name = program.name
        // The files its processes map, read while they run (for the cold drop, or the warming).
        var mapped = condition == .relaunchKilled ? [] : mappedFiles(of: try processes(inCgroupTree: device))
        let t0 = await s.now()
        if condition == .relaunchKilled {
            // Frozen in the background, then killed the way jetsam kills: the supervisor's kill
            // with jetsam's reason, which takes every process of the app without notice.
            try await s.background(name)
            guard try await s.state(of: name) == .suspended, let pid = try await s.pid(of: name) else {
                throw BenchError("\(name) is not suspended after background (\(try await s.state(of: name)))")
            }
            mapped = mappedFiles(of: try processes(inCgroupTree: device))
            _ = try await s.kill(name, pid: pid, reason: .vmPageShortage, expectedState: .suspended)
            try await s.waitForState(name, .notRunning, timeout: 60)
        } else {
            try await s.terminate(name)
        }
        let terminateMs = (await s.now() - t0) * 1000
        let dropped = condition == .relaunchCold ? try dropForColdStart(mapped: mapped, dataDirectory: program.directory) : []
        // Warm means warm: a squeeze in an earlier round may have taken its files' pages.
        if condition != .relaunchCold { try warmForStart(mapped: mapped, dataDirectory: program.directory) }
        try program.markActivation()
        let before = try Counters(memoryCgroup: device)
        let t1 = await s.now()
        try await s.activate(name)
        let ready = await s.now()
        try checkWorking()
        let t2 = await s.now()
        let after = try Counters(memoryCgroup: device)
        var cycle = Cycle(
            condition: condition, round: round, readyMs: (ready - t1) * 1000, ms: (t2 - t1) * 1000, swappedBytes: 0, residentBeforeBytes: 0, squeezedToBytes: nil,
            majorFaults: after.majorFaults &- before.majorFaults, pagesSwappedIn: after.pagesSwappedIn &- before.pagesSwappedIn)
        cycle.terminateMs = terminateMs
        if condition == .relaunchCold {
            cycle.droppedBytes = dropped.reduce(0) { $0 + $1.bytes }
            cycle.stillResidentBytes = dropped.reduce(0) { $0 + $1.residentAfterBytes }
        }
        return (cycle, dropped)
    }
}
