import MemPressureLifecycleProtocol
import MemPressureSystem
import MemPressureMonitor

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
    /// What a memory warning becomes for this app: nil is the callback for a client and
    /// nothing for any other program (`effectiveMemoryWarning`).
    public var memoryWarning: MemoryWarningAction?
    /// For a program without the client: how the supervisor tells it is working, after a launch
    /// and after a resume (`ReadinessProbe`). Nil: it counts as launched once started and as
    /// resumed once let run, and never reports ready.
    public var ready: ReadinessProbe?

    public init(
        name: String, command: [String], environment: [String: String]? = nil, client: Bool? = nil, memoryWarning: MemoryWarningAction? = nil,
        ready: ReadinessProbe? = nil
    ) {
        self.name = name
        self.command = command
        self.environment = environment
        self.client = client
        self.memoryWarning = memoryWarning
        self.ready = ready
    }

    /// What a memory warning becomes for this app.
    public var effectiveMemoryWarning: MemoryWarningAction { memoryWarning ?? (client ?? true ? .callback : .none) }

    private enum CodingKeys: String, CodingKey, CaseIterable { case name, command, environment, client, memoryWarning, ready }

    /// Refuses a key it does not know (a typo such as "enviroment" would otherwise be dropped).
    public init(from decoder: any Decoder) throws {
        try UnknownKeys.refuse(in: decoder, known: CodingKeys.self, what: "an app")
        let c = try decoder.container(keyedBy: CodingKeys.self)
        self.init(
            name: try c.decode(String.self, forKey: .name), command: try c.decode([String].self, forKey: .command),
            environment: try c.decodeIfPresent([String: String].self, forKey: .environment),
            client: try c.decodeIfPresent(Bool.self, forKey: .client),
            memoryWarning: try c.decodeIfPresent(MemoryWarningAction.self, forKey: .memoryWarning),
            ready: try c.decodeIfPresent(ReadinessProbe.self, forKey: .ready))
    }
}

extension AppSpec {
    /// Checks what an exec cannot carry or a path must not hold: the name (`ControlProtocol.isAppName`),
    /// a command, and no NUL byte in an argument, an environment name or value (nor '=' or
    /// nothing in a name): such a string would be cut short at the NUL, not run as written.
    public func validate() throws(CommandError) {
        guard ControlProtocol.isAppName(Substring(name)) else { throw .invalidAppName(name) }
        guard !command.isEmpty, !command[0].isEmpty else { throw .emptyCommand(app: name) }
        for (i, argument) in command.enumerated() where argument.utf8.contains(0) {
            throw .nulByte(app: name, field: i == 0 ? "program" : "argument \(i)")
        }
        for (key, value) in (environment ?? [:]).sorted(by: { $0.key < $1.key }) {
            guard !key.isEmpty, !key.utf8.contains(0), !key.utf8.contains(0x3d) else { throw .invalidEnvironmentName(app: name, key) }
            if value.utf8.contains(0) { throw .nulByte(app: name, field: "environment variable \(key)") }
        }
        if let ready {
            guard client == false else { throw .probeForClient(app: name) }
            try ready.validate(app: name)
        }
        if case .command(let argv) = memoryWarning {
            guard !argv.isEmpty, !argv[0].isEmpty else { throw .emptyCommand(app: name) }
            for (i, argument) in argv.enumerated() where argument.utf8.contains(0) {
                throw .nulByte(app: name, field: "memory warning command's argument \(i)")
            }
        }
    }
}

public struct SupervisorConfiguration: Sendable {
    /// Where the control socket lives: made with mode 0700, or an existing directory (not a
    /// link) of this user that group and others cannot write in; anything else is refused.
    /// Default: a new directory made for this supervisor alone, `mempressure-PID-RANDOM` under
    /// $XDG_RUNTIME_DIR, else /run for root, else /tmp (made exclusively: never one that exists).
    public var runtimeDirectory: String?
    /// The most admin connections served at once; one beyond it gets a one-line error answer
    /// (`tooManyConnections`) and is closed.
    public var maximumAdminConnections = 64
    /// Seconds an admin connection may stay open without sending a complete request while
    /// nothing is being answered on it; then it is closed.
    public var adminIdleTimeout = 30.0
    public var suspendMethod: SuspendMethod = .sigstop
    /// How each app's processes are held together (killed, suspended, accounted together): a
    /// cgroup per app where the machine allows it, else its process group (`AppContainment`).
    /// A budget or the freezer needs cgroups.
    public var containment: AppContainment = .automatic
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
    /// Watch memory pressure (on the device cgroup when there is a budget and `cgroup` is not
    /// set, else as configured) and offer it to policies through `pressureEvents()`. Started
    /// when set, or when a policy asks for it.
    public var pressure: PressureConfiguration?
    /// What runs beside the core and decides: memory warnings on pressure, jetsam.
    public var policies: [any SupervisorPolicy] = []
    /// The most events the log keeps (the oldest go first; `droppedLogEvents` counts them).
    public var logLimit = 100_000
    /// The most footprint samples one app's timeline keeps while it runs (the oldest go first).
    public var timelineLimit = 10_000
    /// The most samples it keeps once its run has ended (its timeline is cut to the newest).
    /// With `maximumApps`, what the records hold is bounded: at most `maximumApps` ×
    /// `endedTimelineLimit` samples of apps not running (1,000 × 600 × 56 bytes ≈ 34 MB by
    /// default), plus `timelineLimit` per running app.
    public var endedTimelineLimit = 600
    /// The most apps the supervisor keeps records of: registering one more forgets the app not
    /// running that has been idle longest (logged); with every app running it is refused.
    public var maximumApps = 1000
    /// The `oom_score_adj` of every app's processes, set from its state (`OOMScoreBands`: the
    /// kernel's OOM killer and any other killer that reads it follow jetsam's bands); nil leaves
    /// the apps at the value they inherit from the supervisor. An attached jetsam sets the
    /// high-memory line to its own.
    public var oomScoreBands: OOMScoreBands? = OOMScoreBands()

    public init() {}

    /// Checks every number in range (the supervisor does this before it makes anything): the
    /// durations are seconds in `Seconds`' range (above 0, or at least 0 for `expirationWarning`,
    /// `terminateGrace` and `sampleInterval`, and the warning within the limit), the budget and the
    /// limits are positive.
    public func validate() throws(ConfigurationError) {
        do {
            try Seconds.check(backgroundTaskLimit, "backgroundTaskLimit")
            try Seconds.check(expirationWarning, "expirationWarning", allowZero: true)
            try Seconds.check(callbackTimeout, "callbackTimeout")
            try Seconds.check(launchTimeout, "launchTimeout")
            try Seconds.check(connectTimeout, "connectTimeout")
            try Seconds.check(terminateGrace, "terminateGrace", allowZero: true)
            try Seconds.check(sampleInterval, "sampleInterval", allowZero: true)
            try Seconds.check(adminIdleTimeout, "adminIdleTimeout")
        } catch {
            throw .seconds(error)
        }
        guard expirationWarning <= backgroundTaskLimit else {
            throw .warningAfterLimit(warning: expirationWarning, limit: backgroundTaskLimit)
        }
        if let budgetBytes, budgetBytes <= 0 { throw .notPositive("budgetBytes", budgetBytes) }
        if containment == .processGroup, budgetBytes != nil || suspendMethod == .freezer {
            throw .needsCgroups(budgetBytes != nil ? "a budget" : "the freezer")
        }
        guard logLimit > 0 else { throw .notPositive("logLimit", logLimit) }
        guard timelineLimit > 0 else { throw .notPositive("timelineLimit", timelineLimit) }
        guard maximumApps > 0 else { throw .notPositive("maximumApps", maximumApps) }
        guard endedTimelineLimit > 0 else { throw .notPositive("endedTimelineLimit", endedTimelineLimit) }
        guard maximumAdminConnections > 0 else { throw .notPositive("maximumAdminConnections", maximumAdminConnections) }
        try oomScoreBands?.validate()
    }
}

/// A number of the supervisor's configuration that is out of range.
public enum ConfigurationError: Error, Sendable, Hashable, CustomStringConvertible {
    case seconds(SecondsError)
    case warningAfterLimit(warning: Double, limit: Double)
    case notPositive(String, Int)
    /// Process-group containment with what only cgroups give (a budget, the freezer).
    case needsCgroups(String)
    /// The OOM score bands are out of the kernel's range or out of order.
    case oomScoreBands(String)

    public var description: String {
        switch self {
        case .seconds(let e): "\(e)"
        case .warningAfterLimit(let w, let l):
            "expirationWarning (\(ByteFormat.fixed(w, 3)) s) must not exceed backgroundTaskLimit (\(ByteFormat.fixed(l, 3)) s)"
        case .notPositive(let what, let value): "\(what) must be positive, not \(value)"
        case .needsCgroups(let what): "\(what) needs apps in cgroups: containment process-group cannot have it"
        case .oomScoreBands(let what): "oomScoreBands: \(what)"
        }
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

    public init(t: Double, state: LifecycleState, footprintBytes: UInt64, residentBytes: UInt64, dirtyBytes: UInt64, purgeableBytes: UInt64, swappedBytes: UInt64) {
        self.t = t
        self.state = state
        self.footprintBytes = footprintBytes
        self.residentBytes = residentBytes
        self.dirtyBytes = dirtyBytes
        self.purgeableBytes = purgeableBytes
        self.swappedBytes = swappedBytes
    }
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

/// What a policy sees of one app: cheap to take (no timelines), current to the last sample.
public struct AppView: Sendable, Hashable {
    public var name: String
    /// The app's current process (nil when not running).
    public var pid: Int32?
    /// Which run of the app (1 for the first launch): a decision names the run it was made for.
    public var generation: Int
    public var state: LifecycleState
    public var secondsInState: Double
    /// Since it last entered the background (nil while in the foreground or not running).
    public var secondsSinceBackgrounded: Double?
    /// Since it was last active (0 while active; nil if never active in this supervisor).
    public var secondsSinceActive: Double?
    /// Since its current process was started (nil when not running).
    public var secondsSinceLaunch: Double?
    /// How many times it became active since the supervisor started.
    public var activations: Int
    public var launches: Int
    /// The latest footprint reading of this run (nil before the first), and its age.
    public var latest: FootprintSample?
    public var sampleAgeSeconds: Double?
    /// The largest footprint of any reading of this app, over all its runs.
    public var lifetimeMaxFootprintBytes: UInt64
    /// Launch to first ready of its most recent runs that reported ready, oldest first (the
    /// relaunch cost a kill would impose); empty until one was seen.
    public var launchToReadySeconds: [Double]
    /// Whether the program links the client library (gets callbacks, reports ready).
    public var isClient: Bool
    /// Which stay in the background the app is in (or was last in): a decision about a
    /// suspended app holds for this stay only.
    public var backgroundStay: Int
    /// Being taken down (killed, or terminating): not a candidate for anything any more.
    public var isDying: Bool
    /// The lifecycle callbacks delivered to the app and not yet acknowledged: an app in
    /// didEnterBackground is saving its state.
    public var callbacksInProgress: Set<LifecycleCallback>
    /// The `oom_score_adj` its processes were given for their state (`OOMScoreBands`); nil when
    /// the supervisor sets none, or not yet for this run.
    public var oomScoreAdj: Int32?

    /// A view of an app (a device other than the supervisor makes them: TestSupport's fake).
    public init(
        name: String, pid: Int32?, generation: Int, state: LifecycleState, secondsInState: Double, secondsSinceBackgrounded: Double? = nil,
        secondsSinceActive: Double? = nil, secondsSinceLaunch: Double? = nil, activations: Int = 0, launches: Int = 1,
        latest: FootprintSample? = nil, sampleAgeSeconds: Double? = nil, lifetimeMaxFootprintBytes: UInt64 = 0, launchToReadySeconds: [Double] = [],
        isClient: Bool = true, backgroundStay: Int = 0, isDying: Bool = false, callbacksInProgress: Set<LifecycleCallback> = [], oomScoreAdj: Int32? = nil
    ) {
        self.oomScoreAdj = oomScoreAdj
        self.name = name
        self.pid = pid
        self.generation = generation
        self.state = state
        self.secondsInState = secondsInState
        self.secondsSinceBackgrounded = secondsSinceBackgrounded
        self.secondsSinceActive = secondsSinceActive
        self.secondsSinceLaunch = secondsSinceLaunch
        self.activations = activations
        self.launches = launches
        self.latest = latest
        self.sampleAgeSeconds = sampleAgeSeconds
        self.lifetimeMaxFootprintBytes = lifetimeMaxFootprintBytes
        self.launchToReadySeconds = launchToReadySeconds
        self.isClient = isClient
        self.backgroundStay = backgroundStay
        self.isDying = isDying
        self.callbacksInProgress = callbacksInProgress
    }
}

/// Why the supervisor killed an app without notice (as XNU's JetsamEvent reasons name them;
/// written, and printed, as those names).
public enum KillReason: String, Sendable, Hashable, Codable, CaseIterable, CustomStringConvertible {
    /// Memory is short for the device: the jetsam ranking chose this app.
    case vmPageShortage = "vm-pageshortage"
    /// The app went over its own memory limit for its state.
    case perProcessLimit = "per-process-limit"

    public var description: String { rawValue }
}

/// Which apps a memory warning or notification goes to.
public enum AppTarget: Sendable, Hashable {
    case all
    case app(String)
}

extension Supervisor {
    /// Which apps a memory warning or notification goes to (`AppTarget`).
    public typealias Target = AppTarget
}
