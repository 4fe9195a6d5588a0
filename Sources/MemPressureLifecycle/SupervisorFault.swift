import MemPressureLifecycleProtocol
import MemPressureSystem

/// What went wrong, in an `.error` event: which step of the supervisor's work failed (the case),
/// what it was acting on, and the failure's own words where it came from below (`cause`: a
/// cgroup's, a system call's or a launch's error, as it describes itself).
public enum SupervisorFault: Sendable, Hashable {
    /// How long a shutdown waits for the connections it closed to be reported closed by their
    /// readers (each is quick; a very busy machine can take seconds).
    public static let connectionCloseTimeout: Double = 10

    /// Stopping the app (SIGSTOP to its processes, or its freezer group) failed.
    case suspend(cause: String)
    /// Letting it run again (SIGCONT) failed.
    case resume(cause: String)
    /// The kernel did not report the stop (`stopped`) or the continuation within `seconds`.
    case stopNotSeen(stopped: Bool, seconds: Double)
    /// SIGKILL reached the app's main process but not all of its other processes.
    case kill(cause: String)
    /// A suspended app could not be let run so that a pending SIGKILL takes it (thaw, SIGCONT).
    case letRun(cause: String)
    /// The app could not be started (its cgroup, its output pipe, the spawn, the thread that
    /// waits for it).
    case launch(cause: String)
    /// The app's memory-warning command could not be started, or waited for.
    case warningCommand(cause: String)
    /// The app's readiness probe (`AppSpec.ready`) could not be started or waited for, or did
    /// not pass in time.
    case readinessProbe(cause: String)
    /// A client app that never got its control channel, supervised without callbacks from then on.
    case noCallbacks(NoChannelReason)
    /// A callback could not be sent: the app's control channel is closed.
    case callbackNotDelivered(LifecycleCallback)
    /// A callback was sent, and not acknowledged.
    case callbackNotAcknowledged(LifecycleCallback, NotAcknowledged)
    /// A message could not be sent (`what`: the callback, notification or command): the app does
    /// not read its control channel, which is closed.
    case notReading(what: String)
    /// The part of a command that went on after it returned (a background's wait) failed.
    case command(LifecycleVerb, cause: String)
    /// Terminating an app whose background task overran its limit failed.
    case watchdog(cause: String)
    /// Other processes of an ended app could not all be ended: they run on, outside the
    /// supervisor's control.
    case othersRunOn(cause: String)
    /// A cgroup could not be removed.
    case cgroupRemoval(cause: String)
    /// The app's processes could not be given the `oom_score_adj` of their state
    /// (`OOMScoreBands`): the kernel's OOM killer sees the value they inherited.
    case oomScore(cause: String)
    /// The run record (what the next supervisor on the directory would clean up) could not be written.
    case runRecord(path: String, cause: String)
    /// An abort could not take an app down.
    case abort(cause: String)
    /// The shutdown could not terminate an app.
    case shutdown(cause: String)
    /// Connections still open `connectionCloseTimeout` seconds after the shutdown closed them.
    case connectionsNotClosed(count: Int)
    /// An admin connection was dropped: no thread could be had to answer on it.
    case adminAnswerThread(cause: String)
    /// An admin connection was refused: `limit` were open (`refused` so far).
    case adminConnectionsFull(limit: Int, refused: Int)
    /// An error of an older log this version cannot tell the step of: its words.
    case unclassified(String)

    /// Why a client app has no control channel.
    public enum NoChannelReason: Sendable, Hashable {
        /// Its channel was closed for breaking the protocol before it said hello.
        case channelFailed
        /// It did not connect within `connectTimeout`.
        case didNotConnect(seconds: Double)
    }

    /// Why a callback was not acknowledged.
    public enum NotAcknowledged: Sendable, Hashable {
        /// The app's control channel was closed for breaking the protocol meanwhile.
        case channelClosed
        /// Not within the callback's timeout.
        case timedOut(seconds: Double)
    }
}

/// Why the supervisor closed a control connection (the app runs on without callbacks).
public enum ChannelFailure: Error, Sendable, Hashable, Codable, CustomStringConvertible {
    /// A line the protocol refuses (garbage, an unknown message, an over-long line).
    case protocolError(ProtocolError)
    /// A second hello on a connection that said hello already.
    case secondHello
    /// The first line was not a valid hello for this app (name, token or version).
    case badHello
    /// More than `limit` lines within a second.
    case flood(limit: Int)
    /// The app does not read its messages: a write would block.
    case notReading
    /// No thread could be had to read the connection.
    case noReader(SystemCallError)

    public var description: String {
        switch self {
        case .protocolError(let e): "protocol error: \(e)"
        case .secondHello: "protocol error: a second hello"
        case .badHello: "bad hello"
        case .flood(let limit): "flood: more than \(limit) lines in a second"
        case .notReading: "not reading"
        case .noReader(let e): "cannot start its reader thread: \(e)"
        }
    }
}

extension SupervisorFault {
    /// The case's word in the log's JSON (`"fault"`).
    var word: String {
        switch self {
        case .suspend: "suspend"
        case .resume: "resume"
        case .stopNotSeen: "stopNotSeen"
        case .kill: "kill"
        case .letRun: "letRun"
        case .launch: "launch"
        case .warningCommand: "warningCommand"
        case .readinessProbe: "readinessProbe"
        case .noCallbacks(.channelFailed): "channelFailed"
        case .noCallbacks(.didNotConnect): "didNotConnect"
        case .callbackNotDelivered: "callbackNotDelivered"
        case .callbackNotAcknowledged: "callbackNotAcknowledged"
        case .notReading: "notReading"
        case .command: "command"
        case .watchdog: "watchdog"
        case .othersRunOn: "othersRunOn"
        case .cgroupRemoval: "cgroupRemoval"
        case .oomScore: "oomScore"
        case .runRecord: "runRecord"
        case .abort: "abort"
        case .shutdown: "shutdown"
        case .connectionsNotClosed: "connectionsNotClosed"
        case .adminAnswerThread: "adminAnswerThread"
        case .adminConnectionsFull: "adminConnectionsFull"
        case .unclassified: "unclassified"
        }
    }

    /// The failure from below, in its own words (nil for the cases that have none).
    public var cause: String? {
        switch self {
        case .suspend(let c), .resume(let c), .kill(let c), .letRun(let c), .launch(let c), .warningCommand(let c), .readinessProbe(let c), .command(_, let c), .watchdog(let c),
            .othersRunOn(let c), .cgroupRemoval(let c), .oomScore(let c), .runRecord(_, let c), .abort(let c), .shutdown(let c), .adminAnswerThread(let c),
            .unclassified(let c):
            c
        case .stopNotSeen, .noCallbacks, .callbackNotDelivered, .callbackNotAcknowledged, .notReading, .connectionsNotClosed, .adminConnectionsFull:
            nil
        }
    }
}
