import LifecycleProtocol

// MARK: Memory warnings and system notifications

extension Supervisor {
    /// Sends memory warnings to the running apps among `target`; suspended apps are never sent
    /// anything (and memory warnings are not queued for them). All are sent at once, then their
    /// acknowledgements are awaited together (each at most `callbackTimeout`): one app slow to
    /// answer does not delay the others' warnings. Returns the apps warned.
    ///
    /// With `waitForAcknowledgements: false` it returns as soon as the warnings are on their way
    /// (a policy that must not be held up by an app that cannot answer yet — inside another
    /// callback, or stalled at the memory limit — times its own grace period).
    @discardableResult
    public func warn(_ target: Target = .all, waitForAcknowledgements: Bool = true) async -> [String] {
        var warned: [String] = []
        for name in targets(target) {
            guard let a = records[name] else { continue }
            if a.state == .suspended {
                record(.warning(.notSent(.suspended)), a)
                continue
            }
            guard a.state.isRunning else { continue }
            record(.warning(.sent), a)
            metrics.warningSent(name)
            warned.append(name)
        }
        let deliveries = Task {
            await withTaskGroup(of: Void.self) { group in
                for name in warned {
                    group.addTask { await self.deliverWarning(name) }
                }
            }
        }
        if waitForAcknowledgements { await deliveries.value }
        return warned
    }

    private func deliverWarning(_ name: String) async {
        guard let a = records[name], a.state.isRunning, a.state != .suspended else { return }
        await deliver(.didReceiveMemoryWarning, to: a)
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
