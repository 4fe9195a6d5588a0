import MemPressureLifecycle
import FoundationEssentials
import Glibc
import MemPressureLifecycleProtocol
import MemPressureSystem
import MemPressureMonitor
import MemPressureValues
import Synchronization

/// The killer's state and decisions: one episode at a time.
actor JetsamEngine {
    let configuration: JetsamConfiguration
    let policy: JetsamPolicy
    /// The device it decides for: everything it reads and does goes through it.
    let device: any SupervisedDevice
    unowned let killer: JetsamKiller
    /// The thresholds the one judgement of memory holds readings against (the supervisor's
    /// pressure configuration: the monitor's, so that its events and this agree).
    let pressureConfiguration: PressureConfiguration
    var level: PressureLevel = .normal
    var lastEvent: EpisodeTrigger?
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
    /// Whether the device's kernel OOM killer is held (cgroup v1), and whether it is let act
    /// now (jetsam had nothing left to kill).
    var holdsKernelOOMKiller = false
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
    var stuckWith: (apps: [AppSignature], severity: PressureLevel)?
    /// Readings of the watch that are failing now (the device's memory, the hold's under_oom),
    /// each said once when it starts failing and once when it works again.
    var failingReadings: [WatchedReading: String] = [:]

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

    /// A running app as a new decision could differ by: its run, its state, whether it is dying,
    /// saving its state (inside didEnterBackground) or has a reading yet.
    struct AppSignature: Hashable {
        var name: String
        var generation: Int
        var state: LifecycleState
        var isDying: Bool
        var isSaving: Bool
        var hasReading: Bool
    }

    init(configuration: JetsamConfiguration, device: any SupervisedDevice, killer: JetsamKiller, pressure: PressureConfiguration) {
        self.configuration = configuration
        policy = configuration.rankingPolicy
        self.device = device
        self.killer = killer
        pressureConfiguration = pressure
    }

    // MARK: Inputs

    func pressure(_ e: EpisodeTrigger) async {
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
        switch await device.holdKernelOOMKiller() {
        case .success(let cgroup):
            holdsKernelOOMKiller = true
            await record(.note(.kernelOOMKillerHeld(cgroup: cgroup)))
        case .failure(.noCgroup):
            return  // the whole machine: nothing to hold, nothing to say
        case .failure(let why):
            await record(.note(.kernelOOMKillerNotHeld(why)))
        }
    }

    func stopWatching(pressureStreamEnded: Bool = false) async {
        watching = false
        if pressureStreamEnded {
            await record(.failure(.pressureStreamEnded))
        }
    }

    /// Says once, as the killer starts, what wakes it: the pressure monitor's sources the kernel
    /// wakes, and those it can only poll.
    func sayHowWoken(_ sources: [PressureSourceStatus], pollInterval: Double) async {
        let inUse = sources.filter(\.available)
        let events = inUse.filter { $0.wakeup == .event }.map(\.name)
        let polled = inUse.filter { $0.wakeup != .event }.map(\.name)
        await record(.note(.wokenBy(events: events, polled: polled, pollInterval: pollInterval)))
    }

    /// A reading of the watch failed: said once, when it starts failing.
    func readingFailed(_ reading: WatchedReading, _ failure: String) async {
        guard failingReadings[reading] == nil else { return }
        failingReadings[reading] = failure
        await record(.failure(.readingFailed(reading, failure: failure)))
    }

    /// A reading of the watch works: said once, when it had been failing.
    func readingWorks(_ reading: WatchedReading) async {
        guard let failure = failingReadings.removeValue(forKey: reading) else { return }
        await record(.note(.readingWorksAgain(reading, failure: failure)))
    }

    /// Records what jetsam did or says in the supervisor's log.
    func record(_ r: PolicyRecord, app: String? = nil, pid: Int32? = nil) async {
        await device.record(SupervisorEvent(t: await device.now(), app: app, pid: pid, .policy(r)))
    }
}

/// What opens an episode: a pressure event, or what the killer itself found (a shortage when the
/// monitor woke it, a task at the limit, an app over its limit).
struct EpisodeTrigger: Sendable {
    var level: PressureLevel
    var source: JetsamEpisode.TriggerSource
    var detail: String
    /// Monotonic seconds: when the pressure monitor's thread woke on it.
    var time: Double
    var wakeup: PressureWakeup?

    init(level: PressureLevel, source: JetsamEpisode.TriggerSource, detail: String, time: Double, wakeup: PressureWakeup?) {
        self.level = level
        self.source = source
        self.detail = detail
        self.time = time
        self.wakeup = wakeup
    }

    /// A change of the merged level, from the pressure source that caused it.
    init(_ e: PressureEvent) {
        self.init(level: e.level, source: .pressure(e.source), detail: e.detail, time: e.time, wakeup: e.wakeup)
    }
}
