import MemPressureLifecycleProtocol
import MemPressureMonitor
import MemPressureValues

/// One line of the event log: when, which app (and which of its processes), and what happened —
/// a typed `Payload`, one case per thing the log says. Decisions and tests switch on the payload;
/// the words (`name`, `detail`) are for people (SupervisorEventText.swift).
///
/// Its JSON is the flat object the log has always been (`{"t": 1.2, "app": "A", "pid": 123,
/// "kind": "exit", "detail": "killed by signal 9 (SIGKILL): jetsam, vm-pageshortage", ...}`),
/// the same keys and words, plus keys that carry the payload's values typed (`"signal": 9`,
/// `"reason": "vm-pageshortage"`); logs written before those keys existed decode too, from their
/// words (SupervisorEventCoding.swift).
public struct SupervisorEvent: Sendable, Hashable {
    /// Seconds since the supervisor started.
    public var t: Double
    public var app: String?
    public var pid: Int32?
    public var payload: Payload

    public init(t: Double, app: String? = nil, pid: Int32? = nil, _ payload: Payload) {
        self.t = t
        self.app = app
        self.pid = pid
        self.payload = payload
    }

    /// What kind of thing it records (the JSON's `"kind"`): derived from the payload.
    public var kind: SupervisorEventKind { payload.kind }

    /// The state a `.state` event left (nil for any other event).
    public var from: LifecycleState? {
        if case .state(let from, _) = payload { return from }
        return nil
    }

    /// The state a `.state` event entered (nil for any other event).
    public var to: LifecycleState? {
        if case .state(_, let to) = payload { return to }
        return nil
    }

    /// Every case of what the log says.
    public enum Payload: Sendable, Hashable {
        /// A lifecycle transition.
        case state(from: LifecycleState, to: LifecycleState)
        /// The app acknowledged a lifecycle callback.
        case callback(LifecycleCallback)
        /// The app ran the expiration handler of its background task `task`.
        case expirationHandlerRan(task: Int)
        /// The app handled a system notification of this kind (it was delivered).
        case notificationDelivered(kind: String)
        /// The app reported it is interactive, in this state.
        case ready(LifecycleState)
        /// The app's process was started with this command.
        case launch(command: [String])
        /// The app's client connected and said hello.
        case connected
        /// The run ended as expected (terminated, exited 0, or killed by the supervisor: a kill
        /// by a policy names its reason).
        case exit(ExitStatus, killReason: KillReason?)
        /// The run ended unexpectedly, with the last bytes the app wrote (when it wrote any).
        case crash(ExitStatus, lastOutput: String?)
        /// The other processes of the app (helpers, children) were ended with it (SIGKILL).
        case othersEnded(count: Int)
        /// What a memory warning became: sent (callback), signalled, its command run, or not sent and why.
        case warning(WarningDelivery)
        /// A system notification queued for a suspended app (delivered when it resumes).
        case notificationQueued(kind: String)
        /// A background task began, ended, was forgotten or asked to expire.
        case task(BackgroundTaskEvent)
        /// An overrunning background task's app was terminated: the task, and its call stack.
        case crashReport(CrashReport)
        /// Something went wrong that the supervisor survived.
        case error(SupervisorFault)
        /// A connection from a process the supervisor did not launch (or a user it does not
        /// serve), refused.
        case impostor(Impostor)
        /// A control (or admin) connection closed for breaking the protocol.
        case protocolFailure(ProtocolFailure)
        /// A change of the merged pressure level, with the source that caused it.
        case pressureLevel(PressureLevelChange)
        /// A pressure source in use, as the supervisor started (`PressureSourceStatus.description`).
        case pressureSource(PressureSourceStatus)
        /// A pressure source's status changed (it cannot be read, or can again).
        case pressureSourceChanged(PressureSourceStatus)
        /// An app-defined command (`allocate N`) and the app's answer.
        case appCommand(command: String, answer: String)
        /// A known app not running runs another command from now on.
        case commandChanged(to: [String], from: [String])
        /// An app not running was forgotten: its record, accounting and metrics went.
        case forgotten(ForgetReason)
        /// What this supervisor cleaned up at start, left by one that had died on its runtime
        /// directory (one line of `Supervisor.recovered`).
        case recovered(String)
        /// What a policy did or says (jetsam's kills, freeze-drys, notes).
        case policy(PolicyRecord)
        /// An event of a log written by an earlier version whose words this one does not know:
        /// its kind, name and detail as written. The supervisor never records one.
        case unrecognized(UnrecognizedEvent)
    }
}

/// What kind of thing a log event records (the JSON's `"kind"`): the payload's family.
public enum SupervisorEventKind: String, Sendable, Hashable, Codable, CaseIterable {
    /// A lifecycle transition.
    case state
    /// The app acknowledged a callback, ran an expiration handler or handled a notification.
    case callback
    /// The app reported it is interactive.
    case ready
    /// The app's process was started.
    case launch
    /// The app's client connected and said hello.
    case connected
    /// The app's process ended as expected (terminated, or exited 0).
    case exit
    /// The app's process ended unexpectedly.
    case crash
    /// A memory warning (sent, or why not), or an app over its soft limit.
    case warning
    /// A system change queued for a suspended app.
    case notification
    /// A background task began, ended or was forgotten.
    case task
    /// A background task was asked to run its expiration handler.
    case expire
    /// An overrunning background task's app was terminated, with the task's call stack.
    case crashReport = "crash-report"
    /// Something went wrong that the supervisor survived.
    case error
    /// A connection from a process the supervisor did not launch, refused.
    case impostor
    /// A control channel closed for a protocol error, a flood or a bad hello.
    case `protocol`
    /// A pressure source's status, or a change of the merged level.
    case pressure
    /// An app command (allocate, release) and the app's answer.
    case command
    /// A jetsam kill.
    case jetsam
    /// A freeze-dry: a small suspended app's anonymous memory written to swap.
    case freeze
    /// What the supervisor or a policy says of what it does or cannot do: other processes ended
    /// with an app, an app forgotten or running another command, what was recovered at start,
    /// jetsam holding the kernel's OOM killer, "no swap: freeze-dry is off".
    case note
}

extension SupervisorEvent.Payload {
    /// The payload's family (the JSON's `"kind"`).
    public var kind: SupervisorEventKind {
        switch self {
        case .state: .state
        case .callback, .expirationHandlerRan, .notificationDelivered: .callback
        case .ready: .ready
        case .launch: .launch
        case .connected: .connected
        case .exit: .exit
        case .crash: .crash
        case .othersEnded, .commandChanged, .forgotten, .recovered: .note
        case .warning: .warning
        case .notificationQueued: .notification
        case .task(let t): t.isExpirationRequest ? .expire : .task
        case .crashReport: .crashReport
        case .error: .error
        case .impostor: .impostor
        case .protocolFailure: .protocol
        case .pressureLevel, .pressureSource, .pressureSourceChanged: .pressure
        case .appCommand: .command
        case .policy(let r): r.kind
        case .unrecognized(let u): u.kind
        }
    }
}

/// What a memory warning to an app became (`AppSpec.memoryWarning`): what reached it, or why
/// nothing did. Only what reached the app is "sent".
public enum WarningDelivery: Sendable, Hashable {
    /// `callback didReceiveMemoryWarning` was written to the app's control channel (its ack,
    /// or that none came, is an event of its own).
    case sent
    /// The app's signal was delivered to its main process.
    case signalled(Int32)
    /// The app's warning command ran, and ended so.
    case commandRan(ExitStatus)
    case notSent(WarningSkipReason)

    /// Whether the warning reached the app (its callback or signal), or its command ran.
    public var delivered: Bool {
        if case .notSent = self { return false }
        return true
    }
}

/// Why a memory warning reached nothing.
public enum WarningSkipReason: String, Sendable, Hashable, Codable, CaseIterable {
    /// Suspended apps are never sent anything (memory warnings are not queued for them).
    case suspended
    /// Nothing is chosen for the app: a program without a client and no `memoryWarning`, or
    /// `memoryWarning: none`.
    case noneChosen
    /// A client without a control channel (not connected yet, or closed for breaking the protocol).
    case noChannel
    /// The app's main process had exited (the signal found it gone).
    case exited
    /// The app's warning command could not be started (the error is an event of its own).
    case commandNotStarted

    /// The words the log says it in.
    public var words: String {
        switch self {
        case .suspended: "suspended"
        case .noneChosen: "nothing chosen for this app (no client, no memoryWarning)"
        case .noChannel: "no control channel"
        case .exited: "the app had exited"
        case .commandNotStarted: "its command could not be started"
        }
    }

    public init?(words: String) {
        guard let reason = Self.allCases.first(where: { $0.words == words }) else { return nil }
        self = reason
    }
}

/// What happened to one of an app's background tasks.
public enum BackgroundTaskEvent: Sendable, Hashable {
    /// The app began a task (its id, the thread running it, its name).
    case began(id: Int, thread: Int32, name: String)
    case ended(id: Int, name: String)
    /// The task ended while its call stack was being taken for a crash report: the app is not
    /// terminated.
    case endedDuringCrashReport(name: String)
    /// The app lost its control channel: it cannot end its tasks, which are forgotten.
    case forgotten(count: Int)
    /// The app is asked to run the task's expiration handler (its time is nearly up).
    case expirationRequested(id: Int, name: String)

    var isExpirationRequest: Bool {
        if case .expirationRequested = self { return true }
        return false
    }
}

/// An app terminated because a background task overran its limit: the watchdog's crash report.
public struct CrashReport: Sendable, Hashable {
    public var task: Int
    public var taskName: String
    /// The background task limit it overran (seconds after entering the background).
    public var limitSeconds: Double
    /// The task thread's call stack, as the app reported it (nil: it reported none).
    public var stack: [String]?

    public init(task: Int, taskName: String, limitSeconds: Double, stack: [String]?) {
        self.task = task
        self.taskName = taskName
        self.limitSeconds = limitSeconds
        self.stack = stack
    }
}

/// A connection the supervisor refused: it speaks only with the processes it launched, and
/// serves only its own user (and root).
public enum Impostor: Sendable, Hashable {
    /// A process it did not launch (or of another user) connected to the control socket.
    case controlConnection(pid: Int32, uid: UInt32)
    /// The first message on an app's connection was not a valid hello for it.
    case badHello
    /// An admin connection from another user.
    case adminConnection(uid: UInt32)
}

/// A connection closed for breaking the protocol.
public enum ProtocolFailure: Sendable, Hashable {
    /// The app's control channel was closed (the app runs on without callbacks).
    case channelClosed(ChannelFailure)
    /// The app connected again: the new connection replaces the first.
    case connectionReplaced
    /// An admin client sent more than `limit` requests without waiting for answers.
    case adminFlood(limit: Int)
    /// An admin connection sent no complete request for `seconds`.
    case adminIdle(seconds: Double)
}

/// A change of the merged pressure level (`PressureEvent`, without its monotonic time).
public struct PressureLevelChange: Sendable, Hashable {
    public var level: PressureLevel
    /// The source whose reading set the level.
    public var source: String
    /// What it read ("working set 205.47 MiB of 256.00 MiB (80.3%)").
    public var reading: String

    public init(level: PressureLevel, source: String, reading: String) {
        self.level = level
        self.source = source
        self.reading = reading
    }
}

/// Why an app was forgotten.
public enum ForgetReason: Sendable, Hashable {
    /// Asked (`forget`).
    case asked
    /// Registering `app` made room: at most `limit` apps are kept (`maximumApps`).
    case madeRoom(for: String, limit: Int)
}

/// An event of an older log whose words this version cannot read as a typed case.
public struct UnrecognizedEvent: Sendable, Hashable {
    public var kind: SupervisorEventKind
    public var name: String?
    public var detail: String?
    public var stack: [String]?

    public init(kind: SupervisorEventKind, name: String? = nil, detail: String? = nil, stack: [String]? = nil) {
        self.kind = kind
        self.name = name
        self.detail = detail
        self.stack = stack
    }
}
