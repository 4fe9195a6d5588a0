import MemPressureLifecycle
import FoundationEssentials
import Glibc
import MemPressureJetsam
import MemPressureSystem
import MemPressureLifecycleProtocol
import MemPressureVMTracker

/// A scripted experiment: a device, its apps, and the steps to put them through
/// (`mempressure run SCENARIO.json`; the format is documented in the AppLifecycle article
/// "Scenarios", AppLifecycle.docc/Scenarios.md). Each step is a `Command` in its step form
/// (`{"launch": "A"}`, `{"wait": 0.5}`, ...).
public struct Scenario: Sendable {
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
    /// Jetsam attached to the supervisor: its policy and thresholds (see `JetsamConfiguration`).
    public var jetsam: JetsamConfiguration?
    /// The apps' `oom_score_adj` by state (`OOMScoreBands`): the default bands if absent, these
    /// values if given; `oomScoreAdjust: false` leaves the apps at the value they inherit.
    public var oomScoreBands: OOMScoreBands?
    public var oomScoreAdjust: Bool?
    public var apps: [AppSpec]
    public var steps: [Command]

    public init(
        budgetBytes: Int? = nil, suspendWith: SuspendMethod? = nil, backgroundTaskLimit: Double? = nil,
        expirationWarning: Double? = nil, callbackTimeout: Double? = nil, launchTimeout: Double? = nil,
        warnOnPressure: Bool? = nil, jetsam: JetsamConfiguration? = nil, apps: [AppSpec], steps: [Command]
    ) {
        self.jetsam = jetsam
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

    /// Checks the scenario and says what is wrong, with the step's number.
    public func validate() throws(ScenarioError) {
        guard !apps.isEmpty else { throw .noApps }
        var names = Set<String>()
        for app in apps {
            do {
                try app.validate()
            } catch {
                switch error {
                case .invalidAppName(let name): throw .invalidAppName(name)
                case .emptyCommand(let name): throw .emptyCommand(app: name)
                default: throw .app(error)
                }
            }
            guard names.insert(app.name).inserted else { throw .duplicateApp(app.name) }
        }
        if let b = budgetBytes, b <= 0 { throw .nonPositiveBudget(b) }
        do {
            try configuration().validate()
        } catch {
            throw .configuration(error)
        }
        if let jetsam {
            do {
                try jetsam.validate()
            } catch {
                throw .jetsam(error)
            }
            for name in jetsam.protected + jetsam.limits.keys.sorted() where !names.contains(name) {
                throw .jetsamNamesNoApp(name)
            }
        }
        for (i, step) in steps.enumerated() {
            if let name = step.app, !names.contains(name) { throw .stepNamesNoApp(step: i + 1, name) }
            do {
                try step.validate()
            } catch {
                throw .step(i + 1, error)
            }
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
        if warnOnPressure == true { c.policies.append(WarnOnPressure()) }
        c.oomScoreBands = oomScoreAdjust == false ? nil : (oomScoreBands ?? OOMScoreBands())
        c.executableDirectory = executableDirectory
        return c
    }
}

/// Why a scenario cannot be run. Errors from below are wrapped, not worded: a step's
/// `CommandError`, the jetsam section's `JetsamConfigurationError`, the file's `SystemCallError`
/// or `DecodingError`.
public enum ScenarioError: Error, Sendable, CustomStringConvertible {
    case noApps
    /// App names are `ControlProtocol.isAppName`: 1 to 64 letters, digits, '.', '-', '_', not
    /// starting with '.' or '-'.
    case invalidAppName(String)
    /// An app's command or environment cannot be passed to a program (a NUL byte).
    case app(CommandError)
    case duplicateApp(String)
    case emptyCommand(app: String)
    case nonPositiveBudget(Int)
    /// A duration out of range (`callbackTimeout: 1e300`), as the supervisor would refuse it.
    case configuration(ConfigurationError)
    /// The jetsam section is not a valid configuration.
    case jetsam(JetsamConfigurationError)
    /// The jetsam section protects or limits an app the scenario does not have.
    case jetsamNamesNoApp(String)
    /// Step `number` (from 1) is wrong.
    case step(Int, CommandError)
    /// Step `number` (from 1) names an app the scenario does not have.
    case stepNamesNoApp(step: Int, String)
    /// The file could not be opened or read (or is a FIFO, device, symbolic link, too large).
    case unreadable(FileOpenError)
    case notAScenario(path: String, DecodingError)

    public var description: String {
        switch self {
        case .noApps: "the scenario has no apps"
        case .invalidAppName(let name): "app name \(String(reflecting: name)) is not valid: \(ControlProtocol.appNameRule)"
        case .app(let error): "\(error)"
        case .duplicateApp(let name): "two apps are named \(name)"
        case .emptyCommand(let app): "app \(app) has an empty command"
        case .nonPositiveBudget: "budgetBytes must be a positive number of bytes"
        case .configuration(let error): "\(error)"
        case .jetsam(let error): "\(error)"
        case .jetsamNamesNoApp(let name): "jetsam: no app named \(name)"
        case .step(let n, let error): "step \(n): \(error)"
        case .stepNamesNoApp(let n, let name): "step \(n): no app named \(name)"
        case .unreadable(let e): "\(e)"
        case .notAScenario(let path, let error): "\(path): not a scenario: \(error.plainDescription)"
        }
    }
}

extension Scenario: Codable {
    private enum Key: String, CodingKey, CaseIterable {
        case budgetBytes, suspendWith, backgroundTaskLimit, expirationWarning, callbackTimeout, launchTimeout, warnOnPressure, jetsam, oomScoreBands, oomScoreAdjust, apps, steps
    }

    public init(from decoder: any Decoder) throws {
        try UnknownKeys.refuse(in: decoder, known: Key.self, what: "the scenario")
        let c = try decoder.container(keyedBy: Key.self)
        budgetBytes = try c.decodeIfPresent(Int.self, forKey: .budgetBytes)
        suspendWith = try c.decodeIfPresent(SuspendMethod.self, forKey: .suspendWith)
        backgroundTaskLimit = try c.decodeIfPresent(Double.self, forKey: .backgroundTaskLimit)
        expirationWarning = try c.decodeIfPresent(Double.self, forKey: .expirationWarning)
        callbackTimeout = try c.decodeIfPresent(Double.self, forKey: .callbackTimeout)
        launchTimeout = try c.decodeIfPresent(Double.self, forKey: .launchTimeout)
        warnOnPressure = try c.decodeIfPresent(Bool.self, forKey: .warnOnPressure)
        jetsam = try c.decodeIfPresent(JetsamConfiguration.self, forKey: .jetsam)
        oomScoreBands = try c.decodeIfPresent(OOMScoreBands.self, forKey: .oomScoreBands)
        oomScoreAdjust = try c.decodeIfPresent(Bool.self, forKey: .oomScoreAdjust)
        apps = try c.decode([AppSpec].self, forKey: .apps)
        // Each step on its own, so that an error names the step.
        var list = try c.nestedUnkeyedContainer(forKey: .steps)
        var steps: [Command] = []
        while !list.isAtEnd {
            let number = steps.count + 1
            do {
                steps.append(try list.decode(Command.self))
            } catch let e as CommandError {
                throw ScenarioError.step(number, e)
            }
        }
        self.steps = steps
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: Key.self)
        try c.encodeIfPresent(budgetBytes, forKey: .budgetBytes)
        try c.encodeIfPresent(suspendWith, forKey: .suspendWith)
        try c.encodeIfPresent(backgroundTaskLimit, forKey: .backgroundTaskLimit)
        try c.encodeIfPresent(expirationWarning, forKey: .expirationWarning)
        try c.encodeIfPresent(callbackTimeout, forKey: .callbackTimeout)
        try c.encodeIfPresent(launchTimeout, forKey: .launchTimeout)
        try c.encodeIfPresent(warnOnPressure, forKey: .warnOnPressure)
        try c.encodeIfPresent(jetsam, forKey: .jetsam)
        try c.encodeIfPresent(oomScoreBands, forKey: .oomScoreBands)
        try c.encodeIfPresent(oomScoreAdjust, forKey: .oomScoreAdjust)
        try c.encode(apps, forKey: .apps)
        try c.encode(steps, forKey: .steps)
    }
}

/// What `mempressure run --json` prints.
public struct ScenarioLog: Sendable, Codable {
    public var formatVersion = 1
    public var events: [SupervisorEvent]
    public var apps: [AppReport]
    public var errors: [String]
    /// Jetsam's episode reports (empty without a jetsam section).
    public var episodes: [JetsamEpisode] = []
    /// Processes the kernel's cgroup OOM killer killed in the device during the run (nil
    /// without a budget): jetsam must keep it at zero.
    public var kernelOOMKills: UInt64?
}

extension Scenario {
    /// Runs the scenario with a supervisor of its own: registers the apps, performs the steps in
    /// order (a failing step is logged and the run goes on), then terminates everything.
    /// `onEvent` sees every log event as it happens. Cancelling the calling task (on Ctrl-C,
    /// say) aborts the run: every app is killed and everything the supervisor made is removed
    /// before this returns.
    public func run(executableDirectory: String? = nil, onEvent: (@Sendable (SupervisorEvent) -> Void)? = nil) async throws -> ScenarioLog {
        try validate()
        let directory = executableDirectory ?? Programs.ownDirectory()
        var configuration = configuration(executableDirectory: directory)
        let killer = jetsam.map { JetsamKiller(configuration: $0) }
        killer?.attach(to: &configuration)
        await Supervisor.prepareEventLoop()
        let supervisor = try Supervisor(configuration: configuration)
        let stream = await supervisor.logStream(replaying: true)
        let printer = Task {
            for await e in stream { onEvent?(e) }
        }
        var errors: [String] = []
        do {
            for app in apps {
                var spec = app
                spec.command[0] = Programs.resolve(spec.command[0], in: directory)
                try await supervisor.register(spec)
            }
        } catch {
            // Nothing ran; the supervisor's cgroups and directory go all the same.
            await supervisor.shutdown()
            _ = await printer.value
            throw error
        }
        await withTaskCancellationHandler {
            for (i, step) in steps.enumerated() {
                guard !Task.isCancelled else {
                    errors.append("interrupted before step \(i + 1)")
                    break
                }
                do {
                    try await supervisor.perform(step)
                } catch {
                    errors.append("step \(i + 1): \(error)")
                }
            }
        } onCancel: {
            Task { await supervisor.abort() }
        }
        let reports = await supervisor.reports()
        let oomKills = await supervisor.kernelOOMKills()
        // Interrupted: abort here too, whichever of this and the cancellation handler's runs
        // first (a graceful shutdown would ask the apps to terminate).
        if Task.isCancelled {
            await supervisor.abort()
        } else {
            await supervisor.shutdown()
        }
        _ = await printer.value
        // What the run could not clean up (a process still running, a cgroup it could not
        // remove) fails it: nothing may be left behind unsaid.
        errors += await supervisor.leftovers.map { "left behind: \($0)" }
        return ScenarioLog(events: await supervisor.log, apps: reports, errors: errors, episodes: killer?.episodes ?? [], kernelOOMKills: oomKills)
    }

    /// The most read from a scenario file: a description of apps and steps, not data.
    static let maximumFileBytes = 16 << 20

    public static func load(_ path: String) throws(ScenarioError) -> Scenario {
        try load(PathBytes(path.utf8))
    }

    /// Reads the scenario at exactly these path bytes, opened safely (`RegularFile`).
    public static func load(_ pathBytes: PathBytes) throws(ScenarioError) -> Scenario {
        let path = pathBytes.description
        let bytes: [UInt8]
        do {
            bytes = try RegularFile.read(pathBytes, maxBytes: maximumFileBytes)
        } catch {
            throw .unreadable(error)
        }
        let scenario: Scenario
        do {
            scenario = try JSONInput.decode(Scenario.self, from: Data(bytes))
        } catch let e as ScenarioError {
            throw e
        } catch let e as DecodingError {
            throw .notAScenario(path: path, e)
        } catch {
            throw .notAScenario(path: path, .dataCorrupted(.init(codingPath: [], debugDescription: "\(error)", underlyingError: error)))
        }
        try scenario.validate()
        return scenario
    }
}
