import AppLifecycle
import FoundationEssentials
import Glibc
import LifecycleProtocol
import LinuxSystem
import Pressure
import Synchronization

/// Jetsam: attached to a supervisor (`mempressure supervise --jetsam`, a scenario's `jetsam`
/// section), it answers memory pressure as iOS does.
///
/// 1. **Warning**: memory warnings to the running apps (never to suspended ones), then a grace
///    period (`warningGraceSeconds`, cut short by a critical event), then memory is measured
///    again: if the warned apps freed enough, nobody is killed.
/// 2. **Freeze-dry**: suspended apps whose footprint is under `freezeDryBelowBytes` have their
///    anonymous memory written to swap (process_madvise MADV_PAGEOUT) instead of being killed,
///    when the machine has swap (it says once, plainly, when it has none).
/// 3. **Kills**, while available memory is under the target: the policy ranks the apps on
///    fresh readings (`Ranker.decide`), the first victim is killed (SIGKILL through its pidfd,
///    its memory freed at once with process_mrelease), the killer waits on its exit (the
///    cooldown), measures what it gave back, and decides again. Never a process the supervisor
///    did not launch, never a protected app; the foreground app only at critical pressure when
///    nothing else is left (the ranker's rule).
///
/// Available memory is `MemoryStatus`: the device cgroup's budget minus its working set, so that
/// the killer acts before the kernel's cgroup OOM killer would. Every episode is a
/// `JetsamEpisode` report; every kill and freeze also goes to the supervisor's log. Per-app
/// limits are checked at every footprint reading.
public final class JetsamKiller: SupervisorPolicy {
    public let configuration: JetsamConfiguration
    private let recorded = Mutex<(episodes: [JetsamEpisode], subscribers: [AsyncStream<JetsamEpisode>.Continuation])>(([], []))

    public init(configuration: JetsamConfiguration = JetsamConfiguration()) {
        self.configuration = configuration
    }

    public var watchesPressure: Bool { true }

    /// How often the device cgroup's usage is read while jetsam is attached: a fast allocation
    /// (hundreds of MiB a second) must be seen before the kernel's cgroup OOM killer acts.
    public static let usagePollInterval = 0.05

    /// Adds the killer to a supervisor's configuration, with the pressure watching it needs.
    public func attach(to c: inout SupervisorConfiguration) {
        c.policies.append(self)
        var p = c.pressure ?? PressureConfiguration()
        p.pollInterval = min(p.pollInterval, Self.usagePollInterval)
        c.pressure = p
    }

    /// The episodes so far, oldest first.
    public var episodes: [JetsamEpisode] { recorded.withLock { $0.episodes } }

    /// Every episode from now on, as it closes.
    public func episodeUpdates() -> AsyncStream<JetsamEpisode> {
        let (stream, continuation) = AsyncStream<JetsamEpisode>.makeStream(bufferingPolicy: .bufferingNewest(100))
        recorded.withLock { $0.subscribers.append(continuation) }
        return stream
    }

    func add(_ episode: JetsamEpisode) {
        let subscribers = recorded.withLock { r in
            r.episodes.append(episode)
            return r.subscribers
        }
        for s in subscribers { s.yield(episode) }
    }

    public func run(_ supervisor: Supervisor) async {
        let engine = JetsamEngine(configuration: configuration, supervisor: supervisor, killer: self)
        let samples = await supervisor.samples()
        await withTaskGroup(of: Void.self) { group in
            group.addTask {
                for await e in supervisor.pressureEvents() { await engine.pressure(e) }
            }
            group.addTask {
                for await v in samples { await engine.sampled(v) }
            }
            await group.waitForAll()
        }
        await engine.finish()
        let subscribers = recorded.withLock { r in
            defer { r.subscribers.removeAll() }
            return r.subscribers
        }
        for s in subscribers { s.finish() }
    }
}

/// The killer's state and decisions: one episode at a time.
actor JetsamEngine {
    let configuration: JetsamConfiguration
    let policy: JetsamPolicy
    let supervisor: Supervisor
    unowned let killer: JetsamKiller
    let reader: MemoryStatusReader
    var level: PressureLevel = .normal
    var lastEvent: PressureEvent?
    var episodeTask: Task<Void, Never>?
    var episodeCount = 0
    var levelWaiters: [CheckedContinuation<Void, Never>] = []
    /// Apps frozen dry, by pid: not frozen again, not killed in their stead while suspended.
    var frozen: Set<Int32> = []
    var saidNoSwap = false
    var lastReevaluation = 0.0
    /// Apps over a soft limit already warned (by pid), so each crossing warns once.
    var softWarned: Set<Int32> = []

    init(configuration: JetsamConfiguration, supervisor: Supervisor, killer: JetsamKiller) {
        self.configuration = configuration
        policy = configuration.rankingPolicy
        self.supervisor = supervisor
        self.killer = killer
        reader = MemoryStatusReader(cgroup: supervisor.deviceMemoryCgroup)
    }

    // MARK: Inputs

    func pressure(_ e: PressureEvent) {
        level = e.level
        lastEvent = e
        if e.level == .critical { wakeLevelWaiters() }
        if e.level >= .warning, episodeTask == nil { start(trigger: e, reevaluation: false) }
    }

    /// A footprint reading: per-app limits, and, while pressure stays up without a new event,
    /// a fresh look at whether memory is still short (at most once a second).
    func sampled(_ v: AppView) async {
        await checkLimit(v)
        guard level >= .warning, episodeTask == nil, let e = lastEvent else { return }
        let t = monotonicSeconds()
        guard t - lastReevaluation >= 1 else { return }
        lastReevaluation = t
        guard let status = measure(), status.availableBytes < target(status) else { return }
        start(trigger: PressureEvent(level: level, source: "jetsam", detail: "still short: \(Format.bytes(status.availableBytes)) available, \(Format.bytes(target(status))) needed (last event: \(e.source))", time: t), reevaluation: true)
    }

    func finish() {
        episodeTask?.cancel()
        wakeLevelWaiters()
    }

    private func start(trigger: PressureEvent, reevaluation: Bool) {
        episodeTask = Task {
            await self.episode(trigger: trigger, reevaluation: reevaluation)
            self.episodeEnded()
        }
    }

    private func episodeEnded() { episodeTask = nil }

    private func wakeLevelWaiters() {
        let w = levelWaiters
        levelWaiters = []
        for c in w { c.resume() }
    }

    /// Waits `seconds`, or less if pressure turns critical meanwhile.
    private func graceUnlessCritical(_ seconds: Double) async {
        guard level < .critical, seconds > 0 else { return }
        await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in
            levelWaiters.append(c)
            Task {
                do {
                    try await Task.sleep(for: .seconds(seconds))
                } catch {
                    // Cancelled (the killer is stopping): the grace ends now.
                }
                self.wakeLevelWaiters()
            }
        }
    }

    // MARK: Measuring

    func measure() -> MemoryStatus? {
        do {
            return try reader.read()
        } catch {
            return nil
        }
    }

    func target(_ s: MemoryStatus) -> UInt64 {
        UInt64(Double(s.budgetBytes) * configuration.targetAvailableShare)
    }

    /// The apps as the ranker sees them, on readings no older than the policy allows (stale
    /// ones are read again first). Apps not running are left out.
    func snapshots() async -> [JetsamAppSnapshot] {
        var views = await supervisor.apps()
        for (i, v) in views.enumerated() where v.pid != nil && (v.latest == nil || (v.sampleAgeSeconds ?? .infinity) > policy.maxSampleAgeSeconds * 0.75) {
            if let fresh = await supervisor.refreshSample(v.name) { views[i] = fresh }
        }
        return views.compactMap { v in
            guard let pid = v.pid, v.state != .notRunning, let latest = v.latest else { return nil }
            return JetsamAppSnapshot(
                name: v.name, pid: pid, state: v.state, footprintBytes: latest.footprintBytes, purgeableBytes: latest.purgeableBytes,
                residentBytes: latest.residentBytes, lifetimeMaxFootprintBytes: v.lifetimeMaxFootprintBytes,
                secondsInState: v.secondsInState, secondsSinceActive: v.secondsSinceActive, activations: v.activations,
                isProtected: configuration.protected.contains(v.name), relaunchSeconds: Self.median(v.launchToReadySeconds),
                sampleAgeSeconds: v.sampleAgeSeconds ?? .infinity)
        }
    }

    static func median(_ xs: [Double]) -> Double? {
        guard !xs.isEmpty else { return nil }
        let s = xs.sorted()
        return s.count % 2 == 1 ? s[s.count / 2] : (s[s.count / 2 - 1] + s[s.count / 2]) / 2
    }

    // MARK: An episode

    private func episode(trigger: PressureEvent, reevaluation: Bool) async {
        guard var status = measure() else {
            await note("memory could not be measured (\(reader.cgroup ?? "/proc/meminfo")): no decision on partial data")
            return
        }
        let target = target(status)
        let logNow = await supervisor.now()
        let eventT = logNow - (monotonicSeconds() - trigger.time)
        var apps = await snapshots()
        // Nothing to do: enough is free and pressure is only a warning from page cache.
        if reevaluation {
            guard status.availableBytes < target else { return }
        }
        episodeCount += 1
        var ep = JetsamEpisode(
            number: episodeCount, startedAt: Timestamp.now(), start: eventT, end: nil,
            trigger: .init(level: PressureLevelValue(rawValue: trigger.level.rawValue) ?? .warning, source: trigger.source, detail: trigger.detail, t: eventT),
            policy: policy, memoryBefore: status, memoryAfter: nil, targetAvailableBytes: target,
            largestApp: apps.max { ($0.footprintBytes, $1.name) < ($1.footprintBytes, $0.name) }?.name,
            apps: apps.map {
                .init(name: $0.name, pid: $0.pid, state: $0.state, footprintBytes: $0.footprintBytes, purgeableBytes: $0.purgeableBytes,
                      residentBytes: $0.residentBytes, lifetimeMaxFootprintBytes: max($0.lifetimeMaxFootprintBytes, $0.footprintBytes),
                      secondsInState: $0.secondsInState, isProtected: $0.isProtected)
            },
            timeline: [], victims: [], freezes: [], decisions: [], kernelOOMKillsBefore: await supervisor.kernelOOMKills(),
            kernelOOMKillsAfter: nil, outcome: "")
        ep.timeline.append(await entry("measure", bytes: status.availableBytes, "\(Format.bytes(status.availableBytes)) available of \(Format.bytes(status.budgetBytes)); target \(Format.bytes(target)) (\(status.source))"))

        // 1. Warnings first, unless pressure is already critical (or warnings were sent before
        //    and memory is still short).
        if !reevaluation && trigger.level == .warning && level < .critical {
            let warned = await supervisor.warn(.all)
            for name in warned { ep.timeline.append(await entry("warning", app: name, pid: apps.first { $0.name == name }?.pid, "memory warning sent")) }
            for a in apps where a.state == .suspended { ep.timeline.append(await entry("warning", app: a.name, pid: a.pid, "not sent: suspended")) }
            await graceUnlessCritical(configuration.warningGraceSeconds)
            if await recovered(after: "warnings", &ep, &status) { return }
        }

        // 2. Freeze-dry the small suspended apps.
        if configuration.freezeDryBelowBytes > 0 {
            if Swap.totalBytes() == 0 {
                if !saidNoSwap {
                    saidNoSwap = true
                    await supervisor.record(SupervisorEvent(t: await supervisor.now(), kind: .freeze, detail: "no swap on this machine: freeze-dry is off (suspended apps are killed instead)"))
                    ep.timeline.append(await entry("note", "no swap: freeze-dry is off"))
                }
            } else {
                var froze = false
                for a in apps where a.state == .suspended && !a.isProtected && a.footprintBytes > 0
                    && a.footprintBytes < configuration.freezeDryBelowBytes && !frozen.contains(a.pid) {
                    do {
                        let r = try await supervisor.pageOut(a.name, pid: a.pid)
                        frozen.insert(a.pid)
                        froze = true
                        ep.freezes.append(.init(name: a.name, pid: a.pid, footprintBytes: a.footprintBytes, bytes: r.writtenBytes, residentBefore: r.residentBefore, residentAfter: r.residentAfter))
                        var event = SupervisorEvent(t: await supervisor.now(), app: a.name, pid: a.pid, kind: .freeze, detail: "freeze-dried: \(Format.bytes(r.writtenBytes)) written to swap, resident \(Format.bytes(r.residentBefore)) -> \(Format.bytes(r.residentAfter))")
                        event.bytes = r.writtenBytes
                        await supervisor.record(event)
                        ep.timeline.append(await entry("freeze", app: a.name, pid: a.pid, bytes: r.writtenBytes, "written to swap"))
                    } catch {
                        ep.timeline.append(await entry("note", app: a.name, pid: a.pid, "freeze-dry failed: \(error)"))
                    }
                }
                if froze, await recovered(after: "freeze-dry", &ep, &status) { return }
            }
        }

        // 3. Kills, one at a time, deciding again after each.
        var kills = 0
        while status.availableBytes < target, !Task.isCancelled, kills < 1000 {
            apps = await snapshots().map { a in
                var a = a
                // A frozen-dry app stays suspended and out of the ranking while it is.
                if frozen.contains(a.pid) && a.state == .suspended { a.isProtected = true }
                return a
            }
            let input = RankingInput(
                apps: apps, budgetBytes: status.budgetBytes, availableBytes: status.availableBytes, targetAvailableBytes: target,
                level: PressureLevelValue(rawValue: level.rawValue) ?? .warning)
            ep.decisions.append(input)
            let decision: Decision
            do {
                decision = try Ranker.decide(input, policy: policy)
            } catch {
                ep.timeline.append(await entry("note", "no decision: \(error)"))
                ep.outcome = "no decision: \(error)"
                break
            }
            guard let victim = decision.victims.first else {
                ep.outcome = "nothing left to kill: still short by \(Format.bytes(target - min(target, status.availableBytes))) (\(decision.explanation))"
                ep.timeline.append(await entry("note", ep.outcome))
                break
            }
            let before = status
            let decidedAfter = lastEvent?.time ?? trigger.time
            let receipt: KillReceipt
            do {
                receipt = try await supervisor.kill(victim.snapshot.name, pid: victim.snapshot.pid, reason: .vmPageShortage)
            } catch {
                // Exited or relaunched since the reading: decide again on fresh data.
                ep.timeline.append(await entry("note", app: victim.snapshot.name, pid: victim.snapshot.pid, "not killed: \(error)"))
                continue
            }
            let exited = await supervisor.waitForExit(victim.snapshot.name, pid: victim.snapshot.pid, timeout: configuration.cooldownSeconds)
            if let s = measure() { status = s }
            let reclaimed = status.availableBytes &- min(status.availableBytes, before.availableBytes)
            kills += 1
            let explanation = victim.explanation
            var event = SupervisorEvent(t: await supervisor.now(), app: victim.snapshot.name, pid: victim.snapshot.pid, kind: .jetsam, detail: exited ? nil : "still exiting \(configuration.cooldownSeconds) s after SIGKILL")
            event.reason = KillReason.vmPageShortage.rawValue
            event.rank = victim.rank
            event.policy = policy.name.rawValue
            event.footprintBytes = victim.snapshot.footprintBytes
            event.reclaimedBytes = reclaimed
            event.explanation = explanation
            await supervisor.record(event)
            ep.timeline.append(await entry("kill", app: victim.snapshot.name, pid: victim.snapshot.pid, bytes: reclaimed, "rank \(victim.rank) (\(victim.band)): \(Format.bytes(reclaimed)) given back"))
            ep.victims.append(.init(
                name: victim.snapshot.name, pid: victim.snapshot.pid, state: victim.snapshot.state, reason: KillReason.vmPageShortage.rawValue,
                rank: victim.rank, band: victim.band, policy: policy.name, footprintBytes: victim.snapshot.footprintBytes,
                purgeableBytes: victim.snapshot.purgeableBytes, secondsFromEvent: receipt.signalledAt - trigger.time,
                secondsFromLatestEvent: receipt.signalledAt - max(trigger.time, decidedAfter),
                reclaimedBytes: reclaimed, memoryReleased: receipt.memoryReleased, exited: exited, needed: true, explanation: explanation))
        }
        if ep.outcome.isEmpty {
            ep.outcome = status.availableBytes >= target ? "recovered after \(kills) kill(s)" : "stopped: still short"
        }
        await close(&ep, status)
    }

    /// Measures again after `step` (the warnings, freeze-dry); when enough is free, closes the
    /// episode ("warnings sufficed: nobody killed") and says so.
    private func recovered(after step: String, _ ep: inout JetsamEpisode, _ status: inout MemoryStatus) async -> Bool {
        if let s = measure() { status = s }
        ep.timeline.append(await entry("measure", bytes: status.availableBytes, "after \(step): \(Format.bytes(status.availableBytes)) available"))
        guard status.availableBytes >= ep.targetAvailableBytes else { return false }
        ep.outcome = "\(step) sufficed: nobody killed"
        await close(&ep, status)
        return true
    }

    /// A timeline entry, stamped with the supervisor's log clock.
    private func entry(_ kind: String, app: String? = nil, pid: Int32? = nil, bytes: UInt64? = nil, _ detail: String) async -> JetsamEpisode.Entry {
        JetsamEpisode.Entry(t: await supervisor.now(), kind: kind, app: app, pid: pid, bytes: bytes, detail: detail)
    }

    private func close(_ ep: inout JetsamEpisode, _ status: MemoryStatus) async {
        ep.end = await supervisor.now()
        ep.memoryAfter = status
        ep.kernelOOMKillsAfter = await supervisor.kernelOOMKills()
        // In hindsight: without this kill, would the end still have been short of the target?
        for i in ep.victims.indices {
            let without = status.availableBytes &- min(status.availableBytes, ep.victims[i].reclaimedBytes)
            ep.victims[i].needed = without < ep.targetAvailableBytes
        }
        killer.add(ep)
        if let dir = configuration.reportDirectory {
            do {
                try ProcFS.makeDirectory(dir)
                let encoder = JSONEncoder()
                encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
                try ProcFS.writeFile("\(dir)/episode-\(ep.number).json", Array(try encoder.encode(ep)) + [0x0a])
            } catch {
                await supervisor.record(SupervisorEvent(t: await supervisor.now(), kind: .error, detail: "jetsam: cannot write the report of episode \(ep.number) to \(dir): \(error)"))
            }
        }
    }

    private func note(_ text: String) async {
        await supervisor.record(SupervisorEvent(t: await supervisor.now(), kind: .error, detail: "jetsam: \(text)"))
    }

    // MARK: Per-app limits

    private func checkLimit(_ v: AppView) async {
        let checkedAt = monotonicSeconds()
        guard let pid = v.pid, let latest = v.latest, let limit = configuration.limits[v.name] else { return }
        let foreground = v.state == .active || v.state == .inactive
        guard let bytes = foreground ? limit.activeBytes : limit.inactiveBytes else { return }
        guard latest.footprintBytes > bytes else {
            softWarned.remove(pid)
            return
        }
        let which = foreground ? "active" : "inactive"
        if limit.soft == true {
            guard softWarned.insert(pid).inserted else { return }
            await supervisor.record(SupervisorEvent(t: await supervisor.now(), app: v.name, pid: pid, kind: .warning, detail: "over its soft \(which) limit: \(Format.bytes(latest.footprintBytes)) > \(Format.bytes(bytes))"))
            await supervisor.warn(.app(v.name))
            return
        }
        let before = measure()
        let receipt: KillReceipt
        do {
            receipt = try await supervisor.kill(v.name, pid: pid, reason: .perProcessLimit)
        } catch {
            return  // exited meanwhile
        }
        let exited = await supervisor.waitForExit(v.name, pid: pid, timeout: configuration.cooldownSeconds)
        let after = measure()
        let reclaimed = (after?.availableBytes ?? 0) &- min(after?.availableBytes ?? 0, before?.availableBytes ?? 0)
        let explanation = "footprint \(Format.bytes(latest.footprintBytes)) over its \(which) limit \(Format.bytes(bytes)) (state \(v.state.rawValue))"
        var event = SupervisorEvent(t: await supervisor.now(), app: v.name, pid: pid, kind: .jetsam)
        event.reason = KillReason.perProcessLimit.rawValue
        event.policy = "limit"
        event.footprintBytes = latest.footprintBytes
        event.reclaimedBytes = reclaimed
        event.explanation = explanation
        await supervisor.record(event)
        episodeCount += 1
        let t = await supervisor.now()
        var ep = JetsamEpisode(
            number: episodeCount, startedAt: Timestamp.now(), start: t, end: t,
            trigger: .init(level: PressureLevelValue(rawValue: level.rawValue) ?? .normal, source: "per-process-limit", detail: explanation, t: t),
            policy: policy, memoryBefore: before ?? MemoryStatus(budgetBytes: 0, usedBytes: 0, availableBytes: 0, source: "unmeasured"),
            memoryAfter: after, targetAvailableBytes: 0, largestApp: v.name,
            apps: [.init(name: v.name, pid: pid, state: v.state, footprintBytes: latest.footprintBytes, purgeableBytes: latest.purgeableBytes,
                         residentBytes: latest.residentBytes, lifetimeMaxFootprintBytes: v.lifetimeMaxFootprintBytes, secondsInState: v.secondsInState,
                         isProtected: configuration.protected.contains(v.name))],
            timeline: [.init(t: t, kind: "kill", app: v.name, pid: pid, bytes: reclaimed, detail: explanation)],
            victims: [.init(
                name: v.name, pid: pid, state: v.state, reason: KillReason.perProcessLimit.rawValue, rank: 1, band: "over-limit", policy: policy.name,
                footprintBytes: latest.footprintBytes, purgeableBytes: latest.purgeableBytes, secondsFromEvent: receipt.signalledAt - checkedAt,
                secondsFromLatestEvent: receipt.signalledAt - checkedAt,
                reclaimedBytes: reclaimed, memoryReleased: receipt.memoryReleased, exited: exited, needed: true, explanation: explanation)],
            freezes: [], decisions: [], kernelOOMKillsBefore: nil, kernelOOMKillsAfter: await supervisor.kernelOOMKills(),
            outcome: "killed over its \(which) limit")
        ep.end = await supervisor.now()
        killer.add(ep)
    }
}
