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
        if condition(a.condition) { return true }
        nextWaiter += 1
        let id = nextWaiter
        return await withCheckedContinuation { continuation in
            let timer = Task { [weak self] in
                do {
                    try await Task.sleep(for: .seconds(timeout))
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
        let s = a.condition
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

    /// Takes the app's command lock, waiting (in order) behind the command that holds it.
    func lock(_ name: String) async {
        guard lockedApps.contains(name) else {
            lockedApps.insert(name)
            return
        }
        await withCheckedContinuation { lockQueues[name, default: []].append($0) }
    }

    /// Hands the lock to the next waiting command, or frees it.
    func unlock(_ name: String) {
        if var queue = lockQueues[name], !queue.isEmpty {
            let next = queue.removeFirst()
            lockQueues[name] = queue.isEmpty ? nil : queue
            next.resume()
        } else {
            lockedApps.remove(name)
        }
    }
}
