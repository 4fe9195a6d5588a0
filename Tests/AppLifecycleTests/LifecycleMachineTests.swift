import MemPressureLifecycle
import Glibc
import MemPressureLifecycleProtocol
import Testing

/// The lifecycle as a pure function: no process, no supervisor.
@Suite("lifecycle state machine")
struct LifecycleMachineTests {
    typealias S = LifecycleState

    func outcome(_ verb: LifecycleVerb, from state: S) throws -> (states: [S], callbacks: [LifecycleCallback]) {
        LifecycleMachine.outcome(of: try LifecycleMachine.plan(verb, from: state), from: state)
    }

    @Test("activate from every state: the transitions and callbacks of iOS, in order")
    func activate() throws {
        let cases: [(S, [S], [LifecycleCallback])] = [
            (.notRunning, [.inactive, .active], [.didFinishLaunching, .didBecomeActive]),
            (.inactive, [.active], [.didBecomeActive]),
            (.active, [], []),
            (.backgroundRunning, [.inactive, .active], [.willEnterForeground, .didBecomeActive]),
            (.suspended, [.backgroundRunning, .inactive, .active], [.willEnterForeground, .didBecomeActive]),
        ]
        for (from, states, callbacks) in cases {
            let o = try outcome(.activate, from: from)
            #expect(o.states == states, "from \(from)")
            #expect(o.callbacks == callbacks, "from \(from)")
        }
        // Resuming delivers the queued notifications before willEnterForeground.
        let steps = try LifecycleMachine.plan(.activate, from: .suspended)
        let resume = try #require(steps.firstIndex(of: .resume))
        let queued = try #require(steps.firstIndex(of: .deliverQueuedNotifications))
        let foreground = try #require(steps.firstIndex(of: .callback(.willEnterForeground)))
        #expect(resume < queued && queued < foreground)
    }

    @Test("background: willResignActive, didEnterBackground, then suspension once the tasks are done")
    func background() throws {
        #expect(try outcome(.background, from: .active).states == [.inactive, .backgroundRunning, .suspended])
        #expect(try outcome(.background, from: .active).callbacks == [.willResignActive, .didEnterBackground])
        #expect(try outcome(.background, from: .inactive).callbacks == [.didEnterBackground])
        #expect(try outcome(.background, from: .backgroundRunning).states == [.suspended])
        #expect(try LifecycleMachine.plan(.background, from: .suspended).isEmpty)
        #expect(try LifecycleMachine.plan(.background, from: .notRunning).isEmpty)
        // The wait for tasks comes before the stop, and the stop before the state.
        let steps = try LifecycleMachine.plan(.background, from: .active)
        let wait = try #require(steps.firstIndex(of: .awaitBackgroundTasks))
        let stop = try #require(steps.firstIndex(of: .suspend))
        #expect(wait < stop && steps.last == .enter(.suspended))
        #expect(!steps.contains(.detach))
        // Without waiting: the command returns right after didEnterBackground.
        let quick = try LifecycleMachine.plan(.background, from: .active, waitForSuspension: false)
        let detach = try #require(quick.firstIndex(of: .detach))
        #expect(quick[detach - 1] == .callback(.didEnterBackground))
        #expect(LifecycleMachine.outcome(of: quick, from: .active).states == [.inactive, .backgroundRunning, .suspended])
    }

    @Test("terminate: a running app is asked, a suspended one is killed without notice")
    func terminate() throws {
        for from in [S.active, .inactive, .backgroundRunning] {
            let o = try outcome(.terminate, from: from)
            #expect(o.callbacks == [.willTerminate], "from \(from)")
            #expect(o.states == [.notRunning], "from \(from)")
        }
        #expect(try outcome(.terminate, from: .suspended).callbacks.isEmpty)
        #expect(try outcome(.terminate, from: .suspended).states == [.notRunning])
        #expect(try LifecycleMachine.plan(.terminate, from: .notRunning).isEmpty)
        #expect(Teardown.terminate(from: .active) == [.callback(.willTerminate), .signal(SIGTERM), .awaitExit(.grace), .signal(SIGKILL), .awaitExit(.killed)])
        #expect(Teardown.terminate(from: .suspended) == [.signal(SIGKILL), .thaw, .awaitExit(.killed)])
        // A jetsam kill: SIGKILL alone, no callback, no grace.
        #expect(!Teardown.jetsam.contains { if case .callback = $0 { true } else { false } })
        #expect(!Teardown.jetsam.contains(.awaitExit(.grace)))
        #expect(Teardown.jetsam.first == .signal(SIGKILL))
        // An abort: SIGKILL at once, a suspended app let run to die; a background task's overrun:
        // SIGKILL alone. Neither asks the app anything nor waits.
        #expect(Teardown.abort == [.signal(SIGKILL), .thaw])
        #expect(Teardown.watchdog == [.signal(SIGKILL)])
    }

    @Test("relaunch: terminate then launch; deactivate only from active; launch only from not running")
    func relaunchAndRefusals() throws {
        let o = try outcome(.relaunch, from: .active)
        #expect(o.states == [.notRunning, .inactive])
        #expect(o.callbacks == [.willTerminate, .didFinishLaunching])
        #expect(try outcome(.deactivate, from: .active).callbacks == [.willResignActive])
        for from in [S.notRunning, .inactive, .backgroundRunning, .suspended] {
            #expect(throws: LifecycleMachine.Refusal(verb: .deactivate, state: from)) { try LifecycleMachine.plan(.deactivate, from: from) }
        }
        for from in [S.inactive, .active, .backgroundRunning, .suspended] {
            #expect(throws: LifecycleMachine.Refusal(verb: .launch, state: from)) { try LifecycleMachine.plan(.launch, from: from) }
        }
    }

    @Test("every state and command: the plan ends in the state the command promises")
    func everyPair() throws {
        let promised: [LifecycleVerb: Set<S>] = [
            .launch: [.inactive], .activate: [.active], .deactivate: [.inactive], .background: [.suspended, .notRunning],
            .terminate: [.notRunning], .relaunch: [.inactive],
        ]
        for verb in LifecycleVerb.allCases {
            for from in S.allCases {
                let steps: [LifecycleStep]
                do {
                    steps = try LifecycleMachine.plan(verb, from: from)
                } catch {
                    // Refused (deactivate when not active, launch when running): covered above.
                    #expect(error == LifecycleMachine.Refusal(verb: verb, state: from))
                    continue
                }
                let o = LifecycleMachine.outcome(of: steps, from: from)
                let end = o.states.last ?? from
                #expect(promised[verb]!.contains(end), "\(verb) from \(from) ends \(end)")
                // Never a callback to an app that is not running.
                #expect(!(from == .notRunning && verb == .terminate && !o.callbacks.isEmpty))
            }
        }
        #expect(LifecycleMachine.exitFails(.activate) && !LifecycleMachine.exitFails(.background) && !LifecycleMachine.exitFails(.terminate))
    }
}
