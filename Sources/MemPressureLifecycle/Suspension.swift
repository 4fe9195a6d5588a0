import Glibc
import MemPressureLifecycleProtocol
import Synchronization
import MemPressureSystem

// MARK: Suspension: stopping and continuing apps, and knowing when the kernel has done it

extension Supervisor {
    /// Stops the app (SIGSTOP or the freezer) and waits until the kernel says it is stopped.
    func suspend(_ a: AppRecord) async throws(SupervisorError) {
        guard let process = a.process else { return }
        switch configuration.suspendMethod {
        case .sigstop:
            // Every process of the app: a helper left running would go on using the CPU and
            // its memory while the app is "suspended".
            if let failure = process.signalApp(SIGSTOP).failure { record(.error(.suspend(cause: "\(failure)")), a) }
        case .freezer:
            do {
                try Self.freezer(of: process).freeze()
            } catch {
                record(.error(.suspend(cause: "\(error)")), a)
                throw .cgroup(error)
            }
        }
        await waitUntil(a, process, stopped: true)
    }

    /// Continues the app and waits until it runs again. What it used up to the continuation is
    /// the suspended state's; from then on, it is charged to backgroundRunning, the state it
    /// enters next (usage is read in clock ticks: a continued app running even briefly before
    /// that transition could otherwise put a tick on the suspended state).
    func resume(_ a: AppRecord) async throws(SupervisorError) {
        guard let process = a.process else { return }
        if a.state == .suspended {
            account(a)
            a.chargedState = .backgroundRunning
        }
        switch configuration.suspendMethod {
        case .sigstop:
            if let failure = process.signalApp(SIGCONT).failure { record(.error(.resume(cause: "\(failure)")), a) }
        case .freezer:
            do {
                try Self.freezer(of: process).thaw()
            } catch {
                throw .cgroup(error)
            }
        }
        await waitUntil(a, process, stopped: false)
    }

    /// Whether the app's freezer group has finished freezing (false without one).
    static func isFrozen(_ process: AppProcess) -> Bool {
        guard case .cgroup(let group) = process.members, let freezer = group.freezer else { return false }
        return freezer.isFrozen()
    }

    /// The app's freezer group (the freezer method needs apps in cgroups: the configuration
    /// refuses it otherwise).
    static func freezer(of process: AppProcess) throws(CgroupError) -> CgroupDirectory {
        guard case .cgroup(let group) = process.members, let freezer = group.freezer else {
            throw .noController("freezer", path: "(the app has no freezer group)", consequence: "suspend with SIGSTOP instead")
        }
        return freezer
    }

    /// Waits (up to 5 s) for the stop or the continuation to take effect: signal delivery and
    /// freezing are asynchronous.
    ///
    /// - SIGSTOP: the kernel reports the stop (and the continuation) to the parent, which the
    ///   supervisor is: waitid(P_PIDFD, WSTOPPED or WCONTINUED) on a thread of its own returns
    ///   when it has happened.
    /// - The freezer: cgroup v1 gives no event when a group has finished freezing, so its
    ///   `freezer.state` is read until it says FROZEN (or THAWED), every millisecond at first,
    ///   backing off to every 8 ms.
    private func waitUntil(_ a: AppRecord, _ process: AppProcess, stopped: Bool) async {
        let timeout = 5.0
        let done: Bool
        switch configuration.suspendMethod {
        case .sigstop:
            // nil: the process exited (it is not stopped or continued, it is gone).
            let outcome = await Self.blocking(timeout: timeout) { process.waitForStopChange(stopped: stopped) }
            done = outcome != nil
        case .freezer:
            let deadline = monotonicSeconds() + timeout
            var pause = 0.001
            var reached = false
            while monotonicSeconds() < deadline, a.process === process {
                if Self.isFrozen(process) == stopped {
                    reached = true
                    break
                }
                do { try await Task.sleep(for: Seconds.duration(pause)) } catch { break }
                pause = min(pause * 2, 0.008)
            }
            done = reached || a.process !== process
        }
        if !done {
            record(.error(.stopNotSeen(stopped: stopped, seconds: timeout)), a)
        }
    }

    /// Runs a blocking call on a thread of its own; its result, or nil if it has not returned
    /// within `timeout` seconds (the thread then finishes on its own).
    static func blocking<T: Sendable>(timeout: Double, _ body: @escaping @Sendable () -> T) async -> T? {
        let once = Once()
        return await withCheckedContinuation { (continuation: CheckedContinuation<T?, Never>) in
            let timer = Task {
                do { try await Task.sleep(for: Seconds.duration(timeout)) } catch { return }
                if once.claim() { continuation.resume(returning: nil) }
            }
            do {
                try startThread {
                    let value = body()
                    timer.cancel()
                    if once.claim() { continuation.resume(returning: value) }
                }
            } catch {
                // No thread: treated as not done in time (the caller logs it and goes on).
                timer.cancel()
                if once.claim() { continuation.resume(returning: nil) }
            }
        }
    }
}

/// A flag that lets one of several racing parties through.
final class Once: Sendable {
    private let done = Atomic<Bool>(false)
    /// True the first time only.
    func claim() -> Bool { !done.exchange(true, ordering: .acquiringAndReleasing) }
}
