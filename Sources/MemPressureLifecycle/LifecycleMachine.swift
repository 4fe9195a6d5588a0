import Glibc
import MemPressureLifecycleProtocol

/// The commands that move an app through its lifecycle: the state machine's inputs, which
/// `LifecycleMachine.plan` turns into steps. Not the same thing as `Command.Verb`, the command
/// vocabulary users, admin clients and scenarios speak: that holds these six (as
/// `Command.Verb(_:)` maps them) beside verbs that never reach the state machine (register, warn,
/// notify, the waits, app commands).
public enum LifecycleVerb: String, Sendable, Hashable, Codable, CaseIterable {
    case launch, activate, deactivate, background, terminate, relaunch
}

/// How an app is taken down: the steps of `terminate`, of a jetsam kill, of an abort and of a
/// background task's overrun (the supervisor carries them out in Teardown.swift).
public enum Teardown {
    public enum Step: Sendable, Hashable {
        /// Deliver the callback and wait for its acknowledgement (clients only).
        case callback(LifecycleCallback)
        /// Send the signal through the pidfd.
        case signal(Int32)
        /// Let a stopped or frozen app run again (SIGCONT or thaw), so that it can die.
        case thaw
        /// Free the dying app's memory now, without waiting for it to exit (process_mrelease).
        case releaseMemory
        /// Wait for the process to exit: for the grace period (then go on) or for good (then fail).
        case awaitExit(Wait)
    }

    public enum Wait: Sendable, Hashable {
        /// `terminateGrace` seconds; the steps after it run only if the app is still alive.
        case grace
        /// Ten seconds after SIGKILL; an app still alive then is an error.
        case killed
    }

    /// `terminate`: a running app gets willTerminate, then SIGTERM, then SIGKILL after the grace
    /// period; a suspended app is killed without notice (as iOS purges suspended apps).
    public static func terminate(from state: LifecycleState) -> [Step] {
        switch state {
        case .notRunning: []
        case .suspended: [.signal(SIGKILL), .thaw, .awaitExit(.killed)]
        case .inactive, .active, .backgroundRunning:
            [.callback(.willTerminate), .signal(SIGTERM), .awaitExit(.grace), .signal(SIGKILL), .awaitExit(.killed)]
        }
    }

    /// A jetsam kill: SIGKILL alone, in any state, with no callback and no grace (a suspended
    /// app is let run so that it can die); then its memory is freed at once. The caller waits
    /// for the exit on its own (a killer does not block on one victim).
    public static let jetsam: [Step] = [.signal(SIGKILL), .thaw, .releaseMemory]

    /// An abort (Ctrl-C): SIGKILL alone, with no callback and no grace (a suspended app is let
    /// run so that it can die); every app is signalled first, then the exits are waited for
    /// together.
    public static let abort: [Step] = [.signal(SIGKILL), .thaw]

    /// A background task still running at its limit: SIGKILL, as a watchdog kills (the app runs
    /// in the background, it is not stopped); its exit is logged as a crash, with a crash report.
    public static let watchdog: [Step] = [.signal(SIGKILL)]
}

/// One step of a lifecycle command, as the supervisor carries it out.
public enum LifecycleStep: Sendable, Hashable {
    /// Start the process (in the app's cgroups); it is `inactive` from then on.
    case spawn
    /// Wait for the client library to connect and say hello (programs without it are skipped).
    case connect
    /// Deliver the callback and wait for its acknowledgement.
    case callback(LifecycleCallback)
    /// The transition to a state.
    case enter(LifecycleState)
    /// A new stay in the background begins: its background-task timers start.
    case beginBackgroundStay
    /// The stay in the background ends: its timers no longer apply.
    case endBackgroundStay
    /// Continue a suspended app (SIGCONT or thaw) and wait until it runs.
    case resume
    /// Deliver the notifications queued (coalesced) while the app was suspended.
    case deliverQueuedNotifications
    /// Wait (without the app's command lock) until its background tasks have ended.
    case awaitBackgroundTasks
    /// Stop the app (SIGSTOP or the freezer) and wait until the kernel has it stopped.
    case suspend
    /// The command returns here; the steps after it go on by themselves.
    case detach
    case teardown(Teardown.Step)
}

/// The lifecycle as a pure function: which steps a command takes from a state. The supervisor
/// carries the steps out on the real process; these tests need none.
///
///     launch      notRunning -> inactive                  didFinishLaunching
///     activate    inactive -> active                      didBecomeActive
///                 backgroundRunning -> inactive -> active willEnterForeground, didBecomeActive
///                 suspended -> backgroundRunning (resumed; coalesced notifications delivered)
///                           -> inactive -> active         willEnterForeground, didBecomeActive
///                 notRunning: launch first
///     deactivate  active -> inactive                      willResignActive
///     background  active -> inactive -> backgroundRunning willResignActive, didEnterBackground
///                 then, once no background task is left, -> suspended (no callback)
///     terminate   running -> notRunning                   willTerminate, SIGTERM (SIGKILL after
///                                                         the grace period)
///                 suspended -> notRunning                 none: killed without notice
///     relaunch    terminate, then launch
public enum LifecycleMachine {
    /// Why a command does not apply in a state.
    public struct Refusal: Error, Sendable, Hashable {
        public var verb: LifecycleVerb
        public var state: LifecycleState
        public init(verb: LifecycleVerb, state: LifecycleState) {
            self.verb = verb
            self.state = state
        }
    }

    /// The steps of `verb` from `state`. `waitForSuspension: false` makes `background` return
    /// once didEnterBackground was delivered (the suspension goes on by itself).
    public static func plan(_ verb: LifecycleVerb, from state: LifecycleState, waitForSuspension: Bool = true) throws(Refusal) -> [LifecycleStep] {
        switch verb {
        case .launch:
            guard state == .notRunning else { throw Refusal(verb: verb, state: state) }
            return [.spawn, .enter(.inactive), .connect, .callback(.didFinishLaunching)]
        case .activate:
            let foreground: [LifecycleStep] = [.callback(.didBecomeActive), .enter(.active)]
            let fromBackground: [LifecycleStep] = [.callback(.willEnterForeground), .enter(.inactive)] + foreground
            switch state {
            case .notRunning: return try plan(.launch, from: .notRunning) + foreground
            case .inactive: return foreground
            case .active: return []
            case .backgroundRunning: return [.endBackgroundStay] + fromBackground
            case .suspended: return [.endBackgroundStay, .resume, .enter(.backgroundRunning), .deliverQueuedNotifications] + fromBackground
            }
        case .deactivate:
            guard state == .active else { throw Refusal(verb: verb, state: state) }
            return [.callback(.willResignActive), .enter(.inactive)]
        case .background:
            let suspension: [LifecycleStep] = (waitForSuspension ? [] : [.detach]) + [.awaitBackgroundTasks, .suspend, .enter(.suspended)]
            let entering: [LifecycleStep] = [.enter(.backgroundRunning), .beginBackgroundStay, .callback(.didEnterBackground)] + suspension
            switch state {
            case .notRunning, .suspended: return []
            case .active: return [.callback(.willResignActive), .enter(.inactive)] + entering
            case .inactive: return entering
            case .backgroundRunning: return suspension
            }
        case .terminate:
            return Teardown.terminate(from: state).map { .teardown($0) }
        case .relaunch:
            return Teardown.terminate(from: state).map { .teardown($0) } + (try plan(.launch, from: .notRunning))
        }
    }

    /// Whether the app exiting while the steps run fails the command. `background` does not
    /// fail (an app that overran its task or exited is simply no longer in the background), and
    /// for `terminate` an exit is the goal.
    public static func exitFails(_ verb: LifecycleVerb) -> Bool {
        switch verb {
        case .launch, .activate, .deactivate, .relaunch: true
        case .background, .terminate: false
        }
    }

    /// What the steps do to an app that cooperates (acknowledges every callback, has no
    /// background task left, exits when told): the states it passes through and the callbacks
    /// it gets, in order.
    public static func outcome(of steps: [LifecycleStep], from state: LifecycleState) -> (states: [LifecycleState], callbacks: [LifecycleCallback]) {
        var states: [LifecycleState] = []
        var callbacks: [LifecycleCallback] = []
        var current = state
        var exited = false
        for step in steps {
            switch step {
            case .enter(let s):
                exited = false
                if s != current {
                    states.append(s)
                    current = s
                }
            case .callback(let c), .teardown(.callback(let c)):
                if !exited { callbacks.append(c) }
            case .teardown(.awaitExit):
                if !exited && current != .notRunning {
                    states.append(.notRunning)
                    current = .notRunning
                    exited = true
                }
            case .spawn, .connect, .beginBackgroundStay, .endBackgroundStay, .resume, .deliverQueuedNotifications,
                .awaitBackgroundTasks, .suspend, .detach, .teardown:
                break
            }
        }
        return (states, callbacks)
    }
}
