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
///    period (`warningGraceSeconds`, cut short when memory turns critically short: `severity`),
///    then memory is measured again: if the warned apps freed enough, nobody is killed.
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
/// the killer acts before the kernel's cgroup OOM killer would. While pressure is up it looks
/// every `usagePollInterval`, not only when the level changes; and it holds the kernel's killer
/// of the device cgroup (`KernelOOMHold`, cgroup v1), so that an allocation that outruns it
/// waits at the limit for its decision instead of the kernel killing the largest task (the app
/// being launched, usually). Apps inside didEnterBackground (saving their state) are not
/// killed until the callback is over. Every episode is a
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

    /// The episodes so far, oldest first (at most `episodeLimit`, the newest; with a
    /// `reportDirectory`, every one is also on disk).
    public var episodes: [JetsamEpisode] { recorded.withLock { $0.episodes } }
    public static let episodeLimit = 1000

    /// Every episode from now on, as it closes.
    public func episodeUpdates() -> AsyncStream<JetsamEpisode> {
        let (stream, continuation) = AsyncStream<JetsamEpisode>.makeStream(bufferingPolicy: .bufferingNewest(100))
        recorded.withLock { $0.subscribers.append(continuation) }
        return stream
    }

    func add(_ episode: JetsamEpisode) {
        let subscribers = recorded.withLock { r in
            r.episodes.append(episode)
            if r.episodes.count > Self.episodeLimit { r.episodes.removeFirst(r.episodes.count - Self.episodeLimit) }
            return r.subscribers
        }
        for s in subscribers { s.yield(episode) }
    }

    public func run(_ supervisor: Supervisor) async {
        let pressure = await supervisor.configuration.pressure ?? PressureConfiguration()
        let engine = JetsamEngine(configuration: configuration, supervisor: supervisor, killer: self, criticalFraction: pressure.usageCriticalFraction)
        let samples = await supervisor.samples()
        let events = supervisor.pressureEvents()
        // Events are changes of level: a device already under pressure when the killer starts
        // would never send one. Start from the level now.
        if let level = supervisor.pressureLevel, level >= .warning {
            await engine.pressure(PressureEvent(level: level, source: "jetsam", detail: "pressure was \(level) when jetsam started", time: monotonicSeconds()))
        }
        await engine.holdKernelOOMKiller()
        await withTaskGroup(of: Void.self) { group in
            group.addTask {
                for await e in events { await engine.pressure(e) }
                // The stream ends when the supervisor shuts down (this task is then cancelled):
                // so does the watch. Ended otherwise, the killer says it is blind.
                await engine.stopWatching(pressureStreamEnded: !Task.isCancelled)
            }
            group.addTask {
                for await v in samples { await engine.sampled(v) }
            }
            group.addTask { await engine.watch() }
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
    /// The working set's share of the budget at which memory is critically short.
    let criticalFraction: Double
    var level: PressureLevel = .normal
    var lastEvent: PressureEvent?
    /// When a grace was last cut short because memory turned critically short (monotonic), and
    /// what showed it: the moment a decision answers when no pressure event marks it (the merged
    /// level may have been critical since before, from another source).
    var criticalNoticed: (time: Double, what: String)?
    var episodeTask: Task<Void, Never>?
    /// Which episode `episodeTask` runs: an episode that ends clears it only if it is its own.
    var runningEpisode = 0
    var episodeCount = 0
    /// Graces waiting for their time or for a critical event, by id, with their timers.
    var graces: [Int: (continuation: CheckedContinuation<Void, Never>, timer: Task<Void, Never>)] = [:]
    var nextGrace = 0
    /// Apps frozen dry, for the stay in the background they were frozen in: not frozen again,
    /// and not killed in their stead, until they leave it.
    var frozen: Set<StayKey> = []
    var saidNoSwap = false
    /// The kernel's OOM killer held for this device (cgroup v1), and whether it is let act
    /// now (jetsam had nothing left to kill).
    var kernelHold: KernelOOMHold?
    var kernelHoldReleased = false
    /// A task of the device is waiting at the limit (the hold's `under_oom`): as critical as
    /// pressure gets, whatever the level says.
    var underOOM = false
    var watching = true
    /// Whether the last episode ended with enough free: a shortage seen after it is a new one,
    /// and gets warnings first; one that lasts since it does not.
    var lastEpisodeRecovered = true
    /// Apps over a soft limit already warned, for the run they were warned in, so each
    /// crossing warns once.
    var softWarned: Set<RunKey> = []
    /// Set when an episode ended still short (nothing left to kill, kills that kept failing, a
    /// decision or a reading that could not be made): the running apps as they were then
    /// (`signature`) and how short memory was. While both stay so and the level does not change,
    /// the watch opens no new episode — a shortage nobody can end would otherwise open one every
    /// poll.
    var stuckWith: (apps: [String], severity: PressureLevel)?
    /// Readings of the watch that are failing now (the device's memory, the hold's under_oom),
    /// each said once when it starts failing and once when it works again.
    var failingReadings: [Reading: String] = [:]

    enum Reading: Hashable {
        case memory, underOOM
    }

    /// The most kills in a row that may fail (the victim exited, changed state or was already
    /// dying since the reading) before the episode stops: a decision that keeps naming an app
    /// it cannot kill must not spin.
    static let failedKillLimit = 8

    struct StayKey: Hashable {
        var name: String
        var generation: Int
        var stay: Int
    }

    struct RunKey: Hashable {
        var name: String
        var generation: Int
    }

    init(configuration: JetsamConfiguration, supervisor: Supervisor, killer: JetsamKiller, criticalFraction: Double) {
        self.configuration = configuration
        policy = configuration.rankingPolicy
        self.supervisor = supervisor
        self.killer = killer
        reader = MemoryStatusReader(cgroup: supervisor.deviceMemoryCgroup)
        self.criticalFraction = criticalFraction
    }

    // MARK: Inputs

    func pressure(_ e: PressureEvent) async {
        if e.level != level { stuckWith = nil }
        level = e.level
        lastEvent = e
        if e.level >= .warning { start(trigger: e, reevaluation: false) }
        // A critical event ends a grace when memory is critically short (see `severity`): the
        // kernel's vmpressure says critical at nearly every reclaim of a device without swap.
        if e.level == .critical, !graces.isEmpty, case .measured(let status) = await measure(), severity(status) == .critical {
            endGraces(critical: (e.time, "\(e.source): \(e.detail)"))
        }
    }

    /// A footprint reading: per-app limits.
    func sampled(_ v: AppView) async {
        await checkLimit(v)
    }

    /// How short memory is, which decides between warning first and killing at once, and
    /// whether the foreground app may be taken: critical while a task waits at the limit or when
    /// the working set is at the usage source's critical share of the budget (95% by default,
    /// `PressureConfiguration.usageCriticalFraction`: the same figure, so that its critical
    /// event and this agree), else warning. Measured, not the merged pressure level: the level's
    /// changes start episodes, but one of its sources, the kernel's vmpressure (cgroup v1
    /// `memory.pressure_level`), reports critical at nearly every reclaim near the limit of a
    /// device without swap, which would skip the warnings every time and put the foreground app
    /// at risk while the others still suffice.
    func severity(_ status: MemoryStatus) -> PressureLevel {
        underOOM || Double(status.usedBytes) >= Double(status.budgetBytes) * criticalFraction ? .critical : .warning
    }

    /// Holds the kernel's OOM killer of the device cgroup (see `KernelOOMHold`), or says why not.
    func holdKernelOOMKiller() async {
        guard configuration.holdKernelOOMKiller else { return }
        let detail: String
        switch KernelOOMHold.engage(cgroup: reader.cgroup) {
        case .success(let hold):
            kernelHold = hold
            detail = "jetsam holds the kernel's OOM killer of \(reader.cgroup ?? "?") (oom_kill_disable 1): a task at the limit waits for jetsam's decision"
        case .failure(.noCgroup):
            return  // the whole machine: nothing to hold, nothing to say
        case .failure(let why):
            detail = "jetsam: \(why)"
        }
        await supervisor.record(SupervisorEvent(t: await supervisor.now(), kind: .note, detail: detail))
    }

    func stopWatching(pressureStreamEnded: Bool = false) async {
        watching = false
        if pressureStreamEnded {
            await say("jetsam: the pressure stream ended (its monitor stopped): no more episodes are started", kind: .error)
        }
    }

    /// A reading of the watch failed: said once, when it starts failing.
    private func readingFailed(_ reading: Reading, _ what: String) async {
        guard failingReadings[reading] == nil else { return }
        failingReadings[reading] = what
        await say("jetsam: \(what): no decision is made on it until it can be read again", kind: .error)
    }

    /// A reading of the watch works: said once, when it had been failing.
    private func readingWorks(_ reading: Reading) async {
        guard let what = failingReadings.removeValue(forKey: reading) else { return }
        await say("jetsam: can read again what failed before (\(what))")
    }

    private func say(_ detail: String, kind: SupervisorEventKind = .note) async {
        await supervisor.record(SupervisorEvent(t: await supervisor.now(), kind: kind, detail: detail))
    }

    /// Looks every `usagePollInterval` while pressure is up (or a task waits at the limit):
    /// the level's events are changes only, and an app that allocates its footprint in a
    /// fraction of a second must be answered before the limit, not at the next change.
    func watch() async {
        while watching, !Task.isCancelled {
            await look()
            do {
                try await Task.sleep(for: Seconds.duration(JetsamKiller.usagePollInterval))
            } catch {
                return
            }
        }
    }

    private func look() async {
        let t = monotonicSeconds()
        if kernelHold != nil {
            let was = underOOM
            let read = await refreshUnderOOM()
            if underOOM && !was { endGraces(critical: (t, "a task waits at the device's limit (under_oom)")) }
            if read, kernelHoldReleased, !underOOM, let hold = kernelHold {
                // Out of OOM again: hold the kernel's killer again.
                kernelHoldReleased = hold.set(disabled: true) != nil
            }
            if underOOM, !kernelHoldReleased, episodeTask == nil {
                if await isStuck(.critical) { return }
                start(trigger: PressureEvent(level: .critical, source: JetsamEpisode.underOOMSource, detail: "the device is at its limit: a task waits for memory (under_oom)", time: t), reevaluation: true)
                return
            }
        }
        if !graces.isEmpty, case .measured(let status) = await measure(), severity(status) == .critical {
            // Memory turned critically short while warned apps had their grace.
            endGraces(critical: (t, "working set \(Format.bytes(status.usedBytes)) of \(Format.bytes(status.budgetBytes)): at or above \(Format.percent(criticalFraction))"))
        }
        guard level >= .warning, episodeTask == nil else { return }
        guard case .measured(let status) = await measure() else { return }
        guard status.availableBytes < target(status) else {
            stuckWith = nil
            return
        }
        let shortage = severity(status)
        if await isStuck(shortage) { return }
        // The awaits above let other events in: the level may have dropped, an episode started.
        guard level >= .warning, episodeTask == nil else { return }
        let last = lastEvent.map { " (last event: \($0.source))" } ?? ""
        let what = lastEpisodeRecovered ? "short" : "still short"
        start(trigger: PressureEvent(level: shortage, source: "jetsam", detail: "\(what): \(Format.bytes(status.availableBytes)) available, \(Format.bytes(target(status))) needed\(last)", time: t), reevaluation: !lastEpisodeRecovered)
    }

    /// Whether the last episode ended still short on the same apps and at the same severity:
    /// nothing a new one could do differently. Once something changed, it is forgotten.
    private func isStuck(_ severity: PressureLevel) async -> Bool {
        guard let stuck = stuckWith else { return false }
        if stuck.severity == severity, Self.signature(await supervisor.apps()) == stuck.apps { return true }
        stuckWith = nil
        return false
    }

    /// Reads the hold's under_oom now into `underOOM`; on a failed reading the last known value
    /// stays (and the failure is said once). Whether the reading worked.
    @discardableResult
    private func refreshUnderOOM() async -> Bool {
        guard let hold = kernelHold else { return false }
        do {
            underOOM = try hold.isUnderOOM()
            await readingWorks(.underOOM)
            return true
        } catch {
            await readingFailed(.underOOM, "\(error): a task waiting at the limit cannot be seen")
            return false
        }
    }

    /// The running apps, each as name, run, state, whether it is dying, saving its state
    /// (inside didEnterBackground) or has a reading yet: what a new decision could differ by.
    static func signature(_ views: [AppView]) -> [String] {
        views.filter { $0.pid != nil }.map {
            "\($0.name) \($0.generation) \($0.state.rawValue) \($0.isDying) \($0.callbacksInProgress.contains(.didEnterBackground)) \($0.latest != nil)"
        }
    }

    /// Lets the kernel's OOM killer act (jetsam has nothing left to kill and a task waits).
    private func releaseKernelHold() -> String? {
        guard let hold = kernelHold, underOOM, !kernelHoldReleased else { return nil }
        if let error = hold.set(disabled: false) { return "cannot let the kernel's OOM killer act (\(error)): the waiting task waits on" }
        kernelHoldReleased = true
        return "nothing left to kill while a task waits at the limit: the kernel's OOM killer is let act"
    }

    /// Stops: the episode under way ends at its next step (it kills no one after this) and is
    /// waited for, so that its report is kept.
    func finish() async {
        watching = false
        episodeTask?.cancel()
        endGraces()
        await episodeTask?.value
        if let hold = kernelHold { _ = hold.set(disabled: false) }
        kernelHold = nil
    }

    /// Starts an episode, unless one is under way: one at a time.
    private func start(trigger: PressureEvent, reevaluation: Bool) {
        guard episodeTask == nil else { return }
        runningEpisode += 1
        let id = runningEpisode
        criticalNoticed = nil
        episodeTask = Task {
            await self.episode(trigger: trigger, reevaluation: reevaluation)
            self.episodeEnded(id)
        }
    }

    private func episodeEnded(_ id: Int) {
        if id == runningEpisode { episodeTask = nil }
    }

    /// Ends every grace under way; `critical` says when memory was seen critically short, and how.
    private func endGraces(critical: (time: Double, what: String)? = nil) {
        if let critical, !graces.isEmpty { criticalNoticed = critical }
        let all = graces
        graces = [:]
        for (_, g) in all {
            g.timer.cancel()
            g.continuation.resume()
        }
    }

    private func endGrace(_ id: Int) {
        graces.removeValue(forKey: id)?.continuation.resume()
    }

    /// Waits `seconds`, or less if memory turns critically short (or the killer stops) meanwhile;
    /// not at all if it is already (measured again: the episode's first reading may be old).
    private func graceUnlessCritical(_ seconds: Double) async {
        guard seconds > 0, !Task.isCancelled else { return }
        await refreshUnderOOM()
        if case .measured(let now) = await measure(), severity(now) == .critical { return }
        nextGrace += 1
        let id = nextGrace
        await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in
            let timer = Task {
                do {
                    try await Task.sleep(for: Seconds.duration(seconds))
                } catch {
                    return  // cancelled: a critical event or the stop ended this grace
                }
                self.endGrace(id)
            }
            graces[id] = (c, timer)
        }
    }

    // MARK: Measuring

    enum Measurement {
        case measured(MemoryStatus)
        case failed(String)
    }

    /// Reads the device's memory; a failure is said once when it starts (and once when it
    /// works again), never guessed around.
    func measure() async -> Measurement {
        do {
            let status = try reader.read()
            await readingWorks(.memory)
            return .measured(status)
        } catch {
            await readingFailed(.memory, "memory could not be measured (\(error))")
            return .failed("\(error)")
        }
    }

    func target(_ s: MemoryStatus) -> UInt64 {
        UInt64(Double(s.budgetBytes) * configuration.targetAvailableShare)
    }

    /// The apps as the ranker sees them, on readings no older than the policy allows (stale
    /// ones are read again first), with the views they come from. Apps not running, and apps
    /// being taken down, are left out; a frozen-dry app still in the stay it was frozen in is
    /// protected.
    func snapshots() async -> [(view: AppView, snapshot: JetsamAppSnapshot)] {
        var views = await supervisor.apps()
        for (i, v) in views.enumerated() where v.pid != nil && !v.isDying && (v.latest == nil || (v.sampleAgeSeconds ?? .infinity) > policy.maxSampleAgeSeconds * 0.75) {
            if let fresh = await supervisor.refreshSample(v.name) { views[i] = fresh }
        }
        // Forget freeze-drys of stays that are over.
        frozen = frozen.filter { key in views.contains { $0.name == key.name && Self.stay($0) == key } }
        return views.compactMap { v in
            guard let pid = v.pid, v.state != .notRunning, !v.isDying, let latest = v.latest else { return nil }
            let frozenNow = frozen.contains(Self.stay(v))
            // Inside didEnterBackground the app is saving its state: a kill now would lose it.
            // The callback's timeout bounds this.
            let saving = v.callbacksInProgress.contains(.didEnterBackground)
            return (v, JetsamAppSnapshot(
                name: v.name, pid: pid, state: v.state, footprintBytes: latest.footprintBytes, purgeableBytes: latest.purgeableBytes,
                residentBytes: latest.residentBytes, lifetimeMaxFootprintBytes: v.lifetimeMaxFootprintBytes,
                secondsInState: v.secondsInState, secondsSinceActive: v.secondsSinceActive, secondsSinceLaunch: v.secondsSinceLaunch, activations: v.activations,
                isProtected: configuration.protected.contains(v.name) || frozenNow || saving, relaunchSeconds: Validation.median(v.launchToReadySeconds),
                sampleAgeSeconds: v.sampleAgeSeconds ?? .infinity))
        }
    }

    /// The stay in the background an app is in: a suspended app's freeze-dry holds for it.
    static func stay(_ v: AppView) -> StayKey {
        StayKey(name: v.name, generation: v.generation, stay: v.state == .suspended ? v.backgroundStay : -1)
    }

    // MARK: An episode

    private func episode(trigger: PressureEvent, reevaluation: Bool) async {
        // A failed reading is said (once) by `measure`: no decision on partial data.
        guard case .measured(var status) = await measure() else { return }
        var target = target(status)
        var forced: String?
        if trigger.source == JetsamEpisode.underOOMSource, status.availableBytes >= target {
            // A task waits at the limit, yet the working set says enough is free: what the
            // kernel counts as inactive file cannot be reclaimed now (dirty pages, writeback).
            // The task must not wait on: at least one kill, by the policy.
            target = min(status.budgetBytes, status.availableBytes + 1 << 20)
            forced = "a task waits at the limit although \(Format.bytes(status.availableBytes)) look available (inactive file the kernel cannot reclaim now): one kill at least"
        } else if reevaluation {
            // Nothing to do: enough is free (pressure from page cache alone, say).
            guard status.availableBytes < target else { return }
        }
        let logNow = await supervisor.now()
        let eventT = logNow - (monotonicSeconds() - trigger.time)
        let apps = await snapshots().map(\.snapshot)
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
        if let forced { ep.timeline.append(await entry("note", forced)) }

        // 1. Warnings first, unless pressure is already critical (or warnings were sent before
        //    and memory is still short).
        if !reevaluation && severity(status) < .critical {
            // The warnings go out while the grace runs, and their acknowledgements are not waited
            // for: an app that cannot answer yet (inside another callback, or stalled at the
            // limit) holds up neither the grace nor a critical turn.
            let warned = await supervisor.warn(.all, waitForAcknowledgements: false)
            let views = await supervisor.apps()
            for name in warned { ep.timeline.append(await entry("warning", app: name, pid: views.first { $0.name == name }?.pid, "memory warning sent")) }
            for v in views where v.state == .suspended { ep.timeline.append(await entry("warning", app: v.name, pid: v.pid, "not sent: suspended")) }
            let graceStarted = monotonicSeconds()
            await graceUnlessCritical(configuration.warningGraceSeconds)
            if let c = criticalNoticed, c.time >= graceStarted {
                ep.timeline.append(.init(t: await logTime(ofMonotonic: c.time), kind: "note", app: nil, pid: nil, bytes: nil, detail: "critical, the grace ends: \(c.what)"))
            }
            if await recovered(after: "warnings", &ep, &status) { return }
        }

        // 2. Freeze-dry the small suspended apps (as they are now, after the grace).
        if configuration.freezeDryBelowBytes > 0, !Task.isCancelled {
            switch Swap.totalBytes() {
            case .failure(let error):
                ep.timeline.append(await entry("note", "cannot tell whether there is swap (\(error)): no freeze-dry in this episode"))
            case .success(0):
                if !saidNoSwap {
                    saidNoSwap = true
                    await say("jetsam: no swap on this machine: freeze-dry is off (suspended apps are killed instead)")
                }
                ep.timeline.append(await entry("note", "no swap: freeze-dry is off"))
            case .success:
                var froze = false
                for (v, a) in await snapshots() where a.state == .suspended && !a.isProtected && a.footprintBytes > 0
                    && a.footprintBytes < configuration.freezeDryBelowBytes && !Task.isCancelled {
                    do {
                        let r = try await supervisor.pageOut(a.name, pid: a.pid, expectedState: .suspended)
                        frozen.insert(Self.stay(v))
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

        // 3. Kills, one at a time, deciding again after each on fresh readings.
        var kills = 0
        var failedKills = 0
        while status.availableBytes < target, !Task.isCancelled, kills < 1000 {
            // The event the decision answers: the latest before it (a critical one that cut the
            // grace short, say).
            let decidedAfter = max(trigger.time, lastEvent?.time ?? trigger.time, criticalNoticed?.time ?? trigger.time)
            let candidates = await snapshots()
            // How short memory is now: under_oom read again (a kill moments ago may have let the
            // waiting task go), the working set as just measured.
            await refreshUnderOOM()
            let input = RankingInput(
                apps: candidates.map(\.snapshot), budgetBytes: status.budgetBytes, availableBytes: status.availableBytes, targetAvailableBytes: target,
                level: PressureLevelValue(rawValue: severity(status).rawValue) ?? .warning)
            let decision: Decision
            do {
                decision = try Ranker.decide(input, policy: policy)
            } catch {
                ep.decisions.append(.init(input: input, victim: nil, note: "no decision: \(error)"))
                ep.outcome = "no decision: \(error)"
                ep.timeline.append(await entry("note", ep.outcome))
                break
            }
            guard let victim = decision.victims.first else {
                ep.decisions.append(.init(input: input, victim: nil, note: decision.explanation))
                ep.outcome = "nothing left to kill: still short by \(Format.bytes(target - min(target, status.availableBytes))) (\(decision.explanation))"
                ep.timeline.append(await entry("note", ep.outcome))
                if let released = releaseKernelHold() { ep.timeline.append(await entry("note", released)) }
                break
            }
            let v = victim.snapshot
            // What was free when the decision was made (measured moments ago: after the grace or
            // freeze-dry, or after the previous kill), against which this kill's gift is counted.
            // Not measured again here: the SIGKILL would wait for it.
            let before = status
            let k: KillOutcome
            do {
                k = try await killAndMeasure(v.name, pid: v.pid, state: v.state, reason: .vmPageShortage, before: before, what: "rank \(victim.rank) (\(victim.band))")
            } catch {
                // Exited, relaunched, changed state or already dying since the reading: decide
                // again on fresh data — unless that keeps happening.
                failedKills += 1
                ep.decisions.append(.init(input: input, victim: nil, note: "\(v.name) not killed: \(error)"))
                ep.timeline.append(await entry("note", app: v.name, pid: v.pid, "not killed: \(error)"))
                if failedKills >= Self.failedKillLimit {
                    ep.outcome = "stopped: \(failedKills) kills in a row failed (the last: \(v.name): \(error))"
                    ep.timeline.append(await entry("note", ep.outcome))
                    break
                }
                guard case .measured(let now) = await measure() else {
                    ep.outcome = "memory could not be measured after a failed kill: stopped (no decision on partial data)"
                    ep.timeline.append(await entry("note", ep.outcome))
                    break
                }
                status = now
                continue
            }
            failedKills = 0
            ep.decisions.append(.init(input: input, victim: v.name, note: nil))
            ep.timeline.append(k.killEntry)
            guard let now = k.after else {
                ep.outcome = "memory could not be measured after a kill: stopped (no decision on partial data)"
                ep.timeline.append(await entry("note", ep.outcome))
                break
            }
            status = now
            kills += 1
            ep.timeline.append(k.exitEntry)
            await record(k, reason: .vmPageShortage, rank: victim.rank, footprintBytes: v.footprintBytes, explanation: victim.explanation)
            ep.victims.append(.init(
                name: v.name, pid: v.pid, state: v.state, reason: KillReason.vmPageShortage.rawValue,
                rank: victim.rank, band: victim.band, policy: policy.name, footprintBytes: v.footprintBytes,
                purgeableBytes: v.purgeableBytes, secondsFromEvent: k.receipt.signalledAt - trigger.time,
                secondsFromLatestEvent: k.receipt.signalledAt - decidedAfter,
                reclaimedBytes: k.reclaimed, memoryReleased: k.receipt.memoryReleased, exited: k.exited, needed: true, explanation: victim.explanation))
        }
        if ep.outcome.isEmpty {
            ep.outcome = status.availableBytes >= target ? "recovered after \(kills) kill(s)" : (Task.isCancelled ? "stopped: the supervisor is shutting down" : "stopped: still short")
        }
        await close(&ep, status)
    }

    /// Measures again after `step` (the warnings, freeze-dry); when enough is free, closes the
    /// episode ("warnings sufficed: nobody killed") and says so. When memory cannot be measured,
    /// closes it too: no decision on partial data.
    private func recovered(after step: String, _ ep: inout JetsamEpisode, _ status: inout MemoryStatus) async -> Bool {
        guard case .measured(let s) = await measure() else {
            ep.outcome = "memory could not be measured after \(step): stopped (no decision on partial data)"
            ep.timeline.append(await entry("note", ep.outcome))
            await close(&ep, status)
            return true
        }
        status = s
        ep.timeline.append(await entry("measure", bytes: status.availableBytes, "after \(step): \(Format.bytes(status.availableBytes)) available"))
        guard status.availableBytes >= ep.targetAvailableBytes else { return false }
        ep.outcome = "\(step) sufficed: nobody killed"
        await close(&ep, status)
        return true
    }

    /// A monotonic time (a KillReceipt's `signalledAt`) on the supervisor's log clock.
    private func logTime(ofMonotonic t: Double) async -> Double {
        await supervisor.now() - (monotonicSeconds() - t)
    }

    /// A timeline entry, stamped with the supervisor's log clock.
    private func entry(_ kind: String, app: String? = nil, pid: Int32? = nil, bytes: UInt64? = nil, _ detail: String) async -> JetsamEpisode.Entry {
        JetsamEpisode.Entry(t: await supervisor.now(), kind: kind, app: app, pid: pid, bytes: bytes, detail: detail)
    }

    private func close(_ ep: inout JetsamEpisode, _ status: MemoryStatus) async {
        lastEpisodeRecovered = status.availableBytes >= ep.targetAvailableBytes
        if !lastEpisodeRecovered, !Task.isCancelled {
            // Still short, whatever stopped it: no new episode until something changes.
            let levelNow = level
            let stuck = (apps: Self.signature(await supervisor.apps()), severity: severity(status))
            if level == levelNow { stuckWith = stuck }  // a change of level meanwhile clears it
        }
        ep.end = await supervisor.now()
        ep.memoryAfter = status
        ep.kernelOOMKillsAfter = await supervisor.kernelOOMKills()
        ep.markNeeded()
        await keep(ep)
    }

    /// Keeps a closed episode: in memory (and for `episodeUpdates()` subscribers), and on disk
    /// when there is a `reportDirectory`.
    private func keep(_ ep: JetsamEpisode) async {
        // On disk first: whoever hears of the episode can read its file.
        defer { killer.add(ep) }
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

    // MARK: A kill

    /// What one kill did and gave back.
    struct KillOutcome {
        var receipt: KillReceipt
        /// The SIGKILL, at its time, and the exit (or "still exiting") once waited for.
        var killEntry: JetsamEpisode.Entry
        var exitEntry: JetsamEpisode.Entry
        var exited: Bool
        /// Available memory gained against `before`.
        var reclaimed: UInt64
        /// Memory once the victim exited (or the cooldown ended); nil if it could not be read.
        var after: MemoryStatus?
    }

    /// Kills the app (SIGKILL through the supervisor) and measures what it gave back: at once
    /// (with process_mrelease most of its memory is back when kill returns, before anything else
    /// can grow into it) and once it has exited (what its exit freed, the cooldown at most); the
    /// larger of the two, as others' growth only hides some. `before` is what was free when the
    /// decision was made: not measured again here, the SIGKILL would wait for it.
    private func killAndMeasure(_ name: String, pid: Int32, state: LifecycleState, reason: KillReason, before: MemoryStatus, what: String) async throws(SupervisorError) -> KillOutcome {
        let receipt = try await supervisor.kill(name, pid: pid, reason: reason, expectedState: state)
        let killedAt = await logTime(ofMonotonic: receipt.signalledAt)
        let atOnce = await measure()
        let exited = await supervisor.waitForExit(name, pid: pid, timeout: configuration.cooldownSeconds)
        let final = await measure()
        var reclaimed: UInt64 = 0
        for case .measured(let m) in [atOnce, final] {
            reclaimed = max(reclaimed, m.availableBytes &- min(m.availableBytes, before.availableBytes))
        }
        // What is free now is the reading after the exit, only: never the earlier one instead.
        var after: MemoryStatus?
        if case .measured(let m) = final { after = m }
        let exitEntry = await entry(
            exited ? "exit" : "note", app: name, pid: pid, bytes: reclaimed,
            exited ? "exited: \(Format.bytes(reclaimed)) given back" : "still exiting \(Format.seconds(configuration.cooldownSeconds)) after SIGKILL: \(Format.bytes(reclaimed)) given back so far")
        return KillOutcome(
            receipt: receipt,
            killEntry: .init(t: killedAt, kind: "kill", app: name, pid: pid, bytes: nil, detail: "\(what): SIGKILL\(receipt.memoryReleased ? ", memory released (process_mrelease)" : "")"),
            exitEntry: exitEntry, exited: exited, reclaimed: reclaimed, after: after)
    }

    /// The kill's event in the supervisor's log, once what it gave back is known (the log stays
    /// in time order; the episode's timeline has the SIGKILL at its time).
    private func record(_ k: KillOutcome, reason: KillReason, rank: Int, footprintBytes: UInt64, explanation: String) async {
        var event = SupervisorEvent(
            t: await supervisor.now(), app: k.receipt.app, pid: k.receipt.pid, kind: .jetsam,
            detail: k.exited ? nil : "still exiting \(configuration.cooldownSeconds) s after SIGKILL")
        event.reason = reason.rawValue
        event.rank = rank
        event.policy = policy.name.rawValue
        event.footprintBytes = footprintBytes
        event.reclaimedBytes = k.reclaimed
        event.explanation = explanation
        await supervisor.record(event)
    }

    // MARK: Per-app limits

    private func checkLimit(_ streamed: AppView) async {
        guard let limit = configuration.limits[streamed.name], !configuration.protected.contains(streamed.name), streamed.pid != nil, !streamed.isDying else { return }
        func over(_ v: AppView) -> (bytes: UInt64, limit: UInt64, which: String)? {
            guard let latest = v.latest else { return nil }
            let foreground = v.state == .active || v.state == .inactive
            guard let bytes = foreground ? limit.activeBytes : limit.inactiveBytes, latest.footprintBytes > bytes else { return nil }
            return (latest.footprintBytes, bytes, foreground ? "active" : "inactive")
        }
        let run = RunKey(name: streamed.name, generation: streamed.generation)
        guard over(streamed) != nil else {
            softWarned.remove(run)
            return
        }
        // The streamed reading may be behind: decide on a fresh one.
        let checkedAt = monotonicSeconds()
        guard let v = await supervisor.refreshSample(streamed.name), let pid = v.pid, !v.isDying, v.generation == streamed.generation,
            let latest = v.latest, let (bytes, limitBytes, which) = over(v)
        else { return }
        // Inside didEnterBackground the app is saving its state: not now (the sample taken as it
        // is suspended, or the next one, checks it again).
        if v.callbacksInProgress.contains(.didEnterBackground) { return }
        if limit.soft == true {
            guard softWarned.insert(run).inserted else { return }
            await supervisor.record(SupervisorEvent(t: await supervisor.now(), app: v.name, pid: pid, kind: .warning, detail: "over its soft \(which) limit: \(Format.bytes(bytes)) > \(Format.bytes(limitBytes))"))
            await supervisor.warn(.app(v.name))
            return
        }
        // A failed reading is said (once) by `measure`: not killed on partial data.
        guard case .measured(let before) = await measure() else { return }
        let oomBefore = await supervisor.kernelOOMKills()
        let explanation = "footprint \(Format.bytes(bytes)) over its \(which) limit \(Format.bytes(limitBytes)) (state \(v.state.rawValue))"
        let k: KillOutcome
        do {
            k = try await killAndMeasure(v.name, pid: pid, state: v.state, reason: .perProcessLimit, before: before, what: explanation)
        } catch {
            // Exited, changed state or already dying meanwhile: the next reading decides again.
            await say("jetsam: \(v.name) is over its \(which) limit but was not killed: \(error)")
            return
        }
        // Rank 1 of a decision of one: the limit, not the ranking, chose it.
        await record(k, reason: .perProcessLimit, rank: 1, footprintBytes: bytes, explanation: explanation)
        episodeCount += 1
        let checked = await logTime(ofMonotonic: checkedAt)
        var ep = JetsamEpisode(
            number: episodeCount, startedAt: Timestamp.now(), start: checked, end: nil,
            trigger: .init(level: PressureLevelValue(rawValue: level.rawValue) ?? .normal, source: "per-process-limit", detail: explanation, t: checked),
            policy: policy, memoryBefore: before, memoryAfter: k.after, targetAvailableBytes: 0, largestApp: v.name,
            apps: [.init(name: v.name, pid: pid, state: v.state, footprintBytes: bytes, purgeableBytes: latest.purgeableBytes,
                         residentBytes: latest.residentBytes, lifetimeMaxFootprintBytes: v.lifetimeMaxFootprintBytes, secondsInState: v.secondsInState,
                         isProtected: false)],
            timeline: [k.killEntry, k.exitEntry],
            victims: [.init(
                name: v.name, pid: pid, state: v.state, reason: KillReason.perProcessLimit.rawValue, rank: 1, band: "over-limit", policy: policy.name,
                footprintBytes: bytes, purgeableBytes: latest.purgeableBytes, secondsFromEvent: k.receipt.signalledAt - checkedAt,
                secondsFromLatestEvent: k.receipt.signalledAt - checkedAt,
                reclaimedBytes: k.reclaimed, memoryReleased: k.receipt.memoryReleased, exited: k.exited, needed: true, explanation: explanation)],
            freezes: [], decisions: [], kernelOOMKillsBefore: oomBefore, kernelOOMKillsAfter: await supervisor.kernelOOMKills(),
            outcome: "killed over its \(which) limit")
        ep.end = await supervisor.now()
        await keep(ep)
    }
}
