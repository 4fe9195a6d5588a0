/// The lifecycle states of an app, as on iOS.
public enum LifecycleState: String, Sendable, Hashable, Codable, CaseIterable {
    case notRunning
    /// In the foreground but not receiving events (launching, or interrupted).
    case inactive
    /// In the foreground and receiving events.
    case active
    /// In the background and executing (finishing didEnterBackground, or a background task).
    case backgroundRunning
    /// In the background, resident but not executing (stopped or frozen).
    case suspended

    /// Whether the app's code runs in this state.
    public var isRunning: Bool { self == .inactive || self == .active || self == .backgroundRunning }
}

/// The callbacks an app receives, as UIApplicationDelegate named them.
public enum LifecycleCallback: String, Sendable, Hashable, Codable, CaseIterable {
    case didFinishLaunching
    case willResignActive
    case didEnterBackground
    case willEnterForeground
    case didBecomeActive
    case willTerminate
    case didReceiveMemoryWarning
}

/// Why a line on the control channel was refused.
public struct ProtocolError: Error, Sendable, Hashable, CustomStringConvertible {
    public var reason: String
    public init(_ reason: String) { self.reason = reason }
    public var description: String { reason }
}

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
///
/// Supervisor to app:
///
///     welcome 1                      accepted
///     callback CALLBACK              run CALLBACK, then ack it
///     notification KIND COUNT VALUE  KIND changed COUNT times while the app was suspended (or
///                                    once, now); VALUE is the latest (rest of the line)
///     expire ID                      run the expiration handler of task ID
///     report-stack TID               send the call stack of thread TID (stack ... stack-end)
public enum ControlProtocol {
    public static let version = 1
    public static let maximumLineBytes = 4096

    static func isToken(_ s: Substring) -> Bool {
        !s.isEmpty && s.utf8.count <= 128 && s.utf8.allSatisfy { c in
            (c >= 0x30 && c <= 0x39) || (c >= 0x41 && c <= 0x5a) || (c >= 0x61 && c <= 0x7a) || c == 0x2d || c == 0x5f || c == 0x2e
        }
    }

    static func integer(_ s: Substring, _ what: String) throws(ProtocolError) -> Int {
        guard s.utf8.count <= 18, let v = Int(s), v >= 0 else { throw ProtocolError("\(what) is not a non-negative integer: '\(s.prefix(40))'") }
        return v
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
        }
    }

    public static func parse(_ line: Substring) throws(ProtocolError) -> AppMessage {
        let words = line.split(separator: " ", maxSplits: 3, omittingEmptySubsequences: false)
        guard let verb = words.first else { throw ProtocolError("empty line") }
        func argc(_ n: Int) throws(ProtocolError) {
            guard words.count - 1 >= n else { throw ProtocolError("'\(verb.prefix(40))' needs \(n) argument(s)") }
        }
        switch verb {
        case "hello":
            try argc(3)
            let v = try ControlProtocol.integer(words[1], "version")
            guard ControlProtocol.isToken(words[2]), ControlProtocol.isToken(words[3]) else { throw ProtocolError("bad app name or token in hello") }
            return .hello(version: v, app: String(words[2]), token: String(words[3]))
        case "ack":
            try argc(1)
            guard words.count == 2, let c = LifecycleCallback(rawValue: String(words[1])) else {
                throw ProtocolError("unknown callback '\(words[1].prefix(40))'")
            }
            return .ack(c)
        case "ready":
            guard words.count == 1 else { throw ProtocolError("'ready' takes no argument") }
            return .ready
        case "task-begin":
            try argc(3)
            let id = try ControlProtocol.integer(words[1], "task id")
            let tid = try ControlProtocol.integer(words[2], "thread id")
            guard tid <= Int(Int32.max) else { throw ProtocolError("thread id out of range") }
            return .taskBegin(id: id, tid: Int32(tid), name: String(words[3].prefix(200)))
        case "task-end":
            try argc(1)
            return .taskEnd(id: try ControlProtocol.integer(words[1], "task id"))
        case "expired":
            try argc(1)
            return .expired(id: try ControlProtocol.integer(words[1], "task id"))
        case "notified":
            try argc(1)
            guard words.count == 2, ControlProtocol.isToken(words[1]) else { throw ProtocolError("bad notification kind") }
            return .notified(kind: String(words[1]))
        case "stack":
            try argc(1)
            return .stackFrame(String(line.dropFirst(6)))
        case "stack-end":
            return .stackEnd
        default:
            throw ProtocolError("unknown message '\(verb.prefix(40))'")
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

    public var line: String {
        switch self {
        case .welcome(let v): "welcome \(v)"
        case .callback(let c): "callback \(c.rawValue)"
        case .notification(let kind, let count, let value): "notification \(kind) \(count) \(value)"
        case .expire(let id): "expire \(id)"
        case .reportStack(let tid): "report-stack \(tid)"
        }
    }

    public static func parse(_ line: Substring) throws(ProtocolError) -> SupervisorMessage {
        let words = line.split(separator: " ", maxSplits: 3, omittingEmptySubsequences: false)
        guard let verb = words.first else { throw ProtocolError("empty line") }
        switch verb {
        case "welcome" where words.count == 2:
            return .welcome(version: try ControlProtocol.integer(words[1], "version"))
        case "callback" where words.count == 2:
            guard let c = LifecycleCallback(rawValue: String(words[1])) else { throw ProtocolError("unknown callback '\(words[1].prefix(40))'") }
            return .callback(c)
        case "notification" where words.count >= 3:
            return .notification(
                kind: String(words[1]), count: try ControlProtocol.integer(words[2], "count"),
                value: words.count > 3 ? String(words[3]) : "")
        case "expire" where words.count == 2:
            return .expire(id: try ControlProtocol.integer(words[1], "task id"))
        case "report-stack" where words.count == 2:
            let tid = try ControlProtocol.integer(words[1], "thread id")
            guard tid <= Int(Int32.max) else { throw ProtocolError("thread id out of range") }
            return .reportStack(tid: Int32(tid))
        default:
            throw ProtocolError("unknown or malformed message '\(line.prefix(60))'")
        }
    }
}

/// Splits a byte stream into lines, refusing over-long ones and non-UTF-8 text.
struct LineSplitter {
    private var pending: [UInt8] = []
    /// Drops bytes up to the next line feed (after an error, to resynchronize).
    private var skipping = false

    init(skippingToNextLine: Bool = false) {
        skipping = skippingToNextLine
    }

    /// Appends `bytes` and returns the complete lines (without the line feed). Throws on a line
    /// longer than the limit, a NUL, or invalid UTF-8.
    mutating func feed(_ bytes: UnsafeRawBufferPointer) throws(ProtocolError) -> [Substring] {
        var lines: [Substring] = []
        for b in bytes {
            if skipping {
                if b == 0x0a { skipping = false }
                continue
            }
            if b == 0x0a {
                guard let text = String(validating: pending, as: UTF8.self) else {
                    throw ProtocolError("a line that is not UTF-8 text")
                }
                lines.append(Substring(text))
                pending.removeAll(keepingCapacity: true)
            } else {
                if b == 0 { throw ProtocolError("a NUL byte") }
                pending.append(b)
                if pending.count > ControlProtocol.maximumLineBytes {
                    throw ProtocolError("a line longer than \(ControlProtocol.maximumLineBytes) bytes")
                }
            }
        }
        return lines
    }
}
