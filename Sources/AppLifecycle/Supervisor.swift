import Glibc
import LinuxSystem
import Pressure
import Synchronization
import VMTracker

/// How apps are suspended.
public enum SuspendMethod: String, Sendable, Hashable, Codable {
    /// SIGSTOP (through the pidfd); SIGCONT to resume.
    case sigstop
    /// The cgroup freezer (v1 freezer.state, v2 cgroup.freeze): the app cannot tell.
    case freezer
}

/// An app the supervisor knows: what to run.
public struct AppSpec: Sendable, Hashable, Codable {
    public var name: String
    public var command: [String]
    public var environment: [String: String]?
    /// Whether the program links the client library (and so connects, gets callbacks and
    /// reports ready). False for any other program: it is supervised without callbacks.
    public var client: Bool?

    public init(name: String, command: [String], environment: [String: String]? = nil, client: Bool? = nil) {
        self.name = name
        self.command = command
        self.environment = environment
        self.client = client
    }
}

public struct SupervisorConfiguration: Sendable {
    /// Where the control socket lives (a directory of this user, mode 0700). Default: a new
    /// directory under $XDG_RUNTIME_DIR or /tmp.
    public var runtimeDirectory: String?
    public var suspendMethod: SuspendMethod = .sigstop
    /// The device's RAM: a memory cgroup with this limit holds every app.
    public var budgetBytes: Int?
    /// How long a background task may run after the app entered the background.
    public var backgroundTaskLimit: Double = 30
    /// How long before the limit the expiration handler is asked to run.
    public var expirationWarning: Double = 5
    /// How long an app may take to acknowledge a callback.
    public var callbackTimeout: Double = 5
    /// How long didFinishLaunching may take (building state is slower than other callbacks).
    public var launchTimeout: Double = 30
    /// How long a client app may take to connect after it was started.
    public var connectTimeout: Double = 10
    /// How long a terminating app has between SIGTERM and SIGKILL.
    public var terminateGrace: Double = 3
    /// How often each app's footprint is sampled for its timeline (0: only at transitions).
    public var sampleInterval: Double = 1
    public var cgroupRoot = "/sys/fs/cgroup"
    /// Where mempressure-exec is (default: next to this executable).
    public var executableDirectory: String?
    /// Watch memory pressure (on the device cgroup when there is a budget, else the machine)
    /// and send running apps memory warnings when it reaches `warning`.
    public var warnOnPressure = false
    public var pressure: PressureConfiguration?

    public init() {}
}

/// One line of the event log.
public struct SupervisorEvent: Sendable, Hashable, Codable {
    /// Seconds since the supervisor started.
    public var t: Double
    public var app: String?
    public var pid: Int32?
    /// state, callback, ready, launch, exit, crash, warning, notification, task, expire,
    /// crash-report, error, impostor, protocol, pressure.
    public var kind: String
    public var from: String?
    public var to: String?
    public var name: String?
    public var detail: String?
    public var stack: [String]?

    public init(t: Double, app: String? = nil, pid: Int32? = nil, kind: String, from: String? = nil, to: String? = nil, name: String? = nil, detail: String? = nil, stack: [String]? = nil) {
        self.t = t
        self.app = app
        self.pid = pid
        self.kind = kind
        self.from = from
        self.to = to
        self.name = name
        self.detail = detail
        self.stack = stack
    }
}

/// Resource use of an app in one lifecycle state.
public struct StateAccounting: Sendable, Hashable, Codable {
    public var seconds: Double = 0
    public var cpuSeconds: Double = 0
    public var minorFaults: UInt64 = 0
    public var majorFaults: UInt64 = 0
    /// Bytes read from and written to storage (/proc/PID/io read_bytes, write_bytes).
    public var ioReadBytes: UInt64 = 0
    public var ioWriteBytes: UInt64 = 0
}

/// One point of an app's footprint timeline.
public struct FootprintSample: Sendable, Hashable, Codable {
    public var t: Double
    public var state: LifecycleState
    public var footprintBytes: UInt64
    public var residentBytes: UInt64
    public var dirtyBytes: UInt64
    public var purgeableBytes: UInt64
    public var swappedBytes: UInt64
}

/// An app's accounting: per state (keyed by state name), and its footprint timeline.
public struct AppReport: Sendable, Hashable, Codable {
    public var name: String
    public var pid: Int32?
    public var state: LifecycleState
    public var launches: Int
    public var accounting: [String: StateAccounting]
    public var footprint: [FootprintSample]
}

/// Errors a supervisor command reports (the supervisor itself keeps running).
public struct SupervisorError: Error, Sendable, Hashable, CustomStringConvertible {
    public var reason: String
    public init(_ reason: String) { self.reason = reason }
    public var description: String { reason }
}

/// Supervises real app processes through the iOS lifecycle.
///
/// Transitions (and the callbacks the app gets, in order):
///
///     launch      notRunning -> inactive                  didFinishLaunching
///     activate    inactive -> active                      didBecomeActive
///                 backgroundRunning -> inactive -> active willEnterForeground, didBecomeActive
///                 suspended -> backgroundRunning (resumed; coalesced notifications delivered)
///                           -> inactive -> active         willEnterForeground, didBecomeActive
///     deactivate  active -> inactive                      willResignActive
///     background  active -> inactive -> backgroundRunning willResignActive, didEnterBackground
///                 then, once didEnterBackground returned and no background task is left,
///                 -> suspended (SIGSTOP or the freezer; no callback)
///     terminate   running -> notRunning                   willTerminate, then SIGTERM (SIGKILL
///                                                         after the grace period)
///                 suspended -> notRunning                 none: killed without notice
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
    private let socket: ControlSocket
    var admin: ControlSocket?
    let adminEvents: AsyncStream<SocketEvent>.Continuation
    private let cgroups: DeviceCgroups?
    private let launcher: String
    private let events: AsyncStream<Event>.Continuation
    private var eventTask: Task<Void, Never>?
    private var samplerTask: Task<Void, Never>?
    private var pressureMonitor: PressureMonitor?
    private var apps: [String: AppRecord] = [:]
    private var order: [String] = []
    private var connections: [Int32: String] = [:]  // fd -> app
    private var logEvents: [SupervisorEvent] = []
    private var logSubscribers: [AsyncStream<SupervisorEvent>.Continuation] = []
    private var waiters: [Waiter] = []
    private var nextWaiter = 0
    private var lockedApps: Set<String> = []
    private var lockQueues: [String: [CheckedContinuation<Void, Never>]] = [:]
    /// Admin connections: their requests are answered one at a time, in order, and the
    /// descriptor is closed only after the last answer was written.
    var adminConnections: [Int32: AdminConnection] = [:]
    private var drainWaiters: [CheckedContinuation<Void, Never>] = []
    private var shuttingDown = false
    var isShuttingDown: Bool { shuttingDown }

    struct AdminConnection {
        var pending: [String] = []
        var busy = false
        var closed = false
    }

    enum Event: Sendable {
        case socket(SocketEvent)
        case exited(app: String, generation: Int, status: ExitStatus)
        case pressure(PressureEvent)
        case timer(app: String, generation: Int, period: Int, kind: TimerKind)
    }

    enum TimerKind: Sendable {
        case expire
        case backgroundLimit
    }

    struct Task_ {
        var tid: Int32
        var name: String
    }

    final class AppRecord {
        var spec: AppSpec
        var state: LifecycleState = .notRunning
        var generation = 0
        var process: AppProcess?
        var token = ""
        var connection: Int32?
        var hello = false
        var acks: [LifecycleCallback: Int] = [:]
        var readyCount = 0
        var tasks: [Int: Task_] = [:]
        var expiredTasks: Set<Int> = []
        /// Counts the app's stays in the background: a timer or a wait belongs to one of them.
        var backgroundPeriod = 0
        var queued: [(kind: String, value: String, count: Int)] = []
        var notifiedCount = 0
        var stack: [String] = []
        var stackComplete = false
        var exitStatus: ExitStatus?
        /// Control connections closed for a protocol error, a flood or a bad hello.
        var channelFailures = 0
        var terminating = false
        var backgroundEnteredAt: Double?
        var accounting: [LifecycleState: StateAccounting] = [:]
        var lastSample: UsageSample?
        var stateSince = 0.0
        var timeline: [FootprintSample] = []
        var outputPath = ""
        init(spec: AppSpec) { self.spec = spec }
        var isClient: Bool { spec.client ?? true }
    }

    struct Waiter {
        var id: Int
        var app: String
        var condition: @Sendable (AppSnapshot) -> Bool
        var continuation: CheckedContinuation<Bool, Never>
    }

    /// What waiters look at: a copy of the record's relevant fields.
    struct AppSnapshot: Sendable {
        var state: LifecycleState
        var generation: Int
        var hello: Bool
        var acks: [LifecycleCallback: Int]
        var readyCount: Int
        var tasks: Int
        var alive: Bool
        var notifiedCount: Int
        var stackComplete: Bool
        var channelFailures: Int
        var backgroundPeriod: Int
    }

    public init(configuration: SupervisorConfiguration = SupervisorConfiguration()) throws {
        self.configuration = configuration
        let directory = configuration.runtimeDirectory ?? Self.defaultRuntimeDirectory()
        runtimeDirectory = directory
        let (stream, continuation) = AsyncStream<Event>.makeStream(bufferingPolicy: .unbounded)
        events = continuation
        let (adminStream, adminContinuation) = AsyncStream<SocketEvent>.makeStream(bufferingPolicy: .unbounded)
        adminEvents = adminContinuation
        socket = try ControlSocket(directory: directory) { event in continuation.yield(.socket(event)) }
        let exeDir = configuration.executableDirectory ?? Self.ownDirectory()
        launcher = "\(exeDir)/mempressure-exec"
        guard access(launcher, X_OK) == 0 else {
            socket.close()
            rmdir(directory)
            throw SupervisorError("mempressure-exec not found at \(launcher) (build the package; it is started next to mempressure)")
        }
        if configuration.budgetBytes != nil || configuration.suspendMethod == .freezer {
            do {
                cgroups = try DeviceCgroups(
                    root: configuration.cgroupRoot, name: "mempressure-\(getpid())-\(UInt32.random(in: 0...UInt32.max))",
                    budgetBytes: configuration.budgetBytes, freezer: configuration.suspendMethod == .freezer)
            } catch {
                socket.close()
                rmdir(directory)
                throw SupervisorError("\(error)")
            }
        } else {
            cgroups = nil
        }
        eventTask = nil
        Task { await self.startLoops(stream, adminStream) }
    }

    private func startLoops(_ stream: AsyncStream<Event>, _ adminStream: AsyncStream<SocketEvent>) {
        eventTask = Task { [weak self] in
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
            samplerTask = Task { [weak self] in
                while !Task.isCancelled {
                    do { try await Task.sleep(for: .seconds(interval)) } catch { return }
                    await self?.sampleAll()
                }
            }
        }
        if configuration.warnOnPressure || configuration.pressure != nil {
            var pc = configuration.pressure ?? PressureConfiguration()
            if pc.cgroup == nil { pc.cgroup = cgroups?.memoryGroup }
            let monitor = PressureMonitor(configuration: pc)
            pressureMonitor = monitor
            for s in monitor.sources { record(SupervisorEvent(t: now(), kind: "pressure", name: s.name, detail: s.description)) }
            let events = self.events
            Task {
                for await e in monitor.events() { events.yield(.pressure(e)) }
            }
            Task { [weak self] in
                for await status in monitor.sourceChanges() {
                    await self?.record(SupervisorEvent(t: self?.now() ?? 0, kind: "pressure", name: status.name, detail: status.detail))
                }
            }
        }
    }

    static func defaultRuntimeDirectory() -> String {
        let base = getenv("XDG_RUNTIME_DIR").map { String(cString: $0) } ?? "/tmp"
        return "\(base)/mempressure-\(getuid())-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
    }

    public static func ownDirectory() -> String {
        var buffer = [CChar](repeating: 0, count: 4096)
        let n = readlink("/proc/self/exe", &buffer, buffer.count - 1)
        let exe = n > 0 ? String(decoding: buffer[0..<n].map { UInt8(bitPattern: $0) }, as: UTF8.self) : "."
        var dir = Substring(exe[..<(exe.lastIndex(of: "/") ?? exe.endIndex)])
        if dir.hasSuffix(".xctest") { dir = dir[..<(dir.lastIndex(of: "/") ?? dir.endIndex)] }
        return String(dir)
    }

    func now() -> Double { monotonicSeconds() - start }

    var orderedNames: [String] { order }

    func knownState(_ name: String) -> LifecycleState? { apps[name]?.state }

    func knownPID(_ name: String) -> Int32? { apps[name]?.process?.pid }

    /// The socket apps connect to.
    public var socketPath: String { socket.path }

    /// Which pressure sources are in use (empty unless pressure is watched).
    public var pressureSources: [PressureSourceStatus] { pressureMonitor?.sources ?? [] }

    // MARK: Log

    public var log: [SupervisorEvent] { logEvents }

    /// Every log event from now on.
    public func logStream() -> AsyncStream<SupervisorEvent> {
        let (stream, continuation) = AsyncStream<SupervisorEvent>.makeStream(bufferingPolicy: .unbounded)
        logSubscribers.append(continuation)
        return stream
    }

    func record(_ e: SupervisorEvent) {
        logEvents.append(e)
        for s in logSubscribers { s.yield(e) }
    }

    // MARK: Apps

    public func register(_ spec: AppSpec) throws {
        guard ControlProtocol.isToken(Substring(spec.name)) else {
            throw SupervisorError("app name '\(spec.name)' must be letters, digits, '.', '-' or '_'")
        }
        guard apps[spec.name] == nil else { throw SupervisorError("an app named \(spec.name) is already registered") }
        apps[spec.name] = AppRecord(spec: spec)
        order.append(spec.name)
    }

    private func app(_ name: String) throws -> AppRecord {
        guard let a = apps[name] else { throw SupervisorError("no app named \(name)") }
        return a
    }

    public func state(of name: String) throws -> LifecycleState { try app(name).state }

    public func pid(of name: String) throws -> Int32? { try app(name).process?.pid }

    /// Reports of every app, in registration order.
    public func reports() -> [AppReport] {
        order.compactMap { apps[$0] }.map { a in
            var accounting: [String: StateAccounting] = [:]
            for (state, acc) in a.accounting { accounting[state.rawValue] = acc }
            // The state it is in now, up to now.
            if let sample = a.process.flatMap({ UsageSample.read(pid: $0.pid) }), let last = a.lastSample {
                var acc = accounting[a.state.rawValue] ?? StateAccounting()
                Self.add(&acc, from: last, to: sample)
                accounting[a.state.rawValue] = acc
            }
            return AppReport(name: a.spec.name, pid: a.process?.pid, state: a.state, launches: a.generation, accounting: accounting, footprint: a.timeline)
        }
    }

    // MARK: Commands
    //
    // Commands on one app run one at a time (a per-app lock): the public entry points take it,
    // the internal steps they are made of do not. Every step that awaits re-checks afterwards
    // that the same run of the app is still alive before changing its state: an app can exit or
    // crash during any callback.

    /// Starts the app; returns once it is inactive and (for a client) has run didFinishLaunching.
    public func launch(_ name: String) async throws {
        let a = try app(name)
        await lock(name)
        defer { unlock(name) }
        try await launchApp(a)
    }

    /// Brings the app to the foreground (launching it first if it is not running).
    public func activate(_ name: String) async throws {
        let a = try app(name)
        await lock(name)
        defer { unlock(name) }
        try await activateApp(a)
    }

    /// Interrupts an active app: active -> inactive.
    public func deactivate(_ name: String) async throws {
        let a = try app(name)
        await lock(name)
        defer { unlock(name) }
        guard a.state == .active else { throw SupervisorError("\(name) is not active (\(a.state.rawValue))") }
        let generation = a.generation
        try await deliver(.willResignActive, to: a)
        try ensureAlive(a, generation, during: "willResignActive")
        transition(a, to: .inactive)
    }

    /// Sends the app to the background; returns once it is suspended, or not running (it
    /// overran a background task, exited or crashed meanwhile: background then does not throw),
    /// or back in the foreground (another command activated it while its tasks ran).
    ///
    /// The wait for background tasks does not hold the app's lock: the app can be activated or
    /// terminated meanwhile.
    public func background(_ name: String) async throws {
        let a = try app(name)
        await lock(name)
        let period: Int?
        do {
            period = try await enterBackground(a)
        } catch {
            unlock(name)
            throw error
        }
        unlock(name)
        guard let period else { return }
        let generation = a.generation
        // Wait for the background tasks to end, or for the limit to take the app down.
        _ = await waitFor(name, timeout: configuration.backgroundTaskLimit + configuration.terminateGrace + 5) {
            $0.tasks == 0 || !$0.alive || $0.generation != generation || $0.backgroundPeriod != period
        }
        await lock(name)
        defer { unlock(name) }
        guard a.generation == generation, a.backgroundPeriod == period, a.state == .backgroundRunning, a.process != nil else { return }
        try await suspend(a)
        guard a.generation == generation, a.process != nil, a.state == .backgroundRunning else { return }
        transition(a, to: .suspended)
    }

    /// Terminates the app: running apps get willTerminate and SIGTERM (SIGKILL after the grace
    /// period); suspended apps are killed without notice.
    public func terminate(_ name: String) async throws {
        let a = try app(name)
        await lock(name)
        defer { unlock(name) }
        try await terminateApp(a)
    }

    /// Terminates (if running) and launches the app again.
    public func relaunch(_ name: String) async throws {
        let a = try app(name)
        await lock(name)
        defer { unlock(name) }
        try await terminateApp(a)
        try await launchApp(a)
    }

    private func launchApp(_ a: AppRecord) async throws {
        let name = a.spec.name
        guard a.state == .notRunning else { throw SupervisorError("\(name) is already running (\(a.state.rawValue))") }
        a.generation += 1
        let generation = a.generation
        a.token = Self.makeToken()
        a.hello = false
        a.connection = nil
        a.acks = [:]
        a.readyCount = 0
        a.tasks = [:]
        a.expiredTasks = []
        a.queued = []
        a.exitStatus = nil
        a.terminating = false
        a.outputPath = "\(runtimeDirectory)/\(name)-\(generation).log"
        var groups: [String] = []
        if let cgroups {
            do {
                groups = try cgroups.groups(forApp: name)
            } catch {
                record(SupervisorEvent(t: now(), app: name, kind: "error", detail: "launch: \(error)"))
                throw SupervisorError("cannot launch \(name): \(error)")
            }
        }
        var env = a.spec.environment ?? [:]
        env["MEMPRESSURE_SOCKET"] = socket.path
        env["MEMPRESSURE_APP"] = name
        env["MEMPRESSURE_TOKEN"] = a.token
        let process: AppProcess
        do {
            process = try AppProcess.spawn(launcher: launcher, cgroups: groups, command: a.spec.command, environment: env, outputPath: a.outputPath)
        } catch {
            cgroups?.removeApp(name)
            record(SupervisorEvent(t: now(), app: name, kind: "error", detail: "launch: \(error)"))
            throw SupervisorError("\(error)")
        }
        a.process = process
        record(SupervisorEvent(t: now(), app: name, pid: process.pid, kind: "launch", detail: a.spec.command.joined(separator: " ")))
        a.lastSample = UsageSample.read(pid: process.pid)
        a.stateSince = monotonicSeconds()
        transition(a, to: .inactive)
        let events = self.events
        let reaper: @Sendable () -> Void = {
            let status = process.waitForExit()
            events.yield(.exited(app: name, generation: generation, status: status))
        }
        do {
            try startThread(reaper)
        } catch {
            // Nothing would reap the app or report its exit: it must not run on. Killed and
            // reaped here (SIGKILL ends it at once), it exits like an app that crashed at launch.
            record(SupervisorEvent(t: now(), app: name, pid: process.pid, kind: "error", detail: "launch: cannot start the thread that waits for the app: \(error)"))
            process.signal(SIGKILL)
            events.yield(.exited(app: name, generation: generation, status: process.waitForExit()))
            throw SupervisorError("cannot launch \(name): \(error)")
        }
        guard a.isClient else { return }
        let failures = a.channelFailures
        let connected = await waitFor(name, timeout: configuration.connectTimeout) {
            $0.hello || !$0.alive || $0.generation != generation || $0.channelFailures > failures
        }
        try ensureAlive(a, generation, during: "launch")
        guard connected, a.hello else {
            let why = a.channelFailures > failures ? "its control channel failed" : "it did not connect within \(configuration.connectTimeout) s"
            record(SupervisorEvent(t: now(), app: name, pid: process.pid, kind: "error", detail: "\(why): supervised without callbacks"))
            return
        }
        try await deliver(.didFinishLaunching, to: a)
        try ensureAlive(a, generation, during: "didFinishLaunching")
    }

    private func activateApp(_ a: AppRecord) async throws {
        let name = a.spec.name
        if a.state == .notRunning {
            try await launchApp(a)
            guard a.state == .inactive else { throw SupervisorError("\(name) is \(a.state.rawValue) after its launch, not inactive") }
        }
        let generation = a.generation
        if a.state == .suspended {
            a.backgroundPeriod += 1  // leaving the background: its timers no longer apply
            try await resume(a)
            try ensureAlive(a, generation, during: "resume")
            transition(a, to: .backgroundRunning)
            await deliverQueuedNotifications(a)
            try ensureAlive(a, generation, during: "the delivery of queued notifications")
        }
        switch a.state {
        case .notRunning, .suspended:
            throw SupervisorError("\(name) is \(a.state.rawValue): cannot activate it")
        case .active:
            return
        case .inactive:
            break
        case .backgroundRunning:
            a.backgroundEnteredAt = nil
            a.backgroundPeriod += 1
            try await deliver(.willEnterForeground, to: a)
            try ensureAlive(a, generation, during: "willEnterForeground")
            transition(a, to: .inactive)
        }
        try await deliver(.didBecomeActive, to: a)
        try ensureAlive(a, generation, during: "didBecomeActive")
        transition(a, to: .active)
    }

    /// The foreground-to-background steps; returns the background period to wait in, or nil
    /// when there is nothing to wait for (not running, suspended, or it exited meanwhile).
    private func enterBackground(_ a: AppRecord) async throws -> Int? {
        let generation = a.generation
        func gone() -> Bool { a.generation != generation || a.process == nil }
        switch a.state {
        case .notRunning, .suspended:
            return nil
        case .active:
            try await deliver(.willResignActive, to: a)
            if gone() { return nil }
            transition(a, to: .inactive)
            fallthrough
        case .inactive:
            transition(a, to: .backgroundRunning)
            a.backgroundPeriod += 1
            a.expiredTasks = []
            a.backgroundEnteredAt = monotonicSeconds()
            scheduleTaskTimers(a)
            try await deliver(.didEnterBackground, to: a)
            if gone() { return nil }
        case .backgroundRunning:
            break
        }
        return a.state == .backgroundRunning ? a.backgroundPeriod : nil
    }

    private func terminateApp(_ a: AppRecord) async throws {
        let name = a.spec.name
        guard let process = a.process, a.state != .notRunning else { return }
        let generation = a.generation
        a.terminating = true
        if a.state == .suspended {
            process.signal(SIGKILL)
            if configuration.suspendMethod == .freezer {
                do { try cgroups?.thaw(name) } catch { record(SupervisorEvent(t: now(), app: name, kind: "error", detail: "\(error)")) }
            } else {
                process.signal(SIGCONT)
            }
        } else {
            try await deliver(.willTerminate, to: a)
            if a.generation == generation, a.process === process {
                process.signal(SIGTERM)
                let exited = await waitFor(name, timeout: configuration.terminateGrace) { !$0.alive || $0.generation != generation }
                if !exited { process.signal(SIGKILL) }
            }
        }
        let exited = await waitFor(name, timeout: 10) { !$0.alive || $0.generation != generation }
        if !exited { throw SupervisorError("\(name) (pid \(process.pid)) still has not exited 10 s after SIGKILL") }
    }

    private func ensureAlive(_ a: AppRecord, _ generation: Int, during what: String) throws {
        guard a.generation == generation, a.process != nil else {
            throw SupervisorError("\(a.spec.name) exited during \(what): \(a.exitStatus.map(\.description) ?? "?")")
        }
    }

    /// Takes the app's command lock, waiting (in order) behind the command that holds it.
    private func lock(_ name: String) async {
        guard lockedApps.contains(name) else {
            lockedApps.insert(name)
            return
        }
        await withCheckedContinuation { lockQueues[name, default: []].append($0) }
    }

    /// Hands the lock to the next waiting command, or frees it.
    private func unlock(_ name: String) {
        if var queue = lockQueues[name], !queue.isEmpty {
            let next = queue.removeFirst()
            lockQueues[name] = queue.isEmpty ? nil : queue
            next.resume()
        } else {
            lockedApps.remove(name)
        }
    }

    /// Waits until the app reports ready `count` times in its current run.
    public func waitForReady(_ name: String, count: Int = 1, timeout: Double = 60) async throws {
        let a = try app(name)
        let generation = a.generation
        let ok = await waitFor(name, timeout: timeout) { $0.readyCount >= count || !$0.alive || $0.generation != generation }
        guard ok, a.readyCount >= count else { throw SupervisorError("\(name) did not report ready (\(count)) within \(timeout) s") }
    }

    /// Waits until the app is in `state`.
    public func waitForState(_ name: String, _ state: LifecycleState, timeout: Double = 60) async throws {
        let ok = await waitFor(name, timeout: timeout) { $0.state == state }
        guard ok else { throw SupervisorError("\(name) did not reach \(state.rawValue) within \(timeout) s") }
    }

    /// Which apps a memory warning or notification goes to.
    public enum Target: Sendable, Hashable {
        case all
        case app(String)
    }

    /// Sends memory warnings to the running apps among `target`; suspended apps are never sent
    /// anything (and memory warnings are not queued for them).
    public func warn(_ target: Target = .all) async {
        for name in targets(target) {
            guard let a = apps[name] else { continue }
            if a.state == .suspended {
                record(SupervisorEvent(t: now(), app: name, pid: a.process?.pid, kind: "warning", detail: "not sent: suspended"))
                continue
            }
            guard a.state.isRunning else { continue }
            record(SupervisorEvent(t: now(), app: name, pid: a.process?.pid, kind: "warning", detail: "sent"))
            do {
                try await deliver(.didReceiveMemoryWarning, to: a)
            } catch {
                record(SupervisorEvent(t: now(), app: name, kind: "error", detail: "\(error)"))
            }
        }
    }

    /// A system change: delivered now to running apps, queued and coalesced (one per kind,
    /// latest value) for suspended ones.
    public func notify(_ target: Target = .all, kind: String, value: String) async throws {
        guard ControlProtocol.isToken(Substring(kind)) else { throw SupervisorError("notification kind must be a word: '\(kind)'") }
        let value = Self.sanitizedValue(value)
        for name in targets(target) {
            guard let a = apps[name], a.state != .notRunning else { continue }
            if a.state == .suspended {
                if let i = a.queued.firstIndex(where: { $0.kind == kind }) {
                    a.queued[i].value = value
                    a.queued[i].count += 1
                } else {
                    a.queued.append((kind, value, 1))
                }
                record(SupervisorEvent(t: now(), app: name, pid: a.process?.pid, kind: "notification", name: kind, detail: "queued: suspended"))
            } else {
                await sendNotification(a, kind: kind, value: value, count: 1)
            }
        }
    }

    /// The longest notification value sent (UTF-8 bytes); longer ones are cut.
    public static let maximumNotificationValueBytes = 1024

    /// A notification value as it goes on the wire: control characters (line feeds, NUL, ...)
    /// become spaces, and it is cut to `maximumNotificationValueBytes` on a character boundary.
    static func sanitizedValue(_ value: String) -> String {
        var out = ""
        var bytes = 0
        for scalar in value.unicodeScalars {
            let s: Unicode.Scalar = scalar.value < 0x20 || scalar.value == 0x7f || (0x80...0x9f).contains(scalar.value) ? " " : scalar
            let n = String(s).utf8.count
            guard bytes + n <= maximumNotificationValueBytes else { break }
            out.unicodeScalars.append(s)
            bytes += n
        }
        return out
    }

    private func targets(_ target: Target) -> [String] {
        switch target {
        case .all: order
        case .app(let n): [n]
        }
    }

    /// Terminates every app, closes every connection, removes the cgroups and the sockets.
    public func shutdown() async {
        for name in order {
            do { try await terminate(name) } catch { record(SupervisorEvent(t: now(), app: name, kind: "error", detail: "\(error)")) }
        }
        shuttingDown = true
        pressureMonitor?.stop()
        samplerTask?.cancel()
        socket.close()
        admin?.close()
        // Each connection's reader sees the shutdown and reports it closed; its descriptor is
        // closed then (an admin one after its last answer). Wait for that, briefly.
        for fd in connections.keys { ControlSocket.disconnect(fd) }
        for fd in adminConnections.keys { ControlSocket.disconnect(fd) }
        await waitForConnectionsClosed(timeout: 1)
        if !connections.isEmpty || !adminConnections.isEmpty {
            record(SupervisorEvent(t: now(), kind: "error", detail: "\(connections.count + adminConnections.count) connection(s) not closed 1 s after shutdown"))
        }
        adminEvents.finish()
        for failure in cgroups?.removeAll() ?? [] { record(SupervisorEvent(t: now(), kind: "error", detail: failure)) }
        for s in logSubscribers { s.finish() }
        logSubscribers.removeAll()
        events.finish()
        // The apps' output files (crash output is in the log already), then the directory.
        for name in order {
            guard let a = apps[name] else { continue }
            for g in 1...max(1, a.generation) { unlink("\(runtimeDirectory)/\(name)-\(g).log") }
        }
        rmdir(runtimeDirectory)
    }

    private func waitForConnectionsClosed(timeout: Double) async {
        guard !connections.isEmpty || !adminConnections.isEmpty else { return }
        await withCheckedContinuation { continuation in
            drainWaiters.append(continuation)
            Task { [weak self] in
                do { try await Task.sleep(for: .seconds(timeout)) } catch { return }
                await self?.resumeDrainWaiters()
            }
        }
    }

    func connectionClosed() {
        if connections.isEmpty && adminConnections.isEmpty { resumeDrainWaiters() }
    }

    private func resumeDrainWaiters() {
        let w = drainWaiters
        drainWaiters = []
        for c in w { c.resume() }
    }

    // MARK: Internals

    private static func makeToken() -> String {
        (0..<4).map { _ in String(UInt32.random(in: 0...UInt32.max), radix: 16) }.joined()
    }

    private func transition(_ a: AppRecord, to state: LifecycleState) {
        guard a.state != state else { return }
        account(a)
        let from = a.state
        a.state = state
        a.stateSince = monotonicSeconds()
        record(SupervisorEvent(t: now(), app: a.spec.name, pid: a.process?.pid, kind: "state", from: from.rawValue, to: state.rawValue))
        sample(a)
        checkWaiters(a.spec.name)
    }

    /// Adds the usage since the last sample to the state the app was in.
    private func account(_ a: AppRecord) {
        guard a.state != .notRunning else { return }
        let nowTime = monotonicSeconds()
        var acc = a.accounting[a.state] ?? StateAccounting()
        if let process = a.process, let sample = UsageSample.read(pid: process.pid), let last = a.lastSample {
            Self.add(&acc, from: last, to: sample)
            a.lastSample = sample
        } else {
            acc.seconds += nowTime - (a.lastSample?.time ?? nowTime)
            a.lastSample = a.lastSample.map { var s = $0; s.time = nowTime; return s }
        }
        a.accounting[a.state] = acc
    }

    static func add(_ acc: inout StateAccounting, from a: UsageSample, to b: UsageSample) {
        acc.seconds += max(0, b.time - a.time)
        acc.cpuSeconds += max(0, b.cpuSeconds - a.cpuSeconds)
        acc.minorFaults += b.minorFaults &- min(a.minorFaults, b.minorFaults)
        acc.majorFaults += b.majorFaults &- min(a.majorFaults, b.majorFaults)
        acc.ioReadBytes += b.ioReadBytes &- min(a.ioReadBytes, b.ioReadBytes)
        acc.ioWriteBytes += b.ioWriteBytes &- min(a.ioWriteBytes, b.ioWriteBytes)
    }

    private func sampleAll() {
        for name in order { if let a = apps[name], a.process != nil { sample(a) } }
    }

    /// Appends the app's footprint now to its timeline (from smaps_rollup).
    private func sample(_ a: AppRecord) {
        guard let process = a.process else { return }
        do {
            let snapshot = try Snapshotter().process(process.pid, options: .totalsOnly)
            let c = snapshot.totals
            a.timeline.append(FootprintSample(
                t: now(), state: a.state, footprintBytes: c.footprint, residentBytes: c.resident, dirtyBytes: c.dirty,
                purgeableBytes: c.purgeable, swappedBytes: c.swapped))
        } catch {
            // Exited or exiting: the timeline ends with its last sample.
        }
    }

    /// Stops the app (SIGSTOP or the freezer) and waits until the kernel says it is stopped.
    private func suspend(_ a: AppRecord) async throws {
        guard let process = a.process else { return }
        switch configuration.suspendMethod {
        case .sigstop:
            process.signal(SIGSTOP)
        case .freezer:
            do {
                try cgroups?.freeze(a.spec.name)
            } catch {
                record(SupervisorEvent(t: now(), app: a.spec.name, kind: "error", detail: "\(error)"))
                throw SupervisorError("\(error)")
            }
        }
        await waitUntil(a, stopped: true)
    }

    /// Continues the app and waits until it runs again.
    private func resume(_ a: AppRecord) async throws {
        guard let process = a.process else { return }
        switch configuration.suspendMethod {
        case .sigstop:
            process.signal(SIGCONT)
        case .freezer:
            do {
                try cgroups?.thaw(a.spec.name)
            } catch {
                throw SupervisorError("\(error)")
            }
        }
        await waitUntil(a, stopped: false)
    }

    /// Whether the kernel has the app stopped: state T in /proc/PID/stat (SIGSTOP), or its
    /// freezer cgroup FROZEN.
    private func isStopped(_ a: AppRecord) -> Bool? {
        guard let process = a.process else { return nil }
        switch configuration.suspendMethod {
        case .sigstop:
            do {
                let bytes = try ProcFS.readBytes("/proc/\(process.pid)/stat")
                let stat = try bytes.withUnsafeBytes { try ProcessStat.parse($0, pid: process.pid) }
                if stat.state == UInt8(ascii: "Z") || stat.state == UInt8(ascii: "X") { return nil }  // exiting
                return stat.isStopped
            } catch {
                return nil  // exited: the reaper thread will report it
            }
        case .freezer:
            return cgroups?.isFrozen(a.spec.name)
        }
    }

    /// Waits (up to 5 s, checking every millisecond) for the stop or the continuation to take
    /// effect: signal delivery and freezing are asynchronous.
    private func waitUntil(_ a: AppRecord, stopped: Bool) async {
        let deadline = monotonicSeconds() + 5
        while monotonicSeconds() < deadline {
            guard let now = isStopped(a) else { return }  // gone
            if now == stopped { return }
            do { try await Task.sleep(for: .milliseconds(1)) } catch { return }
        }
        record(SupervisorEvent(t: now(), app: a.spec.name, pid: a.process?.pid, kind: "error", detail: "still \(stopped ? "running" : "stopped") 5 s after being \(stopped ? "suspended" : "resumed")"))
    }

    /// Sends a callback and waits for its ack (clients only; other programs get none).
    private func deliver(_ callback: LifecycleCallback, to a: AppRecord) async throws {
        let timeout = callback == .didFinishLaunching ? configuration.launchTimeout : configuration.callbackTimeout
        guard let fd = a.connection, a.hello else { return }
        let name = a.spec.name
        let generation = a.generation
        let before = a.acks[callback] ?? 0
        guard ControlSocket.send(SupervisorMessage.callback(callback).line, to: fd) else {
            record(SupervisorEvent(t: now(), app: name, pid: a.process?.pid, kind: "error", detail: "could not send \(callback.rawValue): the app is not reading its control channel"))
            dropConnection(fd, reason: "not reading")
            return
        }
        let acked = await waitFor(name, timeout: timeout) {
            ($0.acks[callback] ?? 0) > before || !$0.alive || $0.generation != generation
        }
        if !acked {
            record(SupervisorEvent(t: now(), app: name, pid: a.process?.pid, kind: "error", detail: "\(callback.rawValue) not acknowledged within \(timeout) s"))
        }
    }

    private func sendNotification(_ a: AppRecord, kind: String, value: String, count: Int) async {
        guard let fd = a.connection, a.hello else { return }
        let before = a.notifiedCount
        let generation = a.generation
        guard ControlSocket.send(SupervisorMessage.notification(kind: kind, count: count, value: value).line, to: fd) else {
            record(SupervisorEvent(t: now(), app: a.spec.name, pid: a.process?.pid, kind: "error", detail: "could not send notification \(kind): the app is not reading its control channel"))
            dropConnection(fd, reason: "not reading")
            return
        }
        _ = await waitFor(a.spec.name, timeout: configuration.callbackTimeout) {
            $0.notifiedCount > before || !$0.alive || $0.generation != generation
        }
    }

    private func deliverQueuedNotifications(_ a: AppRecord) async {
        let queued = a.queued
        a.queued = []
        for q in queued { await sendNotification(a, kind: q.kind, value: q.value, count: q.count) }
    }

    private func scheduleTaskTimers(_ a: AppRecord) {
        let name = a.spec.name
        let generation = a.generation
        let period = a.backgroundPeriod
        let limit = configuration.backgroundTaskLimit
        let warning = min(configuration.expirationWarning, limit)
        let events = self.events
        Task {
            do { try await Task.sleep(for: .seconds(limit - warning)) } catch { return }
            events.yield(.timer(app: name, generation: generation, period: period, kind: .expire))
            do { try await Task.sleep(for: .seconds(warning)) } catch { return }
            events.yield(.timer(app: name, generation: generation, period: period, kind: .backgroundLimit))
        }
    }

    private func dropConnection(_ fd: Int32, reason: String) {
        ControlSocket.disconnect(fd)
        if let name = connections[fd], let a = apps[name], a.connection == fd {
            a.connection = nil
            a.hello = false
            a.channelFailures += 1
            forgetTasks(a)
            record(SupervisorEvent(t: now(), app: name, pid: a.process?.pid, kind: "protocol", detail: "control channel closed: \(reason)"))
            checkWaiters(name)
        }
    }

    private func forgetTasksIfAlive(_ name: String, _ generation: Int) async {
        let exited = await waitFor(name, timeout: 1) { !$0.alive || $0.generation != generation }
        guard !exited, let a = apps[name], a.generation == generation, a.connection == nil else { return }
        forgetTasks(a)
        checkWaiters(name)
    }

    /// Without its control channel an app cannot end its background tasks: they are forgotten
    /// (it is supervised like any program from then on).
    private func forgetTasks(_ a: AppRecord) {
        guard !a.tasks.isEmpty else { return }
        record(SupervisorEvent(t: now(), app: a.spec.name, pid: a.process?.pid, kind: "task", detail: "\(a.tasks.count) background task(s) forgotten with the control channel"))
        a.tasks = [:]
    }

    // MARK: Events

    /// Handles one event. It must not wait for other events (the loop delivers them one at a
    /// time): anything that waits runs in a task of its own.
    private func handle(_ event: Event) {
        switch event {
        case .socket(.accepted(let fd, let peer)):
            accept(fd, peer)
        case .socket(.lines(let fd, let lines)):
            for line in lines { handleLine(fd, line) }
        case .socket(.closed(let fd, let reason)):
            if let name = connections.removeValue(forKey: fd), let a = apps[name], a.connection == fd {
                a.connection = nil
                a.hello = false
                if reason != nil {
                    a.channelFailures += 1
                    forgetTasks(a)
                } else if !a.tasks.isEmpty {
                    // The app closed its end: usually because it is exiting (its files close
                    // before its exit is reported). Forget its tasks only if it lives on.
                    let generation = a.generation
                    Task { await self.forgetTasksIfAlive(name, generation) }
                }
                if let reason {
                    record(SupervisorEvent(t: now(), app: name, pid: a.process?.pid, kind: "protocol", detail: "\(reason): control channel closed; the app keeps running without callbacks"))
                }
                checkWaiters(name)
            }
            close(fd)
            connectionClosed()
        case .exited(let name, let generation, let status):
            exited(name, generation, status)
        case .pressure(let e):
            record(SupervisorEvent(t: now(), kind: "pressure", name: e.level.description, detail: "\(e.source): \(e.detail)"))
            if configuration.warnOnPressure, e.level >= .warning { Task { await self.warn(.all) } }
        case .timer(let name, let generation, let period, let kind):
            Task { await self.timer(name, generation, period, kind) }
        }
    }

    private func accept(_ fd: Int32, _ peer: PeerCredentials) {
        guard !shuttingDown else {
            close(fd)
            return
        }
        // Only the process this supervisor launched may speak for an app.
        guard let (name, a) = apps.first(where: { $0.value.process?.pid == peer.pid && $0.value.state != .notRunning }),
            peer.uid == getuid() || getuid() == 0
        else {
            record(SupervisorEvent(t: now(), pid: peer.pid, kind: "impostor", detail: "connection from pid \(peer.pid) (uid \(peer.uid)), which this supervisor did not launch: refused"))
            close(fd)
            return
        }
        if let old = a.connection {
            record(SupervisorEvent(t: now(), app: name, pid: peer.pid, kind: "protocol", detail: "a second connection replaces the first"))
            ControlSocket.disconnect(old)
        }
        a.connection = fd
        a.hello = false
        connections[fd] = name
        socket.startReading(fd)
    }

    private func handleLine(_ fd: Int32, _ line: String) {
        guard let name = connections[fd], let a = apps[name], a.connection == fd else { return }
        let message: AppMessage
        do {
            message = try AppMessage.parse(Substring(line))
        } catch {
            dropConnection(fd, reason: "protocol error: \(error)")
            return
        }
        let pid = a.process?.pid
        if !a.hello {
            guard case .hello(let version, let app, let token) = message, version == ControlProtocol.version, app == name, token == a.token else {
                record(SupervisorEvent(t: now(), app: name, pid: pid, kind: "impostor", detail: "first message was not a valid hello for \(name)"))
                dropConnection(fd, reason: "bad hello")
                return
            }
            a.hello = true
            _ = ControlSocket.send(SupervisorMessage.welcome(version: ControlProtocol.version).line, to: fd)
            record(SupervisorEvent(t: now(), app: name, pid: pid, kind: "connected"))
            checkWaiters(name)
            return
        }
        switch message {
        case .hello:
            dropConnection(fd, reason: "protocol error: a second hello")
            return
        case .ack(let callback):
            a.acks[callback, default: 0] += 1
            record(SupervisorEvent(t: now(), app: name, pid: pid, kind: "callback", name: callback.rawValue))
        case .ready:
            a.readyCount += 1
            record(SupervisorEvent(t: now(), app: name, pid: pid, kind: "ready", detail: a.state.rawValue))
        case .taskBegin(let id, let tid, let taskName):
            a.tasks[id] = Task_(tid: tid, name: taskName)
            record(SupervisorEvent(t: now(), app: name, pid: pid, kind: "task", name: taskName, detail: "began (id \(id), thread \(tid))"))
        case .taskEnd(let id):
            if let t = a.tasks.removeValue(forKey: id) {
                record(SupervisorEvent(t: now(), app: name, pid: pid, kind: "task", name: t.name, detail: "ended (id \(id))"))
            }
        case .expired(let id):
            record(SupervisorEvent(t: now(), app: name, pid: pid, kind: "callback", name: "expirationHandler", detail: "task \(id)"))
        case .notified(let kind):
            a.notifiedCount += 1
            record(SupervisorEvent(t: now(), app: name, pid: pid, kind: "callback", name: "notification", detail: kind))
        case .stackFrame(let frame):
            if a.stack.count < 128 { a.stack.append(frame) }
        case .stackEnd:
            a.stackComplete = true
        }
        checkWaiters(name)
    }

    private func exited(_ name: String, _ generation: Int, _ status: ExitStatus) {
        guard let a = apps[name], a.generation == generation, let process = a.process else { return }
        account(a)
        a.exitStatus = status
        let expected = a.terminating
        let kind = status.isCleanExit || (expected && (status == .signaled(SIGTERM) || status == .signaled(SIGKILL))) ? "exit" : "crash"
        var detail = status.description
        if kind == "crash", let tail = Self.tail(of: a.outputPath), !tail.isEmpty { detail += "; its last output: \(tail)" }
        record(SupervisorEvent(t: now(), app: name, pid: process.pid, kind: kind, detail: detail))
        if let fd = a.connection {
            ControlSocket.disconnect(fd)
            a.connection = nil
        }
        a.process = nil
        a.hello = false
        a.tasks = [:]
        transition(a, to: .notRunning)
        if let failure = cgroups?.removeApp(name) {
            record(SupervisorEvent(t: now(), app: name, kind: "error", detail: "\(failure) (a process it started is still in it)"))
        }
        checkWaiters(name)
    }

    private func timer(_ name: String, _ generation: Int, _ period: Int, _ kind: TimerKind) async {
        await lock(name)
        defer { unlock(name) }
        guard let a = apps[name] else { return }
        func current() -> Bool {
            a.generation == generation && a.backgroundPeriod == period && a.state == .backgroundRunning && !a.tasks.isEmpty
        }
        guard current() else { return }
        switch kind {
        case .expire:
            for (id, task) in a.tasks.sorted(by: { $0.key < $1.key }) where !a.expiredTasks.contains(id) {
                a.expiredTasks.insert(id)
                record(SupervisorEvent(t: now(), app: name, pid: a.process?.pid, kind: "expire", name: task.name, detail: "asked to run the expiration handler of task \(id)"))
                guard let fd = a.connection else { continue }
                if !ControlSocket.send(SupervisorMessage.expire(id: id).line, to: fd) {
                    dropConnection(fd, reason: "not reading")
                    break
                }
            }
        case .backgroundLimit:
            guard let process = a.process, let (id, task) = a.tasks.min(by: { $0.key < $1.key }) else { return }
            // The crash report: the task thread's call stack, from the app itself.
            a.stack = []
            a.stackComplete = false
            var stack: [String]?
            if let fd = a.connection, ControlSocket.send(SupervisorMessage.reportStack(tid: task.tid).line, to: fd) {
                let gotIt = await waitFor(name, timeout: 3) { $0.stackComplete || !$0.alive || $0.generation != generation }
                if gotIt && a.stackComplete { stack = a.stack }
            }
            // The stack took time: the task may have ended, or the app exited, meanwhile.
            guard current(), a.process === process else {
                if a.generation == generation, a.process === process {
                    record(SupervisorEvent(t: now(), app: name, pid: process.pid, kind: "task", name: task.name, detail: "ended while its call stack was taken: not terminated"))
                }
                return
            }
            record(SupervisorEvent(
                t: now(), app: name, pid: process.pid, kind: "crash-report", name: task.name,
                detail: "background task \(id) ('\(task.name)') still running \(configuration.backgroundTaskLimit) s after entering the background: terminated"
                    + (stack == nil ? "; no call stack (the app did not report one)" : ""),
                stack: stack))
            process.signal(SIGKILL)  // logged as a crash when it is reaped, like a watchdog kill
        }
    }

    /// The last few hundred bytes an app wrote, on one line.
    static func tail(of path: String) -> String? {
        let bytes: [UInt8]
        do {
            bytes = try ProcFS.readBytes(path)
        } catch {
            return nil  // nothing written, or no file
        }
        let last = String(decoding: bytes.suffix(400), as: UTF8.self)
        return last.split(whereSeparator: { $0 == "\n" }).joined(separator: " | ")
    }

    // MARK: Waiting

    private func snapshot(_ a: AppRecord) -> AppSnapshot {
        AppSnapshot(
            state: a.state, generation: a.generation, hello: a.hello, acks: a.acks, readyCount: a.readyCount, tasks: a.tasks.count,
            alive: a.process != nil, notifiedCount: a.notifiedCount, stackComplete: a.stackComplete,
            channelFailures: a.channelFailures, backgroundPeriod: a.backgroundPeriod)
    }

    /// Waits until `condition` holds for the app (checked after every event), or `timeout`.
    private func waitFor(_ name: String, timeout: Double, _ condition: @escaping @Sendable (AppSnapshot) -> Bool) async -> Bool {
        guard let a = apps[name] else { return false }
        if condition(snapshot(a)) { return true }
        nextWaiter += 1
        let id = nextWaiter
        return await withCheckedContinuation { continuation in
            waiters.append(Waiter(id: id, app: name, condition: condition, continuation: continuation))
            Task { [weak self] in
                do {
                    try await Task.sleep(for: .seconds(timeout))
                } catch {
                    return  // cancelled: the waiter is resumed by its event
                }
                await self?.expireWaiter(id)
            }
        }
    }

    private func expireWaiter(_ id: Int) {
        guard let i = waiters.firstIndex(where: { $0.id == id }) else { return }
        let w = waiters.remove(at: i)
        w.continuation.resume(returning: false)
    }

    private func checkWaiters(_ name: String) {
        guard let a = apps[name] else { return }
        let s = snapshot(a)
        var i = 0
        while i < waiters.count {
            if waiters[i].app == name && waiters[i].condition(s) {
                let w = waiters.remove(at: i)
                w.continuation.resume(returning: true)
            } else {
                i += 1
            }
        }
    }
}

extension String {
    func replacingOccurrences(of target: String, with replacement: String) -> String {
        split(separator: target, omittingEmptySubsequences: false).joined(separator: replacement)
    }
}
