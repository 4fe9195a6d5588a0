import Glibc
import MemPressureLifecycleProtocol
import MemPressureSystem

// MARK: Background tasks: their time limit, expiration, and the crash report of an overrun

extension Supervisor {
    enum TimerKind: Sendable {
        /// `expirationWarning` seconds before the limit: ask the app to run its handlers.
        case expire
        /// The limit: a task still running takes the app down, with a crash report.
        case backgroundLimit
    }

    /// Starts the timers of the app's current stay in the background.
    func scheduleTaskTimers(_ a: AppRecord) {
        let name = a.name
        let generation = a.generation
        let period = a.backgroundPeriod
        let limit = configuration.backgroundTaskLimit
        let warning = min(configuration.expirationWarning, limit)
        let events = self.events
        Task {
            do { try await Task.sleep(for: Seconds.duration(limit - warning)) } catch { return }
            events.yield(.timer(app: name, generation: generation, period: period, kind: .expire))
            do { try await Task.sleep(for: Seconds.duration(warning)) } catch { return }
            events.yield(.timer(app: name, generation: generation, period: period, kind: .backgroundLimit))
        }
    }

    /// A timer of one stay in the background went off: it applies only if that stay goes on
    /// (same run, same stay, still running in the background, tasks still running).
    func timer(_ name: String, _ generation: Int, _ period: Int, _ kind: TimerKind) async {
        await lock(name)
        defer { unlock(name) }
        guard let a = records[name] else { return }
        func current() -> Bool {
            a.generation == generation && a.backgroundPeriod == period && a.state == .backgroundRunning && !a.tasks.isEmpty
        }
        guard current() else { return }
        switch kind {
        case .expire:
            for (id, task) in a.tasks.sorted(by: { $0.key < $1.key }) where !a.expiredTasks.contains(id) {
                a.expiredTasks.insert(id)
                record(.task(.expirationRequested(id: id, name: task.name)), a)
                guard a.connection != nil else { continue }
                if !send(.expire(id: id), to: a, what: "expire") { break }
            }
        case .backgroundLimit:
            guard let process = a.process, let (id, task) = a.tasks.min(by: { $0.key < $1.key }) else { return }
            // The crash report: the task thread's call stack, from the app itself.
            a.stack = []
            a.stackComplete = false
            var stack: [String]?
            if a.connection != nil, send(.reportStack(tid: task.tid), to: a, what: "report-stack") {
                let gotIt = await waitFor(name, timeout: 3) { $0.stackComplete || !$0.alive || $0.generation != generation }
                if gotIt && a.stackComplete { stack = a.stack }
            }
            // The stack took time: the task may have ended, or the app exited, meanwhile.
            guard current(), a.process === process else {
                if a.generation == generation, a.process === process {
                    record(.task(.endedDuringCrashReport(name: task.name)), a)
                }
                return
            }
            record(.crashReport(CrashReport(task: id, taskName: task.name, limitSeconds: configuration.backgroundTaskLimit, stack: stack)), a)
            // Logged as a crash when it is reaped, like a watchdog's kill.
            var t = TeardownRun(process: process, generation: generation, exit: .crash)
            do {
                try await carryOut(Teardown.watchdog, on: a, &t)
            } catch {
                record(.error(.watchdog(cause: "\(error)")), a)
            }
        }
    }
}
