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

/// One answer: `{"ok": true, "result": ...}` or `{"ok": false, "error": "..."}`.
public struct AdminResponse<Result: Codable & Sendable>: Codable, Sendable {
    public var ok: Bool
    public var result: Result?
    public var error: String?

    public init(ok: Bool, result: Result? = nil, error: String? = nil) {
        self.ok = ok
        self.result = result
        self.error = error
    }
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
            throw .launch(app: "", error)
        }
    }

    /// The admin socket's path (nil until `serveAdmin()`).
    public var adminSocketPath: String? { admin?.path }

    /// The most requests one admin connection may have waiting for their answers.
    static let maximumPendingAdminRequests = 64

    func handleAdmin(_ event: SocketEvent) {
        switch event {
        case .accepted(let fd, let peer):
            guard !isShuttingDown else {
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
                return #"{"ok":false,"error":"cannot encode the answer"}"#
            }
        }
        let request: AdminRequest
        do {
            request = try JSONDecoder().decode(AdminRequest.self, from: Data(line.utf8))
        } catch {
            return encode(AdminResponse<String>(ok: false, error: "not a request: \(error)"))
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
                return encode(AdminResponse<LifecycleState>(ok: false, error: "\(error)"))
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

    /// Why a request got no answer.
    public enum Failure: Error, Sendable, Hashable, CustomStringConvertible {
        case noSupervisor(path: String, Errno)
        case system(SystemCallError)
        case pathTooLong(String)
        case sendFailed(path: String)
        case noAnswer
        case refused(String)
        case notAnAnswer(String)

        public var description: String {
            switch self {
            case .noSupervisor(let path, let e): "no supervisor at \(path) (\(e.symbolicName)): start one with `mempressure supervise`"
            case .system(let e): "\(e)"
            case .pathTooLong(let p): "path too long: \(p)"
            case .sendFailed(let p): "could not send to \(p)"
            case .noAnswer: "the supervisor closed the connection without answering"
            case .refused(let reason): reason
            case .notAnAnswer(let reason): "the supervisor's answer is not understood: \(reason)"
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
        } catch {
            throw .notAnAnswer("cannot encode the request: \(error)")
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
            response = try JSONDecoder().decode(AdminResponse<Result>.self, from: Data(answer))
        } catch {
            throw .notAnAnswer("\(error)")
        }
        guard response.ok else { throw .refused(response.error ?? "the supervisor refused") }
        return response.result
    }
}
