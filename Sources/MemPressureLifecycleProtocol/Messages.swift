/// The control channel's message format.
///
/// One message per line: UTF-8 text, fields separated by single spaces, a line feed at the end,
/// at most `maximumLineBytes` bytes. The first word names the message; unknown messages and
/// malformed fields are protocol errors, which close the connection (the app keeps running,
/// without callbacks). A process may speak for an app only if it *is* the process the supervisor
/// launched (its PID, from SO_PEERCRED, and the token the supervisor put in its environment).
///
/// App to supervisor:
///
///     hello 1 APP TOKEN              first line: protocol version 1, the app's name, its token
///     ack CALLBACK                   the app ran CALLBACK (didFinishLaunching, ...)
///     ready                          the app is interactive (after launch, after resume)
///     task-begin ID TID NAME         a background task began on thread TID
///     task-end ID                    the task ended
///     expired ID                     the task's expiration handler ran
///     notified KIND                  a coalesced notification was handled
///     stack FRAME                    one frame of a requested call stack, innermost first
///     stack-end                      the end of that stack
///     done ID RESULT                 the app command ID was carried out; RESULT is the rest
///                                    of the line (may be empty)
///
/// Supervisor to app:
///
///     welcome 1                      accepted
///     callback CALLBACK              run CALLBACK, then ack it
///     notification KIND COUNT VALUE  KIND changed COUNT times while the app was suspended (or
///                                    once, now); VALUE is the latest (rest of the line)
///     expire ID                      run the expiration handler of task ID
///     report-stack TID               send the call stack of thread TID (stack ... stack-end)
///     command ID TEXT                an app-defined command (the model app's `allocate N`,
///                                    `release N`), answered with `done ID RESULT`
public enum ControlProtocol {
    public static let version = 1
    public static let maximumLineBytes = 4096
    /// The environment variables a supervised process finds its supervisor by.
    public static let socketVariable = "MEMPRESSURE_SOCKET"
    public static let appVariable = "MEMPRESSURE_APP"
    public static let tokenVariable = "MEMPRESSURE_TOKEN"

    /// A word of 1 to 128 letters, digits, '.', '-' or '_': app names, tokens, notification kinds.
    package static func isToken(_ s: Substring) -> Bool {
        !s.isEmpty && s.utf8.count <= 128 && s.utf8.allSatisfy { c in
            (c >= 0x30 && c <= 0x39) || (c >= 0x41 && c <= 0x5a) || (c >= 0x61 && c <= 0x7a) || c == 0x2d || c == 0x5f || c == 0x2e
        }
    }

    /// The longest app name, in bytes.
    public static let maximumAppNameBytes = 64

    /// Whether `s` may name an app: 1 to 64 letters, digits, '.', '-' or '_', not starting with
    /// '.' or '-' (so never `.` or `..`, nor a name an option parser or a path would misread).
    /// An app's name becomes a cgroup's and a file's name.
    public static func isAppName(_ s: Substring) -> Bool {
        guard let first = s.utf8.first, first != 0x2e, first != 0x2d, s.utf8.count <= maximumAppNameBytes else { return false }
        return isToken(s)
    }

    /// What an app name must be, in words (for error messages).
    public static let appNameRule = "1 to 64 letters, digits, '.', '-' or '_', not starting with '.' or '-'"

    /// A decimal number of at most 18 digits (so it fits an Int), not negative.
    static func integer(_ s: Substring, _ field: String) throws(ProtocolError) -> Int {
        guard s.utf8.count <= 18, let v = Int(s), v >= 0 else { throw .notANonNegativeInteger(field: field, text: String(s.prefix(40))) }
        return v
    }

    static func threadID(_ s: Substring) throws(ProtocolError) -> Int32 {
        let tid = try integer(s, "thread id")
        guard tid <= Int(Int32.max) else { throw .outOfRange(field: "thread id") }
        return Int32(tid)
    }
}

/// A message from an app.
public enum AppMessage: Sendable, Hashable {
    case hello(version: Int, app: String, token: String)
    case ack(LifecycleCallback)
    case ready
    case taskBegin(id: Int, tid: Int32, name: String)
    case taskEnd(id: Int)
    case expired(id: Int)
    case notified(kind: String)
    case stackFrame(String)
    case stackEnd
    case done(id: Int, result: String)

    public var line: String {
        switch self {
        case .hello(let v, let app, let token): "hello \(v) \(app) \(token)"
        case .ack(let c): "ack \(c.rawValue)"
        case .ready: "ready"
        case .taskBegin(let id, let tid, let name): "task-begin \(id) \(tid) \(name)"
        case .taskEnd(let id): "task-end \(id)"
        case .expired(let id): "expired \(id)"
        case .notified(let kind): "notified \(kind)"
        case .stackFrame(let f): "stack \(f)"
        case .stackEnd: "stack-end"
        case .done(let id, let result): "done \(id) \(result)"
        }
    }

    public static func parse(_ line: Substring) throws(ProtocolError) -> AppMessage {
        let words = line.split(separator: " ", maxSplits: 3, omittingEmptySubsequences: false)
        guard let verb = words.first else { throw .emptyLine }
        func argc(_ n: Int) throws(ProtocolError) {
            guard words.count - 1 >= n else { throw .missingArguments(verb: String(verb.prefix(40)), count: n) }
        }
        switch verb {
        case "hello":
            try argc(3)
            let v = try ControlProtocol.integer(words[1], "version")
            guard ControlProtocol.isToken(words[2]), ControlProtocol.isToken(words[3]) else { throw .notAWord(field: "app name or token in hello") }
            return .hello(version: v, app: String(words[2]), token: String(words[3]))
        case "ack":
            try argc(1)
            guard words.count == 2, let c = LifecycleCallback(rawValue: String(words[1])) else { throw .unknownCallback(String(words[1].prefix(40))) }
            return .ack(c)
        case "ready":
            guard words.count == 1 else { throw .unexpectedArguments(verb: "ready") }
            return .ready
        case "task-begin":
            try argc(3)
            let id = try ControlProtocol.integer(words[1], "task id")
            let tid = try ControlProtocol.threadID(words[2])
            return .taskBegin(id: id, tid: tid, name: String(words[3].prefix(200)))
        case "task-end":
            try argc(1)
            return .taskEnd(id: try ControlProtocol.integer(words[1], "task id"))
        case "expired":
            try argc(1)
            return .expired(id: try ControlProtocol.integer(words[1], "task id"))
        case "notified":
            try argc(1)
            guard words.count == 2, ControlProtocol.isToken(words[1]) else { throw .notAWord(field: "notification kind") }
            return .notified(kind: String(words[1]))
        case "stack":
            try argc(1)
            return .stackFrame(String(line.dropFirst(6)))
        case "stack-end":
            return .stackEnd
        case "done":
            try argc(1)
            let id = try ControlProtocol.integer(words[1], "command id")
            let result = line.split(separator: " ", maxSplits: 2, omittingEmptySubsequences: false).dropFirst(2).first ?? ""
            return .done(id: id, result: String(result.prefix(1024)))
        default:
            throw .unknownMessage(String(verb.prefix(40)))
        }
    }
}

/// A message from the supervisor.
public enum SupervisorMessage: Sendable, Hashable {
    case welcome(version: Int)
    case callback(LifecycleCallback)
    case notification(kind: String, count: Int, value: String)
    case expire(id: Int)
    case reportStack(tid: Int32)
    case command(id: Int, text: String)

    public var line: String {
        switch self {
        case .welcome(let v): "welcome \(v)"
        case .callback(let c): "callback \(c.rawValue)"
        case .notification(let kind, let count, let value): "notification \(kind) \(count) \(value)"
        case .expire(let id): "expire \(id)"
        case .reportStack(let tid): "report-stack \(tid)"
        case .command(let id, let text): "command \(id) \(text)"
        }
    }

    public static func parse(_ line: Substring) throws(ProtocolError) -> SupervisorMessage {
        let words = line.split(separator: " ", maxSplits: 3, omittingEmptySubsequences: false)
        guard let verb = words.first else { throw .emptyLine }
        switch verb {
        case "welcome" where words.count == 2:
            return .welcome(version: try ControlProtocol.integer(words[1], "version"))
        case "callback" where words.count == 2:
            guard let c = LifecycleCallback(rawValue: String(words[1])) else { throw .unknownCallback(String(words[1].prefix(40))) }
            return .callback(c)
        case "notification" where words.count >= 3:
            return .notification(
                kind: String(words[1]), count: try ControlProtocol.integer(words[2], "count"),
                value: words.count > 3 ? String(words[3]) : "")
        case "expire" where words.count == 2:
            return .expire(id: try ControlProtocol.integer(words[1], "task id"))
        case "report-stack" where words.count == 2:
            return .reportStack(tid: try ControlProtocol.threadID(words[1]))
        case "command" where words.count >= 3:
            let id = try ControlProtocol.integer(words[1], "command id")
            return .command(id: id, text: String(line.split(separator: " ", maxSplits: 2, omittingEmptySubsequences: false)[2]))
        default:
            throw .unknownMessage(String(line.prefix(60)))
        }
    }
}
