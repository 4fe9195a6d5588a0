// The soak of one configuration: a fresh daemon, N cycles of launch and terminate with a name
// never used before, a sample every S cycles. Cycle i runs
//
//   - every `workloadEvery`-th: the model app (mempressure-workload, a client: its control
//     channel, callbacks, ready, footprint samples, its state saved on willTerminate), launched,
//     activated, terminated;
//   - else every `outputEvery`-th: a shell writing 1.2 MB to its standard output (more than the
//     1 MiB at which the supervisor cuts an app's output file), two helper processes in its
//     cgroup, then `sleep`; the run's file is read until its last line arrives, and must be gone
//     once the app is terminated;
//   - else `/bin/sleep 3600` (not a client): launched and terminated;
//
// and every `forgetEvery`-th is then forgotten explicitly (`app forget`). A sample first waits
// (at most `settleTimeout` seconds) for the counts that must come back — descriptors, threads,
// runtime-directory entries, cgroups, children — to be at or below the baseline (taken once
// every kind of cycle has run twice, when they stay unchanged for a second); one that does not
// is a leak, named in the sample. Then the daemon's memory, its records (`apps`) and its log
// (`log`).

import MemPressureLifecycle
import BenchSupport
import Glibc
import MemPressureLifecycleProtocol
import MemPressureSystem

enum CycleKind: String, Codable, Sendable, CaseIterable {
    case plain, output, workload
}

/// The cycles' schedule, the same for every configuration.
struct Schedule: Codable, Sendable {
    var cycles: Int
    var sampleEvery: Int
    var workloadEvery: Int
    var outputEvery: Int
    var forgetEvery: Int

    func kind(_ i: Int) -> CycleKind {
        i % workloadEvery == 0 ? .workload : i % outputEvery == 0 ? .output : .plain
    }

    /// Cycles before the baseline: every kind has run twice, and a forget.
    var warmUp: Int { min(cycles, 2 * max(workloadEvery, outputEvery, forgetEvery)) }

    /// The cycles at which samples are taken after the baseline.
    var sampleCycles: [Int] {
        var at: [Int] = []
        var c = sampleEvery
        while c <= cycles {
            if c > warmUp { at.append(c) }
            c += sampleEvery
        }
        if at.last != cycles { at.append(cycles) }
        return at
    }
}

/// One sample.
struct Sample: Codable, Sendable {
    /// Cycles done.
    var cycle: Int
    /// Seconds since the daemon first answered.
    var seconds: Double
    var outside: Outside
    /// How long the returning counts took to come back to the baseline.
    var settleSeconds: Double
    /// Those still above it after the settle timeout: a leak.
    var leaked: [String]
    /// With a leak, what the descriptors, entries and children were.
    var descriptorKinds: [String: Int]?
    var threadStates: [String: Int]?
    var runtimeNames: [String]?
    var childNames: [String]?
    /// App records it reports (`apps`).
    var records: Int
    /// Events its log holds (`log`), and the answer's size.
    var logEvents: Int
    var logAnswerBytes: Int
    /// Client-side time of each cycle since the previous sample (its admin calls), ms.
    var cycleMs: Percentiles?
}

/// Time per cycle of one kind over the whole run.
struct KindTimes: Codable, Sendable {
    var kind: CycleKind
    var ms: Percentiles
}

struct ConfigurationRun: Codable, Sendable {
    var settings: DaemonSettings
    /// How the daemon was started (the scratch directory's path as SCRATCH).
    var command: String
    var pid: Int32
    /// Read at cycle 0, right after it first answered.
    var start: Sample
    /// The baseline of the returning counts.
    var baseline: Sample
    var samples: [Sample]
    var kinds: [KindTimes]
    var forgotten: Int
    /// Output runs whose file began with the supervisor's cut note.
    var outputCuts: Int
    var outputRuns: Int
    /// The device cgroups it made (from outside, at the baseline).
    var deviceCgroups: [String]
    var stop: Daemon.Stop
    var seconds: Double
}

final class Soak {
    let settings: DaemonSettings
    let schedule: Schedule
    let build: String
    let budget: String?
    let mallocConf: String?
    let killSwitch: KillSwitch
    let progress: Progress
    let settleTimeout = 10.0
    let stopGrace = 30.0
    /// Set while the daemon runs: the cleanup stops it.
    private(set) var daemon: Daemon?
    private var scratch: CheckedDirectory?

    init(settings: DaemonSettings, schedule: Schedule, build: String, budget: String?, mallocConf: String?, killSwitch: KillSwitch, progress: Progress) {
        self.settings = settings
        self.schedule = schedule
        self.build = build
        self.budget = budget
        self.mallocConf = mallocConf
        self.killSwitch = killSwitch
        self.progress = progress
    }

    func run() throws -> ConfigurationRun {
        let started = monotonicSeconds()
        let scratch = try CheckedDirectory.makeUnique(prefix: "mempressure-soak-bench-")
        self.scratch = scratch
        let data = try scratch.subdirectory("workload").path
        progress.doing("\(settings.name): starting the daemon")
        let daemon = try Daemon(settings: settings, build: build, budget: budget, mallocConf: mallocConf, scratch: scratch)
        self.daemon = daemon
        // Ctrl-C: SIGTERM to the daemon at once (the command in flight fails); the cleanup
        // then waits for it to exit, SIGKILL after the grace.
        let handle = daemon.process.handle
        killSwitch.arm {
            do {
                try handle.signal(SIGTERM)
            } catch {
                // ESRCH: it has exited already.
            }
        }
        try daemon.waitUntilAnswering()
        log("soak-bench", "\(settings.name): mempressure supervise (pid \(daemon.pid)) on \(daemon.runtimeDirectory)")
        let t0 = monotonicSeconds()
        let first = try sample(0, since: t0, baseline: nil, times: [])

        var times: [Double] = []
        var byKind: [CycleKind: [Double]] = [:]
        var forgotten = 0
        var outputCuts = 0
        var outputRuns = 0
        var cycle = 0
        func cycles(to last: Int) throws {
            while cycle < last {
                try Task.checkCancellation()
                cycle += 1
                let kind = schedule.kind(cycle)
                progress.doing("\(settings.name): cycle \(cycle) of \(schedule.cycles) (\(kind.rawValue))")
                let (ms, cut) = try runCycle(cycle, kind: kind, daemon: daemon, data: data)
                if kind == .output {
                    outputRuns += 1
                    if cut { outputCuts += 1 }
                }
                if cycle % schedule.forgetEvery == 0 {
                    let t = monotonicSeconds()
                    try daemon.perform(.forget(Self.name(cycle)))
                    forgotten += 1
                    times.append(ms + (monotonicSeconds() - t) * 1000)
                } else {
                    times.append(ms)
                }
                byKind[kind, default: []].append(times.last!)
                progress.step()
            }
        }
        try cycles(to: schedule.warmUp)
        let baseline = try settleBaseline(daemon, cycle: cycle, since: t0, times: times)
        times = []
        let devices = daemon.deviceCgroups()
        var samples: [Sample] = []
        for at in schedule.sampleCycles {
            try cycles(to: at)
            progress.doing("\(settings.name): sample at cycle \(cycle)")
            samples.append(try sample(cycle, since: t0, baseline: baseline.outside, times: times))
            times = []
        }
        progress.doing("\(settings.name): stopping the daemon")
        guard let stop = finish() else { throw BenchError("\(settings.name): the daemon was gone before it was stopped") }
        let kinds = CycleKind.allCases.compactMap { k in byKind[k].map { KindTimes(kind: k, ms: Percentiles($0)) } }
        return ConfigurationRun(
            settings: settings,
            command: daemon.command.joined(separator: " ").replacingOccurrences(of: scratch.path, with: "SCRATCH").replacingOccurrences(of: build, with: "BUILD"),
            pid: daemon.pid, start: first, baseline: baseline, samples: samples, kinds: kinds, forgotten: forgotten,
            outputCuts: outputCuts, outputRuns: outputRuns, deviceCgroups: devices, stop: stop, seconds: monotonicSeconds() - started)
    }

    static func name(_ cycle: Int) -> String {
        let digits = String(cycle)
        return "soak-" + String(repeating: "0", count: max(0, 5 - digits.count)) + digits
    }

    /// One cycle; its admin calls' time (ms) and, for an output run, whether its file was cut.
    private func runCycle(_ cycle: Int, kind: CycleKind, daemon: Daemon, data: String) throws -> (Double, Bool) {
        let name = Self.name(cycle)
        let spec: AppSpec
        switch kind {
        case .plain:
            spec = AppSpec(name: name, command: ["/bin/sleep", "3600"], client: false)
        case .output:
            let script = "head -c 1200000 /dev/zero | tr '\\000' o; echo; echo soak-output-end; exec /bin/sleep 3600"
            spec = AppSpec(name: name, command: ["/bin/sh", "-c", script], client: false)
        case .workload:
            spec = AppSpec(name: name, command: [
                "\(build)/mempressure-workload", "--data-dir", data, "--state-mb", "1", "--image-cache-mb", "1", "--image-kb", "64",
                "--backing-mb", "1", "--assets-mb", "1", "--decode-cost", "1",
            ])
        }
        var ms = 0.0
        func timed(_ command: Command, expecting: LifecycleState) throws {
            let t = monotonicSeconds()
            let state = try daemon.perform(command)
            ms += (monotonicSeconds() - t) * 1000
            guard state == expecting else {
                throw BenchError("\(command.verb.rawValue) \(name) answered \(state?.rawValue ?? "nothing"), not \(expecting.rawValue)")
            }
        }
        try timed(.launch(name, registering: spec), expecting: .inactive)
        var cut = false
        let file = "\(daemon.runtimeDirectory)/\(name)-1.log"
        if kind == .output { cut = try waitForOutputEnd(file, daemon: daemon) }
        if kind == .workload { try timed(.activate(name), expecting: .active) }
        try timed(.terminate(name), expecting: .notRunning)
        if kind == .output, access(file, F_OK) == 0 {
            throw BenchError("\(name): its output file \(file) is still there after terminate answered (the supervisor removes it when the run ends)")
        }
        return (ms, cut)
    }

    /// Waits (up to 20 s) until the run's output file ends with the script's last line; whether
    /// it begins with the supervisor's cut note (1.2 MB written, cut at 1 MiB).
    private func waitForOutputEnd(_ path: String, daemon: Daemon) throws -> Bool {
        let deadline = monotonicSeconds() + 20
        while true {
            if let (head, tail) = Self.ends(of: path), String(decoding: tail, as: UTF8.self).hasSuffix("soak-output-end\n") {
                return String(decoding: head, as: UTF8.self).hasPrefix("[mempressure: more than")
            }
            guard monotonicSeconds() < deadline else {
                throw BenchError("\(path): the app's last line did not arrive within 20 s")
            }
            try Task.checkCancellation()
            pause(0.002)  // the file grows as the supervisor copies the pipe: nothing to wait on
        }
    }

    /// The first and last 64 bytes of a file (nil if it cannot be read).
    private static func ends(of path: String) -> ([UInt8], [UInt8])? {
        let fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var st = stat()
        guard fstat(fd, &st) == 0 else { return nil }
        func read(at offset: Int) -> [UInt8] {
            var buffer = [UInt8](repeating: 0, count: 64)
            let n = buffer.withUnsafeMutableBytes { pread(fd, $0.baseAddress, 64, off_t(offset)) }
            return n > 0 ? Array(buffer.prefix(n)) : []
        }
        return (read(at: 0), read(at: max(0, Int(st.st_size) - 64)))
    }

    /// The baseline: the outside readings once the returning counts have not changed for a
    /// second (at most 20 s).
    private func settleBaseline(_ daemon: Daemon, cycle: Int, since t0: Double, times: [Double]) throws -> Sample {
        let deadline = monotonicSeconds() + 20
        var last = try daemon.outside()
        var steady = 0
        while steady < 10 && monotonicSeconds() < deadline {
            try Task.checkCancellation()
            pause(0.1)
            let now = try daemon.outside()
            steady = now.sameCounts(last) ? steady + 1 : 0
            last = now
        }
        return try sample(cycle, since: t0, baseline: nil, times: times, reading: last)
    }

    /// A sample: with a baseline, after the returning counts came back to it (or the timeout).
    private func sample(_ cycle: Int, since t0: Double, baseline: Outside?, times: [Double], reading: Outside? = nil) throws -> Sample {
        let start = monotonicSeconds()
        var outside = try reading ?? daemon!.outside()
        var leaked: [String] = []
        if let baseline {
            while true {
                leaked = outside.above(baseline)
                if leaked.isEmpty || monotonicSeconds() - start >= settleTimeout { break }
                try Task.checkCancellation()
                pause(0.05)  // a thread ending, a descriptor closing: nothing to wait on from outside
                outside = try daemon!.outside()
            }
        }
        let settled = monotonicSeconds() - start
        let daemon = self.daemon!
        var s = Sample(
            cycle: cycle, seconds: monotonicSeconds() - t0, outside: outside, settleSeconds: baseline == nil ? 0 : settled, leaked: leaked,
            records: 0, logEvents: 0, logAnswerBytes: 0, cycleMs: times.isEmpty ? nil : Percentiles(times))
        if !leaked.isEmpty {
            s.descriptorKinds = try daemon.descriptorKinds()
            s.threadStates = daemon.threadStates()
            s.runtimeNames = try daemon.runtimeEntries()
            s.childNames = try daemon.children()
            log("soak-bench", "\(settings.name): LEAK at cycle \(cycle): \(leaked.joined(separator: ", ")) above the baseline after \(Int(settleTimeout)) s")
        }
        s.records = try daemon.apps().count
        let (events, bytes) = try daemon.logEvents()
        s.logEvents = events.count
        s.logAnswerBytes = bytes
        return s
    }

    /// Stops the daemon (if it runs) and removes the scratch directory. Idempotent.
    @discardableResult
    func finish() -> Daemon.Stop? {
        killSwitch.arm(action: nil)
        let stop = daemon?.stop(grace: stopGrace)
        if let stop, let daemon {
            let said = stop.cgroupsLeft.isEmpty ? "no mempressure-\(daemon.pid)- cgroup remains" : "LEFT: \(stop.cgroupsLeft.joined(separator: ", "))"
            log("soak-bench", "\(settings.name): daemon (pid \(daemon.pid)) \(stop.killed ? "killed (SIGKILL)" : "stopped by SIGTERM") in \(ByteFormat.fixed(stop.seconds, 2)) s, exited \(stop.exit); \(said)")
        }
        daemon = nil
        if let scratch {
            let failures = scratch.removeTree()
            for f in failures { log("soak-bench", "removing \(scratch.path): \(f)") }
        }
        scratch = nil
        return stop
    }
}
