import MemPressureLifecycle
import BenchSupport
import MemPressureCachePolicies
import Foundation
import Glibc
import MemPressureJetsam
import MemPressureLifecycleProtocol
import MemPressureMonitor
import MemPressureSystem
import MemPressureValues
import MemPressureWorkloadProtocol
import PeerKillers

/// What every run shares: the apps, how they are built and restored, how long an idle gap lasts.
struct Setup: Sendable, Codable {
    var build: String
    var data: String
    var profiles: [AppProfile]
    var restore: String
    var decodeCost: Int
    /// Seconds an idle gap between two sessions of a trace lasts at most.
    var maxGap: Double

    func profile(_ name: String) -> AppProfile { profiles.first { $0.name == name }! }
}

/// One switch of a run, as measured.
struct SwitchRecord: Codable, Sendable {
    enum Kind: String, Codable, Sendable {
        case resume, relaunch
        /// Every activation tried died (killed while launching) until the harness gave up.
        case failed
    }
    var app: String
    var kind: Kind
    /// From the activate command's start to the app's `ready` (for a failed switch, to the
    /// last attempt's end).
    var ms: Double
    /// Activations tried: more than 1 when the app died while being activated (it is then
    /// launched again, at once, as a user tapping it again would; the switch counts as a
    /// relaunch).
    var attempts: Int
}

/// How long a switch keeps trying to bring an app up, and how often, before it counts as failed.
enum Retry {
    static let attempts = 5
    static let seconds = 3.0
}

/// State found lost: bytes of an app's state that differ from what its activations must have
/// left (word 0 counts activations; the rest never changes).
struct Loss: Codable, Sendable {
    var app: String
    /// The switch (0-based, in the trace) whose relaunch found it; nil when found in the saved
    /// state file at the end of the run (the app was not running then), or during the warm-up.
    var switchIndex: Int?
    var bytes: Int
    /// The activations the harness counted, which the state must reflect.
    var activations: UInt64
    /// The activations the state had lost (what it held against what it must), when the app
    /// could say (after a relaunch); the harness then counts on from what the app holds, so a
    /// loss is reported once.
    var activationsLost: UInt64?
    var foundBy: String
    /// How the app's run before died, and in which state.
    var death: String
}

/// An app's death during a run: how, and the state it was in.
struct Death: Codable, Sendable {
    var t: Double
    var app: String
    var state: String
    /// "jetsam" (our killer), "kernel" (a SIGKILL the supervisor did not send: the cgroup's OOM
    /// killer), "terminated" (the supervisor's own terminate), or "crash: " and what the log says.
    var by: String
}

struct RunResult: Codable, Sendable {
    /// The trace's seed and the swap configuration (set by the caller).
    var seed: UInt64 = 0
    var swap = "none"
    // The contract (Reports/switching.json, issue 10).
    var policy: String
    var budgetBytes: Int
    var trim: Double
    var switches: Int
    var resumes: Int
    var relaunches: Int
    var kills: Int
    var kernelOOMKills: UInt64
    var meanSwitchMs: Double
    var p95SwitchMs: Double
    var expectedSwitchMs: Double
    var bytesLost: Int
    // More.
    /// The budget as room for this many apps of the mean footprint.
    var budgetApps: Double
    var p50SwitchMs: Double
    var meanResumeMs: Double?
    var meanRelaunchMs: Double?
    /// Resumes / switches that completed (not failed): P(alive) as measured.
    var resumeShare: Double
    /// The model's inputs: the unloaded resume and relaunch times of the apps switched to
    /// (calibration medians, weighted by switches), at this trim.
    var calibratedResumeMs: Double
    var calibratedRelaunchMs: Double
    var warningsSent: Int
    /// Background footprint, from the supervisor's footprint samples of apps in the background
    /// (background-running or suspended), weighted by time over the replay: the mean per
    /// background app, and the mean total of all of them together.
    var backgroundFootprintBytes: UInt64
    var backgroundTotalBytes: UInt64
    /// How many apps were alive in the background, on average over the replay (`cachedApps`,
    /// from the supervisor's transitions; reports before format 3 took it from the footprint
    /// samples, which undercounted under load).
    var backgroundApps: Double
    /// Kills and kernel OOM kills while every app was launched once before the replay.
    var warmupKills: Int
    var warmupKernelOOMKills: UInt64
    /// Episodes of the replay opened because a task waited at the device's limit with the
    /// kernel's OOM killer held (jetsam's hold): without the hold the kernel would have killed
    /// then. Nil in reports written before it was counted.
    var heldAtLimit: Int?
    /// Activations that failed because the app died meanwhile (then tried again).
    var failedActivations: Int
    /// Switches given up after `Retry.attempts` attempts or `Retry.seconds`: counted in
    /// `switches`, in neither resumes nor relaunches, left out of the latencies.
    var failedSwitches: Int
    /// The killer's episodes (warm-up included), counted by how they ended.
    var episodes: [String]
    var losses: [Loss]
    /// Every death and every switch of the replay: kept only with `--raw` (the report stays
    /// small without them; every figure here is computed from them at run time).
    var deaths: [Death]?
    var seconds: Double
    /// The machine's 1-minute load average as the run began (it may be shared).
    var loadAverage: Double
    /// The machine's swap (SwapTotal) as the run began or ended, whichever is larger: with
    /// swap the device's memory cgroup (its limit on memory, not memory and swap) lets apps be
    /// swapped out, and jetsam freeze-dries instead of killing. This machine has none; another
    /// program may add some for a while.
    var swapBytes: UInt64
    var records: [SwitchRecord]?
    var notes: [String]
    // The anchors' metrics (issue 22).
    /// Seconds of the replay (the warm-up left out).
    var replaySeconds: Double
    /// Switch time with every failed switch counted as a timeout (`Retry.seconds`, or what it
    /// took if longer): mean, p50, p95, p99.
    var timeoutMeanMs: Double
    var timeoutP50Ms: Double
    var timeoutP95Ms: Double
    var timeoutP99Ms: Double
    /// Kills by the policy (jetsam's or the lmkd emulation's) and by the kernel, per minute of replay.
    var killsPerMinute: Double
    /// workingset_refault_anon + _file of the device's memory cgroup over the replay (nil when
    /// its memory.stat lacks them), and their sum per minute.
    var refaults: UInt64?
    /// The machine's memory stall over the replay (/proc/pressure/memory total, some and full),
    /// milliseconds per minute of replay (nil without PSI). Machine-wide: cgroup v1 has no
    /// per-group PSI; the machine runs nothing else that stalls.
    var psiSomeMsPerMinute: Double?
    var psiFullMsPerMinute: Double?
    /// Pages swapped in and out over the replay (/proc/vmstat pswpin, pswpout; nil unread).
    var pagesSwappedIn: UInt64?
    var pagesSwappedOut: UInt64?
    /// With zram: the most memory the zram device took during the replay (its compressed pages,
    /// which no memory cgroup is charged for: memory the device used beyond its budget).
    var zramPeakBytes: UInt64?
    /// CPU seconds the apps used over the replay (their accounting, every state), and the
    /// benchmark process (the supervisor, its policy and the harness) over the same time.
    var appCPUSeconds: Double
    var benchCPUSeconds: Double
    /// With the kernel's killer held: for each episode opened because a task waited at the
    /// limit, seconds from the wait being seen to the first kill (the allocation's stall).
    var heldStallSeconds: [Double]
}

/// The policy of one run, attached to its supervisor.
struct RunPolicy {
    var killer: JetsamKiller?
    var lmkd: LmkdEmulation?
}

/// The supervisor's configuration for one run: the device budget, the apps' oom_score_adj from
/// their states (except for "kernel-blind"), and the policy: a jetsam killer (the kernel's killer
/// held only for NAME-hold), the lmkd emulation ("lmkd-emu"), or none ("kernel", "kernel-blind").
func supervisorConfiguration(build: String, budgetBytes: Int, policy: String) throws -> (SupervisorConfiguration, RunPolicy) {
    var c = SupervisorConfiguration()
    c.executableDirectory = build
    c.budgetBytes = budgetBytes
    // Footprint samples four times a second: the background footprint is weighted by time.
    c.sampleInterval = 0.25
    switch policy {
    case "kernel":
        return (c, RunPolicy())
    case _ where PeerPolicy(policy) != nil:
        // earlyoom or nohang decides (started beside the supervisor by `replay`, in the run's
        // own PID namespace); the apps carry their states' oom_score_adj, which both read.
        return (c, RunPolicy())
    case "kernel-blind":
        c.oomScoreBands = nil
        return (c, RunPolicy())
    case "lmkd-emu":
        let lmkd = LmkdEmulation(configuration: .supervisedApps)
        lmkd.attach(to: &c)
        return (c, RunPolicy(lmkd: lmkd))
    default:
        guard let variant = JetsamVariant(policy) else { throw BenchError("unknown policy \(policy)") }
        let killer = JetsamKiller(configuration: variant.configuration)
        killer.attach(to: &c)
        return (c, RunPolicy(killer: killer))
    }
}

/// Drives one supervisor through switches: backgrounds the foreground app, activates the
/// target, times it to `ready`, verifies the state of every (re)launched app.
struct Switcher {
    let s: Supervisor
    let setup: Setup
    let directory: String
    /// Activations per app, as the harness counted them (successful activate commands).
    var activations: [String: UInt64] = [:]
    var foreground: String?
    var losses: [Loss] = []
    var failedActivations = 0
    var notes: [String] = []
    /// Who kills in this run: how a loss names the death before it.
    var killers = Killers()

    init(_ s: Supervisor, setup: Setup, directory: String) {
        self.s = s
        self.setup = setup
        self.directory = directory
    }

    /// Sends the foreground app to the background (returns once it is suspended, or dead).
    mutating func backgroundForeground() async throws {
        guard let previous = foreground else { return }
        foreground = nil
        guard try await s.state(of: previous) != .notRunning else { return }  // killed while in the foreground
        do {
            try await s.background(previous)
        } catch {
            // It died meanwhile (background does not throw for that; a command racing its death may).
            guard try await s.state(of: previous) == .notRunning else { throw BenchError("background \(previous): \(error)") }
        }
    }

    /// Switches to `app`: the foreground app goes to the background, then `app` is activated.
    /// Returns the switch as measured; `index` is the switch's place in the trace (nil in the
    /// warm-up).
    mutating func switchTo(_ app: String, index: Int?) async throws -> SwitchRecord {
        try await backgroundForeground()
        let before = try await s.state(of: app)
        var kind: SwitchRecord.Kind
        switch before {
        case .suspended, .backgroundRunning: kind = .resume
        case .notRunning: kind = .relaunch
        default: throw BenchError("\(app) is \(before.rawValue) before it is switched to")
        }
        let t0 = await s.now()
        var attempts = 0
        var readyAt = 0.0
        var log: [SupervisorEvent] = []
        while true {
            attempts += 1
            let failure: String
            do {
                try await s.activate(app)
                // The app reports ready inside didBecomeActive, before it acknowledges it: the
                // event is in the log when activate returns.
                log = await s.log
                if let ready = log.last(where: { $0.kind == .ready && $0.app == app && $0.t >= t0 }) {
                    readyAt = ready.t
                    break
                }
                // Activated without its callbacks: its control channel closed as it was
                // resumed — it died then (the supervisor sees the exit a moment later), or it
                // stopped reading. Which, its exit says.
                do {
                    try await s.waitForState(app, .notRunning, timeout: 2)
                } catch {
                    notes.append("switch \(index.map { String($0 + 1) } ?? "(warm-up)") to \(app): activated without its callbacks (its control channel closed) and still running; terminated, the switch failed")
                    do { try await s.terminate(app) } catch {
                        guard try await s.state(of: app) == .notRunning else { throw BenchError("terminate \(app): \(error)") }
                    }
                    return SwitchRecord(app: app, kind: .failed, ms: (await s.now() - t0) * 1000, attempts: attempts)
                }
                failure = "it died as it was activated (its control channel closed before its callbacks)"
            } catch let error as BenchError {
                throw error
            } catch {
                // Killed while it was being resumed or launched (by jetsam or the kernel).
                guard try await s.state(of: app) == .notRunning else { throw BenchError("switch to \(app) (attempt \(attempts)): \(error)") }
                failure = "\(error)"
            }
            // It is launched again at once, as a user tapping it again would, up to a limit.
            failedActivations += 1
            kind = .relaunch
            let elapsed = await s.now() - t0
            if attempts >= Retry.attempts || elapsed >= Retry.seconds {
                notes.append("switch \(index.map { String($0 + 1) } ?? "(warm-up)") to \(app) failed: \(attempts) attempts in \(ByteFormat.fixed(elapsed, 1)) s, the last: \(failure)")
                return SwitchRecord(app: app, kind: .failed, ms: elapsed * 1000, attempts: attempts)
            }
        }
        activations[app, default: 0] += 1
        foreground = app
        if kind == .relaunch { try await verify(app, index: index, log: log) }
        // Fully working before the next switch: waits for a lazy rebuild (at once when eager).
        do {
            _ = try await WorkloadRequest.restored.send { try await s.command(app, $0) }
        } catch {
            guard try await s.state(of: app) == .notRunning else { throw BenchError("\(app): restored: \(error)") }
            notes.append("\(app) died before its rebuild was confirmed (switch \(index.map { String($0 + 1) } ?? "(warm-up)"))")
        }
        return SwitchRecord(app: app, kind: kind, ms: (readyAt - t0) * 1000, attempts: attempts)
    }

    /// After a (re)launch: every byte of the app's state against its activations.
    mutating func verify(_ app: String, index: Int?, log: [SupervisorEvent]) async throws {
        let n = activations[app, default: 0]
        let lost: Int
        do {
            lost = try await WorkloadRequest.verify(activations: n).send { try await s.command(app, $0) }
        } catch {
            guard try await s.state(of: app) == .notRunning else { throw BenchError("\(app): verify: \(error)") }
            notes.append("\(app) died before its state could be verified (switch \(index.map { String($0 + 1) } ?? "(warm-up)")); its saved state is checked at its next relaunch or at the end")
            return
        }
        guard lost > 0 else { return }
        // What the app holds now: from here on the harness expects that, plus what comes.
        var held: UInt64?
        do {
            held = try await WorkloadRequest.state.send { try await s.command(app, $0) }.activations
        } catch {
            guard try await s.state(of: app) == .notRunning else { throw BenchError("\(app): state: \(error)") }
        }
        losses.append(Loss(app: app, switchIndex: index, bytes: lost, activations: n, activationsLost: held.map { n &- min(n, $0) },
                           foundBy: "verify after relaunch", death: lastDeath(of: app, in: log)))
        if let held { activations[app] = held }
    }

    /// The saved state of every app not running at the end, against its activations.
    mutating func verifySavedStates(log: [SupervisorEvent]) async throws {
        for p in setup.profiles {
            guard let n = activations[p.name], try await s.state(of: p.name) == .notRunning else { continue }
            let lost = savedStateLostBytes(path: "\(directory)/\(p.name)/state.bin", stateBytes: p.stateMB << 20, activations: n)
            if lost > 0 {
                losses.append(Loss(app: p.name, switchIndex: nil, bytes: lost, activations: n, activationsLost: nil, foundBy: "saved state at the end", death: lastDeath(of: p.name, in: log)))
            }
        }
    }

    func lastDeath(of app: String, in log: [SupervisorEvent]) -> String {
        deaths(in: log, from: 0, to: .infinity, killers: killers).last { $0.app == app }.map { "\($0.by) while \($0.state)" } ?? "unknown"
    }
}

/// Who kills in a run, as its deaths are labelled: the policy that kills through the supervisor
/// (its kills carry a reason in the log: jetsam's, or the lmkd emulation's), and a peer killer
/// beside it (earlyoom, nohang: its SIGTERM is its own; a SIGKILL the supervisor did not send is
/// the peer's or the kernel's, which only they know).
struct Killers: Sendable {
    var policy = "jetsam"
    var peer: String?

    init(policy: String = "jetsam", peer: String? = nil) {
        self.policy = policy
        self.peer = peer
    }
}

/// The deaths the log records between `from` and `to`: each app's exit or crash, with the state
/// it was in (its last transition before) and who killed it.
func deaths(in log: [SupervisorEvent], from: Double, to: Double, killers: Killers = Killers()) -> [Death] {
    var state: [String: String] = [:]
    var out: [Death] = []
    for e in log {
        guard let app = e.app else { continue }
        if e.kind == .state, let next = e.to, next != .notRunning { state[app] = next.rawValue }
        guard e.t >= from, e.t <= to else { continue }
        let by: String
        switch e.payload {
        case .exit(_, killReason: .some): by = killers.policy
        case .crash(.signaled(SIGKILL), _):
            // A SIGKILL the supervisor did not send: the cgroup's OOM killer, or a peer's.
            by = killers.peer.map { "\($0) or kernel" } ?? "kernel"
        case .crash(.signaled(SIGTERM), _) where killers.peer != nil: by = killers.peer ?? ""
        case .exit: by = "terminated"  // the supervisor's own terminate
        case .crash: by = "crash: \(e.detail ?? "")"
        default: continue
        }
        out.append(Death(t: e.t, app: app, state: state[app] ?? "?", by: by))
    }
    return out
}

/// Time-weighted background footprint over [from, to]: per app, each sample holds until the
/// next sample, the app's death, or a quarter-second gap beyond the sampling interval, and is
/// counted while the app is background-running or suspended.
func backgroundFootprint(_ reports: [AppReport], deaths: [Death], from: Double, to: Double, interval: Double) -> (perApp: UInt64, total: UInt64) {
    var byteSeconds = 0.0, appSeconds = 0.0
    for r in reports {
        let samples = r.footprint.filter { $0.t <= to }.sorted { $0.t < $1.t }
        let dies = deaths.filter { $0.app == r.name }.map(\.t)
        for (i, sample) in samples.enumerated() where sample.state == .suspended || sample.state == .backgroundRunning {
            var end = min(to, i + 1 < samples.count ? samples[i + 1].t : to, sample.t + interval * 2)
            if let death = dies.first(where: { $0 >= sample.t }) { end = min(end, death) }
            let start = max(from, sample.t)
            guard end > start else { continue }
            byteSeconds += Double(sample.footprintBytes) * (end - start)
            appSeconds += end - start
        }
    }
    let span = max(to - from, 1e-9)
    return (appSeconds > 0 ? UInt64(byteSeconds / appSeconds) : 0, UInt64(byteSeconds / span))
}

/// How many apps were alive in the background (background-running or suspended) over
/// [from, to], weighted by time — Fleet's cached apps — from the supervisor's own transitions:
/// an app counts from its transition into the background until its next transition (to the
/// foreground, or to not-running when it dies). Exact where the footprint samples are not:
/// those are taken four times a second, and a sample late under load would count an app as
/// gone for the gap.
func cachedApps(in log: [SupervisorEvent], from: Double, to: Double) -> Double {
    var since: [String: Double] = [:]  // apps in the background, since when
    var seconds = 0.0
    for e in log where e.kind == .state {
        guard let app = e.app, let next = e.to else { continue }
        if let start = since.removeValue(forKey: app) {
            seconds += max(0, min(e.t, to) - max(start, from))
        }
        if next == .suspended || next == .backgroundRunning { since[app] = e.t }
    }
    for start in since.values { seconds += max(0, to - max(start, from)) }
    return seconds / max(to - from, 1e-9)
}

func percentile(_ xs: [Double], _ p: Double) -> Double {
    guard !xs.isEmpty else { return 0 }
    let s = xs.sorted()
    return s[min(s.count - 1, Int((Double(s.count - 1) * p).rounded()))]
}

func mean(_ xs: [Double]) -> Double? { xs.isEmpty ? nil : xs.reduce(0, +) / Double(xs.count) }

/// The machine's and the device's counters a run reads before and after its replay (nil where a
/// file cannot be read: unknown, never 0).
struct Counters {
    var time: Double
    var refaults: UInt64?
    var psi: PressureStall?
    var pswpin: UInt64?
    var pswpout: UInt64?
    var benchCPUSeconds: Double

    static func read(deviceCgroup: String?) -> Counters {
        func file(_ path: String) -> [UInt8]? {
            do { return try ProcFS.readBytes(path) } catch { return nil }
        }
        var refaults: UInt64?
        if let deviceCgroup, let stat = file("\(deviceCgroup)/memory.stat") {
            // v1 counts each group's own (the apps are groups below the device): its total_
            // keys hold the hierarchy's; v2's memory.stat is hierarchical already.
            if let anon = ByteScanner.value(of: "total_workingset_refault_anon", inSpaceSeparatedLines: stat),
                let fileRefaults = ByteScanner.value(of: "total_workingset_refault_file", inSpaceSeparatedLines: stat) {
                refaults = anon + fileRefaults
            } else if let anon = ByteScanner.value(of: "workingset_refault_anon", inSpaceSeparatedLines: stat),
                let fileRefaults = ByteScanner.value(of: "workingset_refault_file", inSpaceSeparatedLines: stat) {
                refaults = anon + fileRefaults
            }
        }
        let psi = file("/proc/pressure/memory").flatMap { bytes in bytes.withUnsafeBytes { PressureStall.parse($0) } }
        let vmstat = file("/proc/vmstat")
        var usage = rusage()
        getrusage(__rusage_who_t(RUSAGE_SELF.rawValue), &usage)
        let cpu = Double(usage.ru_utime.tv_sec) + Double(usage.ru_utime.tv_usec) / 1e6 + Double(usage.ru_stime.tv_sec) + Double(usage.ru_stime.tv_usec) / 1e6
        return Counters(time: monotonicSeconds(), refaults: refaults, psi: psi,
                        pswpin: vmstat.flatMap { ByteScanner.value(of: "pswpin", inSpaceSeparatedLines: $0) },
                        pswpout: vmstat.flatMap { ByteScanner.value(of: "pswpout", inSpaceSeparatedLines: $0) }, benchCPUSeconds: cpu)
    }
}

/// `after - before` of a counter that only grows; nil when either is unknown.
func delta(_ before: UInt64?, _ after: UInt64?) -> UInt64? {
    guard let before, let after else { return nil }
    return after &- min(after, before)
}

/// CPU seconds of every app in every state, from the supervisor's accounting.
func appCPUSeconds(_ reports: [AppReport]) -> Double {
    reports.reduce(0) { $0 + $1.accounting.values.reduce(0) { $0 + $1.cpuSeconds } }
}

/// When each switch of `trace` is replayed, seconds from the replay's start: the trace's own
/// times, every idle gap between two sessions cut to `maxGap`; nil for an untimed trace.
func schedule(_ trace: SwitchTrace, maxGap: Double) -> [Double]? {
    guard let times = trace.times, !times.isEmpty else { return nil }
    var out = [0.0]
    for i in 1..<times.count {
        var step = max(0, times[i] - times[i - 1])
        if let sessions = trace.sessions, sessions[i] != sessions[i - 1] { step = min(step, maxGap) }
        out.append(out[i - 1] + step)
    }
    return out
}

/// One run: the apps in a device of `budgetBytes` under `policy`, launched once each (the
/// warm-up), then `trace` replayed: each switch at its scheduled time, the foreground app sent
/// to the background between two sessions (the screen off).
/// One run of the matrix: what `replay` measures, here or (for a peer) in a PID namespace of its
/// own, to which it is handed as JSON.
struct RunSpec: Codable, Sendable {
    var setup: Setup
    var trace: SwitchTrace
    var policy: String
    /// The budget as room for this many apps of the mean footprint, and in bytes.
    var budgetApps: Double
    var budgetBytes: Int
    var trim: Double
    var calibration: [Calibration]
    /// The run's directory under the setup's data directory.
    var runName: String
    /// How progress lines and errors name the run.
    var label: String
    /// `--logs DIR`.
    var logs: String?
    /// The zram device of the run's swap configuration, if any.
    var zram: ZramStats?
}

func replay(_ run: RunSpec, progress: BenchSupport.Progress, peer: (policy: PeerPolicy, cgroupFile: String)? = nil) async throws -> RunResult {
    let (setup, trace, policy, budgetApps, budgetBytes) = (run.setup, run.trace, run.policy, run.budgetApps, run.budgetBytes)
    let (trim, calibration, runName, label, logs, zram) = (run.trim, run.calibration, run.runName, run.label, run.logs, run.zram)
    let started = monotonicSeconds()
    let load = loadAverage()
    let swapBefore = swapTotalBytes()
    guard (PeerPolicy(policy) != nil) == (peer != nil) else { throw BenchError("\(label): \(policy) runs only through replayInNamespace, with its peer") }
    var (c, runPolicy) = try supervisorConfiguration(build: setup.build, budgetBytes: budgetBytes, policy: policy)
    let killer = runPolicy.killer
    let directory = "\(setup.data)/\(runName)"
    let made = try CheckedDirectory.open(directory, creating: true)
    defer { made.removeTree() }
    // In a PID namespace the supervisor is PID 1, whose default runtime directory would be
    // /run/mempressure-1-...: the run's own instead, removed with it even if the namespace is
    // killed (the benchmark removes its scratch directory).
    if peer != nil { c.runtimeDirectory = "\(directory)/runtime" }
    let s = try Supervisor(configuration: c)
    // A peer killer (in a PID namespace of the run's own: `replayInNamespace`) beside the
    // supervisor, on a /proc/meminfo that shows the device.
    var view: MeminfoView?
    var daemon: PeerDaemon?
    defer {
        daemon?.stop()
        view?.stop()
    }
    // Cancelled (Ctrl-C): every app is killed at once; the command under way then fails, and the
    // catch below finishes the cleanup.
    return try await withTaskCancellationHandler {
        do {
            var peerNotes: [String] = []
            if let peer {
                guard let group = s.deviceMemoryCgroup else { throw BenchError("\(label): no device memory cgroup for \(policy) to watch") }
                try writeText(group, to: peer.cgroupFile)
                view = try MeminfoView(path: "\(directory)/meminfo", cgroup: group, budgetBytes: UInt64(budgetBytes))
                daemon = try PeerDaemon(peer.policy.kind, matched: peer.policy.matched, data: directory, tag: runName, tool: "switching-bench")
                // What it runs as is in the report's policy table; here only what went wrong.
                peerNotes = daemon?.problems ?? []
            }
            for p in setup.profiles {
                try await s.register(AppSpec(name: p.name, command: ["\(setup.build)/mempressure-workload"]
                    + p.arguments(dataDirectory: "\(directory)/\(p.name)", trim: trim, restore: setup.restore, decodeCost: setup.decodeCost)))
            }
            var sw = Switcher(s, setup: setup, directory: directory)
            sw.killers = Killers(policy: runPolicy.lmkd != nil ? "lmkd emulation" : "jetsam", peer: peer?.policy.kind.rawValue)
            // Warm-up: every app launched once, in the trace's order of apps, and sent to the
            // background (a device some time after boot).
            let oomStart = await s.kernelOOMKills()
            for app in trace.apps {
                try Task.checkCancellation()
                progress.doing("\(label): launching \(app)")
                _ = try await sw.switchTo(app, index: nil)
            }
            try await sw.backgroundForeground()
            let oomBefore = await s.kernelOOMKills()
            let t0 = await s.now()
            zram?.resetPeak()
            let before = Counters.read(deviceCgroup: s.deviceMemoryCgroup)
            let cpuBefore = appCPUSeconds(await s.reports())
            let replayStart = monotonicSeconds()
            var records: [SwitchRecord] = []
            let switches = trace.switches
            let times = schedule(trace, maxGap: setup.maxGap)
            for (i, target) in switches.enumerated() {
                try Task.checkCancellation()
                if i > 0, let sessions = trace.sessions, sessions[i] != sessions[i - 1] {
                    // The screen goes off: the foreground app to the background.
                    try await sw.backgroundForeground()
                }
                if let times {
                    // The trace's own timing (the experiment): the switch no earlier than its time.
                    let wait = replayStart + times[i] - monotonicSeconds()
                    if wait > 0 { try await Task.sleep(for: .seconds(wait)) }
                }
                progress.doing("\(label): switch \(i + 1)/\(switches.count)")
                records.append(try await sw.switchTo(trace.apps[target], index: i))
            }
            // The peer must have watched the whole replay: a run whose killer died is the
            // kernel's alone, and would be reported under the peer's name.
            if let daemon { try daemon.child.checkAlive("during the replay (\(label))") }
            let after = Counters.read(deviceCgroup: s.deviceMemoryCgroup)
            let zramPeak = zram?.peakMemoryBytes()
            let t1 = await s.now()
            let oomAfter = await s.kernelOOMKills()
            let log = await s.log
            let reports = await s.reports()
            if let logs { try writeLog(log, killer: killer, to: "\(logs)/\(runName).json") }
            try await sw.verifySavedStates(log: log)
            await s.shutdown()
            let dropped = await s.droppedLogEvents
            daemon?.stop()
            view?.stop()
            var notes = peerNotes + sw.notes
            if dropped > 0 { notes.append("the supervisor's log dropped \(dropped) events: counts from it are low") }
            // How the killer's episodes ended, counted by kind.
            var outcomes: [(String, Int)] = []
            for e in killer?.episodes ?? [] {
                let kind = outcomeKind(e.outcome)
                if let i = outcomes.firstIndex(where: { $0.0 == kind }) { outcomes[i].1 += 1 } else { outcomes.append((kind, 1)) }
            }
            if let lmkd = runPolicy.lmkd, !lmkd.kills.isEmpty {
                var reasons: [(String, Int)] = []
                for k in lmkd.kills {
                    let reason = "\(k.reason)"
                    if let i = reasons.firstIndex(where: { $0.0 == reason }) { reasons[i].1 += 1 } else { reasons.append((reason, 1)) }
                }
                outcomes += reasons.map { ("lmkd: \($0.0)", $0.1) }
            }

            let done = records.filter { $0.kind != .failed }
            let ms = done.map(\.ms)
            let resumes = records.filter { $0.kind == .resume }
            let relaunches = records.filter { $0.kind == .relaunch }
            let pAlive = Double(resumes.count) / Double(max(1, done.count))
            // The model: each switch's app at its unloaded (calibrated) resume and relaunch
            // times, mixed by the measured chance that it was alive.
            var calResume = 0.0, calRelaunch = 0.0
            for r in done {
                guard let cal = calibration.first(where: { $0.trim == trim && $0.app == r.app }) else { throw BenchError("no calibration for \(r.app) at trim \(trim)") }
                calResume += cal.resumeMedianMs
                calRelaunch += cal.relaunchMedianMs
            }
            calResume /= Double(max(1, done.count))
            calRelaunch /= Double(max(1, done.count))
            let bg = backgroundFootprint(reports, deaths: deaths(in: log, from: 0, to: .infinity), from: t0, to: t1, interval: c.sampleInterval)
            let died = deaths(in: log, from: t0, to: t1, killers: sw.killers)
            var policyKills = log.filter { $0.kind == .jetsam && $0.t >= t0 && $0.t <= t1 }.count
            if let peer = sw.killers.peer {
                // A peer's kills: its deaths (SIGTERM, or a SIGKILL the supervisor did not send),
                // less the kernel's, which the kernel counts (below).
                policyKills = died.filter { $0.by == peer || $0.by == "\(peer) or kernel" }.count
            }
            let warmupKills = log.filter { $0.kind == .jetsam && $0.t < t0 }.count
            let warnings = log.filter { $0.payload == .warning(.sent) && $0.t >= t0 && $0.t <= t1 }.count
            let heldEpisodes = (killer?.episodes ?? []).filter { $0.trigger.source == .underOOM && $0.start >= t0 && $0.start <= t1 }
            let lost = sw.losses.reduce(0) { $0 + $1.bytes }
            let minutes = max(1e-9, (after.time - before.time) / 60)
            // A failed switch counts as a timeout: the retry limit, or what it took if longer.
            let withTimeouts = records.map { $0.kind == .failed ? max($0.ms, Retry.seconds * 1000) : $0.ms }
            // The kernel's count only grows: unknown, or smaller after, cannot be, and fails the run.
            guard let oomStart, let oomBefore, let oomAfter, oomBefore >= oomStart, oomAfter >= oomBefore else {
                throw BenchError("\(label): the kernel's OOM kill count cannot be read or went down (\(oomStart.map(String.init) ?? "?") → \(oomBefore.map(String.init) ?? "?") → \(oomAfter.map(String.init) ?? "?"))")
            }
            let kernelKills = oomAfter - oomBefore
            if peer != nil { policyKills = max(0, policyKills - Int(clamping: kernelKills)) }
            guard resumes.count + relaunches.count + (records.count - done.count) == records.count else {
                throw BenchError("\(label): resumes, relaunches and failed switches do not add up to the switches")
            }
            return RunResult(
                policy: policy, budgetBytes: budgetBytes, trim: trim, switches: records.count, resumes: resumes.count, relaunches: relaunches.count,
                kills: policyKills, kernelOOMKills: kernelKills, meanSwitchMs: mean(ms) ?? 0, p95SwitchMs: percentile(ms, 0.95),
                expectedSwitchMs: pAlive * calResume + (1 - pAlive) * calRelaunch, bytesLost: lost,
                budgetApps: budgetApps, p50SwitchMs: percentile(ms, 0.5), meanResumeMs: mean(resumes.map(\.ms)), meanRelaunchMs: mean(relaunches.map(\.ms)),
                resumeShare: pAlive, calibratedResumeMs: calResume, calibratedRelaunchMs: calRelaunch, warningsSent: warnings,
                backgroundFootprintBytes: bg.perApp, backgroundTotalBytes: bg.total, backgroundApps: cachedApps(in: log, from: t0, to: t1),
                warmupKills: warmupKills, warmupKernelOOMKills: oomBefore - oomStart, heldAtLimit: killer == nil ? nil : heldEpisodes.count, failedActivations: sw.failedActivations,
                failedSwitches: records.count - done.count,
                episodes: outcomes.map { "\($0.1)× \($0.0)" }, losses: sw.losses, deaths: died, seconds: monotonicSeconds() - started, loadAverage: load,
                swapBytes: max(swapBefore, swapTotalBytes()), records: records, notes: notes,
                replaySeconds: after.time - before.time, timeoutMeanMs: mean(withTimeouts) ?? 0, timeoutP50Ms: percentile(withTimeouts, 0.5),
                timeoutP95Ms: percentile(withTimeouts, 0.95), timeoutP99Ms: percentile(withTimeouts, 0.99),
                killsPerMinute: Double(policyKills + Int(clamping: kernelKills)) / minutes,
                refaults: delta(before.refaults, after.refaults),
                psiSomeMsPerMinute: delta(before.psi?.some.totalMicroseconds, after.psi?.some.totalMicroseconds).map { Double($0) / 1000 / minutes },
                psiFullMsPerMinute: delta(before.psi?.full?.totalMicroseconds, after.psi?.full?.totalMicroseconds).map { Double($0) / 1000 / minutes },
                pagesSwappedIn: delta(before.pswpin, after.pswpin), pagesSwappedOut: delta(before.pswpout, after.pswpout), zramPeakBytes: zramPeak,
                appCPUSeconds: max(0, appCPUSeconds(reports) - cpuBefore), benchCPUSeconds: max(0, after.benchCPUSeconds - before.benchCPUSeconds),
                heldStallSeconds: heldEpisodes.map { e in e.victims.first?.secondsFromEvent ?? max(0, (e.end ?? e.start) - e.start) })
        } catch {
            if let logs, !Task.isCancelled {
                do { try writeLog(await s.log, killer: killer, to: "\(logs)/\(runName)-failed.json") } catch { log("switching-bench", "\(error)") }
            }
            await s.shutdown()
            throw error
        }
    } onCancel: {
        Task { await s.abort() }
    }
}

/// How an episode ended, without its figures: what the report counts episodes by.
func outcomeKind(_ outcome: JetsamEpisode.Outcome) -> String {
    switch outcome {
    case .sufficed(let step): "\(step.rawValue) sufficed"
    case .recovered: "recovered"
    case .nothingLeftToKill: "nothing left to kill"
    case .noDecision: "no decision"
    case .failedKills: "stopped: kills kept failing"
    case .notMeasured: "memory could not be measured"
    case .shuttingDown: "stopped: shutting down"
    case .stillShort: "stopped: still short"
    case .overLimit: "killed over its limit"
    case .unrecognized(let words): words
    }
}

/// A run's supervisor log and the killer's episodes, for `--logs DIR` (not part of the report).
func writeLog(_ events: [SupervisorEvent], killer: JetsamKiller?, to path: String) throws {
    struct Log: Encodable {
        var events: [SupervisorEvent]
        var episodes: [JetsamEpisode]
    }
    let encoder = JSONEncoder()
    encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
    try writeText(String(decoding: try encoder.encode(Log(events: events, episodes: killer?.episodes ?? [])), as: UTF8.self), to: path)
}

/// A jetsam policy as the benchmark names it. `default`: `JetsamConfiguration()` as this build
/// has it (the report says what that is). A ranking policy (ios, lmkd, ...): that policy with
/// jetsam's defaults as they were when this evaluation began — freeze-dry only below 16 MiB
/// (iOS 5's line), largest first within an ios band, the high-memory line at an eighth of the
/// budget, a quarter of the budget freed — fixed here, not taken from the library, so that a
/// name means the same configuration in every report. Both run with the kernel's killer free to
/// act. Variants, each a suffix: `-hold` holds the kernel's OOM killer (`holdKernelOOMKiller`),
/// `-freeze` freeze-dries every suspended app before it kills one when the machine has swap
/// (`freezeDryBelowBytes` unbounded), `-lean` frees to 5% of the budget, `-wide` to 25%,
/// `-freeN` to N% (`targetAvailableShare`), `-lru` / `-largest` order an ios band least recently
/// used or largest first (`withinBand`), `-highN` puts the high-memory line at N% of the budget.
struct JetsamVariant {
    var configuration: JetsamConfiguration

    init?(_ text: String) {
        let parts = text.split(separator: "-").map(String.init)
        guard let first = parts.first else { return nil }
        var c: JetsamConfiguration
        if first == "default" {
            // The library's defaults as they are in this build, the kernel's killer free.
            c = JetsamConfiguration()
        } else {
            guard let name = JetsamPolicyName(rawValue: first) else { return nil }
            c = JetsamConfiguration(policy: name)
            c.freezeDryBelowBytes = 16 << 20
            c.withinBand = .largestFirst
            c.highMemoryShare = 0.125
            c.targetAvailableShare = 0.25
        }
        c.holdKernelOOMKiller = false
        for suffix in parts.dropFirst() {
            switch suffix {
            case "hold": c.holdKernelOOMKiller = true
            case "freeze": c.freezeDryBelowBytes = .max
            case "lean": c.targetAvailableShare = 0.05
            case "wide": c.targetAvailableShare = 0.25
            case "lru": c.withinBand = .leastRecentFirst
            case "largest": c.withinBand = .largestFirst
            default:
                // freeN: free to N% of the budget (1 to 50); highN: the high-memory line at N% of it.
                if suffix.hasPrefix("free"), let n = Int(suffix.dropFirst(4)), (1...50).contains(n) {
                    c.targetAvailableShare = Double(n) / 100
                } else if suffix.hasPrefix("high"), let n = Int(suffix.dropFirst(4)), (1...100).contains(n) {
                    c.highMemoryShare = Double(n) / 100
                } else {
                    return nil
                }
            }
        }
        configuration = c
    }

    var holdsKernelOOMKiller: Bool { configuration.holdKernelOOMKiller }
}
