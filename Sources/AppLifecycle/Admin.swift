import FoundationEssentials
import Glibc
import LinuxSystem
import Pressure
import SystemPackage

/// A request on the supervisor's admin socket (`admin.sock` in its runtime directory): one JSON
/// object per line; the answer is one JSON object per line, `{"ok": true, "result": ...}` or
/// `{"ok": false, "error": "..."}`. Only the supervisor's user (or root) may connect.
///
///     {"command": "register", "app": "A", "argv": ["/path/prog", "arg"], "client": true}
///     {"command": "launch" | "activate" | "deactivate" | "background" | "terminate" | "relaunch", "app": "A"}
///     {"command": "warn", "app": "A"}                  (no app: every running app)
///     {"command": "notify", "app": "A", "kind": "localeChanged", "value": "fr_FR"}
///     {"command": "apps"}                              result: [AppReport]
///     {"command": "log"}                               result: [SupervisorEvent]
///     {"command": "status"}                            result: AdminStatus
public struct AdminRequest: Sendable, Codable, Hashable {
    public var command: String
    public var app: String?
    public var argv: [String]?
    public var client: Bool?
    public var environment: [String: String]?
    public var kind: String?
    public var value: String?

    public init(command: String, app: String? = nil, argv: [String]? = nil, client: Bool? = nil, environment: [String: String]? = nil, kind: String? = nil, value: String? = nil) {
        self.command = command
        self.app = app
        self.argv = argv
        self.client = client
        self.environment = environment
        self.kind = kind
        self.value = value
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

/// One answer. `result` is the JSON of the command's result.
struct AdminResponse<Result: Encodable>: Encodable {
    var ok: Bool
    var result: Result?
    var error: String?
}

extension Supervisor {
    /// Opens the admin socket; the supervisor serves requests on it until shutdown.
    public func serveAdmin() throws {
        guard admin == nil else { return }
        let events = self.adminEvents
        admin = try ControlSocket(directory: runtimeDirectory, name: "admin.sock") { events.yield($0) }
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
                record(SupervisorEvent(t: now(), pid: peer.pid, kind: "impostor", detail: "admin connection from uid \(peer.uid) refused"))
                close(fd)
                return
            }
            adminConnections[fd] = AdminConnection()
            admin?.startReading(fd)
        case .lines(let fd, let lines):
            guard var c = adminConnections[fd], !c.closed else { return }
            guard c.pending.count + lines.count <= Self.maximumPendingAdminRequests else {
                record(SupervisorEvent(t: now(), kind: "protocol", detail: "admin client sent more than \(Self.maximumPendingAdminRequests) requests without waiting for answers: disconnected"))
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
                record(SupervisorEvent(t: now(), kind: "error", detail: "admin connection dropped: cannot start a thread to answer on: \(threadError)"))
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
        func fail(_ message: String) -> String { encode(AdminResponse<String>(ok: false, result: nil, error: message)) }
        let request: AdminRequest
        do {
            request = try JSONDecoder().decode(AdminRequest.self, from: Data(line.utf8))
        } catch {
            return fail("not a request: \(error)")
        }
        func app() throws -> String {
            guard let a = request.app else { throw SupervisorError("'\(request.command)' needs an app") }
            return a
        }
        do {
            switch request.command {
            case "register":
                guard let argv = request.argv, !argv.isEmpty else { throw SupervisorError("register needs argv") }
                try register(AppSpec(name: try app(), command: argv, environment: request.environment, client: request.client))
            case "launch":
                if let argv = request.argv, !argv.isEmpty, knownState(try app()) == nil {
                    try register(AppSpec(name: try app(), command: argv, environment: request.environment, client: request.client))
                }
                try await launch(try app())
            case "activate": try await activate(try app())
            case "deactivate": try await deactivate(try app())
            case "background": try await background(try app())
            case "terminate": try await terminate(try app())
            case "relaunch": try await relaunch(try app())
            case "warn": await warn(request.app.map { .app($0) } ?? .all)
            case "notify":
                try await notify(request.app.map { .app($0) } ?? .all, kind: request.kind ?? "", value: request.value ?? "")
            case "apps":
                return encode(AdminResponse(ok: true, result: reports(), error: nil))
            case "log":
                return encode(AdminResponse(ok: true, result: log, error: nil))
            case "status":
                let status = AdminStatus(
                    runtimeDirectory: runtimeDirectory, pressureSources: pressureSources,
                    apps: orderedNames.compactMap { name in knownState(name).map { AdminStatus.App(name: name, state: $0, pid: knownPID(name)) } })
                return encode(AdminResponse(ok: true, result: status, error: nil))
            default:
                throw SupervisorError("unknown command '\(request.command.prefix(40))'")
            }
            let state = request.app.flatMap { knownState($0) }
            return encode(AdminResponse(ok: true, result: state, error: nil))
        } catch {
            return fail("\(error)")
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

    /// Sends one request and returns the answer's JSON (`{"ok": ..., ...}`).
    public static func send(_ request: AdminRequest, directory: String = defaultDirectory) throws -> [UInt8] {
        let path = "\(directory)/admin.sock"
        let fd: Int32
        do {
            fd = try UnixSocket.connect(to: path).releaseDescriptor()
        } catch {
            switch (error.systemCall, error.errno) {
            case ("socket", let e): throw SupervisorError("socket: \(e.symbolicName)")
            case (_, .fileNameTooLong): throw SupervisorError("path too long: \(path)")
            case (_, let e): throw SupervisorError("no supervisor at \(path) (\(e.symbolicName)): start one with `mempressure supervise`")
            }
        }
        defer { close(fd) }
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        let line = String(decoding: try encoder.encode(request), as: UTF8.self)
        guard ControlSocket.sendBlocking(line, to: fd) else { throw SupervisorError("could not send to \(path)") }
        var answer: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65536)
        while true {
            let n = buffer.withUnsafeMutableBytes { raw in retryOnInterrupt { read(fd, raw.baseAddress!, raw.count) } }
            if n <= 0 { break }
            answer += buffer[0..<n]
            if answer.last == 0x0a { break }
        }
        guard !answer.isEmpty else { throw SupervisorError("the supervisor closed the connection without answering") }
        return answer
    }
}

extension ControlSocket {
    /// Writes one line, waiting (up to 10 s) while the peer's buffer is full.
    static func sendBlocking(_ line: String, to fd: Int32) -> Bool {
        do {
            try UnixSocket.sendAll(Array((line + "\n").utf8), on: fd, deadline: monotonicSeconds() + 10)
            return true
        } catch {
            return false
        }
    }
}
