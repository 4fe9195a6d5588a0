import MemPressureSystem

// MARK: Waiting, and the per-app command lock

extension Supervisor {
    struct Waiter {
        var id: Int
        var app: String
        var condition: @Sendable (AppCondition) -> Bool
        var continuation: CheckedContinuation<Bool, Never>
        /// The timeout's timer, cancelled when the condition comes first.
        var timer: Task<Void, Never>?
    }

    /// Waits until `condition` holds for the app (checked after every event that changes it),
    /// or `timeout`. False on timeout.
    func waitFor(_ name: String, timeout: Double, _ condition: @escaping @Sendable (AppCondition) -> Bool) async -> Bool {
        guard let a = records[name] else { return false }
        if condition(self.condition(of: a)) { return true }
        nextWaiter += 1
        let id = nextWaiter
        return await withCheckedContinuation { continuation in
            let timer = Task { [weak self] in
                do {
                    try await Task.sleep(for: Seconds.duration(timeout))
                } catch {
                    return  // cancelled: the waiter was resumed by its event
                }
                await self?.expireWaiter(id)
            }
            waiters.append(Waiter(id: id, app: name, condition: condition, continuation: continuation, timer: timer))
        }
    }

    private func expireWaiter(_ id: Int) {
        guard let i = waiters.firstIndex(where: { $0.id == id }) else { return }
        let w = waiters.remove(at: i)
        w.continuation.resume(returning: false)
    }

    /// Resumes the app's waiters whose condition now holds.
    func checkWaiters(_ name: String) {
        guard let a = records[name] else { return }
        let s = condition(of: a)
        var i = 0
        while i < waiters.count {
            if waiters[i].app == name && waiters[i].condition(s) {
                let w = waiters.remove(at: i)
                w.timer?.cancel()
                w.continuation.resume(returning: true)
            } else {
                i += 1
            }
        }
    }

    /// What the app's waiters test: its record's fields, and how many commands wait for its lock.
    private func condition(of a: AppRecord) -> AppCondition {
        var c = a.condition
        c.queuedCommands = locks.queued(a.name)
        return c
    }
}
