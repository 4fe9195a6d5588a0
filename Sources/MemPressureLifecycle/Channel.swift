import Glibc
import MemPressureLifecycleProtocol
import MemPressureSystem

// MARK: The control channel: who may speak for an app, and what it says

/// The open control channels: which app each connection (its descriptor) speaks for. A
/// connection is an app's once the process the supervisor launched for it connected; an app has
/// one at a time (`AppRecord.connection`).
struct ControlChannels {
    private var appByFD: [Int32: String] = [:]

    /// The app the connection speaks for (nil: none, or not yet).
    func app(on fd: Int32) -> String? { appByFD[fd] }

    /// The connection speaks for `app` from now on.
    mutating func open(_ fd: Int32, for app: String) { appByFD[fd] = app }

    /// The connection is closed: the app it spoke for, if any.
    mutating func close(_ fd: Int32) -> String? { appByFD.removeValue(forKey: fd) }

    var descriptors: Dictionary<Int32, String>.Keys { appByFD.keys }
    var count: Int { appByFD.count }
    var isEmpty: Bool { appByFD.isEmpty }
}

extension Supervisor {
    func handleChannel(_ event: SocketEvent) {
        switch event {
        case .accepted(let fd, let peer):
            accept(fd, peer)
        case .lines(let fd, let lines):
            for line in lines { handleLine(fd, line) }
        case .closed(let fd, let reason):
            if let name = channels.close(fd), let a = records[name], a.connection == fd {
                a.connection = nil
                a.hello = false
                if reason != nil {
                    a.channelFailures += 1
                    forgetTasks(a)
                } else if !a.tasks.isEmpty {
                    // The app closed its end: usually because it is exiting (its files close
                    // before its exit is reported). Forget its tasks only if it lives on.
                    let generation = a.generation
                    Task { await self.forgetTasksIfAlive(name, generation) }
                }
                if let reason { record(.protocolFailure(.channelClosed(reason)), a) }
                checkWaiters(name)
            }
            close(fd)
            connectionClosed()
        }
    }

    private func accept(_ fd: Int32, _ peer: PeerCredentials) {
        guard phase != .closed else {
            close(fd)
            return
        }
        // Only the process this supervisor launched may speak for an app.
        guard let (name, a) = records.first(where: { $0.value.process?.pid == peer.pid && $0.value.state != .notRunning }),
            peer.uid == getuid() || getuid() == 0
        else {
            record(SupervisorEvent(t: now(), pid: peer.pid, .impostor(.controlConnection(pid: peer.pid, uid: peer.uid))))
            close(fd)
            return
        }
        if let old = a.connection {
            record(.protocolFailure(.connectionReplaced), a)
            ControlSocket.disconnect(old)
        }
        a.connection = fd
        a.hello = false
        channels.open(fd, for: name)
        socket.startReading(fd)
    }

    private func handleLine(_ fd: Int32, _ line: String) {
        guard let name = channels.app(on: fd), let a = records[name], a.connection == fd else { return }
        let message: AppMessage
        do throws(ProtocolError) {
            message = try AppMessage.parse(Substring(line))
        } catch {
            dropConnection(fd, reason: .protocolError(error))
            return
        }
        if !a.hello {
            guard case .hello(let version, let app, let token) = message, version == ControlProtocol.version, app == name, token == a.token else {
                record(.impostor(.badHello), a)
                dropConnection(fd, reason: .badHello)
                return
            }
            a.hello = true
            a.hadChannel = true
            _ = ControlSocket.send(SupervisorMessage.welcome(version: ControlProtocol.version).line, to: fd)
            record(.connected, a)
            checkWaiters(name)
            return
        }
        switch message {
        case .hello:
            dropConnection(fd, reason: .secondHello)
            return
        case .ack(let callback):
            a.acks[callback, default: 0] += 1
            record(.callback(callback), a)
        case .ready:
            a.readyCount += 1
            if a.readyCount == 1, let process = a.process {
                noteLaunchToReady(a, seconds: monotonicSeconds() - process.launchedAt)
            }
            record(.ready(a.state), a)
        case .taskBegin(let id, let tid, let taskName):
            a.tasks[id] = BackgroundTaskRecord(tid: tid, name: taskName)
            record(.task(.began(id: id, thread: tid, name: taskName)), a)
        case .taskEnd(let id):
            if let t = a.tasks.removeValue(forKey: id) {
                record(.task(.ended(id: id, name: t.name)), a)
            }
        case .expired(let id):
            record(.expirationHandlerRan(task: id), a)
        case .notified(let kind):
            a.notifiedCount += 1
            record(.notificationDelivered(kind: kind), a)
        case .stackFrame(let frame):
            if a.stack.count < 128 { a.stack.append(frame) }
        case .stackEnd:
            a.stackComplete = true
        case .done(let id, let result):
            // Only answers to commands still waited for are kept.
            if a.commandAnswers[id] == nil, id <= nextCommandID { a.commandAnswers[id] = result }
        }
        checkWaiters(name)
    }

    /// Closes an app's control connection for a protocol error, a flood or a bad hello; the
    /// app keeps running, without callbacks.
    func dropConnection(_ fd: Int32, reason: ChannelFailure) {
        ControlSocket.disconnect(fd)
        if let name = channels.app(on: fd), let a = records[name], a.connection == fd {
            a.connection = nil
            a.hello = false
            a.channelFailures += 1
            forgetTasks(a)
            record(.protocolFailure(.channelClosed(reason)), a)
            checkWaiters(name)
        }
    }

    private func forgetTasksIfAlive(_ name: String, _ generation: Int) async {
        let exited = await waitFor(name, timeout: 1) { !$0.alive || $0.generation != generation }
        guard !exited, let a = records[name], a.generation == generation, a.connection == nil else { return }
        forgetTasks(a)
        checkWaiters(name)
    }

    /// Without its control channel an app cannot end its background tasks: they are forgotten
    /// (it is supervised like any program from then on).
    private func forgetTasks(_ a: AppRecord) {
        guard !a.tasks.isEmpty else { return }
        record(.task(.forgotten(count: a.tasks.count)), a)
        a.tasks = [:]
    }

    /// Sends a message to a connected client; a client that does not read loses its channel.
    /// False when nothing was sent.
    func send(_ message: SupervisorMessage, to a: AppRecord, what: String) -> Bool {
        guard let fd = a.connection, a.hello else { return false }
        guard ControlSocket.send(message.line, to: fd) else {
            record(.error(.notReading(what: what)), a)
            dropConnection(fd, reason: .notReading)
            return false
        }
        return true
    }

    /// Sends a callback and waits for its ack (clients only; other programs get none).
    func deliver(_ callback: LifecycleCallback, to a: AppRecord) async {
        let generation = a.generation
        guard let pending = sendCallback(callback, to: a) else {
            // A client whose channel is gone has usually just died (its end of the socket closes
            // as it exits, a moment before the supervisor reaps it): wait for that exit, so that
            // the command fails as "exited" instead of carrying on (marking a dead app active).
            if a.isClient, a.process != nil, a.hadChannel {
                let exited = await waitFor(a.name, timeout: Self.channelGoneExitWait) { !$0.alive || $0.generation != generation }
                if !exited { record(.error(.callbackNotDelivered(callback)), a) }
            }
            return
        }
        await awaitAcknowledgement(pending, from: a)
    }

    /// A callback written to an app's channel, its ack not yet come.
    struct PendingCallback: Sendable {
        var callback: LifecycleCallback
        var generation: Int
        var acksBefore: Int
        var channelFailures: Int
        var timeout: Double
    }

    /// Writes the callback to the app's channel; nil when it has none (or it failed: see `send`).
    func sendCallback(_ callback: LifecycleCallback, to a: AppRecord) -> PendingCallback? {
        let timeout = callback == .didFinishLaunching ? configuration.launchTimeout : configuration.callbackTimeout
        let pending = PendingCallback(
            callback: callback, generation: a.generation, acksBefore: a.acks[callback] ?? 0, channelFailures: a.channelFailures, timeout: timeout)
        guard send(.callback(callback), to: a, what: callback.rawValue) else { return nil }
        a.callbacksInProgress[callback, default: 0] += 1
        return pending
    }

    /// Waits for the ack of a callback sent; records that none came (in time, or at all).
    func awaitAcknowledgement(_ p: PendingCallback, from a: AppRecord) async {
        let (callback, generation, before, failures) = (p.callback, p.generation, p.acksBefore, p.channelFailures)
        // A channel closed for breaking the protocol (garbage, an over-long line, a flood) ends
        // the wait at once: no ack can come on it.
        let acked = await waitFor(a.name, timeout: p.timeout) {
            ($0.acks[callback] ?? 0) > before || !$0.alive || $0.generation != generation || $0.channelFailures > failures
        }
        if a.generation == generation, let n = a.callbacksInProgress[callback] { a.callbacksInProgress[callback] = n > 1 ? n - 1 : nil }
        if a.generation == generation, a.channelFailures > failures, (a.acks[callback] ?? 0) <= before {
            record(.error(.callbackNotAcknowledged(callback, .channelClosed)), a)
        } else if !acked {
            record(.error(.callbackNotAcknowledged(callback, .timedOut(seconds: p.timeout))), a)
        }
    }

    /// How long a callback that found the app's channel closed waits for the app's exit.
    static let channelGoneExitWait = 1.0

    func sendNotification(_ a: AppRecord, kind: String, value: String, count: Int) async {
        let before = a.notifiedCount
        let generation = a.generation
        let failures = a.channelFailures
        guard send(.notification(kind: kind, count: count, value: value), to: a, what: "notification \(kind)") else { return }
        _ = await waitFor(a.name, timeout: configuration.callbackTimeout) {
            $0.notifiedCount > before || !$0.alive || $0.generation != generation || $0.channelFailures > failures
        }
    }

    func deliverQueuedNotifications(_ a: AppRecord) async {
        let queued = a.queued
        a.queued = []
        for q in queued { await sendNotification(a, kind: q.kind, value: q.value, count: q.count) }
    }

    /// Sends an app-defined command and waits for its answer (`callbackTimeout`).
    func sendCommand(_ text: String, to a: AppRecord) async throws(SupervisorError) -> String {
        guard a.state.isRunning, a.process != nil else { throw .wrongState(app: a.name, state: a.state, operation: .appCommand(text)) }
        guard a.hello else { throw .commandFailed(app: a.name, command: text, answer: "it has no control channel") }
        nextCommandID += 1
        let id = nextCommandID
        let generation = a.generation
        guard send(.command(id: id, text: text), to: a, what: "command \(text)") else {
            throw .commandFailed(app: a.name, command: text, answer: "its control channel failed")
        }
        let timeout = configuration.callbackTimeout
        let failures = a.channelFailures
        let answered = await waitFor(a.name, timeout: timeout) {
            $0.answeredCommands.contains(id) || !$0.alive || $0.generation != generation || $0.channelFailures > failures
        }
        guard answered, a.generation == generation, let answer = a.commandAnswers.removeValue(forKey: id) else {
            if !a.isAlive(generation) { throw .exited(app: a.name, during: text, status: a.exitStatus) }
            if a.channelFailures > failures {
                throw .commandFailed(app: a.name, command: text, answer: "its control channel was closed for breaking the protocol")
            }
            throw .timedOut(app: a.name, waitingFor: "answer '\(text)'", seconds: timeout)
        }
        record(.appCommand(command: text, answer: answer), a)
        guard !answer.hasPrefix("error") else { throw .commandFailed(app: a.name, command: text, answer: answer) }
        return answer
    }
}
