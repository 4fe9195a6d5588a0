import MemPressureLifecycleProtocol
import MemPressureSystem
import MemPressureWorkloadProtocol

/// One thing to do with the supervisor's apps: what the CLI (`mempressure app VERB`), the admin
/// socket and scenario steps all decode, and `Supervisor.perform` carries out.
///
/// It decodes from either of two JSON forms, the same command either way:
///
///     {"launch": "A"}                                     a scenario step: the verb names the app
///     {"command": "launch", "app": "A"}                   an admin request
///
/// Steps and their arguments (admin form: `"command": VERB`, the app in `"app"`):
///
///     {"register": "A", "argv": [...], "client": false, "environment": {...}}
///     {"launch": "A"}        (admin: with "argv", registers the app on first use)
///     {"activate": "A"}  {"deactivate": "A"}  {"terminate": "A"}  {"relaunch": "A"}
///     {"background": "A"}    {"background": "A", "wait": false}: return once didEnterBackground
///                            was delivered; the app suspends when its background tasks end
///     {"warn": "running" | "all" | "A"}                  (admin: no app warns every running app)
///     {"notify": "all" | "A", "kind": "localeChanged", "value": "fr_FR"}
///     {"wait": 1.5}                                       seconds (admin: "seconds")
///     {"waitReady": "A", "count": 2, "timeout": 60}
///     {"waitState": "A", "state": "suspended", "timeout": 60}
///     {"allocate": "A", "bytes": 33554432}                the model app grows its dirty memory
///     {"release": "A", "bytes": 33554432}                 ... or shrinks it
///     {"forget": "A"}                                     an app not running: its record goes
public enum Command: Sendable, Hashable {
    case register(AppSpec)
    /// `registering`: the spec to register first when no app of that name exists (admin `launch`
    /// with argv).
    case launch(String, registering: AppSpec?)
    case activate(String)
    case deactivate(String)
    case background(String, waitForSuspension: Bool)
    case terminate(String)
    case relaunch(String)
    case warn(Supervisor.Target)
    case notify(Supervisor.Target, kind: String, value: String)
    case wait(seconds: Double)
    case waitReady(String, count: Int?, timeout: Double?)
    case waitState(String, LifecycleState, timeout: Double?)
    case allocate(String, bytes: Int)
    case release(String, bytes: Int)
    /// Forgets an app that is not running: its record, accounting and metrics go.
    case forget(String)

    /// The verbs of the command vocabulary, as JSON and the CLI spell them: what a user, an
    /// admin client or a scenario can ask for. Not the same thing as `LifecycleVerb`, the state
    /// machine's inputs: six of these verbs are lifecycle commands (`init(_:)` names them), the
    /// others register apps, warn, notify, wait, or send app commands, and never reach
    /// `LifecycleMachine`.
    public enum Verb: String, Sendable, Hashable, Codable, CaseIterable {
        case register, launch, activate, deactivate, background, terminate, relaunch, warn, notify, wait, waitReady, waitState, allocate, release
        case forget

        /// The verbs whose argument is the app they act on (every one but wait; warn and notify
        /// may name all apps).
        public var takesApp: Bool { self != .wait }

        /// The command verb of a lifecycle command.
        public init(_ verb: LifecycleVerb) {
            switch verb {
            case .launch: self = .launch
            case .activate: self = .activate
            case .deactivate: self = .deactivate
            case .background: self = .background
            case .terminate: self = .terminate
            case .relaunch: self = .relaunch
            }
        }
    }

    public var verb: Verb {
        switch self {
        case .register: .register
        case .launch: .launch
        case .activate: .activate
        case .deactivate: .deactivate
        case .background: .background
        case .terminate: .terminate
        case .relaunch: .relaunch
        case .warn: .warn
        case .notify: .notify
        case .wait: .wait
        case .waitReady: .waitReady
        case .waitState: .waitState
        case .allocate: .allocate
        case .release: .release
        case .forget: .forget
        }
    }

    /// The app the command names (nil: none, or all apps).
    public var app: String? {
        switch self {
        case .register(let spec): spec.name
        case .launch(let a, _), .activate(let a), .deactivate(let a), .background(let a, _), .terminate(let a), .relaunch(let a),
            .waitReady(let a, _, _), .waitState(let a, _, _), .allocate(let a, _), .release(let a, _), .forget(let a):
            a
        case .warn(let t), .notify(let t, _, _):
            if case .app(let a) = t { a } else { nil }
        case .wait:
            nil
        }
    }

    /// Checks what decoding cannot: numbers in range. (Whether the app exists is checked when the
    /// command is performed, or by a scenario against its apps.)
    public func validate() throws(CommandError) {
        switch self {
        case .wait(let s):
            guard s >= 0, s.isFinite, s <= Seconds.maximum else { throw .waitOutOfRange(s) }
        case .waitReady(_, let count, let timeout):
            if let count, count < 1 { throw .countBelowOne(count) }
            try Self.check(timeout)
        case .waitState(_, _, let timeout):
            try Self.check(timeout)
        case .allocate(_, let bytes), .release(_, let bytes):
            guard bytes > 0 else { throw .nonPositiveBytes(verb, bytes) }
        case .notify(_, let kind, _):
            guard !kind.isEmpty else { throw .missingKind }
        case .register(let spec), .launch(_, registering: .some(let spec)):
            try spec.validate()
        default:
            break
        }
        // Every name a command gives is checked where it enters (an admin request, a scenario
        // step, the CLI), before it can reach a path or a cgroup.
        if let name = app, !ControlProtocol.isAppName(Substring(name)) { throw .invalidAppName(name) }
    }

    private static func check(_ timeout: Double?) throws(CommandError) {
        if let t = timeout, !(t > 0 && t <= Seconds.maximum) { throw .timeoutOutOfRange(t) }
    }
}

/// Why a command could not be decoded, or is invalid as given. The decoding cases name what is
/// missing or wrong; a field of the wrong JSON type is the decoder's own `DecodingError`.
public enum CommandError: Error, Sendable, Hashable, CustomStringConvertible {
    /// `wait`: seconds below 0, not finite, or above `Seconds.maximum`.
    case waitOutOfRange(Double)
    /// `waitReady`: a count below 1.
    case countBelowOne(Int)
    /// A timeout not above 0, or above `Seconds.maximum`.
    case timeoutOutOfRange(Double)
    /// `allocate` or `release` of no bytes, or fewer.
    case nonPositiveBytes(Command.Verb, Int)
    /// `notify` without a kind.
    case missingKind
    /// An app registered with an empty command.
    case emptyCommand(app: String)
    /// An app name that is not `ControlProtocol.isAppName`.
    case invalidAppName(String)
    /// A NUL byte in the program, an argument (`field` says which) or an environment value:
    /// exec would cut it short there.
    case nulByte(app: String, field: String)
    /// An environment variable's name that is empty or holds '=' or NUL.
    case invalidEnvironmentName(app: String, String)
    /// The admin form's `"command"` is no verb (its first 40 characters).
    case unknownCommand(String)
    /// The step form names no verb, or more than one (those it names).
    case actionCount([Command.Verb])
    /// The verb needs a field the command lacks.
    case missingField(Command.Verb, Field)
    /// `notify` names "running" (it takes "all" or an app).
    case notifyRunning
    /// A readiness probe for an app with the client (`"client": false` is needed: a client
    /// reports ready itself).
    case probeForClient(app: String)
    /// A readiness probe's `interval` or `timeout` out of range (not finite, below 0, a timeout
    /// of 0, or above `Seconds.maximum`).
    case probeDurationOutOfRange(app: String, String)

    /// A field a verb needs.
    public enum Field: String, Sendable, Hashable {
        /// The app (`"app"` in the admin form; the verb's value in the step form).
        case app
        case argv
        case state
        case bytes
    }

    public var description: String {
        switch self {
        case .waitOutOfRange: "wait must be a non-negative number of seconds"
        case .countBelowOne: "waitReady's count must be at least 1"
        case .timeoutOutOfRange: "timeout must be a number of seconds above 0 and at most \(Int(Seconds.maximum))"
        case .nonPositiveBytes(let verb, _): "\(verb.rawValue) needs a positive number of bytes"
        case .missingKind: "notify needs a kind"
        case .emptyCommand(let app): "app \(app) has an empty command"
        case .invalidAppName(let name): "app name \(String(reflecting: name)) is not valid: \(ControlProtocol.appNameRule)"
        case .nulByte(let app, let field): "app \(app): its \(field) holds a NUL byte (it cannot be passed to a program)"
        case .invalidEnvironmentName(let app, let key): "app \(app): environment variable name \(String(reflecting: key)) is empty or holds '=' or NUL"
        case .unknownCommand(let name): "unknown command '\(name)'"
        case .actionCount(let present):
            "needs exactly one action (\(Command.Verb.allCases.filter { $0 != .register }.map(\.rawValue).joined(separator: ", "))), has "
                + (present.isEmpty ? "none" : present.map(\.rawValue).joined(separator: ", "))
        case .missingField(let verb, .app): "'\(verb.rawValue)' needs an app"
        case .missingField(let verb, .state): "\(verb.rawValue) needs a state"
        case .missingField(let verb, let field): "\(verb.rawValue) needs \(field.rawValue)"
        case .notifyRunning: "notify takes \"all\" or an app"
        case .probeForClient(let app): "app \(app): a readiness probe is for a program without the client (\"client\": false); a client reports ready itself"
        case .probeDurationOutOfRange(let app, let field): "app \(app): the readiness probe's \(field) must be a number of seconds from 0 to a day (a timeout above 0)"
        }
    }
}

extension Command: Codable {
    private enum Key: String, CodingKey, CaseIterable {
        case command, app, argv, client, environment, memoryWarning, ready, kind, value, seconds, count, timeout, state, wait, bytes
        case register, launch, activate, deactivate, background, terminate, relaunch, warn, notify, waitReady, waitState, allocate, release
        case forget
    }

    public init(from decoder: any Decoder) throws {
        try UnknownKeys.refuse(in: decoder, known: Key.self, what: "a command")
        let c = try decoder.container(keyedBy: Key.self)
        func target(_ text: String?) -> Supervisor.Target {
            guard let text, text != "all", text != "running" else { return .all }
            return .app(text)
        }
        let verb: Verb
        var app: String?
        if c.contains(.command) {
            // The admin form.
            let name = try c.decode(String.self, forKey: .command)
            guard let v = Verb(rawValue: name) else { throw CommandError.unknownCommand(String(name.prefix(40))) }
            verb = v
            app = try c.decodeIfPresent(String.self, forKey: .app)
        } else {
            // The step form: exactly one verb key. ("wait" is a verb unless it qualifies background.)
            var present = Verb.allCases.filter { v in
                guard let key = Key(rawValue: v.rawValue) else { return false }
                return c.contains(key)
            }
            if present.contains(.background) { present.removeAll { $0 == .wait } }
            guard present.count == 1, let v = present.first else { throw CommandError.actionCount(present) }
            verb = v
            if v != .wait { app = try c.decode(String.self, forKey: Key(rawValue: v.rawValue)!) }
        }
        func named() throws -> String {
            guard let app else { throw CommandError.missingField(verb, .app) }
            return app
        }
        func spec() throws -> AppSpec? {
            guard let argv = try c.decodeIfPresent([String].self, forKey: .argv), !argv.isEmpty else { return nil }
            return AppSpec(
                name: try named(), command: argv, environment: try c.decodeIfPresent([String: String].self, forKey: .environment),
                client: try c.decodeIfPresent(Bool.self, forKey: .client),
                memoryWarning: try c.decodeIfPresent(MemoryWarningAction.self, forKey: .memoryWarning),
                ready: try c.decodeIfPresent(ReadinessProbe.self, forKey: .ready))
        }
        switch verb {
        case .register:
            guard let s = try spec() else { throw CommandError.missingField(verb, .argv) }
            self = .register(s)
        case .launch: self = .launch(try named(), registering: try spec())
        case .activate: self = .activate(try named())
        case .deactivate: self = .deactivate(try named())
        case .background: self = .background(try named(), waitForSuspension: try c.decodeIfPresent(Bool.self, forKey: .wait) ?? true)
        case .terminate: self = .terminate(try named())
        case .relaunch: self = .relaunch(try named())
        case .warn: self = .warn(target(app))
        case .notify:
            if app == "running" { throw CommandError.notifyRunning }
            self = .notify(target(app), kind: try c.decodeIfPresent(String.self, forKey: .kind) ?? "", value: try c.decodeIfPresent(String.self, forKey: .value) ?? "")
        case .wait:
            let key: Key = c.contains(.seconds) ? .seconds : .wait
            self = .wait(seconds: try c.decode(Double.self, forKey: key))
        case .waitReady:
            self = .waitReady(try named(), count: try c.decodeIfPresent(Int.self, forKey: .count), timeout: try c.decodeIfPresent(Double.self, forKey: .timeout))
        case .waitState:
            guard let state = try c.decodeIfPresent(LifecycleState.self, forKey: .state) else { throw CommandError.missingField(verb, .state) }
            self = .waitState(try named(), state, timeout: try c.decodeIfPresent(Double.self, forKey: .timeout))
        case .allocate, .release:
            guard let bytes = try c.decodeIfPresent(Int.self, forKey: .bytes) else { throw CommandError.missingField(verb, .bytes) }
            self = verb == .allocate ? .allocate(try named(), bytes: bytes) : .release(try named(), bytes: bytes)
        case .forget: self = .forget(try named())
        }
    }

    /// Encodes the admin form.
    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: Key.self)
        try c.encode(verb.rawValue, forKey: .command)
        try c.encodeIfPresent(app, forKey: .app)
        switch self {
        case .register(let s), .launch(_, registering: .some(let s)):
            try c.encode(s.command, forKey: .argv)
            try c.encodeIfPresent(s.client, forKey: .client)
            try c.encodeIfPresent(s.environment, forKey: .environment)
            try c.encodeIfPresent(s.memoryWarning, forKey: .memoryWarning)
            try c.encodeIfPresent(s.ready, forKey: .ready)
        case .background(_, let wait):
            if !wait { try c.encode(false, forKey: .wait) }
        case .notify(_, let kind, let value):
            try c.encode(kind, forKey: .kind)
            try c.encode(value, forKey: .value)
        case .wait(let s):
            try c.encode(s, forKey: .seconds)
        case .waitReady(_, let count, let timeout):
            try c.encodeIfPresent(count, forKey: .count)
            try c.encodeIfPresent(timeout, forKey: .timeout)
        case .waitState(_, let state, let timeout):
            try c.encode(state, forKey: .state)
            try c.encodeIfPresent(timeout, forKey: .timeout)
        case .allocate(_, let bytes), .release(_, let bytes):
            try c.encode(bytes, forKey: .bytes)
        case .launch, .activate, .deactivate, .terminate, .relaunch, .warn, .forget:
            break
        }
    }
}

extension Supervisor {
    /// Carries out one command. Returns the state of the app it names afterwards (nil when it
    /// names none, or all apps).
    @discardableResult
    public func perform(_ command: Command) async throws(SupervisorError) -> LifecycleState? {
        // Once shutdown has begun, nothing new starts.
        guard !isStopping else { throw .shuttingDown(refused: command.verb, app: command.app) }
        do {
            try command.validate()
        } catch {
            throw .invalidCommand(error)
        }
        switch command {
        case .register(let spec):
            try register(spec)
        case .launch(let name, let spec):
            if let spec {
                // A known app launched with another command runs that command from now on
                // (a running one is refused by the launch itself: it is already running).
                if isRegistered(name) { try replaceSpec(spec) } else { try register(spec) }
            }
            try await launch(name)
        case .activate(let name): try await activate(name)
        case .deactivate(let name): try await deactivate(name)
        case .background(let name, let wait): try await background(name, waitForSuspension: wait)
        case .terminate(let name): try await terminate(name)
        case .relaunch(let name): try await relaunch(name)
        case .warn(let target): await warn(target)
        case .notify(let target, let kind, let value): try await notify(target, kind: kind, value: value)
        case .wait(let seconds):
            do {
                try await Task.sleep(for: Seconds.duration(seconds))
            } catch {
                return nil  // cancelled (the supervisor is shutting down): the wait is over
            }
        case .waitReady(let name, let count, let timeout):
            try await waitForReady(name, count: count ?? 1, timeout: timeout ?? 60)
        case .waitState(let name, let state, let timeout):
            try await waitForState(name, state, timeout: timeout ?? 60)
        case .allocate(let name, let bytes):
            _ = try await self.command(name, WorkloadCommand.allocate(bytes: bytes).line)
        case .release(let name, let bytes):
            _ = try await self.command(name, WorkloadCommand.release(bytes: bytes).line)
        case .forget(let name):
            try forget(name)
            return nil
        }
        return command.app.flatMap { records[$0]?.state }
    }
}
