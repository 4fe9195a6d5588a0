import MemPressureLifecycle
import MemPressureLifecycleProtocol
import MemPressureSystem
import MemPressureMonitor
import MemPressureValues
import Synchronization

/// A device in memory, for testing a policy's decisions on any host: no root, no cgroups, no
/// processes. Its apps are what the test says (state, footprint, how they answer a warning, a
/// kill), its memory is a budget less what lies outside the apps less the apps' resident memory,
/// and its pressure is what the test yields. What the policy did is kept, in order (`actions`),
/// and so is what it recorded (`events`), each also as a stream to wait on.
///
/// A kill makes the app exit at once (its memory comes back), unless the app was set to fail the
/// kill (`killFails`: the kill throws) or not to exit (`exitsOnKill` false: it stays, dying,
/// holding its memory, and `waitForExit` says it has not exited — at once, or, with
/// `setExitWaits(true)`, once its timeout has passed, unless the test makes it `exit` first).
public actor FakeDevice: SupervisedDevice {
    /// One app of the fake device.
    public struct App: Sendable {
        public var name: String
        public var pid: Int32
        public var generation = 1
        public var state: LifecycleState
        public var footprintBytes: UInt64
        public var purgeableBytes: UInt64 = 0
        /// Resident memory: what a kill gives back (the footprint unless set).
        public var residentBytes: UInt64?
        public var secondsInState: Double = 60
        /// Launch to first ready of its recent runs (the ranker's relaunch cost).
        public var launchToReadySeconds: [Double] = [1]
        /// What a memory warning makes it free (its footprint falls by as much).
        public var freesOnWarning: UInt64 = 0
        /// A kill of it throws this instead of killing it.
        public var killFails: SupervisorError?
        /// Whether it exits when killed.
        public var exitsOnKill = true
        /// Whether it is running (false once killed and exited).
        public var running = true
        /// Killed and not exited.
        public var dying = false
        /// The `oom_score_adj` its view carries (`AppView.oomScoreAdj`) while it runs: nil, as a
        /// supervisor without bands gives.
        public var oomScoreAdj: Int32?

        public init(_ name: String, pid: Int32, state: LifecycleState, footprintBytes: UInt64) {
            self.name = name
            self.pid = pid
            self.state = state
            self.footprintBytes = footprintBytes
        }

        var resident: UInt64 { running ? (residentBytes ?? footprintBytes) : 0 }
    }

    /// What a policy did to the device, in order.
    public enum Action: Sendable, Hashable {
        case warned([String])
        case killed(String, pid: Int32, reason: KillReason)
        case killFailed(String, pid: Int32)
        case pagedOut(String, pid: Int32)
        case command(String, String)
    }

    private var all: [App] = []
    public private(set) var actions: [Action] = []
    public private(set) var events: [SupervisorEvent] = []
    /// The device's budget, and what of it lies outside the apps.
    public var budgetBytes: UInt64
    public var outsideAppsBytes: UInt64
    public var swapBytes: UInt64 = 0
    private let started = monotonicSeconds()

    private struct Streams {
        var pressure: [AsyncStream<PressureEvent>.Continuation] = []
        var wakes: [AsyncStream<PressureWake>.Continuation] = []
        var samples: [AsyncStream<AppView>.Continuation] = []
        var actions: [AsyncStream<Action>.Continuation] = []
        var events: [AsyncStream<SupervisorEvent>.Continuation] = []
        var reads: [AsyncStream<MemoryRead>.Continuation] = []
        var level: PressureLevel = .normal
    }
    private let streams = Mutex(Streams())

    /// Whether `waitForExit` waits for an app that has not exited (until `exit` or its timeout)
    /// rather than answering at once.
    public private(set) var exitWaits = false
    private var exitWaiters: [Int: (name: String, pid: Int32, continuation: CheckedContinuation<Bool, Never>)] = [:]
    private var nextExitWaiter = 0

    /// The pressure configuration it says it has (its `procRoot` and `cgroup` name the files a
    /// policy that reads the kernel's counters reads: a test's fixtures).
    public nonisolated let pressureConfiguration: PressureConfiguration

    public init(budgetBytes: UInt64, outsideAppsBytes: UInt64 = 0, apps: [App] = [], pressure: PressureConfiguration = PressureConfiguration()) {
        self.budgetBytes = budgetBytes
        self.outsideAppsBytes = outsideAppsBytes
        self.all = apps
        pressureConfiguration = pressure
    }

    // MARK: What the test does

    public func add(_ app: App) { all.append(app) }

    /// Changes an app (its footprint, its state, how it answers).
    public func change(_ name: String, _ body: @Sendable (inout App) -> Void) {
        guard let i = all.firstIndex(where: { $0.name == name }) else { return }
        body(&all[i])
    }

    public func setOutsideAppsBytes(_ bytes: UInt64) { outsideAppsBytes = bytes }

    public func app(_ name: String) -> App? { all.first { $0.name == name } }

    /// A change of the merged pressure level, to every subscriber of `pressureEvents()`.
    public nonisolated func yieldPressure(_ level: PressureLevel, detail: String = "the test says so") {
        let event = PressureEvent(level: level, source: "fake", detail: detail, time: monotonicSeconds(), wakeup: .event)
        let subscribers = streams.withLock { s in
            s.level = level
            return s.pressure
        }
        for c in subscribers { c.yield(event) }
    }

    /// A wake of the pressure monitor, to every subscriber of `pressureWakes()`: a kernel event
    /// (`events`: what the kernel signalled, as the monitor names it) or a poll; `level` is the
    /// merged level it says (the last one yielded unless given).
    public nonisolated func yieldWake(_ events: [String] = ["fake: the test says so"], wakeup: PressureWakeup = .event, level: PressureLevel? = nil) {
        let current = streams.withLock { $0.level }
        let wake = PressureWake(time: monotonicSeconds(), wakeup: wakeup, events: wakeup == .event ? events : [], level: level ?? current)
        send(wake, to: \.wakes)
    }

    /// Makes `waitForExit` wait for an app that has not exited, until it `exit`s or the timeout
    /// passes (false, the default: it answers at once).
    public func setExitWaits(_ waits: Bool) { exitWaits = waits }

    /// A killed app that did not exit (`exitsOnKill` false) exits now: its memory comes back, and
    /// whoever waits for its exit hears of it.
    public func exit(_ name: String) {
        guard let i = all.firstIndex(where: { $0.name == name }), all[i].running else { return }
        all[i].running = false
        all[i].dying = false
        all[i].state = .notRunning
        let pid = all[i].pid
        for (id, w) in exitWaiters where w.name == name && w.pid == pid {
            endExitWait(id, exited: true)
        }
    }

    private func endExitWait(_ id: Int, exited: Bool) {
        exitWaiters.removeValue(forKey: id)?.continuation.resume(returning: exited)
    }

    /// A footprint reading of the app now, to every subscriber of `samples()`.
    public func yieldSample(_ name: String) {
        guard let v = view(of: name) else { return }
        send(v, to: \.samples)
    }

    /// Every action from now on.
    public nonisolated func actionUpdates() -> AsyncStream<Action> {
        subscribe(\.actions)
    }

    /// Every event recorded from now on.
    public nonisolated func eventUpdates() -> AsyncStream<SupervisorEvent> {
        subscribe(\.events)
    }

    /// A reading of the device's memory (`memoryStatus()`): what it said, and whether a warning
    /// had been sent before it.
    public struct MemoryRead: Sendable {
        public var status: MemoryStatus
        public var warned: Bool
    }

    /// Every reading of the device's memory from now on, as it is made.
    public nonisolated func memoryReads() -> AsyncStream<MemoryRead> {
        subscribe(\.reads)
    }

    /// Ends every stream (as a supervisor's shutdown does).
    public nonisolated func finish() {
        let s = streams.withLock { $0 }
        s.pressure.forEach { $0.finish() }
        s.wakes.forEach { $0.finish() }
        s.samples.forEach { $0.finish() }
        s.actions.forEach { $0.finish() }
        s.events.forEach { $0.finish() }
        s.reads.forEach { $0.finish() }
    }

    private nonisolated func subscribe<Element: Sendable>(_ list: WritableKeyPath<Streams, [AsyncStream<Element>.Continuation]>) -> AsyncStream<Element> {
        let (stream, c) = AsyncStream<Element>.makeStream()
        streams.withLock { $0[keyPath: list].append(c) }
        return stream
    }

    private nonisolated func send<Element: Sendable>(_ element: Element, to list: KeyPath<Streams, [AsyncStream<Element>.Continuation]>) {
        for c in streams.withLock({ $0[keyPath: list] }) { c.yield(element) }
    }

    private func act(_ action: Action) {
        actions.append(action)
        send(action, to: \.actions)
    }

    // MARK: SupervisedDevice: the apps

    private func makeView(_ a: App) -> AppView {
        let sample = FootprintSample(
            t: now(), state: a.state, footprintBytes: a.footprintBytes, residentBytes: a.residentBytes ?? a.footprintBytes,
            dirtyBytes: a.footprintBytes, purgeableBytes: a.purgeableBytes, swappedBytes: 0)
        let background = a.state == .backgroundRunning || a.state == .suspended
        return AppView(
            name: a.name, pid: a.running ? a.pid : nil, generation: a.generation, state: a.running ? a.state : .notRunning,
            secondsInState: a.secondsInState, secondsSinceBackgrounded: background ? a.secondsInState : nil,
            secondsSinceActive: a.state == .active ? 0 : a.secondsInState, secondsSinceLaunch: a.secondsInState, activations: 1,
            latest: a.running ? sample : nil, sampleAgeSeconds: a.running ? 0 : nil, lifetimeMaxFootprintBytes: a.footprintBytes,
            launchToReadySeconds: a.launchToReadySeconds, isDying: a.dying, oomScoreAdj: a.running ? a.oomScoreAdj : nil)
    }

    public func apps() -> [AppView] { all.map(makeView) }

    public func view(of name: String) -> AppView? { app(name).map(makeView) }

    public func refreshSample(_ name: String) -> AppView? { view(of: name) }

    public func samples() -> AsyncStream<AppView> {
        subscribe(\.samples)
    }

    // MARK: SupervisedDevice: acting on an app

    public func kill(_ name: String, pid: Int32, reason: KillReason, expectedState: LifecycleState?) throws(SupervisorError) -> KillReceipt {
        guard let i = all.firstIndex(where: { $0.name == name }) else { throw .noSuchApp(name) }
        let a = all[i]
        guard a.running, a.pid == pid else { throw .staleTarget(app: name, expectedPID: pid, currentPID: a.running ? a.pid : nil) }
        guard !a.dying else { throw .dying(app: name, pid: pid) }
        if let expectedState, a.state != expectedState { throw .wrongState(app: name, state: a.state, operation: .kill) }
        if let error = a.killFails {
            act(.killFailed(name, pid: pid))
            throw error
        }
        if a.exitsOnKill {
            all[i].running = false
            all[i].state = .notRunning
        } else {
            all[i].dying = true
        }
        act(.killed(name, pid: pid, reason: reason))
        return KillReceipt(app: name, pid: pid, signalledAt: monotonicSeconds(), memoryReleased: a.exitsOnKill)
    }

    public func waitForExit(_ name: String, pid: Int32, timeout: Double) async -> Bool {
        guard let a = app(name), a.running, a.pid == pid else { return true }
        guard exitWaits else { return false }
        nextExitWaiter += 1
        let id = nextExitWaiter
        let timer = Task {
            do {
                try await Task.sleep(for: Seconds.duration(timeout))
            } catch {
                // Cancelled: the wait ended otherwise (the exit came, or the waiter was cancelled).
            }
            self.endExitWait(id, exited: false)
        }
        let exited = await withTaskCancellationHandler {
            await withCheckedContinuation { (c: CheckedContinuation<Bool, Never>) in exitWaiters[id] = (name, pid, c) }
        } onCancel: {
            timer.cancel()
        }
        timer.cancel()
        return exited
    }

    public func warn(_ target: AppTarget, waitForAcknowledgements: Bool) -> [String] {
        var warned: [String] = []
        for i in all.indices where all[i].running && all[i].state != .suspended && all[i].state != .notRunning {
            if case .app(let name) = target, name != all[i].name { continue }
            warned.append(all[i].name)
            all[i].footprintBytes -= min(all[i].footprintBytes, all[i].freesOnWarning)
            all[i].freesOnWarning = 0
        }
        act(.warned(warned))
        return warned
    }

    public func pageOut(_ name: String, pid: Int32, expectedState: LifecycleState) throws(SupervisorError) -> PageOutResult {
        guard let i = all.firstIndex(where: { $0.name == name && $0.running && $0.pid == pid }) else {
            throw .staleTarget(app: name, expectedPID: pid, currentPID: app(name)?.pid)
        }
        guard all[i].state == expectedState else { throw .wrongState(app: name, state: all[i].state, operation: .pageOut) }
        let resident = all[i].resident
        all[i].residentBytes = 0
        act(.pagedOut(name, pid: pid))
        return PageOutResult(advisedBytes: resident, swappedBefore: 0, swappedAfter: resident, residentBefore: resident, residentAfter: 0)
    }

    public func command(_ name: String, _ text: String) throws(SupervisorError) -> String {
        guard app(name) != nil else { throw .noSuchApp(name) }
        act(.command(name, text))
        return "ok"
    }

    // MARK: SupervisedDevice: the log

    public func now() -> Double { monotonicSeconds() - started }

    public func record(_ event: SupervisorEvent) {
        events.append(event)
        send(event, to: \.events)
    }

    // MARK: SupervisedDevice: pressure

    public nonisolated func pressureEvents() -> AsyncStream<PressureEvent> {
        subscribe(\.pressure)
    }

    public nonisolated func pressureWakes() -> AsyncStream<PressureWake> {
        subscribe(\.wakes)
    }

    public nonisolated var pressureLevel: PressureLevel? { streams.withLock { $0.level } }

    public var pressureSources: [PressureSourceStatus] {
        [PressureSourceStatus(name: "fake", available: true, detail: "what the test yields", wakeup: .event)]
    }

    // MARK: SupervisedDevice: memory

    public func memoryStatus() throws(MemoryStatusError) -> MemoryStatus {
        let used = min(budgetBytes, outsideAppsBytes + all.reduce(0) { $0 + $1.resident })
        let status = MemoryStatus(budgetBytes: budgetBytes, usedBytes: used, availableBytes: budgetBytes - used, source: "fake device")
        let read = MemoryRead(status: status, warned: actions.contains { if case .warned = $0 { true } else { false } })
        send(read, to: \.reads)
        return status
    }

    public func memoryOutsideApps() -> UInt64? { outsideAppsBytes }

    public func kernelOOMKills() -> UInt64? { 0 }

    public func swapTotalBytes() -> Result<UInt64, SystemCallError> { .success(swapBytes) }

    public func setSwapBytes(_ bytes: UInt64) { swapBytes = bytes }

    // MARK: SupervisedDevice: the kernel's OOM killer (the fake has none to hold)

    public func holdKernelOOMKiller() -> Result<String, KernelOOMHold.Unavailable> { .failure(.noCgroup) }

    public func setKernelOOMKillerHeld(_ held: Bool) -> SystemCallError? { nil }

    public func isUnderOOM() throws(KernelOOMHold.ReadFailure) -> Bool { false }
}
