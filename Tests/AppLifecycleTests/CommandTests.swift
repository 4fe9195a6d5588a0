import MemPressureLifecycle
import FoundationEssentials
import Glibc
import MemPressureLifecycleProtocol
import MemPressureScenarios
import Testing
import MemPressureTestSupport

/// One command vocabulary: the step form, the admin form and the CLI decode to the same thing.
@Suite("commands")
struct CommandTests {
    func decode(_ json: String) throws -> Command {
        try JSONDecoder().decode(Command.self, from: Data(json.utf8))
    }

    @Test("the step form and the admin form decode to the same command", arguments: [
        (#"{"launch": "A"}"#, #"{"command": "launch", "app": "A"}"#),
        (#"{"activate": "A"}"#, #"{"command": "activate", "app": "A"}"#),
        (#"{"background": "A", "wait": false}"#, #"{"command": "background", "app": "A", "wait": false}"#),
        (#"{"warn": "running"}"#, #"{"command": "warn"}"#),
        (#"{"notify": "B", "kind": "localeChanged", "value": "fr"}"#, #"{"command": "notify", "app": "B", "kind": "localeChanged", "value": "fr"}"#),
        (#"{"wait": 0.5}"#, #"{"command": "wait", "seconds": 0.5}"#),
        (#"{"waitState": "A", "state": "suspended"}"#, #"{"command": "waitState", "app": "A", "state": "suspended"}"#),
        (#"{"allocate": "A", "bytes": 1048576}"#, #"{"command": "allocate", "app": "A", "bytes": 1048576}"#),
    ])
    func forms(step: String, admin: String) throws {
        let a = try decode(step)
        #expect(a == (try decode(admin)))
        // Encoding gives the admin form, which decodes back to the same command.
        let encoded = try JSONEncoder().encode(a)
        #expect(try JSONDecoder().decode(Command.self, from: encoded) == a)
    }

    @Test("what each decodes to")
    func meanings() throws {
        #expect(try decode(#"{"background": "A"}"#) == .background("A", waitForSuspension: true))
        #expect(try decode(#"{"warn": "all"}"#) == .warn(.all))
        #expect(try decode(#"{"warn": "A"}"#) == .warn(.app("A")))
        #expect(try decode(#"{"command": "launch", "app": "W", "argv": ["/bin/true"], "client": false}"#)
            == .launch("W", registering: AppSpec(name: "W", command: ["/bin/true"], client: false)))
        #expect(try decode(#"{"release": "A", "bytes": 4096}"#).verb == .release)
        #expect(try decode(#"{"waitReady": "A", "count": 2}"#) == .waitReady("A", count: 2, timeout: nil))
    }

    @Test("bad commands say what is wrong", arguments: [
        (#"{"launch": "A", "activate": "B"}"#, "needs exactly one action", CommandError.actionCount([.launch, .activate])),
        (#"{}"#, "needs exactly one action", .actionCount([])),
        (#"{"command": "explode", "app": "A"}"#, "unknown command 'explode'", .unknownCommand("explode")),
        (#"{"command": "activate"}"#, "'activate' needs an app", .missingField(.activate, .app)),
        (#"{"waitState": "A"}"#, "waitState needs a state", .missingField(.waitState, .state)),
        (#"{"allocate": "A"}"#, "allocate needs bytes", .missingField(.allocate, .bytes)),
        (#"{"command": "register", "app": "A"}"#, "register needs argv", .missingField(.register, .argv)),
        (#"{"notify": "running", "kind": "k"}"#, "notify takes \"all\" or an app", .notifyRunning),
    ])
    func bad(json: String, message: String, error: CommandError) throws {
        do {
            _ = try decode(json)
            Issue.record("\(json) decoded")
        } catch let e as CommandError {
            #expect(e.description.contains(message), "\(e)")
            #expect(e == error, "the case a caller can switch on")
        }
    }

    @Test("numbers out of range are refused before anything runs")
    func ranges() {
        #expect(throws: CommandError.self) { try Command.wait(seconds: -1).validate() }
        #expect(throws: CommandError.self) { try Command.wait(seconds: .infinity).validate() }
        #expect(throws: CommandError.self) { try Command.wait(seconds: 1e300).validate() }
        #expect(throws: CommandError.self) { try Command.allocate("A", bytes: 0).validate() }
        #expect(throws: CommandError.self) { try Command.waitReady("A", count: 1, timeout: 0).validate() }
        #expect(throws: Never.self) { try Command.wait(seconds: 0.25).validate() }
        // Each a case of its own, wrapped as it is by the supervisor.
        #expect(throws: CommandError.waitOutOfRange(-1)) { try Command.wait(seconds: -1).validate() }
        #expect(throws: CommandError.countBelowOne(0)) { try Command.waitReady("A", count: 0, timeout: nil).validate() }
        #expect(throws: CommandError.timeoutOutOfRange(0)) { try Command.waitState("A", .active, timeout: 0).validate() }
        #expect(throws: CommandError.nonPositiveBytes(.release, -4096)) { try Command.release("A", bytes: -4096).validate() }
        #expect(throws: CommandError.missingKind) { try Command.notify(.all, kind: "", value: "").validate() }
        #expect(throws: CommandError.emptyCommand(app: "W")) { try Command.register(AppSpec(name: "W", command: [""])).validate() }
        #expect(SupervisorError.invalidCommand(.missingKind).description == "notify needs a kind")
    }

    @Test("the lifecycle verbs are command verbs of the same name")
    func verbs() {
        for verb in LifecycleVerb.allCases {
            #expect(Command.Verb(verb).rawValue == verb.rawValue)
        }
    }

    @Test("admin requests: queries beside commands")
    func admin() throws {
        #expect(try JSONDecoder().decode(AdminRequest.self, from: Data(#"{"command":"apps"}"#.utf8)) == .apps)
        #expect(try JSONDecoder().decode(AdminRequest.self, from: Data(#"{"command":"status"}"#.utf8)) == .status)
        #expect(try JSONDecoder().decode(AdminRequest.self, from: Data(#"{"command":"terminate","app":"A"}"#.utf8)) == .perform(.terminate("A")))
        let encoded = String(decoding: try JSONEncoder().encode(AdminRequest.log), as: UTF8.self)
        #expect(encoded == #"{"command":"log"}"#)
        let response = try JSONDecoder().decode(AdminResponse<LifecycleState>.self, from: Data(#"{"ok":true,"result":"suspended"}"#.utf8))
        #expect(response.ok && response.result == .suspended)
    }

    @Test("a scenario names the step that is wrong")
    func scenarioSteps() throws {
        let json = #"{"apps": [{"name": "A", "command": ["x"]}], "steps": [{"launch": "A"}, {"wait": 1}, {"launch": "A", "terminate": "A"}]}"#
        let error = #expect(throws: ScenarioError.self) { try JSONDecoder().decode(Scenario.self, from: Data(json.utf8)) }
        #expect(error?.description == "step 3: needs exactly one action (launch, activate, deactivate, background, terminate, relaunch, warn, notify, wait, waitReady, waitState, allocate, release, forget), has launch, terminate")
        guard case .step(3, .actionCount([.launch, .terminate])) = error else {
            Issue.record("not the step's CommandError: \(String(describing: error))")
            return
        }
        let unknown = try JSONDecoder().decode(Scenario.self, from: Data(#"{"apps": [{"name": "A", "command": ["x"]}], "steps": [{"activate": "B"}]}"#.utf8))
        let named = #expect(throws: ScenarioError.self) { try unknown.validate() }
        #expect(named?.description == "step 1: no app named B")
        guard case .stepNamesNoApp(step: 1, "B") = named else {
            Issue.record("not the step naming no app: \(String(describing: named))")
            return
        }
    }
}

@Suite("scenario interruption")
struct ScenarioInterruptionTests {
    @Test("cancelling a running scenario kills its apps at once and cleans up before it returns")
    func cancel() async throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let scenario = Scenario(
            backgroundTaskLimit: 600,
            apps: [AppSpec(name: "A", command: workloadCommand(dir)), AppSpec(name: "B", command: ["/bin/sleep", "600"], client: false)],
            steps: [.activate("A"), .activate("B"), .background("B", waitForSuspension: true), .wait(seconds: 600), .terminate("A")])
        let (events, continuation) = AsyncStream<SupervisorEvent>.makeStream()
        let run = Task {
            defer { continuation.finish() }
            return try await scenario.run(executableDirectory: buildDirectory) { continuation.yield($0) }
        }
        // Wait for the real event: B suspended (the scenario is then in its long wait). A
        // scenario that ends before (it failed) ends the stream: said with what it returned.
        let suspended = await first(of: events, within: 300) { $0.app == "B" && $0.kind == .state && $0.to == .suspended }
        if suspended == nil {
            run.cancel()
            Issue.record("B never suspended; the scenario: \(await run.result)")
            return
        }
        run.cancel()
        let log = try await run.value
        #expect(log.errors.contains { $0.hasPrefix("interrupted") }, "\(log.errors)")
        for app in ["A", "B"] {
            let pid = try #require(log.events.first { $0.app == app && $0.kind == .launch }?.pid)
            #expect(try !ChildSignals.isAlive(pid), "\(app) (pid \(pid)) was killed")
            #expect(log.events.contains { $0.app == app && $0.kind == .state && $0.to == .notRunning })
            #expect(log.events.contains { $0.app == app && $0.payload == .exit(.signaled(SIGKILL), killReason: nil) }, "killed, not asked")
        }
        #expect(!log.events.contains { $0.payload == .callback(.willTerminate) }, "an abort sends no callback")
    }
}
