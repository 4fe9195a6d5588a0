import Glibc
import MemPressureLifecycleProtocol
import MemPressureMonitor
import MemPressureValues
import MemPressureSystem
import Synchronization
import SystemPackage
import MemPressureVMTracker

// MARK: The device policies see (`SupervisedDevice`)

extension Supervisor: SupervisedDevice {
    /// Every app as policies see it, in registration order: cheap (no timeline is copied).
    public func apps() -> [AppView] {
        order.compactMap { records[$0].map(view) }
    }

    /// One app's view (nil if no such app).
    public func view(of name: String) -> AppView? { records[name].map(view) }

    func view(_ a: AppRecord) -> AppView {
        let t = monotonicSeconds()
        let alive = a.process != nil
        return AppView(
            name: a.name, pid: a.pid, generation: a.generation, state: a.state, secondsInState: alive ? t - a.stateSince : 0,
            secondsSinceBackgrounded: a.backgroundEnteredAt.map { t - $0 },
            secondsSinceActive: a.state == .active ? 0 : a.lastActiveAt.map { t - $0 },
            secondsSinceLaunch: a.process.map { t - $0.launchedAt },
            activations: a.activations, launches: a.generation, latest: a.latest?.sample, sampleAgeSeconds: a.latest.map { t - $0.at },
            lifetimeMaxFootprintBytes: a.lifetimeMaxFootprint, launchToReadySeconds: a.launchToReady, isClient: a.isClient,
            backgroundStay: a.backgroundPeriod, isDying: alive && a.terminating, callbacksInProgress: alive ? Set(a.callbacksInProgress.keys) : [],
            oomScoreAdj: alive ? a.oomScore.flatMap { $0.generation == a.generation ? $0.value : nil } : nil)
    }

    /// Reads the app's footprint now (when a policy will not decide on an old reading).
    @discardableResult
    public func refreshSample(_ name: String) -> AppView? {
        guard let a = records[name] else { return nil }
        sample(a)
        return view(a)
    }

    /// Kills the app at once: SIGKILL to its main process through its pidfd, then to every other
    /// process it started (through its cgroup or process group: `AppProcess.killApp`); a
    /// suspended app is let run so that it can die; their memory is freed with process_mrelease
    /// where the kernel has it. No
    /// callback, no grace period, and no waiting behind a command that holds the app's lock (a
    /// launch waiting for didFinishLaunching fails instead). The exit is logged as an exit with
    /// the reason, not as a crash.
    ///
    /// `pid` names the run the decision was made for: if the app now runs as another process
    /// (relaunched meanwhile) or not at all, nothing is signalled (`.staleTarget`); with
    /// `expectedState`, neither if it has changed state since (`.wrongState`). An app already
    /// being taken down is not killed again (`.dying`).
    ///
    /// The steps are `Teardown.jetsam`; none of them waits, so the checks, the signal and the
    /// release happen in one turn of the actor (nothing else runs on it in between).
    public func kill(_ name: String, pid: Int32, reason: KillReason, expectedState: LifecycleState? = nil) async throws(SupervisorError) -> KillReceipt {
        let a = try app(name)
        guard let process = a.process, process.pid == pid, a.state != .notRunning else {
            throw .staleTarget(app: name, expectedPID: pid, currentPID: a.pid)
        }
        if let expectedState, a.state != expectedState { throw .wrongState(app: name, state: a.state, operation: .kill) }
        guard !a.terminating else { throw .dying(app: name, pid: pid) }
        // Marked (the exit logged as this kill's, with the reason) only once the signal went.
        var t = TeardownRun(process: process, generation: a.generation, exit: .expected(reason))
        try await carryOut(Teardown.jetsam, on: a, &t)
        guard let signalledAt = t.signalledAt else {
            throw .staleTarget(app: name, expectedPID: pid, currentPID: nil)  // it had exited already
        }
        metrics.killed(name, reason: reason)
        return KillReceipt(app: name, pid: pid, signalledAt: signalledAt, memoryReleased: t.memoryReleased, othersKilled: t.othersKilled, chargedBytes: t.chargedBytes)
    }

    /// The processes of the app now — its main process and every other one it started (its
    /// cgroup's, or its process group's) — ascending; empty when it is not running.
    public func processes(of name: String) throws(SupervisorError) -> [Int32] {
        guard let process = try app(name).process else { return [] }
        switch process.members {
        case .cgroup(let group):
            do {
                return try group.members.processes().sorted()
            } catch {
                throw .cgroup(error)
            }
        case .processGroup:
            return ([process.pid] + AppProcess.processes(inGroup: process.pid)).sorted()
        }
    }

    /// The app's cgroup directories (memory, freezer; one on cgroup v2), empty without.
    public func cgroups(of name: String) throws(SupervisorError) -> [String] {
        guard let process = try app(name).process, case .cgroup(let group) = process.members else { return [] }
        return group.joinPaths
    }

    /// Waits until the app's run with this PID has exited and been reaped; false on timeout.
    public func waitForExit(_ name: String, pid: Int32, timeout: Double) async -> Bool {
        guard let a = records[name] else { return true }
        guard a.pid == pid else { return true }  // that run is already gone
        let generation = a.generation
        return await waitFor(name, timeout: timeout) { !$0.alive || $0.generation != generation }
    }

    /// Every footprint reading from now on (the periodic samples and those at transitions), as
    /// the app's view right after it, until shutdown (after it, a finished stream). A consumer
    /// more than 1,000 readings behind loses the oldest; one that stops reading is forgotten.
    public func samples() -> AsyncStream<AppView> {
        let (stream, continuation) = AsyncStream<AppView>.makeStream(bufferingPolicy: .bufferingNewest(1000))
        if phase == .closed {
            continuation.finish()
        } else {
            sampleSubscribers.add(continuation)
        }
        return stream
    }

    /// How many processes the kernel's memory-cgroup OOM killer has killed in the device cgroup
    /// since it was created (nil without a budget, or when the kernel does not say).
    public func kernelOOMKills() -> UInt64? {
        guard let cgroups, let device = cgroups.kernelOOMKills() else { return nil }
        guard !cgroups.isV2 else { return device }
        // cgroup v1 counts a kill in the victim's own group: the apps' groups, those of apps
        // running now and those removed (counted as each was removed), are added, each from
        // its run's launch on. A count that cannot be read makes the whole unknown (nil), never
        // smaller.
        guard !kernelOOMKillsUnknown else { return nil }
        var total = device &+ endedAppOOMKills
        for name in order {
            guard let a = records[name], let process = a.process, case .cgroup(let group) = process.members, let memory = group.memory else { continue }
            guard let count = DeviceCgroups.oomKills(memory, isV2: false) else { return nil }
            total &+= count &- min(count, a.oomKillsAtLaunch ?? 0)
        }
        return total
    }

    /// Every change of the merged pressure level from now on (a finished stream when the
    /// supervisor does not watch pressure). Subscribers get the monitor's events directly,
    /// without a hop through the supervisor.
    public nonisolated func pressureEvents() -> AsyncStream<PressureEvent> {
        guard let pressureMonitor else { return AsyncStream { $0.finish() } }
        return pressureMonitor.events()
    }

    /// Every wake of the pressure monitor's thread from now on — a kernel event, or its poll
    /// interval running out — with what woke it (a finished stream when the supervisor does not
    /// watch pressure): what a policy that must look at memory whenever the kernel says
    /// something subscribes to, instead of polling on its own.
    public nonisolated func pressureWakes() -> AsyncStream<PressureWake> {
        guard let pressureMonitor else { return AsyncStream { $0.finish() } }
        return pressureMonitor.wakes()
    }

    /// The merged pressure level now (nil when pressure is not watched): where a policy that
    /// subscribes to `pressureEvents()` late starts from.
    public nonisolated var pressureLevel: PressureLevel? { pressureMonitor?.level }

    /// The device's memory that belongs to no running app: the device cgroup's charge minus its
    /// app cgroups' (page cache and tmpfs files left by apps that ended, kernel memory charged
    /// to the device itself). Nil without a device memory cgroup, or when it cannot be read.
    public func memoryOutsideApps() -> UInt64? {
        guard let device = cgroups?.memory else { return nil }
        do {
            var outside = try device.memoryUsage()
            for app in device.children() { outside &-= min(outside, try app.memoryUsage()) }
            return outside
        } catch {
            return nil  // gone (shutting down): nothing to say
        }
    }

    /// The device's memory cgroup (nil without a budget).
    public nonisolated var deviceMemoryCgroup: String? { cgroups?.memoryGroup }

    /// The pressure monitor's configuration (the device's cgroup set where there is a budget),
    /// else the configured one, else the default.
    public nonisolated var pressureConfiguration: PressureConfiguration {
        pressureMonitor?.configuration ?? configuration.pressure ?? PressureConfiguration()
    }

    /// The device cgroup's working set against its budget (without a budget, the machine's
    /// MemAvailable against MemTotal): `MemoryStatusReader`, read on the caller's thread.
    public nonisolated func memoryStatus() throws(MemoryStatusError) -> MemoryStatus {
        try memoryReader.read()
    }

    /// SwapTotal of the machine (`Swap.totalBytes`).
    public nonisolated func swapTotalBytes() -> Result<UInt64, SystemCallError> {
        Swap.totalBytes(procRoot: pressureConfiguration.procRoot)
    }

    /// Holds the kernel's OOM killer of the device's memory cgroup (`KernelOOMHold`, cgroup v1):
    /// the cgroup held, or why not (`.noCgroup` without a budget). Held until
    /// `setKernelOOMKillerHeld(false)`; the guardian releases it if the supervisor dies.
    public nonisolated func holdKernelOOMKiller() -> Result<String, KernelOOMHold.Unavailable> {
        let result = KernelOOMHold.engage(cgroup: deviceMemoryCgroup)
        if case .success(let hold) = result { oomHold.withLock { $0 = hold } }
        return result.map { _ in deviceMemoryCgroup ?? "" }
    }

    /// Holds the kernel's OOM killer again, or lets it act; nothing before it was held.
    public nonisolated func setKernelOOMKillerHeld(_ held: Bool) -> SystemCallError? {
        oomHold.withLock { $0 }?.set(disabled: held)
    }

    /// Whether a task of the device waits at its limit (`under_oom`); false before the killer
    /// was held (nothing waits then: the kernel kills).
    public nonisolated func isUnderOOM() throws(KernelOOMHold.ReadFailure) -> Bool {
        guard let hold = oomHold.withLock({ $0 }) else { return false }
        return try hold.isUnderOOM()
    }

    /// Sends the app an app-defined command (the model app's `allocate N`, `release N`) and
    /// returns its answer.
    public func command(_ name: String, _ text: String) async throws(SupervisorError) -> String {
        let a = try app(name)
        return try await sendCommand(text, to: a)
    }

    /// Writes the app's anonymous memory out to swap (process_madvise MADV_PAGEOUT on every
    /// region holding anonymous pages, through its pidfd): freeze-dry. The app's state does not
    /// change; its pages come back as it touches them. Needs swap to have any effect. Only an
    /// app still in `expectedState` (suspended, for freeze-dry) and not being taken down.
    public func pageOut(_ name: String, pid: Int32, expectedState: LifecycleState = .suspended) throws(SupervisorError) -> PageOutResult {
        let a = try app(name)
        guard let process = a.process, process.pid == pid else { throw .staleTarget(app: name, expectedPID: pid, currentPID: a.pid) }
        guard a.state == expectedState else { throw .wrongState(app: name, state: a.state, operation: .pageOut) }
        guard !a.terminating else { throw .dying(app: name, pid: pid) }
        let before: ProcessSnapshot
        do {
            before = try Snapshotter().process(pid, options: SnapshotOptions(detail: .regions))
        } catch {
            throw .exited(app: name, during: "page-out", status: a.exitStatus)
        }
        let ranges = before.regions.filter { $0.counters.anonymous > 0 || $0.counters.swap > 0 }.map { ($0.start, $0.end) }
        let advised = try process.pageOut(ranges)
        let after: MemoryCounters
        do {
            after = try Snapshotter().process(pid, options: .totalsOnly).totals
        } catch {
            throw .exited(app: name, during: "page-out", status: a.exitStatus)
        }
        sample(a)
        metrics.frozeDry(name)
        return PageOutResult(
            advisedBytes: advised, swappedBefore: before.totals.swap, swappedAfter: after.swap,
            residentBefore: before.totals.resident, residentAfter: after.resident)
    }
}
