// From the allocation that crosses the device's critical line to the SIGKILL and to the memory
// being back, with 100 supervised apps: the app that allocates times its crossing itself
// (`ramp`, WorkloadProtocol), the pressure monitor says when it woke, jetsam's episode when it
// opened and when it signalled, and a thread of the harness blocked on the line's eventfd when the
// usage fell back below it. Kernel events against the polled path (at 50 ms, jetsam's old rate,
// and at the monitor's default 250 ms), one supervisor each, their rounds interleaved in a seeded
// random order in the same run.

import MemPressureLifecycle
import BenchSupport
import MemPressureCachePolicies
import Glibc
import MemPressureJetsam
import MemPressureLifecycleProtocol
import MemPressureSystem
import MemPressureMonitor
import MemPressureValues
import Synchronization
import MemPressureWorkloadProtocol

/// How the pressure monitor hears of the device's memory in one condition.
struct WakeCondition: Codable, Sendable, Hashable {
    var name: String
    /// cgroup v1's events (usage thresholds, reclaim, a task at the limit), or reading the
    /// device's working set every `pollInterval` only.
    var useCgroupEvents: Bool
    var pollInterval: Double

    /// A short name for files: events, polled50, polled250.
    var tag: String { useCgroupEvents ? "events" : "polled\(Int((pollInterval * 1000).rounded()))" }

    static let all = [
        WakeCondition(name: "kernel events", useCgroupEvents: true, pollInterval: PressureConfiguration().pollInterval),
        WakeCondition(name: "polled every 50 ms", useCgroupEvents: false, pollInterval: 0.05),
        WakeCondition(name: "polled every 250 ms", useCgroupEvents: false, pollInterval: 0.25),
    ]
}

/// What a run is made of.
struct EndToEndPlan: Codable, Sendable {
    var apps: Int
    var roundsPerCondition: Int
    var seeds: [UInt64]
    var budgetBytes: Int
    /// The foreground app's ballast holds the device's working set at this share of the budget
    /// when a round begins (normal pressure: below the 75% where warning is left).
    var startShare: Double
    var chunkBytes: Int
    /// How far the app allocates past the line (the kernel checks a cgroup's thresholds every
    /// 128 pages charged per CPU: at least that).
    var moreBytes: Int
    /// The small apps' plain dirty memory, and how many of them run in the background (the
    /// others are suspended).
    var appDirtyMB: ClosedRange<Int>
    var backgroundRunning: Int

    static func full() -> EndToEndPlan {
        EndToEndPlan(
            apps: 100, roundsPerCondition: 30, seeds: [1, 2, 3], budgetBytes: 1280 << 20, startShare: 0.70, chunkBytes: 64 << 10,
            moreBytes: 2 << 20, appDirtyMB: 3...8, backgroundRunning: 4)
    }

    /// A smoke run CI can afford: 30 apps, one seed, 6 rounds per condition.
    static func quick() -> EndToEndPlan {
        var p = full()
        p.apps = 30
        p.roundsPerCondition = 6
        p.seeds = [1]
        p.budgetBytes = 512 << 20
        return p
    }
}

/// One round: the app's stamps, the monitor's wake, jetsam's episode and the memory back, all
/// in CLOCK_MONOTONIC seconds.
struct EndToEndRound: Codable, Sendable {
    var condition: String
    var seed: UInt64
    /// Its place among the run's rounds (interleaved across conditions).
    var order: Int
    /// The device's usage at the critical line (the working set at 95% of the budget, plus the
    /// inactive file pages when the round began), and the budget.
    var lineBytes: UInt64
    var budgetBytes: UInt64
    /// The allocating app's stamps (`WorkloadRamp`): after the chunk that crossed the line, after
    /// the one before it, the first and the last.
    var startedAt: Double
    var beforeAt: Double
    var crossedAt: Double
    var endedAt: Double
    var allocatedBytes: Int
    var chunks: Int
    /// The wake of the monitor that set the kill going: the first at or after the chunk before
    /// the crossing that judged the device critical, or, where jetsam looked at memory before
    /// that one, the wake that opened its episode (a warning, on the app's way up): when poll(2)
    /// returned, whether a kernel event woke it, and how the monitor judged the device then.
    var wakeAt: Double
    var wakeup: PressureWakeup
    var wakeLevel: PressureLevel
    var wakeEvents: [String]
    /// The episode that killed: what opened it (its trigger), whether that was the monitor's
    /// first critical wake (else an episode open since the warning went on to kill), when jetsam
    /// last measured the device's memory before it ranked the apps (in an episode the critical
    /// wake opened: its opening reading), when SIGKILL went to its first victim.
    var triggerLevel: PressureLevel
    var triggerSource: String
    var openedByFirstCriticalWake: Bool
    var lookedAt: Double
    var signalledAt: Double
    var victim: String
    var victimState: LifecycleState
    var victimFootprintBytes: UInt64
    var kills: Int
    /// When the device's usage was back below the line: a thread blocked on an eventfd the
    /// kernel signals as the usage crosses it woke and read it below (`memoryBackBy` "event"),
    /// or, had no event come, its 20 ms fallback poll found it below ("poll").
    var memoryBackAt: Double
    var memoryBackBy: String
    /// Whether the usage had already gone below the line between the crossing and the SIGKILL
    /// (the kernel reclaiming page cache at the limit): memory back is then the first reading
    /// after the SIGKILL, by the watch's poll unless an event came.
    var belowLineBeforeKill: Bool
    /// Kernel OOM kills in the device during the round (must be 0).
    var kernelOOMKills: UInt64

    var crossingToWake: Double { wakeAt - crossedAt }
    var wakeToLook: Double { lookedAt - wakeAt }
    var lookToKill: Double { signalledAt - lookedAt }
    var crossingToKill: Double { signalledAt - crossedAt }
    var killToBack: Double { memoryBackAt - signalledAt }
    var crossingToBack: Double { memoryBackAt - crossedAt }
    /// How long the crossing chunk took: how precisely the crossing is timed.
    var crossingChunk: Double { crossedAt - beforeAt }
    var allocationRate: Double { Double(allocatedBytes) / max(endedAt - startedAt, 1e-9) }
}

/// The section's results.
struct EndToEndResult: Codable, Sendable {
    var plan: EndToEndPlan
    var conditions: [WakeCondition]
    var rounds: [EndToEndRound]
    /// Load average and CPU pressure (PSI some avg10, %) when each seed began and ended.
    var load: [String]
    var quick: Bool
    var notes: [String]
}

/// Runs the plan: for each seed, one supervisor per condition, their rounds interleaved.
func endToEndLatency(plan: EndToEndPlan, quick: Bool, build: String, data: String, episodes: String?) async throws -> EndToEndResult {
    var rounds: [EndToEndRound] = []
    var load: [String] = []
    var notes: [String] = []
    var order = 0
    for seed in plan.seeds {
        try Task.checkCancellation()
        log("jetsam-bench", "end to end, seed \(seed): \(plan.apps) apps under each of \(WakeCondition.all.count) supervisors")
        load.append("seed \(seed) began: \(loadLine())")
        var random = SplitMix64(seed: seed)
        let devices = DeviceSet()
        try await withTaskCancellationHandler {
            do {
                for condition in WakeCondition.all {
                    try Task.checkCancellation()
                    // The apps' data directories, one directory per supervisor (made 0700).
                    let dir = try CheckedDirectory.open(data).subdirectory("seed\(seed)-\(condition.tag)").path
                    devices.add(try await Device.start(condition: condition, plan: plan, seed: seed, build: build, data: dir, episodes: episodes))
                }
                var schedule = WakeCondition.all.indices.flatMap { i in Array(repeating: i, count: plan.roundsPerCondition) }
                schedule.shuffle(using: &random)
                for (n, i) in schedule.enumerated() {
                    try Task.checkCancellation()
                    let device = devices.all[i]
                    if n % 10 == 0 { log("jetsam-bench", "end to end, seed \(seed): round \(n + 1) of \(schedule.count)") }
                    var round = try await device.round(plan: plan)
                    round.seed = seed
                    round.order = order
                    order += 1
                    rounds.append(round)
                }
                for d in devices.all { notes += await d.finish() }
            } catch {
                for d in devices.all { await d.supervisor.shutdown() }
                throw error
            }
        } onCancel: {
            devices.abortAll()
        }
        load.append("seed \(seed) ended: \(loadLine())")
    }
    return EndToEndResult(plan: plan, conditions: WakeCondition.all, rounds: rounds, load: load, quick: quick, notes: notes)
}

/// The load average and the CPU's pressure (PSI some avg10) now, in words.
func loadLine() -> String {
    var psi = "no /proc/pressure/cpu"
    do {
        let text = String(decoding: try ProcFS.readBytes("/proc/pressure/cpu"), as: UTF8.self)
        if let some = text.split(separator: "\n").first { psi = "CPU pressure \(some)" }
    } catch {
        psi = "CPU pressure unreadable (\(error))"
    }
    return "load average \(Machine.loadAverage()), \(psi)"
}

/// The devices of one seed, so that a cancellation can abort every one of them at once.
final class DeviceSet: Sendable {
    private let devices = Mutex<[Device]>([])
    var all: [Device] { devices.withLock { $0 } }
    func add(_ d: Device) { devices.withLock { $0.append(d) } }
    func abortAll() {
        for d in all { Task { await d.supervisor.abort() } }
    }
}

/// One condition's device: a supervisor with its budget and jetsam, `apps` − 1 small model apps
/// (most suspended, a few running in the background) and the foreground app that allocates.
final class Device: Sendable {
    static let grower = "Grower"
    let condition: WakeCondition
    /// The monitor's configuration: its judgement's critical line is the one crossed.
    let pressure: PressureConfiguration
    let supervisor: Supervisor
    let killer: JetsamKiller
    let cgroup: String
    /// The small apps and whether each runs in the background (else it is suspended).
    let apps: [(name: String, running: Bool)]
    /// CLOCK_MONOTONIC at the supervisor's log clock's zero (`Supervisor.now()`), bracketed
    /// to within `clockError` seconds.
    let logZero: Double
    let clockError: Double
    /// The foreground app's ballast, in bytes.
    private let ballast = Mutex<Int>(0)

    private init(condition: WakeCondition, pressure: PressureConfiguration, supervisor: Supervisor, killer: JetsamKiller, cgroup: String, apps: [(name: String, running: Bool)], logZero: Double, clockError: Double) {
        self.condition = condition
        self.pressure = pressure
        self.supervisor = supervisor
        self.killer = killer
        self.cgroup = cgroup
        self.apps = apps
        self.logZero = logZero
        self.clockError = clockError
    }

    /// Starts the supervisor and its apps, and fills the ballast.
    static func start(condition: WakeCondition, plan: EndToEndPlan, seed: UInt64, build: String, data: String, episodes: String?) async throws -> Device {
        // Jetsam as shipped, but for three settings that make every round answered the same way
        // under every condition: the warning's grace is 0 and the target at the critical line
        // (5% free), so that the warning at 80% closes at once ("warnings sufficed": 20% is free)
        // and the critical line opens an episode of its own, which kills at once and ends with
        // its first victim; freeze-dry off (the path measured is the kill; there is no swap here).
        var j = JetsamConfiguration(policy: .ios)
        j.warningGraceSeconds = 0
        j.targetAvailableShare = 0.05
        j.freezeDryBelowBytes = 0
        if let episodes { j.reportDirectory = "\(episodes)/seed\(seed)-\(condition.tag)" }
        let killer = JetsamKiller(configuration: j)
        var c = SupervisorConfiguration()
        c.executableDirectory = build
        c.budgetBytes = plan.budgetBytes
        // A background task for the whole run: the few apps that run in the background do.
        c.backgroundTaskLimit = 86_400
        var pressure = PressureConfiguration()
        pressure.useCgroupEvents = condition.useCgroupEvents
        pressure.pollInterval = condition.pollInterval
        c.pressure = pressure
        killer.attach(to: &c)
        let s = try Supervisor(configuration: c)
        do {
            guard let cgroup = s.deviceMemoryCgroup else { throw BenchFailure("the supervisor has no device memory cgroup (a budget needs cgroup v1 or v2 memory)") }
            var random = SplitMix64(seed: seed)
            let running = Set((1..<plan.apps).shuffled(using: &random).prefix(plan.backgroundRunning))
            var apps: [(String, Bool)] = []
            let light = ["--state-mb", "0", "--image-cache-mb", "0", "--backing-mb", "0", "--assets-mb", "0"]
            for i in 1..<plan.apps {
                try Task.checkCancellation()
                let name = String(format: "app%03d", i)
                let mb = Int.random(in: plan.appDirtyMB, using: &random)
                let task = running.contains(i) ? ["--background-task", "86400"] : []
                try await s.register(AppSpec(name: name, command: ["\(build)/mempressure-workload", "--data-dir", "\(data)/\(name)"] + light + ["--dirty-mb", "\(mb)"] + task))
                try await s.activate(name)
                try await s.background(name, waitForSuspension: !running.contains(i))
                apps.append((name, running.contains(i)))
            }
            try await s.register(AppSpec(name: grower, command: ["\(build)/mempressure-workload", "--data-dir", "\(data)/\(grower)"] + light + ["--dirty-mb", "0"]))
            try await s.activate(grower)
            // The log clock's zero on CLOCK_MONOTONIC: `now()` read between two clock readings,
            // the tightest of several brackets kept.
            var best = (zero: 0.0, width: Double.infinity)
            for _ in 0..<50 {
                let before = monotonicSeconds()
                let n = await s.now()
                let after = monotonicSeconds()
                if after - before < best.width { best = ((before + after) / 2 - n, after - before) }
            }
            let device = Device(condition: condition, pressure: pressure, supervisor: s, killer: killer, cgroup: cgroup, apps: apps, logZero: best.zero, clockError: best.width / 2)
            try await device.setBallast(share: plan.startShare)
            return device
        } catch {
            await s.shutdown()
            throw error
        }
    }

    func reading() throws -> CgroupMemory.Reading {
        var buffer = ReadBuffer(capacity: 16384)
        do {
            return try CgroupMemory(directory: cgroup).read(&buffer)
        } catch {
            throw BenchFailure("cannot read the device cgroup \(cgroup): \(error)")
        }
    }

    /// The foreground app's ballast set so that the working set is `share` of the budget.
    func setBallast(share: Double) async throws {
        let r = try reading()
        guard let limit = r.limitBytes else { throw BenchFailure("the device cgroup \(cgroup) has no limit") }
        let want = Int(Double(limit) * share) - Int(r.workingSetBytes)
        let held = ballast.withLock { $0 }
        if want > 1 << 20 {
            _ = try await WorkloadRequest.allocate(bytes: want).send { try await supervisor.command(Self.grower, $0) }
            ballast.withLock { $0 += want }
        } else if want < -(1 << 20) {
            guard held >= -want else {
                throw BenchFailure("the apps alone hold \(r.workingSetBytes >> 20) MiB, more than \(Int(share * 100))% of the \(limit >> 20) MiB budget: a larger budget is needed")
            }
            _ = try await WorkloadRequest.release(bytes: -want).send { try await supervisor.command(Self.grower, $0) }
            ballast.withLock { $0 += want }
        }
    }

    /// One round: the foreground app allocates past the critical line; the kill, the memory
    /// back; then it lets go, every victim is launched again, and pressure is back to normal.
    func round(plan: EndToEndPlan) async throws -> EndToEndRound {
        try await waitForNormal()
        try await setBallast(share: plan.startShare)
        let r = try reading()
        guard let limit = r.limitBytes else { throw BenchFailure("the device cgroup \(cgroup) has no limit") }
        // The judgement's critical line (`PressureConfiguration.judge`: the working set at
        // `usageCriticalFraction` of the budget) as the usage the kernel counts.
        let critical = pressure.usageCriticalFraction
        let line = UInt64((Double(limit) * critical).rounded(.up)) + r.inactiveFileBytes
        let oomBefore = r.oomKills ?? 0
        let wakes = WakeLog(supervisor.pressureWakes())
        let episodes = killer.episodeUpdates()
        let back = try UsageLineWatch(cgroup: cgroup, line: line)
        defer { back.stop() }
        let ramp: WorkloadRamp
        do {
            ramp = try await WorkloadRequest.ramp(
                chunkBytes: plan.chunkBytes, lineBytes: Int(line), moreBytes: plan.moreBytes, limitBytes: Int(line) - Int(r.usageBytes) + 64 << 20
            ).send { try await supervisor.command(Self.grower, $0) }
        } catch {
            wakes.stop()
            throw BenchFailure("\(condition.name): the foreground app's ramp failed: \(error)")
        }
        // The first episode with a kill (episodes that killed no one — the warning at 80%, which
        // the target lets pass — are skipped).
        guard let episode = await first(of: episodes, within: 10, where: { !$0.victims.isEmpty }) else {
            wakes.stop()
            throw BenchFailure("\(condition.name): no kill within 10 s of the crossing (line \(line) bytes, usage \(ramp.usageBytes) at the crossing)")
        }
        // Waits for the usage below the line (or 5 s) before the wakes stop being collected.
        _ = await back.firstBelow(after: ramp.crossedAt, within: 5)
        let seen = wakes.stop()
        let after = try reading()
        let round = try await measured(ramp: ramp, line: line, limit: limit, episode: episode, wakes: seen, back: back, oomKills: (after.oomKills ?? 0) &- oomBefore)
        // Back to where the round began: the ramp given back, every victim launched again and
        // sent to the background as it was.
        _ = try await WorkloadRequest.release(bytes: ramp.bytes).send { try await supervisor.command(Self.grower, $0) }
        guard try await supervisor.state(of: Self.grower) == .active else { throw BenchFailure("\(condition.name): the foreground app is not active any more") }
        for v in episode.victims {
            let running = apps.first { $0.name == v.name }?.running ?? false
            try await supervisor.activate(v.name)
            try await supervisor.background(v.name, waitForSuspension: !running)
        }
        return round
    }

    /// The round's figures, checked: anything physically impossible fails the run.
    func measured(ramp: WorkloadRamp, line: UInt64, limit: UInt64, episode: JetsamEpisode, wakes: [WakeLog.Wake], back watch: UsageLineWatch, oomKills: UInt64) async throws -> EndToEndRound {
        let name = condition.name
        guard ramp.startedAt <= ramp.beforeAt, ramp.beforeAt <= ramp.crossedAt, ramp.crossedAt <= ramp.endedAt, UInt64(ramp.usageBytes) >= line else {
            throw BenchFailure("\(name): the app's stamps are out of order or its usage below the line: \(WorkloadReply.ramped(ramp).line) (line \(line))")
        }
        guard let first = episode.victims.first else { throw BenchFailure("\(name): an episode without a victim was taken for the kill") }
        // The episode's trigger is a wake of the monitor (its time exactly): the first wake at or
        // after the trigger's log time, which its conversion from CLOCK_MONOTONIC can only make
        // early (by the hop back from the supervisor, plus the clock's bracket). Its level is the
        // wake's, but for a shortage jetsam found itself on a wake the monitor judged otherwise.
        let triggerLog = episode.trigger.t + logZero - clockError
        let after = wakes.filter { $0.time >= triggerLog && $0.time - triggerLog < 0.05 }
        guard let trigger = after.first(where: { $0.level == episode.trigger.level }) ?? after.first else {
            throw BenchFailure("\(name): no wake of the monitor matches the episode's trigger (\(episode.trigger.source), log time \(episode.trigger.t))")
        }
        let signalledAt = trigger.time + first.secondsFromEvent
        // Jetsam's last look at memory before it ranked the apps and killed: the last measurement
        // on the episode's timeline before the kill (in an episode the critical line opened, the
        // one it opened with: the device's memory, read before the apps' footprints).
        let killIndex = episode.timeline.firstIndex { $0.kind == .kill } ?? episode.timeline.endIndex
        guard let looked = episode.timeline[..<killIndex].last(where: { $0.kind == .measure }) else { throw BenchFailure("\(name): the episode has no measurement before its kill") }
        let lookedAt = looked.t + logZero
        // The wake that set the kill going: the monitor's first wake at or after the chunk before
        // the crossing that judged the device critical (its reading, made after poll returned, saw
        // the line passed) — unless jetsam had already looked at memory before it, in an episode
        // a wake judged only a warning had opened while the app was on its way up (its look found
        // the line passed): then that episode's own wake, before the crossing.
        let critical = wakes.first { $0.time >= ramp.beforeAt && $0.level == .critical }
        let wake: WakeLog.Wake
        if let critical, critical.time <= lookedAt + clockError + 1e-6 {
            wake = critical
        } else if trigger.time <= lookedAt + clockError + 1e-6 {
            wake = trigger
        } else {
            throw BenchFailure("\(name): no wake of the monitor before jetsam's look at \(lookedAt) (wakes: \(wakes.map { "\($0.time) \($0.level)" }))")
        }
        // Memory back: the first reading below the line after the SIGKILL. The kernel may have
        // brought the usage below the line before it, reclaiming page cache at the limit (the
        // line is the working set's, plus the inactive file pages the round began with): said.
        guard let back = await watch.firstBelow(after: signalledAt, within: 5) else {
            throw BenchFailure("\(name): the device's usage was not back below the line within 5 s of the SIGKILL")
        }
        let belowBeforeKill = watch.firstBelow(after: ramp.crossedAt, before: signalledAt)
        // Causality: the SIGKILL after the crossing, the look after the wake that opened the
        // episode, the kill after the look, the memory back after the kill.
        let slack = clockError + 1e-6
        guard signalledAt >= ramp.crossedAt else { throw BenchFailure("\(name): SIGKILL at \(signalledAt), before the crossing at \(ramp.crossedAt)") }
        guard lookedAt >= trigger.time - slack, signalledAt >= lookedAt - slack else {
            throw BenchFailure("\(name): out of order: trigger wake \(trigger.time), jetsam's look \(lookedAt), SIGKILL \(signalledAt)")
        }
        guard back.at >= signalledAt else { throw BenchFailure("\(name): memory back below the line at \(back.at), before the SIGKILL at \(signalledAt)") }
        guard oomKills == 0 else { throw BenchFailure("\(name): the kernel's OOM killer killed \(oomKills) time(s) in the device") }
        guard !episode.victims.contains(where: { $0.name == Self.grower }) else { throw BenchFailure("\(name): jetsam killed the foreground app") }
        return EndToEndRound(
            condition: name, seed: 0, order: 0, lineBytes: line, budgetBytes: limit,
            startedAt: ramp.startedAt, beforeAt: ramp.beforeAt, crossedAt: ramp.crossedAt, endedAt: ramp.endedAt, allocatedBytes: ramp.bytes, chunks: ramp.chunks,
            wakeAt: wake.time, wakeup: wake.wakeup, wakeLevel: wake.level, wakeEvents: wake.events,
            triggerLevel: episode.trigger.level, triggerSource: episode.trigger.source.description, openedByFirstCriticalWake: trigger.time == critical?.time,
            lookedAt: lookedAt, signalledAt: signalledAt,
            victim: first.name, victimState: first.state, victimFootprintBytes: first.footprintBytes, kills: episode.victims.count,
            memoryBackAt: back.at, memoryBackBy: back.by, belowLineBeforeKill: belowBeforeKill, kernelOOMKills: oomKills)
    }

    /// Waits until the monitor says normal again (after the ramp was given back), and until
    /// no episode has closed for 100 ms: a warning seen on the way down opens one, which closes
    /// at once (its grace is 0) — the next round must not find it open.
    func waitForNormal() async throws {
        let deadline = monotonicSeconds() + 10
        var count = killer.episodes.count
        var quietSince = monotonicSeconds()
        while true {
            let now = monotonicSeconds()
            let episodes = killer.episodes.count
            if episodes != count {
                count = episodes
                quietSince = now
            }
            if supervisor.pressureLevel == .normal, now - quietSince >= 0.1 { return }
            guard now < deadline else { throw BenchFailure("\(condition.name): pressure not back to normal 10 s after the round (\(String(describing: supervisor.pressureLevel)))") }
            try await Task.sleep(for: .milliseconds(5))
        }
    }

    /// Shuts the supervisor down; what it said went wrong, if anything.
    func finish() async -> [String] {
        let errors = await supervisor.log.filter { $0.kind == .error }.map { "\(condition.name): \($0.detail ?? "error")" }
        await supervisor.shutdown()
        return Array(Set(errors)).sorted()
    }
}

/// Every wake of the monitor while a round runs, collected by a task of its own.
final class WakeLog: Sendable {
    struct Wake: Sendable {
        var time: Double
        var wakeup: PressureWakeup
        var level: PressureLevel
        var events: [String]
    }
    private final class Collected: Sendable {
        let wakes = Mutex<[Wake]>([])
    }
    private let collected = Collected()
    private let task: Task<Void, Never>

    init(_ stream: AsyncStream<PressureWake>) {
        let collected = self.collected
        task = Task {
            for await w in stream { collected.wakes.withLock { $0.append(Wake(time: w.time, wakeup: w.wakeup, level: w.level, events: w.events)) } }
        }
    }

    /// Stops collecting; the wakes so far, oldest first.
    @discardableResult
    func stop() -> [Wake] {
        task.cancel()
        return collected.wakes.withLock { $0 }
    }
}

/// A thread blocked on an eventfd the kernel signals whenever the cgroup's usage crosses `line`
/// (cgroup v1 `cgroup.event_control` on `memory.usage_in_bytes`), reading the usage at each
/// signal, and every 20 ms should no signal come: when the usage was back below the line.
final class UsageLineWatch: Sendable {
    private let shared: Shared
    private let thread: OSThread

    private let line: UInt64

    private final class Shared: Sendable {
        let readings = Mutex<[(t: Double, usage: UInt64, by: String)]>([])
        /// A pipe: a byte written to its end stops the thread.
        let stop: (read: CInt, write: CInt)
        init(stop: (CInt, CInt)) { self.stop = stop }
    }

    init(cgroup: String, line: UInt64) throws {
        self.line = line
        let efd: CInt
        do {
            efd = try CgroupEventControl.register(cgroup: cgroup, file: "memory.usage_in_bytes", ["\(line)"])
        } catch {
            throw BenchFailure("cannot watch \(cgroup)'s usage against \(line) bytes: \(error)")
        }
        var ends: [CInt] = [0, 0]
        guard pipe(&ends) == 0 else {
            close(efd)
            throw BenchFailure("pipe: errno \(errno)")
        }
        for fd in ends { _ = fcntl(fd, F_SETFD, FD_CLOEXEC) }
        let shared = Shared(stop: (ends[0], ends[1]))
        self.shared = shared
        let usageFile = "\(cgroup)/memory.usage_in_bytes"
        do {
            thread = try OSThread {
                var fds = [pollfd(fd: efd, events: Int16(POLLIN), revents: 0), pollfd(fd: shared.stop.read, events: Int16(POLLIN), revents: 0)]
                defer { close(efd) }
                while true {
                    fds[0].revents = 0
                    fds[1].revents = 0
                    let n = fds.withUnsafeMutableBufferPointer { p in retryOnInterrupt { poll(p.baseAddress, 2, 20) } }
                    let t = monotonicSeconds()
                    if n < 0 || fds[1].revents != 0 { return }
                    if fds[0].revents != 0 { CgroupEventControl.drain(efd) }
                    do {
                        guard let usage = ByteScanner.singleNumber(try ProcFS.readBytes(usageFile)) else { return }
                        shared.readings.withLock { $0.append((t, usage, n > 0 ? "event" : "poll")) }
                    } catch {
                        return  // the cgroup is gone: the round fails on no reading
                    }
                }
            }
        } catch {
            close(efd)
            close(ends[0])
            close(ends[1])
            throw BenchFailure("cannot start the usage watch's thread: \(error)")
        }
    }

    /// The first reading below the line after `time`, waiting up to `timeout` seconds for it.
    func firstBelow(after time: Double, within timeout: Double) async -> (at: Double, by: String)? {
        let deadline = monotonicSeconds() + timeout
        repeat {
            if let r = shared.readings.withLock({ $0.first { $0.t > time && $0.usage < line } }) { return (r.t, r.by) }
            // The reading is the thread's; this only looks at what it has found so far.
            do { try await Task.sleep(for: .milliseconds(2)) } catch { return nil }
        } while monotonicSeconds() < deadline
        return nil
    }

    /// Whether a reading found the usage below the line after `start` and before `end`.
    func firstBelow(after start: Double, before end: Double) -> Bool {
        shared.readings.withLock { $0.contains { $0.t > start && $0.t < end && $0.usage < line } }
    }

    func stop() {
        var byte: UInt8 = 1
        _ = write(shared.stop.write, &byte, 1)
        thread.join()
        close(shared.stop.read)
        close(shared.stop.write)
    }
}
