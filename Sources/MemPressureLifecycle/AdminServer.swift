import FoundationEssentials
import Glibc
import MemPressureLifecycleProtocol
import MemPressureSystem

// MARK: Serving the admin socket

/// The admin socket's open connections, by descriptor: each one's requests are answered one at a
/// time, in order, and its descriptor is closed only after the last answer was written.
struct AdminConnections {
    struct Connection {
        var id: Int
        /// Complete requests received so far (for the idle timeout).
        var activity = 0
        var pending: [String] = []
        var busy = false
        var closed = false
        /// The pending idle check (a task asleep for `adminIdleTimeout`): one per connection,
        /// cancelled when the next is scheduled or the connection goes, so that what the
        /// checks hold is bounded by the open connections, not by the requests of the last
        /// `adminIdleTimeout` seconds.
        var idleCheck: Task<Void, Never>?
    }

    private var byFD: [Int32: Connection] = [:]
    /// The serial number of the last connection accepted (a descriptor is reused, a
    /// connection's number is not).
    private var lastID = 0
    /// Connections refused because `maximumAdminConnections` were open.
    private(set) var refused = 0

    subscript(fd: Int32) -> Connection? {
        get { byFD[fd] }
        set { byFD[fd] = newValue }
    }

    /// A new connection on `fd`, with the next serial number.
    mutating func accept(_ fd: Int32) {
        lastID += 1
        byFD[fd] = Connection(id: lastID)
    }

    /// One more connection refused: how many so far.
    mutating func refuse() -> Int {
        refused += 1
        return refused
    }

    /// The connection is gone: what it was.
    mutating func remove(_ fd: Int32) -> Connection? { byFD.removeValue(forKey: fd) }

    var descriptors: Dictionary<Int32, Connection>.Keys { byFD.keys }
    var count: Int { byFD.count }
    var isEmpty: Bool { byFD.isEmpty }
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

    /// The answer a connection beyond `maximumAdminConnections` gets before it is closed.
    static func tooManyConnectionsAnswer(_ limit: Int) -> String {
        #"{"error":"the supervisor serves \#(limit) admin connections already: try again later","errorCode":"tooManyConnections","ok":false}"#
    }

    func handleAdmin(_ event: SocketEvent) {
        switch event {
        case .accepted(let fd, let peer):
            guard phase != .closed else {
                close(fd)
                return
            }
            guard peer.uid == getuid() || peer.uid == 0 else {
                record(SupervisorEvent(t: now(), pid: peer.pid, .impostor(.adminConnection(uid: peer.uid))))
                close(fd)
                return
            }
            // A bounded number of connections (each has a reader): beyond it, one line saying so.
            let limit = configuration.maximumAdminConnections
            guard adminConnections.count < limit else {
                _ = ControlSocket.send(Self.tooManyConnectionsAnswer(limit), to: fd)
                close(fd)
                let refused = adminConnections.refuse()
                if refused == 1 || refused.isMultiple(of: 1000) {
                    record(SupervisorEvent(t: now(), pid: peer.pid, .error(.adminConnectionsFull(limit: limit, refused: refused))))
                }
                return
            }
            adminConnections.accept(fd)
            admin?.startReading(fd)
            scheduleIdleCheck(fd)
        case .lines(let fd, let lines):
            guard var c = adminConnections[fd], !c.closed else { return }
            c.activity += 1
            guard c.pending.count + lines.count <= Self.maximumPendingAdminRequests else {
                record(SupervisorEvent(t: now(), .protocolFailure(.adminFlood(limit: Self.maximumPendingAdminRequests))))
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
                adminConnections.remove(fd)?.idleCheck?.cancel()
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
                record(SupervisorEvent(t: now(), .error(.adminAnswerThread(cause: "\(threadError)"))))
            }
            if !sent {
                adminConnections[fd]?.pending = []
                ControlSocket.disconnect(fd)
            }
        }
        adminConnections[fd]?.busy = false
        if adminConnections[fd]?.closed == true {
            adminConnections.remove(fd)?.idleCheck?.cancel()
            close(fd)
            connectionClosed()
        } else {
            scheduleIdleCheck(fd)
        }
    }

    /// Closes the admin connection if, `adminIdleTimeout` seconds from now, it has sent no
    /// complete request since and none is being answered: an idle client does not hold one of
    /// the `maximumAdminConnections` for ever. It replaces the connection's previous check
    /// (cancelled: each check is a task asleep for the whole timeout, and one per request
    /// answered piled up to the requests of the last `adminIdleTimeout` seconds, megabytes
    /// under a busy client).
    private func scheduleIdleCheck(_ fd: Int32) {
        guard let c = adminConnections[fd] else { return }
        let (id, activity) = (c.id, c.activity)
        let timeout = configuration.adminIdleTimeout
        c.idleCheck?.cancel()
        adminConnections[fd]?.idleCheck = Task { [weak self] in
            do { try await Task.sleep(for: Seconds.duration(timeout)) } catch { return }
            await self?.closeIfIdle(fd, id: id, activity: activity)
        }
    }

    private func closeIfIdle(_ fd: Int32, id: Int, activity: Int) {
        guard let c = adminConnections[fd], c.id == id, c.activity == activity, !c.busy, c.pending.isEmpty, !c.closed else { return }
        record(SupervisorEvent(t: now(), .protocolFailure(.adminIdle(seconds: configuration.adminIdleTimeout))))
        // Its reader sees the shutdown and reports it closed; the descriptor is closed then.
        ControlSocket.disconnect(fd)
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
            return encode(AdminResponse<String>(ok: false, error: "not a request: \(plainDescription(of: error))", errorCode: .notARequest))
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
