import FoundationEssentials
import Glibc
import MemPressureLifecycleProtocol
import MemPressureSystem
import MemPressureMonitor
import SystemPackage

/// A request on the supervisor's admin socket (`admin.sock` in its runtime directory): one JSON
/// object per line; the answer is one JSON object per line (`AdminResponse`). Only the
/// supervisor's user (or root) may connect.
///
///     any `Command`, in either of its forms        result: the state of the app it names (or null)
///     {"command": "apps"}                          result: [AppReport]
///     {"command": "log"}                           result: [SupervisorEvent]
///     {"command": "status"}                        result: AdminStatus
public enum AdminRequest: Sendable, Hashable, Codable {
    case perform(Command)
    case apps
    case log
    case status

    private enum Key: String, CodingKey { case command }
    private static let queries: [String: AdminRequest] = ["apps": .apps, "log": .log, "status": .status]

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: Key.self)
        if let name = try c.decodeIfPresent(String.self, forKey: .command), let query = Self.queries[name] {
            self = query
        } else {
            self = .perform(try Command(from: decoder))
        }
    }

    public func encode(to encoder: any Encoder) throws {
        switch self {
        case .perform(let command):
            try command.encode(to: encoder)
        case .apps, .log, .status:
            var c = encoder.container(keyedBy: Key.self)
            try c.encode(self == .apps ? "apps" : self == .log ? "log" : "status", forKey: .command)
        }
    }
}

/// One answer: `{"ok": true, "result": ...}` or `{"ok": false, "error": "...", "errorCode": "..."}`:
/// `error` says what went wrong in words, `errorCode` which failure it is, for a program to
/// switch on (`AdminErrorCode`).
public struct AdminResponse<Result: Codable & Sendable>: Codable, Sendable {
    public var ok: Bool
    public var result: Result?
    /// The failure in words (nil when ok).
    public var error: String?
    /// The failure's code (nil when ok; nil too for a code this client does not know, from a
    /// newer supervisor: `error` still says what it is).
    public var errorCode: AdminErrorCode?

    public init(ok: Bool, result: Result? = nil, error: String? = nil, errorCode: AdminErrorCode? = nil) {
        self.ok = ok
        self.result = result
        self.error = error
        self.errorCode = errorCode
    }

    private enum Key: String, CodingKey { case ok, result, error, errorCode }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: Key.self)
        ok = try c.decode(Bool.self, forKey: .ok)
        result = try c.decodeIfPresent(Result.self, forKey: .result)
        error = try c.decodeIfPresent(String.self, forKey: .error)
        errorCode = try c.decodeIfPresent(String.self, forKey: .errorCode).flatMap(AdminErrorCode.init(rawValue:))
    }
}

/// Which failure an admin answer reports (its `"errorCode"`): one code per `SupervisorError`
/// case (`SupervisorError.code`), and two of the admin socket's own. A client tells "already
/// gone" (`exited`, `staleTarget`, `noSuchApp`) from "busy" (`dying`, `shuttingDown`, `timedOut`)
/// by it.
public enum AdminErrorCode: String, Sendable, Hashable, Codable, CaseIterable {
    case invalidAppName, alreadyRegistered, noSuchApp, wrongState, exited, didNotExit, timedOut, staleTarget, dying
    case launch, setup, configuration, cgroup, system, launcherMissing, invalidNotificationKind, commandFailed, invalidCommand, shuttingDown, tooManyApps
    /// The line is not a request: not JSON, or not an object the admin socket knows.
    case notARequest
    /// The answer could not be encoded (its `error` says so; nothing else is known).
    case answerNotEncodable
    /// The supervisor serves its most admin connections already: try again later.
    case tooManyConnections
}

public struct AdminStatus: Sendable, Codable, Hashable {
    public struct App: Sendable, Codable, Hashable {
        public var name: String
        public var state: LifecycleState
        public var pid: Int32?
    }
    public var runtimeDirectory: String
    public var pressureSources: [PressureSourceStatus]
    public var apps: [App]
}

/// The CLI's side of the admin socket.
///
/// It trusts a supervisor of its own user or root only, and checks before it sends anything:
/// the runtime directory must be a directory (not a link) of this user or root that others
/// cannot write in, and the process listening on `admin.sock` (SO_PEERCRED) must run as this
/// user or root. Every call has a deadline (`timeout`): connecting, sending and waiting for
/// the answer together take no longer.
public enum AdminClient {
    /// `$XDG_RUNTIME_DIR/mempressure`, else `/run/mempressure` for root and
    /// `/run/user/UID/mempressure` for anyone else: where `mempressure supervise` runs unless
    /// told otherwise.
    public static var defaultDirectory: String { RuntimeDirectory.defaultPath }

    /// How long a query (`apps`, `log`, `status`) may take, in seconds.
    public static let defaultQueryTimeout = 10.0
    /// How long a command on an app may take, in seconds: it waits for callbacks (a launch
    /// waits up to 10 s for the app to connect and 30 s for didFinishLaunching, a background for
    /// the app's background tasks).
    public static let defaultCommandTimeout = 120.0

    /// The most bytes an answer may have (a longer one is a broken supervisor).
    static let maximumAnswerBytes = 256 << 20

    /// The default timeout of a request: `defaultQueryTimeout` or `defaultCommandTimeout`.
    static func defaultTimeout(for request: AdminRequest) -> Double {
        if case .perform = request { return defaultCommandTimeout }
        return defaultQueryTimeout
    }

    /// Why a request got no answer, or was refused.
    public enum Failure: Error, Sendable, CustomStringConvertible {
        case noSupervisor(path: String, Errno)
        /// This user may not enter the runtime directory or connect to its socket (EACCES,
        /// EPERM): a supervisor of `owner` (when its owner could be read) runs there.
        case permissionDenied(path: String, Errno, owner: UInt32?)
        case system(SystemCallError)
        case pathTooLong(String)
        /// The request could not be encoded (a number JSON cannot hold: an infinite wait).
        case requestNotEncodable(EncodingError)
        case sendFailed(path: String)
        case noAnswer
        /// The supervisor answered that it failed: which failure (`code`, nil when the
        /// supervisor sent none this client knows), and in words.
        case refused(code: AdminErrorCode?, message: String)
        case notAnAnswer(DecodingError)
        /// The runtime directory is not one this client trusts: nothing was sent.
        case untrustedDirectory(RuntimeDirectory.Refusal)
        /// The process listening on the socket runs as another user: nothing was sent.
        case untrustedServer(path: String, uid: UInt32, pid: Int32)
        /// No complete answer within the deadline.
        case timedOut(path: String, seconds: Double)
        /// The answer broke the protocol: longer than `maximumAnswerBytes`, or more than one line.
        case brokenAnswer(String)

        public var description: String {
            switch self {
            case .noSupervisor(let path, let e): "no supervisor at \(path) (\(e.symbolicName)): start one with `mempressure supervise`"
            case .permissionDenied(let path, let e, let owner):
                "permission denied on \(path) (\(e.symbolicName)): "
                    + (owner.map { "it belongs to \(AdminClient.userName($0)), not to this user, \(AdminClient.userName(getuid())): run the command as its user or as root" }
                        ?? "this user, \(AdminClient.userName(getuid())), may not use it: run the command as the supervisor's user or as root")
            case .system(let e): "\(e)"
            case .pathTooLong(let p): "path too long: \(p)"
            case .requestNotEncodable(let e): "cannot encode the request: \(e.plainDescription)"
            case .sendFailed(let p): "could not send to \(p)"
            case .noAnswer: "the supervisor closed the connection without answering"
            case .refused(_, let message): message
            case .notAnAnswer(let e): "the supervisor's answer is not understood: \(e.plainDescription)"
            case .untrustedDirectory(let r): "\(r); nothing sent"
            case .untrustedServer(let path, let uid, let pid):
                "the server at \(path) (pid \(pid)) runs as uid \(uid), not this user (uid \(getuid())) or root: refused, nothing sent"
            case .timedOut(let path, let seconds): "no answer from \(path) within \(ByteFormat.fixed(seconds, seconds < 1 ? 1 : 0)) s (--timeout)"
            case .brokenAnswer(let why): "the supervisor's answer breaks the protocol: \(why)"
            }
        }
    }

    /// Sends one request and returns the answer's JSON (`{"ok": ..., ...}`), within `timeout`
    /// seconds (default: `defaultTimeout(for:)`).
    public static func send(_ request: AdminRequest, directory: String = defaultDirectory, timeout: Double? = nil) throws(Failure) -> [UInt8] {
        let seconds = timeout ?? defaultTimeout(for: request)
        let deadline = monotonicSeconds() + seconds
        let path = "\(directory)/admin.sock"
        // The directory first: a link, another user's directory, or one anybody can write in
        // (where anybody could have put the socket) is not trusted.
        do {
            try RuntimeDirectory.verify(directory, owners: [getuid(), 0], expected: "this user (uid \(getuid())) or root")
        } catch {
            if case .system(let e) = error, e.errno == .noSuchFileOrDirectory { throw .noSupervisor(path: path, e.errno) }
            if case .system(let e) = error, e.errno == .permissionDenied || e.errno == .notPermitted {
                throw .permissionDenied(path: directory, e.errno, owner: ownerUID(directory))
            }
            throw .untrustedDirectory(error)
        }
        let connection: UnixSocket
        do {
            connection = try UnixSocket.connect(to: path, timeout: seconds)
        } catch {
            switch (error.systemCall, error.errno) {
            case ("socket", _): throw .system(error)
            case (_, .fileNameTooLong): throw .pathTooLong(path)
            case ("connect", .resourceTemporarilyUnavailable): throw .timedOut(path: path, seconds: seconds)
            case ("connect", .permissionDenied), ("connect", .notPermitted): throw .permissionDenied(path: path, error.errno, owner: ownerUID(path))
            case (_, let e): throw .noSupervisor(path: path, e)
            }
        }
        defer { connection.close() }
        // Then the server: whoever listens there must be this user or root.
        let server: UnixSocket.PeerCredentials
        do {
            server = try connection.peerCredentials()
        } catch {
            throw .system(error)
        }
        guard server.uid == getuid() || server.uid == 0 else { throw .untrustedServer(path: path, uid: server.uid, pid: server.pid) }
        let fd = connection.descriptor
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        let line: String
        do {
            line = String(decoding: try encoder.encode(request), as: UTF8.self)
        } catch let error as EncodingError {
            throw .requestNotEncodable(error)
        } catch {
            throw .requestNotEncodable(.invalidValue(request, .init(codingPath: [], debugDescription: "\(error)", underlyingError: error)))
        }
        do {
            try UnixSocket.sendAll(Array((line + "\n").utf8), on: fd, deadline: deadline)
        } catch {
            if error.errno == .timedOut { throw .timedOut(path: path, seconds: seconds) }
            throw .sendFailed(path: path)
        }
        var answer: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65536)
        while true {
            let left = deadline - monotonicSeconds()
            guard left > 0 else { throw .timedOut(path: path, seconds: seconds) }
            var p = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            let ready = retryOnInterrupt { poll(&p, 1, Int32(min(left * 1000, 60_000).rounded(.up))) }
            if ready < 0 { throw .system(SystemCallError("poll", errno: Errno(rawValue: errno), subject: path)) }
            if ready == 0 { continue }  // the deadline is checked above
            let n = buffer.withUnsafeMutableBytes { raw in retryOnInterrupt { read(fd, raw.baseAddress!, raw.count) } }
            if n <= 0 { break }
            answer += buffer[0..<n]
            if let end = answer.firstIndex(of: 0x0a) {
                guard end == answer.count - 1 else { throw .brokenAnswer("more than one line") }
                break
            }
            guard answer.count <= maximumAnswerBytes else { throw .brokenAnswer("longer than \(maximumAnswerBytes) bytes") }
        }
        guard !answer.isEmpty else { throw .noAnswer }
        return answer
    }

    /// The owner of the file at `path` itself (a link is not followed), if it can be read.
    static func ownerUID(_ path: String) -> UInt32? {
        var st = stat()
        return lstat(path, &st) == 0 ? st.st_uid : nil
    }

    /// "uid 0 (root)": a user id and, when the user database has it, its name.
    static func userName(_ uid: UInt32) -> String {
        var entry = passwd()
        var result: UnsafeMutablePointer<passwd>?
        var buffer = [CChar](repeating: 0, count: 4096)
        guard getpwuid_r(uid, &entry, &buffer, buffer.count, &result) == 0, result != nil, let name = entry.pw_name else { return "uid \(uid)" }
        return "uid \(uid) (\(printableText(String(cString: name))))"
    }

    /// Sends one request and decodes its result (nil when the command has none).
    public static func call<Result: Codable & Sendable>(
        _ request: AdminRequest, as: Result.Type, directory: String = defaultDirectory, timeout: Double? = nil
    ) throws(Failure) -> Result? {
        let answer = try send(request, directory: directory, timeout: timeout)
        let response: AdminResponse<Result>
        do {
            response = try JSONInput.decode(AdminResponse<Result>.self, from: Data(answer))
        } catch let error as DecodingError {
            throw .notAnAnswer(error)
        } catch {
            throw .notAnAnswer(.dataCorrupted(.init(codingPath: [], debugDescription: "\(error)", underlyingError: error)))
        }
        guard response.ok else { throw .refused(code: response.errorCode, message: response.error ?? "the supervisor refused") }
        return response.result
    }
}
