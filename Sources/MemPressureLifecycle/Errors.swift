import MemPressureLifecycleProtocol
import SystemPackage
import MemPressureSystem

/// Why a command of the supervisor failed (the supervisor itself keeps running). Each case is
/// one situation a caller can act on: an app that is gone is `.exited`, one that is in the wrong
/// state for the command is `.wrongState`, a decision made on an older run of the app is
/// `.staleTarget`, a supervisor on its way out is `.shuttingDown`. Errors from below are wrapped,
/// not worded: `.launch(app:_:)`, `.setup`, `.cgroup`, `.system`, `.invalidCommand` carry the
/// typed error. On the admin socket each case has a code (`code`, the answer's `"errorCode"`).
public enum SupervisorError: Error, Sendable, Hashable, CustomStringConvertible {
    /// App names are words: letters, digits, '.', '-', '_' (they become file and cgroup names).
    case invalidAppName(String)
    case alreadyRegistered(String)
    case noSuchApp(String)
    /// The operation does not apply in the app's state (`launch` of a running app, `deactivate`
    /// of one that is not active, a kill of one not running or no longer in the state it was
    /// chosen in, an app command to one that is not running).
    case wrongState(app: String, state: LifecycleState, operation: Operation)
    /// The app exited (or crashed) while the command was under way.
    case exited(app: String, during: String, status: ExitStatus?)
    /// A victim still alive after SIGKILL (the kernel has it stuck: D state, or a frozen cgroup).
    case didNotExit(app: String, pid: Int32, seconds: Double)
    /// The app did not reach what was waited for in time.
    case timedOut(app: String, waitingFor: String, seconds: Double)
    /// A kill was decided for one run of the app (this PID), but the app now runs as another
    /// (it was relaunched meanwhile), or not at all: nothing is signalled.
    case staleTarget(app: String, expectedPID: Int32, currentPID: Int32?)
    /// The app is already being taken down (killed, or terminating): not killed again.
    case dying(app: String, pid: Int32)
    /// The app's process could not be started.
    case launch(app: String, LaunchError)
    /// The runtime directory, the control socket or the admin socket could not be set up.
    case setup(SetupError)
    /// A number of the configuration is out of range (nothing was set up).
    case configuration(ConfigurationError)
    /// A cgroup could not be created, written or removed.
    case cgroup(CgroupError)
    /// A system call failed.
    case system(SystemCallError)
    /// mempressure-exec is missing next to the executable.
    case launcherMissing(path: String)
    /// A notification kind that is not a word.
    case invalidNotificationKind(String)
    /// The app did not answer an app command, or answered with an error.
    case commandFailed(app: String, command: String, answer: String)
    /// A command that cannot be carried out as given (missing or invalid arguments).
    case invalidCommand(CommandError)
    /// Shutdown (or an abort) has begun: no command starts any more (`app`: the app it named).
    case shuttingDown(refused: Command.Verb, app: String?)
    /// `maximumApps` apps are known and all are running (or busy): none can be forgotten to
    /// make room for another.
    case tooManyApps(limit: Int)

    /// What was asked of an app that was in the wrong state for it.
    public enum Operation: Sendable, Hashable, CustomStringConvertible {
        /// A lifecycle command.
        case lifecycle(LifecycleVerb)
        /// A kill with a reason (`Supervisor.kill(_:pid:reason:expectedState:)`).
        case kill
        /// A page-out (freeze-dry).
        case pageOut
        /// Forgetting the app (it must not be running).
        case forget
        /// An app-defined command, by its text (`allocate 1048576`).
        case appCommand(String)

        public var description: String {
            switch self {
            case .lifecycle(let verb): verb.rawValue
            case .kill: "kill"
            case .pageOut: "page out"
            case .forget: "forget"
            case .appCommand(let text): text
            }
        }
    }

    public var description: String {
        switch self {
        case .invalidAppName(let name): "app name \(String(reflecting: name)) is not valid: \(ControlProtocol.appNameRule)"
        case .alreadyRegistered(let name): "an app named \(name) is already registered"
        case .noSuchApp(let name): "no app named \(name)"
        case .wrongState(let app, let state, let operation):
            switch operation {
            case .lifecycle(.launch): "\(app) is already running (\(state.rawValue))"
            case .lifecycle(.deactivate): "\(app) is not active (\(state.rawValue))"
            default: "\(app) is \(state.rawValue): cannot \(operation) it"
            }
        case .exited(let app, let during, let status): "\(app) exited during \(during): \(status.map(\.description) ?? "?")"
        case .didNotExit(let app, let pid, let seconds): "\(app) (pid \(pid)) still has not exited \(ByteFormat.fixed(seconds, 0)) s after SIGKILL"
        case .timedOut(let app, let what, let seconds): "\(app) did not \(what) within \(ByteFormat.fixed(seconds, seconds < 1 ? 1 : 0)) s"
        case .staleTarget(let app, let expected, let current):
            "\(app) is no longer pid \(expected) (\(current.map { "now pid \($0)" } ?? "not running")): nothing signalled"
        case .dying(let app, let pid): "\(app) (pid \(pid)) is already being taken down"
        case .launch(_, let error): "\(error)"
        case .setup(let error): "\(error)"
        case .configuration(let error): "\(error)"
        case .cgroup(let error): "\(error)"
        case .system(let error): "\(error)"
        case .launcherMissing(let path): "mempressure-exec not found at \(path) (build the package; it is started next to mempressure)"
        case .invalidNotificationKind(let kind): "notification kind must be a word: '\(kind)'"
        case .commandFailed(let app, let command, let answer): "\(app) could not \(command): \(answer)"
        case .invalidCommand(let error): "\(error)"
        case .shuttingDown(let verb, let app): "the supervisor is shutting down: \(verb.rawValue)\(app.map { " \($0)" } ?? "") refused"
        case .tooManyApps(let limit): "\(limit) apps are known and none can be forgotten (all are running): forget or terminate one first"
        }
    }

    /// The case's code on the admin socket (`"errorCode"`): what a client switches on.
    public var code: AdminErrorCode {
        switch self {
        case .invalidAppName: .invalidAppName
        case .alreadyRegistered: .alreadyRegistered
        case .noSuchApp: .noSuchApp
        case .wrongState: .wrongState
        case .exited: .exited
        case .didNotExit: .didNotExit
        case .timedOut: .timedOut
        case .staleTarget: .staleTarget
        case .dying: .dying
        case .launch: .launch
        case .setup: .setup
        case .configuration: .configuration
        case .cgroup: .cgroup
        case .system: .system
        case .launcherMissing: .launcherMissing
        case .invalidNotificationKind: .invalidNotificationKind
        case .commandFailed: .commandFailed
        case .invalidCommand: .invalidCommand
        case .shuttingDown: .shuttingDown
        case .tooManyApps: .tooManyApps
        }
    }
}

/// Why the supervisor could not set up its runtime directory or one of its sockets.
public enum SetupError: Error, Sendable, Hashable, CustomStringConvertible {
    /// mkdir, socket, bind, listen, or the thread that accepts connections.
    case system(SystemCallError)
    /// The runtime directory is a link, another user's, or writable by others.
    case runtimeDirectory(RuntimeDirectory.Refusal)
    case socketPathTooLong(String)
    /// Another supervisor, alive, holds the runtime directory (its lock file is locked).
    case busy(directory: String, pid: Int32?)
    /// The guardian (mempressure-guard) could not be started.
    case guardian(String)

    public var description: String {
        switch self {
        case .system(let e): "\(e)"
        case .runtimeDirectory(let r): "\(r)"
        case .socketPathTooLong(let p): "socket path too long: \(p)"
        case .busy(let directory, let pid):
            "another supervisor\(pid.map { " (pid \($0))" } ?? "") is running on \(directory): stop it first, or give another --dir"
        case .guardian(let why): "cannot start the guardian: \(why)"
        }
    }
}

/// Why an app could not be started.
public enum LaunchError: Error, Sendable, Hashable, CustomStringConvertible {
    case noCommand
    case programNotFound(String)
    case notExecutable(String)
    /// posix_spawn of the launcher failed.
    case spawn(launcher: String, Errno)
    /// pidfd_open failed (pidfds need Linux 5.3).
    case pidfd(pid: Int32, Errno)

    public var description: String {
        switch self {
        case .noCommand: "the app has no command"
        case .programNotFound(let p): "cannot launch \(p): no such file"
        case .notExecutable(let p): "cannot launch \(p): not executable (permission denied)"
        case .spawn(let launcher, let e): "cannot start \(launcher): \(e.symbolicName) (\(e))"
        case .pidfd(let pid, let e): "pidfd_open(\(pid)) failed: \(e.symbolicName) (pidfds need Linux 5.3)"
        }
    }
}
