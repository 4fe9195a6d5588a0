import MemPressureLifecycleProtocol
import MemPressureSystem

// MARK: Memory warnings and system notifications

extension Supervisor {
    /// Sends memory warnings to the running apps among `target`, each as its spec chooses
    /// (`AppSpec.effectiveMemoryWarning`): the callback on its control channel, a signal, a
    /// command, or nothing. Suspended apps are never sent anything (and memory warnings are not
    /// queued for them). Each app's log says what its warning became — "sent" only for what
    /// reached it — and the warnings metric counts those alone. All go out at once, then the
    /// callbacks' acknowledgements and the commands' ends are awaited together (each at most
    /// `callbackTimeout`): one app slow to answer does not delay the others' warnings. Returns the
    /// apps a warning reached (callback written, signal delivered, command started).
    ///
    /// With `waitForAcknowledgements: false` it returns as soon as the warnings are on their way
    /// (a policy that must not be held up by an app that cannot answer yet — inside another
    /// callback, or stalled at the memory limit — times its own grace period).
    @discardableResult
    public func warn(_ target: Target = .all, waitForAcknowledgements: Bool = true) async -> [String] {
        var warned: [String] = []
        var callbacks: [(String, PendingCallback)] = []
        var commands: [Task<Void, Never>] = []
        for name in targets(target) {
            guard let a = records[name] else { continue }
            if a.state == .suspended {
                record(.warning(.notSent(.suspended)), a)
                continue
            }
            guard a.state.isRunning, let process = a.process else { continue }
            switch a.spec.effectiveMemoryWarning {
            case .none:
                record(.warning(.notSent(.noneChosen)), a)
                continue
            case .callback:
                guard let pending = sendCallback(.didReceiveMemoryWarning, to: a) else {
                    record(.warning(.notSent(.noChannel)), a)
                    continue
                }
                record(.warning(.sent), a)
                callbacks.append((name, pending))
            case .signal(let sig):
                guard process.signal(sig) else {
                    record(.warning(.notSent(.exited)), a)
                    continue
                }
                record(.warning(.signalled(sig)), a)
            case .command(let argv):
                do throws(SpawnError) {
                    let handle = try WarningCommand.start(argv, app: name, pid: process.pid)
                    // Should the supervisor die meanwhile, its guardian ends the command's group too.
                    guardian.watch(processGroupOf: handle)
                    let timeout = configuration.callbackTimeout
                    let ending = Task {
                        let ended = await WarningCommand.finish(handle, timeout: timeout)
                        self.recordWarningCommand(ended, app: name, pid: handle.pid)
                    }
                    helperCommands[handle.pid] = (handle, ending, .warningCommand)
                    commands.append(ending)
                } catch {
                    record(.error(.warningCommand(cause: "\(error)")), a)
                    record(.warning(.notSent(.commandNotStarted)), a)
                    continue
                }
            }
            metrics.warningSent(name)
            warned.append(name)
        }
        let deliveries = Task {
            await withTaskGroup(of: Void.self) { group in
                for (name, pending) in callbacks {
                    group.addTask { await self.awaitAcknowledgement(pending, fromApp: name) }
                }
                for ending in commands {
                    group.addTask { await ending.value }
                }
            }
        }
        if waitForAcknowledgements { await deliveries.value }
        return warned
    }

    private func awaitAcknowledgement(_ pending: PendingCallback, fromApp name: String) async {
        guard let a = records[name] else { return }
        await awaitAcknowledgement(pending, from: a)
    }

    private func recordWarningCommand(_ ended: Result<ExitStatus, SystemCallError>, app name: String, pid: Int32) {
        helperCommands[pid] = nil
        guardian.forget(processGroup: pid)
        let payload: SupervisorEvent.Payload
        switch ended {
        case .success(let status): payload = .warning(.commandRan(status))
        case .failure(let error): payload = .error(.warningCommand(cause: "\(error)"))
        }
        record(SupervisorEvent(t: now(), app: name, pid: records[name]?.pid, payload))
    }

    /// A system change: delivered now to running apps, queued and coalesced (one per kind,
    /// latest value) for suspended ones.
    public func notify(_ target: Target = .all, kind: String, value: String) async throws(SupervisorError) {
        guard ControlProtocol.isToken(Substring(kind)) else { throw .invalidNotificationKind(kind) }
        let value = Self.sanitizedValue(value)
        for name in targets(target) {
            guard let a = records[name], a.state != .notRunning else { continue }
            if a.state == .suspended {
                if let i = a.queued.firstIndex(where: { $0.kind == kind }) {
                    a.queued[i].value = value
                    a.queued[i].count += 1
                } else {
                    a.queued.append(QueuedNotification(kind: kind, value: value, count: 1))
                }
                record(.notificationQueued(kind: kind), a)
            } else {
                await sendNotification(a, kind: kind, value: value, count: 1)
            }
        }
    }

    /// The longest notification value sent (UTF-8 bytes); longer ones are cut.
    public static let maximumNotificationValueBytes = 1024

    /// A notification value as it goes on the wire: control characters (line feeds, NUL, ...)
    /// become spaces, and it is cut to `maximumNotificationValueBytes` on a character boundary.
    static func sanitizedValue(_ value: String) -> String {
        var out = ""
        var bytes = 0
        for scalar in value.unicodeScalars {
            let s: Unicode.Scalar = scalar.value < 0x20 || scalar.value == 0x7f || (0x80...0x9f).contains(scalar.value) ? " " : scalar
            let n = String(s).utf8.count
            guard bytes + n <= maximumNotificationValueBytes else { break }
            out.unicodeScalars.append(s)
            bytes += n
        }
        return out
    }

    private func targets(_ target: Target) -> [String] {
        switch target {
        case .all: order
        case .app(let n): [n]
        }
    }
}
