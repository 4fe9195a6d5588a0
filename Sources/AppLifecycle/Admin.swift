import FoundationEssentials
import Glibc
import LifecycleProtocol
import LinuxSystem
import Pressure
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
    case launch, setup, configuration, cgroup, system, launcherMissing, invalidNotificationKind, commandFailed, invalidCommand, shuttingDown
    /// The line is not a request: not JSON, or not an object the admin socket knows.
    case notARequest
    /// The answer could not be encoded (its `error` says so; nothing else is known).
    case answerNotEncodable
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

extension Supervisor {
    /// Opens the admin socket; the supervisor serves requests on it until shutdown.
    public func serveAdmin() throws(SupervisorError) {
        guard admin == nil else { return }
        let events = self.adminEvents
        do {
            admin = try ControlSocket(directory: runtimeDirectory, name: "admin.sock") { events.yield($0) }
        } catch {
            throw .setup(error)
        }
    }

    /// The admin socket's path (nil until `serveAdmin()`).
    public var adminSocketPath: String? { admin?.path }

    /// The most requests one admin connection may have waiting for their answers.
    static let maximumPendingAdminRequests = 64

    func handleAdmin(_ event: SocketEvent) {
        switch event {
        case .accepted(let fd, let peer):
            guard phase != .closed else {
                close(fd)
                return
            }
            guard peer.uid == getuid() || peer.uid == 0 else {
                record(SupervisorEvent(t: now(), pid: peer.pid, kind: .impostor, detail: "admin connection from uid \(peer.uid) refused"))
                close(fd)
                return
            }
            adminConnections[fd] = AdminConnection()
            admin?.startReading(fd)
        case .lines(let fd, let lines):
            guard var c = adminConnections[fd], !c.closed else { return }
            guard c.pending.count + lines.count <= Self.maximumPendingAdminRequests else {
                record(SupervisorEvent(t: now(), kind: .protocol, detail: "admin client sent more than \(Self.maximumPendingAdminRequests) requests without waiting for answers: disconnected"))
                adminConnections[fd]?.pending = []
                ControlSocket.disconnect(fd)
                return
            }
            c.pending += lines
            let start = !c.busy
            c.busy = true
            adminConnections[fd] = c
            if start { Task { await self.serveAdminConnection(fd) } }
        case .closed(let fd, _):
            guard adminConnections[fd] != nil else {
                close(fd)
                return
            }
            adminConnections[fd]?.closed = true
            if adminConnections[fd]?.busy == false {
                adminConnections.removeValue(forKey: fd)
                close(fd)
                connectionClosed()
            }
        }
    }

    /// Answers the connection's requests in order; closes it after the last answer if the
    /// client has finished sending.
    private func serveAdminConnection(_ fd: Int32) async {
        while let line = adminConnections[fd]?.pending.first {
            adminConnections[fd]?.pending.removeFirst()
            let answer = await self.answer(line)
            var threadError: SystemCallError?
            let sent = await withCheckedContinuation { continuation in
                do throws(SystemCallError) {
                    try startThread { continuation.resume(returning: ControlSocket.sendBlocking(answer, to: fd)) }
                } catch {
                    threadError = error
                    continuation.resume(returning: false)  // not sent: the connection is dropped
                }
            }
            if let threadError {
                record(SupervisorEvent(t: now(), kind: .error, detail: "admin connection dropped: cannot start a thread to answer on: \(threadError)"))
            }
            if !sent {
                adminConnections[fd]?.pending = []
                ControlSocket.disconnect(fd)
            }
        }
        adminConnections[fd]?.busy = false
        if adminConnections[fd]?.closed == true {
            adminConnections.removeValue(forKey: fd)
            close(fd)
            connectionClosed()
        }
    }

    /// The answer to one request line.
    func answer(_ line: String) async -> String {
        func encode(_ value: some Encodable) -> String {
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
            do {
                return String(decoding: try encoder.encode(value), as: UTF8.self)
            } catch {
                return #"{"error":"cannot encode the answer","errorCode":"answerNotEncodable","ok":false}"#
            }
        }
        let request: AdminRequest
        do {
            request = try JSONInput.decode(AdminRequest.self, from: Data(line.utf8))
        } catch let error as CommandError {
            // JSON, but not a command as given (no app, an unknown verb, ...).
            return encode(AdminResponse<String>(ok: false, error: "not a request: \(error)", errorCode: SupervisorError.invalidCommand(error).code))
        } catch {
            return encode(AdminResponse<String>(ok: false, error: "not a request: \(error)", errorCode: .notARequest))
        }
        switch request {
        case .apps:
            return encode(AdminResponse(ok: true, result: reports()))
        case .log:
            return encode(AdminResponse(ok: true, result: log))
        case .status:
            let status = AdminStatus(
                runtimeDirectory: runtimeDirectory, pressureSources: pressureSources,
                apps: order.compactMap { name in records[name].map { AdminStatus.App(name: name, state: $0.state, pid: $0.pid) } })
            return encode(AdminResponse(ok: true, result: status))
        case .perform(let command):
            do {
                let state = try await perform(command)
                return encode(AdminResponse(ok: true, result: state))
            } catch {
                return encode(AdminResponse<LifecycleState>(ok: false, error: "\(error)", errorCode: error.code))
            }
        }
    }
}

/// The CLI's side of the admin socket.
public enum AdminClient {
    /// `$XDG_RUNTIME_DIR/mempressure` or `/tmp/mempressure-UID`: where `mempressure supervise`
    /// runs unless told otherwise.
    public static var defaultDirectory: String {
        if let env = getenv("XDG_RUNTIME_DIR") { return "\(String(cString: env))/mempressure" }
        return "/tmp/mempressure-\(getuid())"
    }

    /// Why a request got no answer, or was refused.
    public enum Failure: Error, Sendable, CustomStringConvertible {
        case noSupervisor(path: String, Errno)
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

        public var description: String {
            switch self {
            case .noSupervisor(let path, let e): "no supervisor at \(path) (\(e.symbolicName)): start one with `mempressure supervise`"
            case .system(let e): "\(e)"
            case .pathTooLong(let p): "path too long: \(p)"
            case .requestNotEncodable(let e): "cannot encode the request: \(e)"
            case .sendFailed(let p): "could not send to \(p)"
            case .noAnswer: "the supervisor closed the connection without answering"
            case .refused(_, let message): message
            case .notAnAnswer(let e): "the supervisor's answer is not understood: \(e)"
            }
        }
    }

    /// Sends one request and returns the answer's JSON (`{"ok": ..., ...}`).
    public static func send(_ request: AdminRequest, directory: String = defaultDirectory) throws(Failure) -> [UInt8] {
        let path = "\(directory)/admin.sock"
        let connection: UnixSocket
        do {
            connection = try UnixSocket.connect(to: path)
        } catch {
            switch (error.systemCall, error.errno) {
            case ("socket", _): throw .system(error)
            case (_, .fileNameTooLong): throw .pathTooLong(path)
            case (_, let e): throw .noSupervisor(path: path, e)
            }
        }
        defer { connection.close() }
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
        guard ControlSocket.sendBlocking(line, to: fd) else { throw .sendFailed(path: path) }
        var answer: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65536)
        while true {
            let n = buffer.withUnsafeMutableBytes { raw in retryOnInterrupt { read(fd, raw.baseAddress!, raw.count) } }
            if n <= 0 { break }
            answer += buffer[0..<n]
            if answer.last == 0x0a { break }
        }
        guard !answer.isEmpty else { throw .noAnswer }
        return answer
    }

    /// Sends one request and decodes its result (nil when the command has none).
    public static func call<Result: Codable & Sendable>(_ request: AdminRequest, as: Result.Type, directory: String = defaultDirectory) throws(Failure) -> Result? {
        let answer = try send(request, directory: directory)
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
