import MemPressureLifecycle
import FoundationEssentials
import Glibc
import MemPressureLifecycleProtocol
import MemPressureSystem
import MemPressureMonitor
import MemPressureValues
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
/// the killer acts before the kernel's cgroup OOM killer would. It has no loop of its own: it
/// subscribes to the supervisor's pressure monitor and looks at memory at every wake of it
/// (`Supervisor.pressureWakes()`) — each kernel event (on cgroup v1: a usage threshold crossed,
/// reclaim, a task at the limit; a PSI trigger), and the monitor's poll interval only for what
/// the kernel offers no event for (it says which, once, when it starts). And it holds the
/// kernel's killer of the device cgroup (`KernelOOMHold`, cgroup v1), so that an allocation that
/// outruns it waits at the limit for its decision instead of the kernel killing the largest task
/// (the app being launched, usually): the task at the limit is itself a kernel event
/// (`memory.oom_control`). Apps inside didEnterBackground (saving their state) are not
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

    /// Adds the killer to a supervisor's configuration (it watches pressure: the supervisor
    /// starts its monitor for it, with the configuration's `pressure`, or the default), and
    /// gives the supervisor's OOM score bands its high-memory line.
    public func attach(to c: inout SupervisorConfiguration) {
        c.policies.append(self)
        // The kernel's killer (and any that reads oom_score_adj) splits the bands where jetsam does.
        switch configuration.rankingPolicy.highMemory {
        case .bytes(let bytes):
            c.oomScoreBands?.highMemoryBytes = bytes
        case .shareOfBudget(let share):
            c.oomScoreBands?.highMemoryBytes = nil
            c.oomScoreBands?.highMemoryShare = share
        }
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

    public func run(_ device: any SupervisedDevice) async {
        let pressure = device.pressureConfiguration
        let engine = JetsamEngine(configuration: configuration, device: device, killer: self, pressure: pressure)
        let samples = await device.samples()
        let events = device.pressureEvents()
        let wakes = device.pressureWakes()
        await engine.sayHowWoken(await device.pressureSources, pollInterval: pressure.pollInterval)
        // Events are changes of level: a device already under pressure when the killer starts
        // would never send one. Start from the level now.
        if let level = device.pressureLevel, level >= .warning {
            await engine.pressure(EpisodeTrigger(level: level, source: .jetsam, detail: "pressure was \(level) when jetsam started", time: monotonicSeconds(), wakeup: .poll))
        }
        await engine.holdKernelOOMKiller()
        await withTaskGroup(of: Void.self) { group in
            group.addTask {
                for await e in events { await engine.pressure(EpisodeTrigger(e)) }
                // The stream ends when the supervisor shuts down (this task is then cancelled):
                // so does the watch. Ended otherwise, the killer says it is blind.
                await engine.stopWatching(pressureStreamEnded: !Task.isCancelled)
            }
            group.addTask {
                for await v in samples { await engine.sampled(v) }
            }
            group.addTask {
                for await wake in wakes { await engine.look(wake) }
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
