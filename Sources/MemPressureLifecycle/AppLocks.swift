/// The apps' command locks: one command per app at a time, the others waiting for the lock in
/// the order they asked for it. A value the supervisor holds (the waiting is its: a waiter is a
/// continuation resumed when the lock is handed to it).
struct AppLocks {
    /// The apps whose lock is held.
    private var held: Set<String> = []
    /// The commands waiting for each app's lock, first come first.
    private var queues: [String: [CheckedContinuation<Void, Never>]] = [:]

    /// Whether a command holds the app's lock.
    func isHeld(_ name: String) -> Bool { held.contains(name) }

    /// How many commands wait for the app's lock.
    func queued(_ name: String) -> Int { queues[name]?.count ?? 0 }

    /// Takes the app's lock if it is free (true); false when it is held (the caller waits).
    mutating func take(_ name: String) -> Bool {
        held.insert(name).inserted
    }

    /// Queues a waiter for the app's lock, held by another command.
    mutating func wait(_ name: String, _ waiter: CheckedContinuation<Void, Never>) {
        queues[name, default: []].append(waiter)
    }

    /// Releases the app's lock: the next waiter, to be resumed (the lock is now its), or nil
    /// (the lock is free).
    mutating func release(_ name: String) -> CheckedContinuation<Void, Never>? {
        if var queue = queues[name], !queue.isEmpty {
            let next = queue.removeFirst()
            queues[name] = queue.isEmpty ? nil : queue
            return next
        }
        held.remove(name)
        return nil
    }

    /// Forgets the app's waiters (the app is forgotten: none wait, it is not running).
    mutating func forget(_ name: String) {
        queues[name] = nil
    }
}

extension Supervisor {
    /// Takes the app's command lock, waiting (in order) behind the command that holds it.
    func lock(_ name: String) async {
        guard !locks.take(name) else { return }
        await withCheckedContinuation {
            locks.wait(name, $0)
            checkWaiters(name)
        }
    }

    /// Waits until at least `count` commands wait for the app's lock (behind the one holding
    /// it); false after `timeout` seconds. For tests that must know a command is queued.
    package func waitForQueuedCommands(_ name: String, count: Int, timeout: Double) async -> Bool {
        await waitFor(name, timeout: timeout) { $0.queuedCommands >= count }
    }

    /// Hands the lock to the next waiting command, or frees it.
    func unlock(_ name: String) {
        locks.release(name)?.resume()
    }
}
