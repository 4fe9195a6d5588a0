import MemPressureLifecycle
import FoundationEssentials
import Glibc
import MemPressureLifecycleProtocol
import MemPressureSystem
import MemPressureMonitor
import MemPressureValues
import Synchronization

// MARK: The watch: looking at memory when the pressure monitor wakes, starting episodes, graces

extension JetsamEngine {
    /// Looks at memory at each wake of the pressure monitor (`Supervisor.pressureWakes()`): at
    /// every kernel event it hears — a usage threshold crossed, reclaim, a task at the device's
    /// limit, a PSI trigger — and at its poll interval for what the kernel offers no event for.
    /// The level's events are changes only: an app that allocates its footprint in a fraction of
    /// a second must be answered at the event that shows it, not at the next change of level.
    /// Each reading is fresh (taken here, after the wake); `wake.time` is when the monitor woke.
    func look(_ wake: PressureWake) async {
        guard watching else { return }
        let t = wake.time
        if holdsKernelOOMKiller {
            let was = underOOM
            let read = await refreshUnderOOM()
            if underOOM && !was { endGraces(critical: (t, "a task waits at the device's limit (under_oom)")) }
            if read, kernelHoldReleased, !underOOM {
                // Out of OOM again: hold the kernel's killer again.
                kernelHoldReleased = await device.setKernelOOMKillerHeld(true) != nil
            }
            if underOOM, !kernelHoldReleased, episodeTask == nil {
                if await isStuck(.critical) { return }
                start(trigger: EpisodeTrigger(level: .critical, source: .underOOM, detail: "the device is at its limit: a task waits for memory (under_oom)", time: t, wakeup: wake.wakeup), reevaluation: true)
                return
            }
        }
        if !graces.isEmpty, case .measured(let status) = await measure(), severity(status) == .critical {
            // Memory turned critically short while warned apps had their grace.
            endGraces(critical: (t, judge(status).detail))
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
        start(trigger: EpisodeTrigger(level: shortage, source: .jetsam, detail: "\(what): \(Format.bytes(status.availableBytes)) available, \(Format.bytes(target(status))) needed\(last)", time: t, wakeup: wake.wakeup), reevaluation: !lastEpisodeRecovered)
    }

    /// Whether the last episode ended still short on the same apps and at the same severity:
    /// nothing a new one could do differently. Once something changed, it is forgotten.
    func isStuck(_ severity: PressureLevel) async -> Bool {
        guard let stuck = stuckWith else { return false }
        if stuck.severity == severity, Self.signature(await device.apps()) == stuck.apps { return true }
        stuckWith = nil
        return false
    }

    /// Reads the hold's under_oom now into `underOOM`; on a failed reading the last known value
    /// stays (and the failure is said once). Whether the reading worked.
    @discardableResult
    func refreshUnderOOM() async -> Bool {
        guard holdsKernelOOMKiller else { return false }
        do {
            underOOM = try await device.isUnderOOM()
            await readingWorks(.underOOM)
            return true
        } catch {
            await readingFailed(.underOOM, "\(error)")
            return false
        }
    }

    /// The running apps as a new decision could differ by (`AppSignature`).
    static func signature(_ views: [AppView]) -> [AppSignature] {
        views.filter { $0.pid != nil }.map {
            AppSignature(
                name: $0.name, generation: $0.generation, state: $0.state, isDying: $0.isDying,
                isSaving: $0.callbacksInProgress.contains(.didEnterBackground), hasReading: $0.latest != nil)
        }
    }

    /// Lets the kernel's OOM killer act (jetsam has nothing left to kill and a task waits).
    func releaseKernelHold() async -> String? {
        guard holdsKernelOOMKiller, underOOM, !kernelHoldReleased else { return nil }
        if let error = await device.setKernelOOMKillerHeld(false) { return "cannot let the kernel's OOM killer act (\(error)): the waiting task waits on" }
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
        if holdsKernelOOMKiller { _ = await device.setKernelOOMKillerHeld(false) }
        holdsKernelOOMKiller = false
    }

    /// Starts an episode, unless one is under way: one at a time.
    func start(trigger: EpisodeTrigger, reevaluation: Bool) {
        guard episodeTask == nil else { return }
        runningEpisode += 1
        let id = runningEpisode
        criticalNoticed = nil
        episodeTask = Task {
            await self.episode(trigger: trigger, reevaluation: reevaluation)
            self.episodeEnded(id)
        }
    }

    func episodeEnded(_ id: Int) {
        if id == runningEpisode { episodeTask = nil }
    }

    /// Ends every grace under way; `critical` says when memory was seen critically short, and how.
    func endGraces(critical: (time: Double, what: String)? = nil) {
        if let critical, !graces.isEmpty { criticalNoticed = critical }
        let all = graces
        graces = [:]
        for (_, g) in all {
            g.timer.cancel()
            g.continuation.resume()
        }
    }

    func endGrace(_ id: Int) {
        graces.removeValue(forKey: id)?.continuation.resume()
    }

    /// Waits `seconds`, or less if memory turns critically short (or the killer stops) meanwhile;
    /// not at all if it is already (measured again: the episode's first reading may be old).
    func graceUnlessCritical(_ seconds: Double) async {
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
}
