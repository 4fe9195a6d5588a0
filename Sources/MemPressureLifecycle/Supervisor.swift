import Glibc
import MemPressureLifecycleProtocol
import MemPressureMonitor
import MemPressureValues
import MemPressureRegionTags
import Synchronization
import MemPressureSystem

/// Supervises real app processes through the iOS lifecycle: the mechanism core.
///
/// The core launches apps (in the device's memory cgroup), speaks the control protocol with
/// them, carries out lifecycle commands (the steps `LifecycleMachine` plans, one command per
/// app at a time), suspends and resumes them, times their background tasks, accounts their
/// resource use per state and samples their footprint. It decides nothing about memory: the
/// policies in `SupervisorConfiguration.policies` do (memory warnings on pressure, jetsam),
/// through the device they are given (`SupervisedDevice`, which the supervisor is) — `apps()`,
/// `kill(_:pid:reason:expectedState:)`, `pressureEvents()`, `warn`, `memoryStatus()`, `record`.
///
/// This file is the core: its state, its start, its loops, its apps and the events it handles.
/// Where the other parts live: public types in SupervisorTypes.swift and Errors.swift; the app
/// record in AppRecord.swift; commands in Commands.swift (steps from LifecycleMachine.swift);
/// every teardown (terminate, kill, abort, an overrun) in Teardown.swift; shutdown in
/// Shutdown.swift; the log in SupervisorLog.swift; the control channels (`ControlChannels`) in
/// Channel.swift; waiting in Waiting.swift and the per-app lock (`AppLocks`) in AppLocks.swift;
/// accounting and sampling in Accounting.swift; suspension in Suspension.swift; background tasks
/// in BackgroundTasks.swift; warnings and notifications in Messaging.swift; the device policies
/// see in SupervisedDevice.swift and Seams.swift; the admin socket's protocol and client in
/// Admin.swift, its serving (`AdminConnections`) in AdminServer.swift; the metrics it emits
/// through swift-metrics (`SupervisorMetrics`) in Metrics.swift.
///
/// A background task still running `backgroundTaskLimit` seconds after the app entered the
/// background is first expired (its handler runs `expirationWarning` seconds before the limit),
/// then the app is terminated with a crash report holding the task thread's call stack.
/// Memory warnings go to running apps only. Notifications for a suspended app are queued and
/// coalesced, one per kind, and delivered when it resumes.
public actor Supervisor {
    public let configuration: SupervisorConfiguration
    public let runtimeDirectory: String
    let start = monotonicSeconds()
    let socket: ControlSocket
    var admin: ControlSocket?
    /// The admin socket's inbox (see `events`).
    let adminEvents: AsyncStream<SocketEvent>.Continuation
    /// The device's cgroups and each app's below them (nil: apps are process groups).
    let cgroups: DeviceCgroups?
    let launcher: String
    /// The runtime directory, held (flock) for as long as this supervisor lives.
    let lock: RuntimeLock
    /// Its record in the lock file: what the next supervisor on the directory would clean up.
    var runRecord: RunRecord
    /// The guardian that cleans up if this supervisor dies without shutting down.
    let guardian: Guardian
    /// The apps' standard output and error.
    let output: AppOutput
    /// What this supervisor cleaned up at start, left by a supervisor that had died on the same
    /// runtime directory (one line each; empty when there was nothing).
    public nonisolated let recovered: [String]
    /// What its shutdown could not clean up (processes still running, cgroups it could not
    /// remove, connections that did not close), one line each; empty after a clean shutdown.
    public internal(set) var leftovers: [String] = []
    /// The supervisor's own inbox: socket events, exits, pressure changes, timers. Unbounded on
    /// purpose: an exit or a closed connection must never be dropped (an app would stay
    /// "running" forever), and what arrives is bounded by what the supervisor itself started
    /// (its apps, their connections, its timers), each reader thread limiting its lines.
    let events: AsyncStream<Event>.Continuation
    /// The pressure monitor (when pressure is watched): policies subscribe to it directly.
    nonisolated let pressureMonitor: PressureMonitor?
    /// The device's memory: its cgroup's working set against its budget, or the machine's.
    nonisolated let memoryReader: MemoryStatusReader
    /// The kernel's OOM killer of the device cgroup, once a policy held it.
    let oomHold = Mutex<KernelOOMHold?>(nil)
    var loopTasks: [Task<Void, Never>] = []
    /// Set by shutdown when it stops `loopTasks`: from then on the event stream's loop handles
    /// only the connections' events (their closes), until shutdown finishes the stream.
    var onlySocketEvents = false
    var policyTasks: [Task<Void, Never>] = []
    var records: [String: AppRecord] = [:]
    var order: [String] = []
    /// The apps' control channels: which app each connection speaks for.
    var channels = ControlChannels()
    var logEvents: BoundedLog<SupervisorEvent>
    let logSubscribers = Subscribers<SupervisorEvent>()
    let sampleSubscribers = Subscribers<AppView>()
    var waiters: [Waiter] = []
    var nextWaiter = 0
    /// Each app's command lock: one command per app at a time, the others waiting in order.
    var locks = AppLocks()
    var nextCommandID = 0
    /// The admin socket's connections.
    var adminConnections = AdminConnections()
    var drainWaiters: [CheckedContinuation<Void, Never>] = []
    /// Where the supervisor is in its life: commands start only while it is running.
    var phase = Phase.running
    /// The shutdown under way or done: it runs once.
    var shutdownTask: Task<Void, Never>?
    /// The supervisor's helper commands still running (memory-warning commands, readiness
    /// probes), by PID, and what waits for each: a shutdown ends them and waits until they are
    /// reaped, their process groups ended.
    var helperCommands: [Int32: (handle: ProcessHandle, ending: Task<Void, Never>, kind: HelperCommand)] = [:]

    /// What a helper command is, for the log.
    enum HelperCommand { case warningCommand, readinessProbe }
    /// The metrics it emits (`SupervisorMetrics`), through the factory current when it was made.
    let metrics = SupervisorMetricsRecorder()
    /// The high-memory line of `OOMScoreBands` in bytes, once worked out (OOMScoreAdjust.swift).
    var oomHighMemoryLine: UInt64?
    /// The kernel's OOM kills counted in app groups already removed (cgroup v1; `kernelOOMKills()`).
    var endedAppOOMKills: UInt64 = 0
    /// An app group's count could not be read before it was removed: the count is unknown since.
    var kernelOOMKillsUnknown = false

    enum Phase {
        /// Commands start.
        case running
        /// Shutdown or abort has begun: no command starts (the shutdown's own terminates run),
        /// the apps are taken down; connections are still accepted and served.
        case stopping
        /// The apps are down: the sockets are closed, the streams finished.
        case closed
    }

    enum Event: Sendable {
        case socket(SocketEvent)
        case exited(app: String, generation: Int, status: ExitStatus, ending: AppEnding)
        case pressure(PressureEvent)
        case timer(app: String, generation: Int, period: Int, kind: TimerKind)
    }

    public init(configuration: SupervisorConfiguration = SupervisorConfiguration()) throws(SupervisorError) {
        do {
            try configuration.validate()
        } catch {
            throw .configuration(error)
        }
        self.configuration = configuration
        let directory: String
        if let configured = configuration.runtimeDirectory {
            directory = configured
        } else {
            do {
                directory = try RuntimeDirectory.makeUnique()
            } catch {
                throw .setup(.runtimeDirectory(error))
            }
        }
        runtimeDirectory = directory
        logEvents = BoundedLog(limit: configuration.logLimit)
        let (stream, continuation) = AsyncStream<Event>.makeStream(bufferingPolicy: .unbounded)
        events = continuation
        let (adminStream, adminContinuation) = AsyncStream<SocketEvent>.makeStream(bufferingPolicy: .unbounded)
        adminEvents = adminContinuation
        let exeDir = configuration.executableDirectory ?? Programs.ownDirectory()
        launcher = "\(exeDir)/mempressure-exec"
        guard access(launcher, X_OK) == 0 else {
            if configuration.runtimeDirectory == nil { rmdir(directory) }
            throw .launcherMissing(path: launcher)
        }
        // The directory, locked: a live supervisor's is refused; a dead one's is cleaned up.
        let (lock, made, previous) = try Self.acquire(directory)
        self.lock = lock
        let madeDirectory = made || configuration.runtimeDirectory == nil
        func abandon(_ guardian: Guardian? = nil) {
            guardian?.dismiss()
            lock.release()
            if madeDirectory { rmdir(directory) }
        }
        recovered = previous.map { Recovery.cleanUp(after: $0, lock: lock) } ?? []
        let guardian: Guardian
        do {
            guardian = try Guardian.start(executable: "\(exeDir)/mempressure-guard", directoryFD: lock.directoryFD)
        } catch {
            abandon()
            throw .setup(error)
        }
        self.guardian = guardian
        if configuration.runtimeDirectory == nil { guardian.ownsDirectory(directory) }
        do {
            output = try AppOutput(directoryFD: lock.directoryFD)
        } catch {
            abandon(guardian)
            throw .setup(.system(error))
        }
        var record = RunRecord(pid: getpid(), startTicks: Self.startTicks(of: getpid()))
        record.guardian = .init(name: "mempressure-guard", pid: guardian.handle.pid, startTicks: Self.startTicks(of: guardian.handle.pid))
        let wantsCgroups: Bool
        switch configuration.containment {
        case .processGroup: wantsCgroups = false
        case .cgroup: wantsCgroups = true
        case .automatic:
            wantsCgroups = configuration.budgetBytes != nil || configuration.suspendMethod == .freezer
                || Self.canContainInCgroups(cgroupRoot: configuration.cgroupRoot)
        }
        var deviceGroups: DeviceCgroups?
        if wantsCgroups {
            // The shape VMTracker recognises (`SupervisedAppCgroup`): top and vm show each app as one.
            let name = SupervisedAppCgroup.deviceGroupName(supervisorPID: getpid(), random: UInt32.random(in: 0...UInt32.max))
            // Recorded and told to the guardian before they exist: a death at any point after
            // leaves nothing unwatched.
            let planned = DeviceCgroups.plan(root: configuration.cgroupRoot, name: name, freezer: configuration.suspendMethod == .freezer)
            record.groups = planned.map(RunRecord.Group.init)
            for group in planned { guardian.watch(group) }
        }
        do {
            try lock.write(record)
        } catch {
            abandon(guardian)
            throw .setup(.system(error))
        }
        if let name = record.groups.first.map({ String($0.relativePath.dropFirst()) }) {
            do {
                deviceGroups = try DeviceCgroups(
                    root: configuration.cgroupRoot, name: name, budgetBytes: configuration.budgetBytes, freezer: configuration.suspendMethod == .freezer)
            } catch {
                abandon(guardian)
                throw .cgroup(error)
            }
        } else if wantsCgroups {
            abandon(guardian)
            throw .cgroup(.noController("memory or freezer controller, nor cgroup v2,", path: configuration.cgroupRoot, consequence: "apps cannot be cgroups"))
        }
        cgroups = deviceGroups
        runRecord = record
        do {
            socket = try ControlSocket(directory: directory) { event in continuation.yield(.socket(event)) }
        } catch {
            _ = deviceGroups?.removeAll()  // just made, empty: nothing in them to report
            abandon(guardian)
            throw .setup(error)
        }
        if configuration.pressure != nil || configuration.policies.contains(where: \.watchesPressure) {
            var pc = configuration.pressure ?? PressureConfiguration()
            // The device's budget is what pressure is judged against; without one, the machine's.
            if pc.cgroup == nil, configuration.budgetBytes != nil { pc.cgroup = cgroups?.memoryGroup }
            let monitor = PressureMonitor(configuration: pc)
            pressureMonitor = monitor
            // Which sources are in use: the log's first lines (before anyone can subscribe).
            for s in monitor.sources { logEvents.append(SupervisorEvent(t: 0, .pressureSource(s))) }
        } else {
            pressureMonitor = nil
        }
        memoryReader = MemoryStatusReader(cgroup: cgroups?.memoryGroup, procRoot: configuration.pressure?.procRoot ?? "/proc")
        let monitor = pressureMonitor
        for line in recovered { logEvents.append(SupervisorEvent(t: 0, .recovered(line))) }
        Task { await self.startLoops(stream, adminStream, monitor) }
    }

    /// `RuntimeLock.acquire`, as a supervisor's error.
    private static func acquire(_ directory: String) throws(SupervisorError) -> (RuntimeLock, Bool, RunRecord?) {
        do {
            let (lock, made, previous) = try RuntimeLock.acquire(directory)
            return (lock, made, previous)
        } catch {
            throw .setup(error)
        }
    }

    /// A process's start time (field 22 of /proc/PID/stat), which with its PID names it.
    static func startTicks(of pid: Int32) -> UInt64? {
        do {
            let bytes = try ProcFS.readBytes("/proc/\(pid)/stat")
            return try bytes.withUnsafeBytes { (b) throws(ProcError) in try ProcessStat.parse(b, pid: pid) }.startTicks
        } catch {
            return nil
        }
    }

    private func startLoops(_ stream: AsyncStream<Event>, _ adminStream: AsyncStream<SocketEvent>, _ monitor: PressureMonitor?) {
        // The event streams' loops (the control and admin sockets' events among them) are not
        // cancelled at shutdown: they end when it finishes their streams, so that a connection's
        // last event (its reader saw it closed) is handled however late it comes.
        Task { [weak self] in
            for await event in stream {
                guard let self else { return }
                await self.handle(event)
            }
        }
        Task { [weak self] in
            for await event in adminStream {
                guard let self else { return }
                await self.handleAdmin(event)
            }
        }
        if configuration.sampleInterval > 0 {
            let interval = configuration.sampleInterval
            loopTasks.append(Task { [weak self] in
                while !Task.isCancelled {
                    do { try await Task.sleep(for: Seconds.duration(interval)) } catch { return }
                    await self?.sampleAll()
                }
            })
        }
        if let monitor {
            let events = self.events
            loopTasks.append(Task {
                for await e in monitor.events() { events.yield(.pressure(e)) }
            })
            loopTasks.append(Task { [weak self] in
                for await status in monitor.sourceChanges() {
                    await self?.recordSourceChange(status)
                }
            })
        }
        guard phase == .running else { return }
        for policy in configuration.policies {
            policyTasks.append(Task { await policy.run(self as any SupervisedDevice) })
        }
    }

    private func recordSourceChange(_ status: PressureSourceStatus) {
        record(SupervisorEvent(t: now(), .pressureSourceChanged(status)))
    }

    /// Seconds since the supervisor started (the log's clock).
    public func now() -> Double { monotonicSeconds() - start }

    /// The socket apps connect to.
    public var socketPath: String { socket.path }

    /// Which pressure sources are in use (empty unless pressure is watched).
    public var pressureSources: [PressureSourceStatus] { pressureMonitor?.sources ?? [] }

    /// Whether shutdown (or an abort) has begun: no command starts any more.
    var isStopping: Bool { phase != .running }

    // MARK: Apps

    public func register(_ spec: AppSpec) throws(SupervisorError) {
        do {
            try spec.validate()
        } catch {
            if case .invalidAppName(let name) = error { throw .invalidAppName(name) }
            throw .invalidCommand(error)
        }
        guard records[spec.name] == nil else { throw .alreadyRegistered(spec.name) }
        if records.count >= configuration.maximumApps {
            // Bounded: the app not running that has been idle longest makes room.
            let idle = records.values.filter { $0.state == .notRunning && !locks.isHeld($0.name) }
            guard let oldest = idle.min(by: { ($0.stateSince, $0.name) < ($1.stateSince, $1.name) }) else {
                throw .tooManyApps(limit: configuration.maximumApps)
            }
            forgetRecord(oldest.name)
            record(SupervisorEvent(t: now(), app: oldest.name, .forgotten(.madeRoom(for: spec.name, limit: configuration.maximumApps))))
        }
        records[spec.name] = AppRecord(spec: spec, timelineLimit: configuration.timelineLimit)
        order.append(spec.name)
        metrics.registered(spec.name, at: now())
    }

    /// Replaces what a known app that is not running runs (its command, environment, whether it
    /// is a client); the change is logged. A running app keeps its command (its launch is
    /// refused: it is already running).
    func replaceSpec(_ spec: AppSpec) throws(SupervisorError) {
        do {
            try spec.validate()
        } catch {
            throw .invalidCommand(error)
        }
        let a = try app(spec.name)
        guard a.spec != spec else { return }
        guard a.state == .notRunning else { throw .wrongState(app: spec.name, state: a.state, operation: .lifecycle(.launch)) }
        record(.commandChanged(to: spec.command, from: a.spec.command), a)
        a.spec = spec
    }

    /// Forgets an app that is not running and that no command is acting on: its record, its
    /// accounting, its timeline and its metrics go; its name can be registered anew.
    public func forget(_ name: String) throws(SupervisorError) {
        let a = try app(name)
        guard a.state == .notRunning, a.process == nil, !locks.isHeld(name) else {
            throw .wrongState(app: name, state: a.state, operation: .forget)
        }
        forgetRecord(name)
        record(SupervisorEvent(t: now(), app: name, .forgotten(.asked)))
    }

    private func forgetRecord(_ name: String) {
        records[name] = nil
        order.removeAll { $0 == name }
        locks.forget(name)
        metrics.forget(name)
        // Waiters on a forgotten app would never be resumed by its events: they end now.
        var i = 0
        while i < waiters.count {
            if waiters[i].app == name {
                let w = waiters.remove(at: i)
                w.timer?.cancel()
                w.continuation.resume(returning: false)
            } else {
                i += 1
            }
        }
    }

    /// Whether an app of this name is registered.
    package func isRegistered(_ name: String) -> Bool { records[name] != nil }

    func app(_ name: String) throws(SupervisorError) -> AppRecord {
        guard let a = records[name] else { throw .noSuchApp(name) }
        return a
    }

    public func state(of name: String) throws(SupervisorError) -> LifecycleState { try app(name).state }

    public func pid(of name: String) throws(SupervisorError) -> Int32? { try app(name).process?.pid }

    /// Reports of every app, in registration order (timelines included: for a cheap view, `apps()`).
    public func reports() -> [AppReport] {
        order.compactMap { records[$0] }.map { a in
            var accounting: [String: StateAccounting] = [:]
            for (state, acc) in a.accounting { accounting[state.rawValue] = acc }
            // The state it is in now, up to now.
            if let sample = a.process.flatMap({ UsageSample.read(pid: $0.pid) }), let last = a.lastSample {
                var acc = accounting[a.state.rawValue] ?? StateAccounting()
                Self.add(&acc, from: last, to: sample)
                accounting[a.state.rawValue] = acc
            }
            return AppReport(name: a.name, pid: a.pid, state: a.state, launches: a.generation, accounting: accounting, footprint: a.timeline.all)
        }
    }

    // MARK: Events

    /// Handles one event. It must not wait for other events (the loop delivers them one at a
    /// time): anything that waits runs in a task of its own.
    private func handle(_ event: Event) {
        // Once shutdown has stopped the other loops, only the connections' events are handled (a
        // late exit or timer would act on a lock, cgroups or a guardian already released).
        if onlySocketEvents {
            guard case .socket = event else { return }
        }
        switch event {
        case .socket(let e):
            handleChannel(e)
        case .exited(let name, let generation, let status, let ending):
            exited(name, generation, status, ending)
        case .pressure(let e):
            record(SupervisorEvent(t: now(), .pressureLevel(PressureLevelChange(level: e.level, source: e.source, reading: e.detail))))
        case .timer(let name, let generation, let period, let kind):
            Task { await self.timer(name, generation, period, kind) }
        }
    }

    /// The app's run ended — its main process exited, and every other process it started was
    /// ended (`AppProcess.waitForEnd`): log it (an exit, a kill the supervisor made, or a crash),
    /// close its channel, leave it not running, remove its cgroups.
    private func exited(_ name: String, _ generation: Int, _ status: ExitStatus, _ ending: AppEnding) {
        guard let a = records[name], a.generation == generation, let process = a.process else { return }
        account(a)
        a.exitStatus = status
        let expected = a.terminating
        let clean = status.isCleanExit || (expected && (status == .signaled(SIGTERM) || status == .signaled(SIGKILL)))
        let tail = a.output.map(output.finish)
        a.output = nil
        let ended: SupervisorEvent.Payload =
            clean
            ? .exit(status, killReason: status == .signaled(SIGKILL) ? a.killReason : nil)
            : .crash(status, lastOutput: tail.flatMap { $0.isEmpty ? nil : $0 })
        record(SupervisorEvent(t: now(), app: name, pid: process.pid, ended))
        // The kill and the end of the run may both have seen the same dying helper: the larger
        // count is how many there were.
        let others = max(a.othersKilled, ending.othersEnded)
        if others > 0 {
            record(.othersEnded(count: others), a)
        }
        if let failure = ending.failure {
            record(.error(.othersRunOn(cause: failure)), a)
            leftovers.append("\(name): \(failure)")
        }
        if let fd = a.connection {
            ControlSocket.disconnect(fd)
            a.connection = nil
        }
        a.process = nil
        a.hello = false
        a.tasks = [:]
        a.latest = nil
        a.backgroundEnteredAt = nil  // its stay in the background ended with it
        transition(a, to: .notRunning)
        // An app not running keeps only the end of its timeline: what the records of up to
        // `maximumApps` apps hold stays bounded.
        a.timeline.trim(to: configuration.endedTimelineLimit)
        switch process.members {
        case .cgroup(let group):
            // cgroup v1 counts the kernel's OOM kills of the app's processes in its own group:
            // kept before the group goes (`kernelOOMKills()`).
            if let memory = group.memory, cgroups?.isV2 == false {
                if let count = DeviceCgroups.oomKills(memory, isV2: false) {
                    endedAppOOMKills &+= count &- min(count, a.oomKillsAtLaunch ?? 0)
                } else {
                    kernelOOMKillsUnknown = true
                }
            }
            for failure in group.remove() {
                record(.error(.cgroupRemoval(cause: "\(failure)")), a)
                leftovers.append("\(name): \(failure)")
            }
        case .processGroup:
            guardian.forget(processGroup: process.pid)
            runRecord.apps.removeAll { $0.pid == process.pid }
            saveRunRecord()
        }
        // A region registry file the app could not withdraw itself (killed, or ended by SIGTERM).
        if let ticks = process.startTicks { RegionRegistry().withdrawExited(pid: process.pid, startTicks: ticks) }
        checkWaiters(name)
    }

    /// Writes the run record (the apps without a cgroup changed); a failure is logged.
    func saveRunRecord() {
        do {
            try lock.write(runRecord)
        } catch {
            record(SupervisorEvent(t: now(), .error(.runRecord(path: "\(lock.directory)/\(RuntimeLock.fileName)", cause: "\(error)"))))
        }
    }
}
