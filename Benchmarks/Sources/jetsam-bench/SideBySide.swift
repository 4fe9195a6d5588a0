import MemPressureLifecycle
import BenchSupport
import Foundation
import Glibc
import MemPressureJetsam
import MemPressureLifecycleProtocol
import MemPressureSystem
import MemPressureWorkloadProtocol
import PeerKillers

/// The same allocation spike under each contender: a device of `budgetMB`, seven model apps in
/// every band, and the foreground app growing at a fixed rate until the budget cannot hold all.
struct Spike: Codable, Sendable {
    enum Role: String, Codable, Sendable { case suspended, backgroundRunning, foreground }
    struct App: Codable, Sendable {
        var name: String
        var role: Role
        var dirtyMB: Int
    }
    var budgetMB = 1024
    var apps: [App] = [
        .init(name: "Photos", role: .suspended, dirtyMB: 180),
        .init(name: "Maps", role: .suspended, dirtyMB: 140),
        .init(name: "Music", role: .backgroundRunning, dirtyMB: 130),
        .init(name: "Mail", role: .suspended, dirtyMB: 60),
        .init(name: "Notes", role: .suspended, dirtyMB: 30),
        .init(name: "Podcasts", role: .backgroundRunning, dirtyMB: 40),
        .init(name: "Safari", role: .foreground, dirtyMB: 80),
    ]
    var growthMB = 350
    var growthMBPerSecond = 150
    /// After the growth ends (or the foreground app died), how long the run goes on.
    var settleSeconds = 2.0

    var foreground: String { apps.first { $0.role == .foreground }!.name }
    var budgetBytes: UInt64 { UInt64(budgetMB) << 20 }
    var growSeconds: Double { Double(growthMB) / Double(growthMBPerSecond) }
    /// The foreground app's command that makes the spike.
    var growth: WorkloadRequest<Void> { .grow(bytesPerSecond: growthMBPerSecond << 20, totalBytes: growthMB << 20) }

    /// The `oom_score_adj` the supervisor gives the app (`OOMScoreBands`, split at jetsam's
    /// high-memory line, a quarter of the budget), from its role and its dirty memory.
    func oomScoreAdj(_ app: App) -> Int32 {
        let bands = OOMScoreBands()
        let state: LifecycleState = app.role == .foreground ? .active : app.role == .suspended ? .suspended : .backgroundRunning
        return bands.score(for: state, footprintBytes: UInt64(app.dirtyMB) << 20, highMemoryLine: bands.highMemoryLine(budgetBytes: budgetBytes)) ?? 0
    }

    func workloadArguments(_ app: App, dataDirectory: String) -> [String] {
        ["--name", app.name, "--data-dir", "\(dataDirectory)/\(app.name)", "--state-mb", "1", "--image-cache-mb", "2", "--image-kb", "256",
         "--backing-mb", "1", "--assets-mb", "1", "--decode-cost", "16", "--dirty-mb", "\(app.dirtyMB)"]
            + (app.role == .backgroundRunning ? ["--background-task", "3600"] : [])
    }
}

/// One contender's run of the spike.
struct SpikeRun: Codable, Sendable {
    var contender: String
    var round: Int
    struct Death: Codable, Sendable {
        var app: String
        /// Seconds from the start of the growth.
        var t: Double
        var how: String
        /// The working-set drop around the death: the highest in the 300 ms before it against the
        /// lowest in the 300 ms after, or until the next death (kills close together share it:
        /// the run's `freedBytes` is the whole).
        var freedBytes: UInt64
    }
    var deaths: [Death]
    /// The swap the run had: nil or "none" (no swap), "zram" (`/dev/zram0`, lz4).
    var swap: String?
    /// The most memory the zram device held during the run (its compressed pages and their
    /// metadata: memory outside the device's budget), when it had zram.
    var zramPeakBytes: UInt64?
    var foregroundSurvived: Bool
    var kernelOOMKills: UInt64
    /// Working set when the growth began; what must be freed to end at the target (75%).
    var startUsedBytes: UInt64
    var neededBytes: UInt64
    /// Before the first death against after the last: what the kills gave back.
    var freedBytes: UInt64
    /// From the working set first reaching 80% of the budget to its first return to 75% after
    /// its peak; nil if it never came back (or nobody died).
    var recoverySeconds: Double?
    var peakUsedBytes: UInt64
    var series: [WorkingSetSampler.Point]
    var notes: [String]
}

extension SpikeRun {
    /// The run's swap in words (reports written before zram was measured had none).
    var swapText: String { swap == "zram" ? "zram swap (lz4)" : "no swap" }
}

extension Spike {
    /// What the run's series and deaths say: needed, freed, recovery.
    func finish(contender: String, round: Int, start: Double, series: [WorkingSetSampler.Point], deaths raw: [(app: String, t: Double, how: String)], oomKills: UInt64, notes: [String]) -> SpikeRun {
        let startUsed = series.first { $0.t >= 0 }?.usedBytes ?? series.first?.usedBytes ?? 0
        let target = budgetBytes / 4 * 3
        let demand = startUsed + UInt64(growthMB) << 20
        let needed = demand > target ? demand - target : 0
        func used(at t: Double) -> UInt64? { series.last { $0.t <= t }?.usedBytes }
        // Around each death: the highest working set in the 300 ms before it (the kill comes before
        // the death is seen) against the lowest in the 300 ms after, or until the next death.
        var deaths: [SpikeRun.Death] = []
        let sorted = raw.sorted(by: { $0.t < $1.t })
        func peak(before t: Double) -> UInt64 { series.filter { $0.t >= t - 0.3 && $0.t <= t }.map(\.usedBytes).max() ?? (used(at: t) ?? 0) }
        func low(after t: Double, until end: Double) -> UInt64? { series.filter { $0.t >= t && $0.t <= end }.map(\.usedBytes).min() }
        for (i, d) in sorted.enumerated() {
            let end = min(d.t + 0.3, i + 1 < sorted.count ? sorted[i + 1].t : .infinity)
            let before = peak(before: d.t)
            let after = low(after: d.t, until: end) ?? before
            deaths.append(.init(app: d.app, t: d.t, how: d.how, freedBytes: before &- min(before, after)))
        }
        // The whole: before the first death against after the last (per death, close kills share).
        var freed: UInt64 = 0
        if let first = sorted.first, let last = sorted.last {
            let before = peak(before: first.t)
            let after = low(after: last.t, until: last.t + 0.3) ?? before
            freed = before &- min(before, after)
        }
        // Recovery, from the working set alone (not from when each killer's deaths are seen, which
        // differs: ours at SIGKILL, the peers' when reaped): from its first reaching 80% of the
        // budget to its first return to 75% after its peak.
        let pressureStart = series.first { $0.usedBytes >= budgetBytes / 5 * 4 }?.t
        var recovery: Double?
        if let pressureStart, !raw.isEmpty, let peakAt = series.max(by: { $0.usedBytes < $1.usedBytes })?.t {
            recovery = series.first { $0.t >= peakAt && $0.usedBytes <= target }.map { $0.t - pressureStart }
        }
        return SpikeRun(
            contender: contender, round: round, deaths: deaths, foregroundSurvived: !raw.contains { $0.app == foreground },
            kernelOOMKills: oomKills, startUsedBytes: startUsed, neededBytes: needed, freedBytes: freed,
            recoverySeconds: recovery, peakUsedBytes: series.map(\.usedBytes).max() ?? 0, series: series, notes: notes)
    }
}

// MARK: Killers in the supervisor

/// A killer that runs in the supervisor: jetsam, or the lmkd emulation.
enum SupervisedKiller: String, Codable, Sendable, CaseIterable {
    case jetsam, lmkd

    var contender: String {
        switch self {
        case .jetsam: "mempressure jetsam (ios)"
        case .lmkd: "lmkd emulation"
        }
    }
}

/// The spike under the supervisor with jetsam (ios policy, its defaults) or the lmkd emulation
/// (`LmkdEmulation`, as switching-bench runs it).
func runSupervised(_ which: SupervisedKiller, _ spike: Spike, round: Int, build: String, data: String) async throws -> SpikeRun {
    var c = SupervisorConfiguration()
    c.executableDirectory = build
    c.budgetBytes = Int(spike.budgetBytes)
    c.backgroundTaskLimit = 7200
    c.expirationWarning = 5
    var killer: JetsamKiller?
    var lmkd: LmkdEmulation?
    switch which {
    case .jetsam:
        // The kernel's killer is free to act, as for the peers (a kernel kill under jetsam counts).
        var j = JetsamConfiguration(policy: .ios)
        j.holdKernelOOMKiller = false
        killer = JetsamKiller(configuration: j)
        killer?.attach(to: &c)
    case .lmkd:
        lmkd = LmkdEmulation(configuration: .supervisedApps)
        lmkd?.attach(to: &c)
    }
    let s = try Supervisor(configuration: c)
    var notes: [String] = []
    return try await withTaskCancellationHandler {
    do {
        for app in spike.apps {
            try await s.register(AppSpec(name: app.name, command: ["\(build)/mempressure-workload"] + spike.workloadArguments(app, dataDirectory: data)))
        }
        for app in spike.apps where app.role != .foreground {
            try await s.activate(app.name)
            try await s.background(app.name, waitForSuspension: app.role == .suspended)
            try await s.waitForState(app.name, app.role == .suspended ? .suspended : .backgroundRunning, timeout: 30)
        }
        try await s.activate(spike.foreground)
        guard let cgroup = s.deviceMemoryCgroup else { throw BenchError("the supervisor made no device cgroup") }
        let oomBefore = await s.kernelOOMKills() ?? 0
        let start = monotonicSeconds()
        let sampler = try WorkingSetSampler(cgroup: cgroup, start: start)
        let t0 = await s.now()
        try await spike.growth.send { try await s.command(spike.foreground, $0) }
        // The run lasts the growth and the settling time (a timer: the spike's length is the experiment).
        try await Task.sleep(for: .seconds(spike.growSeconds + spike.settleSeconds))
        let series = sampler.stop()
        if let failure = sampler.failure { notes.append("working-set sampling stopped early: \(failure)") }
        let log = await s.log
        // Deaths at SIGKILL, as the episodes have them (the memory comes back then, with
        // process_mrelease); any other death (a crash) as the log has it.
        var deaths: [(app: String, t: Double, how: String)] = []
        for e in killer?.episodes ?? [] {
            for v in e.victims { deaths.append((v.name, e.trigger.t + v.secondsFromEvent - t0, "SIGKILL (jetsam, \(v.reason), rank \(v.rank), \(v.band))")) }
        }
        for k in lmkd?.kills ?? [] where k.time >= t0 {
            deaths.append((k.app, k.time - t0, "SIGKILL (lmkd emulation, \(k.detail), adj \(k.oomScoreAdj))"))
        }
        for e in log where (e.kind == .exit || e.kind == .crash) && e.t >= t0 {
            if let app = e.app, !deaths.contains(where: { $0.app == app }) { deaths.append((app, e.t - t0, e.detail ?? e.kind.rawValue)) }
        }
        if let e = killer?.episodes.first { notes.append("first episode: \(e.outcome)") }
        if lmkd != nil { notes.append("lmkd's PSI-mode decision (`LmkdEmulation`), low-memory kills from adj \(LmkdConfiguration.supervisedApps.lowmemMinOomScore)") }
        let oom = (await s.kernelOOMKills() ?? 0) - oomBefore
        await s.shutdown()
        return spike.finish(contender: which.contender, round: round, start: start, series: series, deaths: deaths, oomKills: oom, notes: notes)
    } catch {
        await s.shutdown()
        throw error
    }
    } onCancel: {
        Task { await s.abort() }
    }
}

// MARK: Peers, each in a PID namespace of its own

enum Peer: String, Codable, Sendable, CaseIterable {
    /// earlyoom and nohang with their own default thresholds.
    case earlyoom, nohang
    /// The same two with jetsam's thresholds: they start at 20% available (where jetsam's
    /// usage source says warning: 80% of the budget in use) and kill outright at 5% (jetsam's
    /// critical, 95%); earlyoom then stops killing above 20% available, jetsam (its defaults)
    /// at 5%.
    case earlyoomMatched = "earlyoom-matched", nohangMatched = "nohang-matched"
    /// The kernel's memory-cgroup OOM killer alone.
    case kernel

    var contender: String {
        switch self {
        case .earlyoom: "earlyoom"
        case .nohang: "nohang"
        case .earlyoomMatched: "earlyoom at jetsam's thresholds"
        case .nohangMatched: "nohang at jetsam's thresholds"
        case .kernel: "kernel cgroup OOM killer alone"
        }
    }
}

/// Runs the spike under `peer` inside `unshare --pid --fork --mount-proc`: the peer sees, and
/// can kill, only the benchmark's processes; when the run ends, the namespace's first process
/// exits and the kernel kills whatever is left in it.
func runPeer(_ peer: Peer, _ spike: Spike, round: Int, build: String, data: String, benchBinary: String) async throws -> SpikeRun {
    let cgroup = try BenchCgroup(name: "mempressure-bench-\(getpid())-\(peer.rawValue)-\(round)", limitBytes: spike.budgetBytes)
    defer { cgroup.remove() }
    let output = "\(data)/peer-\(peer.rawValue)-\(round).json"
    let spikeFile = "\(data)/spike.json"
    try writeText(String(decoding: try JSONEncoder().encode(spike), as: UTF8.self), to: spikeFile)
    let argv = ["/usr/bin/unshare", "--pid", "--fork", "--mount-proc", "--kill-child", "--", benchBinary, "peer-run", "--peer", peer.rawValue,
                "--cgroup", cgroup.path, "--build", build, "--data", data, "--spike", spikeFile, "--round", "\(round)", "--output", output]
    let child = try Child(argv, logPath: "\(data)/peer-\(peer.rawValue)-\(round).log")
    var status: Int32 = 0
    // Cancelled: the namespace's first process is killed, and with it everything in it.
    await withTaskCancellationHandler {
        _ = retryOnInterrupt { waitpid(child.pid, &status, 0) }
    } onCancel: {
        child.signal(SIGKILL)
    }
    try Task.checkCancellation()
    guard (status & 0x7f) == 0, (status >> 8) & 0xff == 0 else {
        // The log goes with the run's data directory: its end is said here.
        let tail = String(decoding: (try? ProcFS.readBytes("\(data)/peer-\(peer.rawValue)-\(round).log")) ?? [], as: UTF8.self)
            .split(separator: "\n").suffix(5).joined(separator: " / ")
        throw BenchError("peer run \(peer.rawValue) failed (wait status \(status)): \(tail.isEmpty ? "its log is empty" : tail)")
    }
    return try JSONDecoder().decode(SpikeRun.self, from: Data(try ProcFS.readBytes(output)))
}

/// Inside the namespace: start the apps in the cgroup, the peer beside them, then the spike.
func peerRun(peer: Peer, cgroup: String, build: String, data: String, spike: Spike, round: Int, output: String) throws {
    var notes: [String] = []
    // The apps publish their purgeable regions in a registry of this run's own: their PIDs are
    // this namespace's, which would mean other processes in /dev/shm, and the peers kill them
    // before they can withdraw. It goes with the run's data directory.
    _ = try CheckedDirectory.open("\(data)/registry-\(peer.rawValue)-\(round)", creating: true)
    setenv("MEMPRESSURE_REGISTRY", "\(data)/registry-\(peer.rawValue)-\(round)", 1)
    var apps: [(app: Spike.App, child: Child)] = []
    for app in spike.apps {
        let c = try Child(["\(build)/mempressure-exec", "--cgroup", cgroup, "--", "\(build)/mempressure-workload"] + spike.workloadArguments(app, dataDirectory: data))
        guard let line = c.readLine(timeout: 60), case .ready = try WorkloadReply(line: line) else { throw BenchError("\(app.name) did not start") }
        apps.append((app, c))
    }
    for (app, c) in apps where app.role == .suspended {
        c.signal(SIGSTOP)
        var info = siginfo_t()
        _ = retryOnInterrupt { waitid(P_PID, id_t(c.pid), &info, WSTOPPED | WNOWAIT) }
    }
    // The peers know what jetsam knows: each app's oom_score_adj from its state and size, by the
    // supervisor's own table (the kernel's badness, earlyoom's and nohang's choices all read it).
    // Each app is this process's unreaped child: its PID is its own.
    for (app, c) in apps {
        let adj = spike.oomScoreAdj(app)
        let result = OOMScore.set(adj, pids: [c.pid]) { _, _ in true }
        if let failure = result.failure { throw BenchError("\(app.name): cannot set oom_score_adj \(adj): \(failure)") }
    }
    notes.append("every app's oom_score_adj set from its state, as the supervisor sets it: " + apps.map { "\($0.app.name) \(spike.oomScoreAdj($0.app))" }.joined(separator: ", "))
    // The peer, with its own default thresholds or jetsam's, on a view of /proc/meminfo in which
    // the machine is the device (see MeminfoView): earlyoom SIGTERM at 10% available, SIGKILL at
    // 5%; nohang soft (SIGTERM) at 5%, hard (SIGKILL) at 2%; matched, both at 20% and 5%.
    var view: MeminfoView?
    var daemon: PeerDaemon?
    if peer != .kernel {
        view = try MeminfoView(path: "\(data)/meminfo-\(peer.rawValue)-\(round)", cgroup: cgroup, budgetBytes: spike.budgetBytes)
    }
    defer {
        daemon?.stop()
        view?.stop()
    }
    switch peer {
    case .earlyoom, .earlyoomMatched:
        daemon = try PeerDaemon(.earlyoom, matched: peer == .earlyoomMatched, data: data, tag: "\(round)", tool: "jetsam-bench")
    case .nohang, .nohangMatched:
        daemon = try PeerDaemon(.nohang, matched: peer == .nohangMatched, data: data, tag: "\(round)", tool: "jetsam-bench")
    case .kernel:
        notes.append("no killer: the kernel's cgroup OOM killer at the budget")
    }
    notes += (daemon?.notes ?? []) + (daemon?.problems ?? [])
    let oomBefore = try BenchCgroup(existing: cgroup).oomKills()
    let start = monotonicSeconds()
    let sampler = try WorkingSetSampler(cgroup: cgroup, start: start)
    let foreground = apps.first { $0.app.role == .foreground }!.child
    try foreground.send(spike.growth.line)
    guard let answer = foreground.readLine(timeout: 10) else { throw BenchError("the foreground app did not answer \(spike.growth.line)") }
    try spike.growth.reply(answer)
    // Reap deaths as they come until the growth and the settling time are over.
    var deaths: [(app: String, t: Double, how: String)] = []
    let end = start + spike.growSeconds + spike.settleSeconds
    while monotonicSeconds() < end {
        var info = siginfo_t()
        let rc = waitid(P_ALL, 0, &info, WEXITED | WNOHANG)
        let pid = info._sifields._sigchld.si_pid
        if rc == 0, pid != 0 {
            let code = info._sifields._sigchld.si_status
            let how = info.si_code == Int32(CLD_EXITED) ? "exited \(code)" : "killed by signal \(code)"
            if let a = apps.first(where: { $0.child.pid == pid }) {
                deaths.append((a.app.name, monotonicSeconds() - start, how))
            } else if let daemon, daemon.owns(pid) {
                // Reaped here: its ChildProcess must not wait for it (nor signal its PID) again.
                daemon.child.noteReaped(info.si_code == Int32(CLD_EXITED) ? (code & 0xff) << 8 : code & 0x7f)
                notes.append("the peer exited: \(how)")
            }
            continue
        }
        var ts = timespec(tv_sec: 0, tv_nsec: 2_000_000)
        nanosleep(&ts, nil)  // between non-blocking reaps
    }
    let series = sampler.stop()
    if let failure = sampler.failure { notes.append("working-set sampling stopped early: \(failure)") }
    let run = spike.finish(
        contender: peer.contender, round: round, start: start, series: series,
        deaths: deaths, oomKills: try BenchCgroup(existing: cgroup).oomKills() - oomBefore, notes: notes)
    try writeText(String(decoding: try JSONEncoder().encode(run), as: UTF8.self), to: output)
    // Returning ends the namespace's first process: the kernel kills the rest.
}

extension BenchCgroup {
    init(existing path: String) { self.path = path }
}
