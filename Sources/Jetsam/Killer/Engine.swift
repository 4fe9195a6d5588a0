import AppLifecycle
import FoundationEssentials
import Glibc
import LifecycleProtocol
import LinuxSystem
import Pressure
import PressureValues
import Synchronization

/// The killer's state and decisions: one episode at a time.
actor JetsamEngine {
    let configuration: JetsamConfiguration
    let policy: JetsamPolicy
    let supervisor: Supervisor
    unowned let killer: JetsamKiller
    let reader: MemoryStatusReader
    /// The thresholds the one judgement of memory holds readings against (the supervisor's
    /// pressure configuration: the monitor's, so that its events and this agree).
    let pressureConfiguration: PressureConfiguration
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
    /// Whether the killer still looks at memory when the pressure monitor wakes it.
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

    init(configuration: JetsamConfiguration, supervisor: Supervisor, killer: JetsamKiller, pressure: PressureConfiguration) {
        self.configuration = configuration
        policy = configuration.rankingPolicy
        self.supervisor = supervisor
        self.killer = killer
        reader = MemoryStatusReader(cgroup: supervisor.deviceMemoryCgroup, procRoot: pressure.procRoot)
        pressureConfiguration = pressure
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
    /// whether the foreground app may be taken: the one judgement of memory
    /// (`PressureConfiguration.judge`) of this measurement and of a task waiting at the limit —
    /// critical while a task waits there or when the working set is at the critical share of the
    /// budget (95% by default), else warning (an episode runs because memory is short of
    /// jetsam's target: at least warning). Measured, not the merged pressure level: the level's
    /// changes start episodes, but one of its sources, the kernel's vmpressure (cgroup v1
    /// `memory.pressure_level`), reports critical at nearly every reclaim near the limit of a
    /// device without swap, which would skip the warnings every time and put the foreground app
    /// at risk while the others still suffice.
    func severity(_ status: MemoryStatus) -> PressureLevel {
        max(.warning, judge(status).level)
    }

    /// The judgement of `status` with what is known of a task waiting at the limit.
    func judge(_ status: MemoryStatus) -> MemoryJudgement {
        pressureConfiguration.judge(MemoryEvidence(status: status, taskWaitsAtLimit: underOOM))
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

    /// Says once, as the killer starts, what wakes it: the pressure monitor's sources the kernel
    /// wakes, and those it can only poll.
    func sayHowWoken(_ sources: [PressureSourceStatus], pollInterval: Double) async {
        let inUse = sources.filter(\.available)
        let events = inUse.filter { $0.wakeup == .event }.map(\.name)
        let polled = inUse.filter { $0.wakeup != .event }.map(\.name)
        var detail = "jetsam looks at memory at each wake of the pressure monitor: kernel events from "
        detail += events.isEmpty ? "no source (none offers one here)" : events.joined(separator: ", ")
        if !polled.isEmpty {
            detail += "; every \(Format.seconds(pollInterval)) from \(polled.joined(separator: ", ")) (no kernel event for it: polled)"
        }
        await say(detail)
    }

    /// A reading of the watch failed: said once, when it starts failing.
    func readingFailed(_ reading: Reading, _ what: String) async {
        guard failingReadings[reading] == nil else { return }
        failingReadings[reading] = what
        await say("jetsam: \(what): no decision is made on it until it can be read again", kind: .error)
    }

    /// A reading of the watch works: said once, when it had been failing.
    func readingWorks(_ reading: Reading) async {
        guard let what = failingReadings.removeValue(forKey: reading) else { return }
        await say("jetsam: can read again what failed before (\(what))")
    }

    func say(_ detail: String, kind: SupervisorEventKind = .note) async {
        await supervisor.record(SupervisorEvent(t: await supervisor.now(), kind: kind, detail: detail))
    }
}
