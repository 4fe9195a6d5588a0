import Glibc
import MemPressureLifecycleProtocol
import MemPressureSystem

// MARK: Teardown: the one way each step of taking an app down is carried out
//
// `Teardown` (LifecycleMachine.swift) says which steps each teardown takes: terminate (and the
// first half of relaunch), a jetsam kill, an abort, a background task's overrun. Every one of
// them is carried out here, step by step, on one run of the app.

/// How the exit a teardown causes is logged.
enum TeardownExit {
    /// As an exit, the teardown's own (terminate, abort), with the reason of a kill (jetsam).
    case expected(KillReason?)
    /// As a crash, like a watchdog's kill (a background task that overran its limit).
    case crash
}

/// One teardown under way: the run of the app it acts on, and what it has done.
struct TeardownRun {
    let process: AppProcess
    let generation: Int
    let exit: TeardownExit
    /// When its first signal went (monotonic); nil while none has.
    var signalledAt: Double?
    /// Set when a signal found the process already exited: nothing more is done to it (its
    /// exit is still waited for, where the teardown waits).
    var foundExited = false
    /// Whether process_mrelease freed its memory.
    var memoryReleased = false
    /// Other processes of the app its SIGKILL reached.
    var othersKilled = 0
    /// The app's footprint from its cgroup at the SIGKILL (`AppProcess.Kill.chargedBytes`).
    var chargedBytes: UInt64?

    init(process: AppProcess, generation: Int, exit: TeardownExit) {
        self.process = process
        self.generation = generation
        self.exit = exit
    }
}

extension Supervisor {
    /// A teardown of the app's current run; nil when it is not running.
    func teardown(of a: AppRecord, as exit: TeardownExit) -> TeardownRun? {
        guard let process = a.process, a.state != .notRunning else { return nil }
        return TeardownRun(process: process, generation: a.generation, exit: exit)
    }

    /// Carries out `steps` in order, until the run is gone.
    func carryOut(_ steps: [Teardown.Step], on a: AppRecord, _ t: inout TeardownRun) async throws(SupervisorError) {
        for step in steps {
            guard try await carryOut(step, on: a, &t) else { return }
        }
    }

    /// Carries out one teardown step on the run `t` acts on. False once that run is gone (the
    /// rest of the teardown has nothing to act on).
    ///
    /// The app is marked as being taken down (`terminating`: its exit is not a crash; with the
    /// kill's reason) when the first step acts on it: before a callback is delivered, once a
    /// signal went. A `.crash` teardown does not mark it.
    func carryOut(_ step: Teardown.Step, on a: AppRecord, _ t: inout TeardownRun) async throws(SupervisorError) -> Bool {
        guard isCurrent(a, t) else { return false }
        switch step {
        case .callback(let c):
            mark(a, t)
            await deliver(c, to: a)
        case .signal(SIGKILL):
            // SIGKILL takes the whole app: the main process first, then every other one it
            // started; their memory freed at once (process_mrelease).
            guard !t.foundExited else { break }
            if let kill = t.process.killApp(releaseMemory: true) {
                if t.signalledAt == nil { t.signalledAt = kill.signalledAt }
                t.memoryReleased = kill.memoryReleased
                t.othersKilled += kill.others
                t.chargedBytes = kill.chargedBytes
                a.othersKilled = max(a.othersKilled, kill.others)
                if let failure = kill.failure { record(.error(.kill(cause: "\(failure)")), a) }
                mark(a, t)
            } else {
                t.foundExited = true  // ESRCH: it exited by itself; its exit is on its way
            }
        case .signal(let sig):
            guard !t.foundExited else { break }
            let at = monotonicSeconds()
            if t.process.signal(sig) {
                if t.signalledAt == nil { t.signalledAt = at }
                mark(a, t)
            } else {
                t.foundExited = true  // ESRCH: it exited by itself; its exit is on its way
            }
        case .thaw:
            if !t.foundExited { letRun(a, t.process) }
        case .releaseMemory:
            break  // done with the SIGKILL (see above): the memory of every process of the app
        case .awaitExit(let wait):
            let seconds = wait == .grace ? configuration.terminateGrace : 10
            let generation = t.generation
            let exited = await waitFor(a.name, timeout: seconds) { !$0.alive || $0.generation != generation }
            if !exited && wait == .killed { throw .didNotExit(app: a.name, pid: t.process.pid, seconds: seconds) }
        }
        return isCurrent(a, t)
    }

    /// Whether the run the teardown acts on is still the app's, alive.
    private func isCurrent(_ a: AppRecord, _ t: TeardownRun) -> Bool {
        a.generation == t.generation && a.process === t.process && a.state != .notRunning
    }

    private func mark(_ a: AppRecord, _ t: TeardownRun) {
        guard case .expected(let reason) = t.exit else { return }
        a.terminating = true
        if let reason { a.killReason = reason }
    }

    /// Lets a suspended app run (so that a pending SIGKILL can take it): every process of it.
    func letRun(_ a: AppRecord, _ process: AppProcess) {
        switch configuration.suspendMethod {
        case .freezer:
            guard case .cgroup(let group) = process.members, let freezer = group.freezer else { return }
            do { try freezer.thaw() } catch { record(.error(.letRun(cause: "\(error)")), a) }
        case .sigstop:
            if let failure = process.signalApp(SIGCONT).failure { record(.error(.letRun(cause: "\(failure)")), a) }
        }
    }
}
