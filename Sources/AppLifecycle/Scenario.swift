import FoundationEssentials
import Glibc
import LinuxSystem

/// A scripted experiment: a device, its apps, and the steps to put them through
/// (`mempressure run SCENARIO.json`; the format is documented in the README).
public struct Scenario: Sendable, Codable {
    /// The device's RAM budget (a memory cgroup holding every app); none if absent.
    public var budgetBytes: Int?
    /// "sigstop" (default) or "freezer".
    public var suspendWith: SuspendMethod?
    /// Seconds a background task may run after the app entered the background (default 30).
    public var backgroundTaskLimit: Double?
    /// Seconds before the limit the expiration handler runs (default min(5, limit)).
    public var expirationWarning: Double?
    /// Seconds a callback may take (default 5), and didFinishLaunching (default 30).
    public var callbackTimeout: Double?
    public var launchTimeout: Double?
    /// Send running apps memory warnings when memory pressure reaches warning.
    public var warnOnPressure: Bool?
    public var apps: [AppSpec]
    public var steps: [Step]

    public init(
        budgetBytes: Int? = nil, suspendWith: SuspendMethod? = nil, backgroundTaskLimit: Double? = nil,
        expirationWarning: Double? = nil, callbackTimeout: Double? = nil, launchTimeout: Double? = nil,
        warnOnPressure: Bool? = nil, apps: [AppSpec], steps: [Step]
    ) {
        self.budgetBytes = budgetBytes
        self.suspendWith = suspendWith
        self.backgroundTaskLimit = backgroundTaskLimit
        self.expirationWarning = expirationWarning
        self.callbackTimeout = callbackTimeout
        self.launchTimeout = launchTimeout
        self.warnOnPressure = warnOnPressure
        self.apps = apps
        self.steps = steps
    }

    /// One step: exactly one action.
    public struct Step: Sendable, Codable, Hashable {
        public var launch: String?
        public var activate: String?
        public var deactivate: String?
        public var background: String?
        public var terminate: String?
        public var relaunch: String?
        /// Seconds to let pass.
        public var wait: Double?
        /// "running" or "all" (the same: suspended apps never get warnings), or an app.
        public var warn: String?
        /// "all" or an app, with `kind` and `value`.
        public var notify: String?
        public var kind: String?
        public var value: String?
        /// Wait until the app reports ready (once more than when the step began, or `count`).
        public var waitReady: String?
        public var count: Int?
        /// Wait until the app is in `state`.
        public var waitState: String?
        public var state: LifecycleState?
        public var timeout: Double?

        public init(
            launch: String? = nil, activate: String? = nil, deactivate: String? = nil, background: String? = nil,
            terminate: String? = nil, relaunch: String? = nil, wait: Double? = nil, warn: String? = nil,
            notify: String? = nil, kind: String? = nil, value: String? = nil, waitReady: String? = nil, count: Int? = nil,
            waitState: String? = nil, state: LifecycleState? = nil, timeout: Double? = nil
        ) {
            self.launch = launch
            self.activate = activate
            self.deactivate = deactivate
            self.background = background
            self.terminate = terminate
            self.relaunch = relaunch
            self.wait = wait
            self.warn = warn
            self.notify = notify
            self.kind = kind
            self.value = value
            self.waitReady = waitReady
            self.count = count
            self.waitState = waitState
            self.state = state
            self.timeout = timeout
        }

        var actions: [String] {
            var a: [String] = []
            if launch != nil { a.append("launch") }
            if activate != nil { a.append("activate") }
            if deactivate != nil { a.append("deactivate") }
            if background != nil { a.append("background") }
            if terminate != nil { a.append("terminate") }
            if relaunch != nil { a.append("relaunch") }
            if wait != nil { a.append("wait") }
            if warn != nil { a.append("warn") }
            if notify != nil { a.append("notify") }
            if waitReady != nil { a.append("waitReady") }
            if waitState != nil { a.append("waitState") }
            return a
        }
    }

    /// Checks the scenario and says what is wrong, with the step's number.
    public func validate() throws {
        guard !apps.isEmpty else { throw SupervisorError("the scenario has no apps") }
        var names = Set<String>()
        for app in apps {
            guard names.insert(app.name).inserted else { throw SupervisorError("two apps are named \(app.name)") }
            guard !app.command.isEmpty else { throw SupervisorError("app \(app.name) has an empty command") }
        }
        for (i, step) in steps.enumerated() {
            let actions = step.actions
            guard actions.count == 1 else {
                throw SupervisorError("step \(i + 1): needs exactly one action (launch, activate, deactivate, background, terminate, relaunch, wait, warn, notify, waitReady, waitState), has \(actions.isEmpty ? "none" : actions.joined(separator: ", "))")
            }
            for name in [step.launch, step.activate, step.deactivate, step.background, step.terminate, step.relaunch, step.waitReady, step.waitState].compactMap({ $0 }) {
                guard names.contains(name) else { throw SupervisorError("step \(i + 1): no app named \(name)") }
            }
            if let w = step.wait, !(w >= 0 && w.isFinite) { throw SupervisorError("step \(i + 1): wait must be a non-negative number of seconds") }
            if let n = step.notify {
                guard n == "all" || names.contains(n) else { throw SupervisorError("step \(i + 1): notify takes \"all\" or an app") }
                guard step.kind != nil else { throw SupervisorError("step \(i + 1): notify needs a kind") }
            }
            if let w = step.warn, w != "all", w != "running", !names.contains(w) {
                throw SupervisorError("step \(i + 1): warn takes \"running\", \"all\" or an app")
            }
            if step.waitState != nil, step.state == nil { throw SupervisorError("step \(i + 1): waitState needs a state") }
        }
    }

    /// The supervisor configuration this scenario asks for.
    public func configuration(executableDirectory: String? = nil) -> SupervisorConfiguration {
        var c = SupervisorConfiguration()
        c.budgetBytes = budgetBytes
        c.suspendMethod = suspendWith ?? .sigstop
        if let l = backgroundTaskLimit { c.backgroundTaskLimit = l }
        c.expirationWarning = expirationWarning ?? min(5, c.backgroundTaskLimit / 2)
        if let t = callbackTimeout { c.callbackTimeout = t }
        if let t = launchTimeout { c.launchTimeout = t }
        c.warnOnPressure = warnOnPressure ?? false
        c.executableDirectory = executableDirectory
        return c
    }
}

/// What `mempressure run --json` prints.
public struct ScenarioLog: Sendable, Codable {
    public var formatVersion = 1
    public var events: [SupervisorEvent]
    public var apps: [AppReport]
    public var errors: [String]
}

extension Scenario {
    /// Runs the scenario with a supervisor of its own: registers the apps, performs the steps in
    /// order (a failing step is logged and the run goes on), then terminates everything.
    /// `onEvent` sees every log event as it happens.
    public func run(executableDirectory: String? = nil, onEvent: (@Sendable (SupervisorEvent) -> Void)? = nil) async throws -> ScenarioLog {
        try validate()
        let directory = executableDirectory ?? Supervisor.ownDirectory()
        let supervisor = try Supervisor(configuration: configuration(executableDirectory: directory))
        let stream = await supervisor.logStream()
        let printer = Task {
            for await e in stream { onEvent?(e) }
        }
        var errors: [String] = []
        for app in apps {
            var spec = app
            spec.command[0] = Self.resolve(spec.command[0], in: directory)
            try await supervisor.register(spec)
        }
        for (i, step) in steps.enumerated() {
            do {
                try await perform(step, on: supervisor)
            } catch {
                errors.append("step \(i + 1): \(error)")
            }
        }
        let reports = await supervisor.reports()
        await supervisor.shutdown()
        _ = await printer.value
        return ScenarioLog(events: await supervisor.log, apps: reports, errors: errors)
    }

    func perform(_ step: Step, on s: Supervisor) async throws {
        if let a = step.launch { try await s.launch(a) }
        if let a = step.activate { try await s.activate(a) }
        if let a = step.deactivate { try await s.deactivate(a) }
        if let a = step.background { try await s.background(a) }
        if let a = step.terminate { try await s.terminate(a) }
        if let a = step.relaunch { try await s.relaunch(a) }
        if let w = step.wait { try await Task.sleep(for: .seconds(w)) }
        if let w = step.warn { await s.warn(w == "all" || w == "running" ? .all : .app(w)) }
        if let n = step.notify { try await s.notify(n == "all" ? .all : .app(n), kind: step.kind ?? "", value: step.value ?? "") }
        if let a = step.waitReady { try await s.waitForReady(a, count: step.count ?? 1, timeout: step.timeout ?? 60) }
        if let a = step.waitState, let state = step.state { try await s.waitForState(a, state, timeout: step.timeout ?? 60) }
    }

    /// A bare program name that is one of this package's executables ("mempressure-workload", or
    /// "WorkloadApp") is taken from `directory`; anything else is left to PATH.
    static func resolve(_ program: String, in directory: String) -> String {
        guard !program.contains("/") else { return program }
        let name = program == "WorkloadApp" ? "mempressure-workload" : program
        let candidate = "\(directory)/\(name)"
        return access(candidate, X_OK) == 0 ? candidate : program
    }

    public static func load(_ path: String) throws -> Scenario {
        let bytes: [UInt8]
        do {
            bytes = try ProcFS.readBytes(path)
        } catch {
            throw SupervisorError("\(path): \(error.errno.symbolicName) (\(error.errno))")
        }
        do {
            let scenario = try JSONDecoder().decode(Scenario.self, from: Data(bytes))
            try scenario.validate()
            return scenario
        } catch let e as DecodingError {
            throw SupervisorError("\(path): not a scenario: \(e)")
        }
    }
}
