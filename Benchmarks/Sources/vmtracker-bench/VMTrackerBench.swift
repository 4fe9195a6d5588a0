// vmtracker-bench: how long a whole-machine VM snapshot takes, against the floor of only reading
// the same /proc files, against smem, and per process against pmap -XX; with several hundred
// real processes running. Every figure is measured in the same run, rounds interleaved, so the
// ratios hold on a shared, noisy machine. Writes Reports/vmtracker.{md,json,svg}.

import ArgumentParser
import BenchSupport
import FoundationEssentials
import Glibc
import MemPressureSystem
import MemPressureHogClient
import Subprocess
import SystemPackage
import MemPressureVMTracker

@main
struct VMTrackerBench: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "vmtracker-bench")

    @Option(help: "Hog processes to start before measuring.") var processes = 400
    @Option(help: "Rounds of each whole-machine measurement.") var rounds = 15
    @Option(help: "Rounds of smem (it is slow).") var smemRounds = 3
    @Option(help: "Rounds of the start-up measurements (whole processes, before the hogs start).") var startupRounds = 30
    @Option(help: "Regions (x2) of the process used for the per-process comparison.") var bigRegions = 10_000
    @Option(help: "Directory holding the release build of mempressure and mempressure-hog.") var mempressureBuild = "../.build/release"
    @Option(help: "Where to write vmtracker.md, .json, .gp and .svg.") var output = "../Reports"
    @Flag(help: "Re-render vmtracker.md and the plot from the vmtracker.json already in --output, without measuring.")
    var renderOnly = false

    func run() async throws {
        if renderOnly {
            try write(try readReport(BenchReport.self, from: output, named: "vmtracker"))
            return
        }
        raiseFileLimit()
        let hog = "\(mempressureBuild)/mempressure-hog"
        let cli = "\(mempressureBuild)/mempressure"
        // The hogs' files in a directory of the run's own, made exclusively (mode 0700).
        let directory = try CheckedDirectory.makeUnique(prefix: "vmtracker-bench-")
        defer { directory.removeTree() }
        let scratch = directory.path
        // One-shot commands as whole processes, on the machine as it is: before any hog starts.
        let startup = try Startup.measure(cli: cli, rounds: startupRounds, scratch: directory)

        let gate = Gate()
        let ready = Arrivals()
        try await withThrowingTaskGroup(of: Void.self) { group in
            for i in 0..<processes {
                let args = Self.hogArguments(i, scratch: scratch)
                group.addTask {
                    do {
                        try await Hog.with(args, executable: hog) { _ in
                            await ready.arrive()
                            await gate.wait()
                        }
                    } catch {
                        await ready.fail(error)
                        throw error
                    }
                }
            }
            // One process with tens of thousands of regions for the per-process comparison.
            let big = BigProcess()
            group.addTask {
                do {
                    try await Hog.with(["--regions", "\(bigRegions)", "--dirty", "1m"], executable: hog) { info in
                        await big.set(info.pid)
                        await ready.arrive()
                        await gate.wait()
                    }
                } catch {
                    await ready.fail(error)
                    throw error
                }
            }
            do {
                try await ready.wait(for: processes + 1)
            } catch {
                await gate.open()  // let the hogs that did start end
                throw error
            }
            let bigPID = await big.pid!
            log("started \(processes + 1) processes")
            do {
                var report = try await measure(cli: cli, bigPID: bigPID)
                report.startup = startup
                try write(report)
            } catch {
                await gate.open()
                throw error
            }
            await gate.open()
            try await group.waitForAll()
        }
    }

    static func hogArguments(_ i: Int, scratch: String) -> [String] {
        switch i % 4 {
        case 0: ["--dirty", "512k"]
        case 1: ["--dirty", "256k", "--purgeable", "256k"]
        case 2: ["--dirty", "128k", "--file", "\(scratch)/file-\(i)", "--file-bytes", "256k"]
        default: ["--regions", "100", "--dirty", "64k"]
        }
    }

    // MARK: Measurements

    func measure(cli: String, bigPID: Int32) async throws -> BenchReport {
        let snapshotter = Snapshotter()
        var buffer = ReadBuffer()
        // What the machine looks like now.
        let census = try snapshotter.machine(options: SnapshotOptions(detail: .regions))
        let regionCount = census.processes.reduce(0) { $0 + $1.regions.count }
        var smapsBytes = 0
        for pid in try ProcFS().pids() {
            if let n = readOnly(pid: pid, file: "smaps", buffer: &buffer) { smapsBytes += n }
        }
        log("\(census.processes.count) processes, \(regionCount) regions, \(smapsBytes) bytes of smaps")

        var m = Measurements()
        for round in 0..<rounds {
            log("round \(round + 1)/\(rounds)")
            let pids = try ProcFS().pids()
            // The floor: read every smaps, parse nothing.
            m.time("floor: read all smaps in-process (1 thread)") {
                for pid in pids { _ = readOnly(pid: pid, file: "smaps", buffer: &buffer) }
            }
            try await m.time("floor: cat /proc/[0-9]*/smaps") {
                try await runDiscarding("/bin/sh", ["-c", "cat /proc/[0-9]*/smaps >/dev/null 2>&1; true"])
            }
            try m.time("snapshot: full smaps, parsed + classified (1 thread)") {
                _ = try snapshotter.machine(options: SnapshotOptions(detail: .regions), workers: 1)
            }
            try m.time("snapshot: full smaps, parsed + classified (\(Snapshotter.defaultWorkers) threads)") {
                _ = try snapshotter.machine(options: SnapshotOptions(detail: .regions))
            }
            try m.time("snapshot: smaps_rollup only (1 thread)") {
                _ = try snapshotter.machine(options: .totalsOnly, workers: 1)
            }
            try await m.time("command: mempressure top --full --json") {
                try await runDiscarding(cli, ["top", "--full", "--json"])
            }
            try await m.time("command: mempressure top") {
                try await runDiscarding(cli, ["top"])
            }
            // Per process: the one with tens of thousands of regions.
            try await m.time("per-process: pmap -XX (\(2 * bigRegions)+ regions)") {
                try await runDiscarding("/usr/bin/pmap", ["-XX", "\(bigPID)"])
            }
            try await m.time("per-process: mempressure vm --only --regions (\(2 * bigRegions)+ regions)") {
                try await runDiscarding(cli, ["vm", "\(bigPID)", "--only", "--regions"])
            }
            try m.time("per-process: Snapshotter.process (\(2 * bigRegions)+ regions)") {
                _ = try snapshotter.process(bigPID, options: SnapshotOptions(detail: .regions))
            }
            m.time("per-process: read smaps only (\(2 * bigRegions)+ regions)") {
                _ = readOnly(pid: bigPID, file: "smaps", buffer: &buffer)
            }
        }
        let smem = "/usr/bin/smem"
        let haveSmem = access(smem, X_OK) == 0
        if haveSmem {
            for round in 0..<smemRounds {
                log("smem round \(round + 1)/\(smemRounds)")
                try await m.time("command: smem (all processes, from smaps)") {
                    try await runDiscarding(smem, ["-c", "pid user command swap uss pss rss"])
                }
                try await m.time("command: mempressure top --full --json") {
                    try await runDiscarding(cli, ["top", "--full", "--json"])
                }
                try await m.time("command: mempressure top") {
                    try await runDiscarding(cli, ["top"])
                }
            }
        }

        var ratios: [BenchReport.Ratio] = []
        func ratio(_ name: String, _ a: String, _ b: String, target: String) {
            guard let x = m.median(a), let y = m.median(b) else { return }
            ratios.append(.init(name: name, numerator: a, denominator: b, value: x / y, target: target))
        }
        let one = "snapshot: full smaps, parsed + classified (1 thread)"
        let many = "snapshot: full smaps, parsed + classified (\(Snapshotter.defaultWorkers) threads)"
        ratio("snapshot / in-process read floor", one, "floor: read all smaps in-process (1 thread)", target: "<= 1.3")
        ratio("snapshot / cat floor", one, "floor: cat /proc/[0-9]*/smaps", target: "<= 1.3")
        ratio("parallel snapshot / cat floor", many, "floor: cat /proc/[0-9]*/smaps", target: "<= 1.3")
        ratio("mempressure top --full --json / cat floor", "command: mempressure top --full --json", "floor: cat /proc/[0-9]*/smaps", target: "(whole command)")
        if haveSmem {
            ratio("smem / mempressure top --full --json (full smaps, like smem)", "command: smem (all processes, from smaps)", "command: mempressure top --full --json", target: ">= 10")
            ratio("smem / mempressure top (same per-process totals, from smaps_rollup)", "command: smem (all processes, from smaps)", "command: mempressure top", target: ">= 10")
        }
        ratio("pmap -XX / mempressure vm", "per-process: pmap -XX (\(2 * bigRegions)+ regions)", "per-process: mempressure vm --only --regions (\(2 * bigRegions)+ regions)", target: "(higher is faster)")
        ratio("Snapshotter.process / read floor", "per-process: Snapshotter.process (\(2 * bigRegions)+ regions)", "per-process: read smaps only (\(2 * bigRegions)+ regions)", target: "(parse overhead)")

        return BenchReport(
            kernel: kernelRelease(), cpus: Int(sysconf(Int32(_SC_NPROCESSORS_ONLN))), processes: census.processes.count,
            regions: regionCount, smapsBytes: smapsBytes, rounds: rounds, smemRounds: haveSmem ? smemRounds : 0,
            measurements: m.summaries(), ratios: ratios, notes: haveSmem ? [] : ["smem is not installed: no smem comparison (apt-get install smem)"])
    }

    func write(_ report: BenchReport) throws {
        try writeReport(report, to: output, named: "vmtracker", tool: "vmtracker-bench")
    }
}

// MARK: Helpers

actor Gate {
    private var isOpen = false
    private var waiters: [CheckedContinuation<Void, Never>] = []
    func wait() async {
        if isOpen { return }
        await withCheckedContinuation { waiters.append($0) }
    }
    func open() {
        isOpen = true
        for w in waiters { w.resume() }
        waiters.removeAll()
    }
}

/// Counts processes that came up; `wait(for:)` returns once `n` have, or throws the first
/// failure to start one (the event itself, not a poll).
actor Arrivals {
    private var count = 0
    private var failure: (any Error)?
    private var waiter: (target: Int, continuation: CheckedContinuation<Void, any Error>)?

    func arrive() {
        count += 1
        settle()
    }

    func fail(_ error: any Error) {
        if failure == nil { failure = error }
        settle()
    }

    func wait(for target: Int) async throws {
        if let failure { throw failure }
        if count >= target { return }
        try await withCheckedThrowingContinuation { waiter = (target, $0) }
    }

    private func settle() {
        guard let w = waiter else { return }
        if let failure {
            waiter = nil
            w.continuation.resume(throwing: failure)
        } else if count >= w.target {
            waiter = nil
            w.continuation.resume()
        }
    }
}

actor BigProcess {
    private(set) var pid: Int32?
    func set(_ pid: Int32) { self.pid = pid }
}

struct BenchReport: RenderedReport {
    struct Ratio: Codable {
        var name: String
        var numerator: String
        var denominator: String
        var value: Double
        var target: String
    }

    var kernel: String
    var cpus: Int
    var processes: Int
    var regions: Int
    var smapsBytes: Int
    var rounds: Int
    var smemRounds: Int
    var measurements: [Measurement]
    var ratios: [Ratio]
    var notes: [String]
    /// One-shot commands as whole processes (nil in reports made before it was measured).
    var startup: StartupReport? = nil

    func markdown() -> String {
        func ms(_ s: Double) -> String { ByteFormat.fixed(s * 1000, 2) }
        var out = """
            # VM Tracker performance

            Regenerate with `make bench` (runs `Benchmarks/`: `swift run -c release vmtracker-bench`), which \
            starts the processes itself and rewrites this file, `vmtracker.json` (every sample) and \
            `vmtracker.svg`.

            Machine: Linux \(kernel), \(cpus) CPUs; \(processes) user processes readable during the run \
            (including the benchmark's own hogs), \(regions) regions, \(ByteFormat.human(UInt64(smapsBytes))) of smaps \
            text. Each measurement ran \(rounds) times, interleaved with the others (smem \(smemRounds) times); \
            times are wall-clock medians.

            | measurement | median ms | min ms |
            |---|---:|---:|

            """
        for m in measurements { out += "| \(m.name) | \(ms(m.medianSeconds)) | \(ms(m.minSeconds)) |\n" }
        out += "\n| ratio (medians, same run) | value | target |\n|---|---:|---|\n"
        for r in ratios { out += "| \(r.name) | \(ByteFormat.fixed(r.value, 2))x | \(r.target) |\n" }
        out += "\n![median times](vmtracker.svg)\n"
        out += "\n## Reading the figures\n\n"
        func median(_ prefix: String) -> Double? { measurements.first { $0.name.hasPrefix(prefix) }?.medianSeconds }
        if let floor = median("floor: read all smaps"), let smem = median("command: smem"), let rollup = measurements.first(where: { $0.name == "command: mempressure top" })?.medianSeconds,
            let full = median("command: mempressure top --full")
        {
            out += "- The kernel's cost of producing full smaps text (the in-process read floor) is "
            out += "\(ByteFormat.fixed(floor / smem * 100, 0))% of smem's whole run, so no tool that reads full smaps can be more "
            out += "than \(ByteFormat.fixed(smem / floor, 1))x faster than smem on this machine; `mempressure top --full` is "
            out += "\(ByteFormat.fixed(smem / full, 1))x faster (two threads). `mempressure top` prints the same per-process totals as smem "
            out += "(footprint, dirty, PSS, resident) from `smaps_rollup`, which the kernel sums without printing every region, and is "
            out += "\(ByteFormat.fixed(smem / rollup, 1))x faster.\n"
        }
        out += "- The snapshot's cost over the floor is parsing and classifying every region in Swift; with two threads the "
        out += "snapshot finishes before a single-threaded `cat` of the same files.\n"
        out += "- `pmap -XX` and `mempressure vm --only --regions` print the same region table (all smaps fields vs. the "
        out += "VM Tracker columns) for a process with tens of thousands of regions.\n"
        if !notes.isEmpty { out += notes.map { "- \($0)\n" }.joined() }
        if let startup { out += startup.markdown() }
        return out
    }

    func plots() -> [Plot] {
        [Plot.bars(
            name: "vmtracker", title: "median wall time, ms (\(processes) processes, \(regions) regions)",
            rows: measurements.map { ($0.name, $0.medianSeconds * 1000, $0.name.hasPrefix("floor")) }, unit: "")]
    }
}

/// Reads /proc/PID/FILE into the buffer and returns its size, or nil if the process is gone.
func readOnly(pid: Int32, file: String, buffer: inout ReadBuffer) -> Int? {
    do {
        let dir = try ProcFS().open(pid)
        try dir.read(file, into: &buffer)
        return buffer.count
    } catch {
        return nil
    }
}

func runDiscarding(_ path: String, _ arguments: [String]) async throws {
    let result = try await Subprocess.run(.path(FilePath(path)), arguments: Arguments(arguments), output: .discarded, error: .discarded)
    guard case .exited(0) = result.terminationStatus else {
        throw BenchError("\(path) \(arguments.joined(separator: " ")) ended with \(result.terminationStatus)")
    }
}

func log(_ text: String) { log("vmtracker-bench", text) }

func raiseFileLimit() {
    var limit = rlimit()
    getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit)
    limit.rlim_cur = limit.rlim_max
    setrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit)
}

