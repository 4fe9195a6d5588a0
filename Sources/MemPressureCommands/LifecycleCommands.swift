import MemPressureOneShot
import MemPressureLifecycle
import ArgumentParser
import CoreMetrics
import MemPressureExporter
import FoundationEssentials
import Glibc
import MemPressureJetsam
import MemPressureLifecycleProtocol
import MemPressureSystem
import Logging
import Prometheus
import MemPressureScenarios
import ServiceLifecycle
import MemPressureVMTracker

extension SuspendMethod: ExpressibleByArgument {}

struct Run: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "run",
        abstract: "Run a scripted experiment (a scenario) and print its event log.",
        discussion: """
            SCENARIO.json names the device (an optional RAM budget), how apps are suspended, the \
            apps and the steps; the format is in the documentation's Scenarios article \
            (Sources/MemPressureLifecycle/MemPressureLifecycle.docc/Scenarios.md). A bare program \
            name that is one of this package's executables (mempressure-workload) is taken from \
            next to mempressure. Events print as they happen; --json prints the whole log at the end: \
            {"events": [...], "apps": [{"name", "accounting": {STATE: {...}}, "footprint": [...]}]}.
            """
    )

    @Argument(help: "The scenario file.", completion: .file(extensions: ["json"])) var scenario: String
    @Flag(help: "Print the log as JSON at the end.") var json = false

    func run() async throws {
        do {
            let s = try Scenario.load(PathBytes.argument(scenario))
            let printLive = !json
            let log = try await interruptible {
                try await s.run { event in
                    if printLive { output(renderEvent(event) + "\n") }
                }
            }
            if json {
                output(try encodeJSON(log))
            } else {
                output("\n" + renderAccounting(log.apps))
            }
            // Also with --json: the log holds the errors too, but an exit status of 1 must say
            // why where a person reads it.
            for e in log.errors { writeStandardError("mempressure: \(e)\n") }
            if !log.errors.isEmpty { throw ExitCode(1) }
        } catch let e as ExitCode {
            throw e
        } catch {
            throw fail(error)
        }
    }
}

/// Runs `body` so that SIGINT, SIGTERM or SIGHUP cancels it — a scenario then kills its apps
/// and removes its cgroups and files — and waits for that cleanup; an interrupted run exits with
/// status 130. SIGPIPE is ignored: a reader of the output that goes away (`| head`) makes the
/// writes fail, it does not end the process before its cleanup.
func interruptible<T: Sendable>(_ body: @escaping @Sendable () async throws -> T) async throws -> T {
    signal(SIGPIPE, SIG_IGN)
    let work = Task { try await body() }
    func interrupted() -> ExitCode {
        writeStandardError("mempressure: interrupted: every app was killed and what the run made was removed\n")
        return ExitCode(130)
    }
    let result: T
    do {
        result = try await Interrupts.handling({ _ in work.cancel() }) { try await work.value }
    } catch {
        if work.isCancelled { throw interrupted() }
        throw error
    }
    if work.isCancelled { throw interrupted() }
    return result
}

func renderEvent(_ e: SupervisorEvent) -> String {
    let time: String = ByteFormat.fixed(e.t, 3).padded(to: 9)
    let app: String = (e.app ?? "-").padded(to: 10, left: true)
    let pid: String = (e.pid.map { String($0) } ?? "").padded(to: 7)
    let kind: String = e.kind.rawValue.padded(to: 12, left: true)
    var line = time + "  " + app + "  " + pid + "  " + kind
    switch e.payload {
    case .state(let from, let to): line += "  \(from.rawValue) -> \(to.rawValue)"
    case .policy(.kill(let k)):
        line += "  \(k.reason.rawValue), rank \(k.rank) (\(k.policy)), footprint \(ByteFormat.human(k.footprintBytes))"
        line += ", gave back \(ByteFormat.human(k.reclaimedBytes))"
        if let d = e.detail { line += "; \(d)" }
        line += "\n" + String(repeating: " ", count: 46) + k.explanation
    default:
        if let n = e.name { line += "  \(n)" }
        if let d = e.detail { line += "  \(d)" }
    }
    for frame in e.stack ?? [] { line += "\n" + String(repeating: " ", count: 46) + "at " + frame }
    return line
}

func renderAccounting(_ apps: [AppReport]) -> String {
    var t = TextTable([
        .init("App", .left), .init("State", .left), .init("In state", .left), .init("Seconds"), .init("CPU s"),
        .init("Minor faults"), .init("Major faults"), .init("I/O read"), .init("I/O written"), .init("Footprint now"),
    ])
    for app in apps {
        let states = LifecycleState.allCases.map(\.rawValue).filter { app.accounting[$0] != nil }
        for (i, state) in states.enumerated() {
            let a = app.accounting[state]!
            let first = i == 0
            let footprint: String = app.state == .notRunning ? "-" : app.footprint.last.map { ByteFormat.human($0.footprintBytes) } ?? "-"
            var row: [String] = [first ? app.name : "", first ? app.state.rawValue : "", state]
            row.append(ByteFormat.fixed(a.seconds, 2))
            row.append(ByteFormat.fixed(a.cpuSeconds, 2))
            row.append("\(a.minorFaults)")
            row.append("\(a.majorFaults)")
            row.append(ByteFormat.human(a.ioReadBytes))
            row.append(ByteFormat.human(a.ioWriteBytes))
            row.append(first ? footprint : "")
            t.append(row)
        }
    }
    return t.render()
}

extension String {
    func padded(to width: Int, left: Bool = false) -> String {
        let pad = String(repeating: " ", count: max(0, width - count))
        return left ? self + pad : pad + self
    }
}

/// The supervisor as a long-lived service (swift-service-lifecycle: SIGTERM and SIGINT shut it
/// down gracefully, terminating its apps and removing its cgroups). With `--export`, the
/// exporter's HTTP service runs beside it in the same `ServiceGroup`, and swift-metrics is
/// bootstrapped with swift-prometheus over the registry it serves: one /metrics holds the
/// machine's apps and the supervisor's own metrics (`SupervisorMetrics`).
struct Supervise: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "supervise",
        abstract: "Run the app supervisor as a service; drive it with `mempressure app` and `mempressure apps`.",
        discussion: """
            Listens on DIR/control.sock (apps) and DIR/admin.sock (this user's commands), in a \
            directory only this user can enter. Stops on SIGTERM or SIGINT, terminating its apps. \
            With --export HOST:PORT it also serves /metrics for Prometheus, as `mempressure export` \
            does (every app of the machine, cgroups, memory, pressure), with the supervisor's own \
            metrics: mempressure_supervisor_app_state{app,state}, \
            mempressure_supervisor_state_seconds_total{app,state}, \
            mempressure_supervisor_launches_total, mempressure_supervisor_crashes_total, \
            mempressure_supervisor_time_to_ready_seconds (a histogram, buckets 0.05 to 60 s), \
            mempressure_supervisor_memory_warnings_total, mempressure_supervisor_freeze_drys_total \
            and mempressure_jetsam_kills_total{app,reason}; it prints `metrics: http://HOST:PORT/metrics` \
            once it listens (port 0: one the kernel chose).
            """
    )

    @Option(help: "Runtime directory (default: $XDG_RUNTIME_DIR/mempressure, else /run/mempressure for root, /run/user/UID/mempressure for others). Made 0700; an existing one must be a directory of this user, not a link, not writable by others.", completion: .directory) var dir = AdminClient.defaultDirectory
    @Option(help: "The device's RAM budget in bytes (k, m, g suffixes): a memory cgroup holding every app.") var budget: String?
    @Option(help: "sigstop or freezer.") var suspend: SuspendMethod = .sigstop
    @Option(name: .customLong("background-task-limit"), help: "Seconds a background task may run.") var backgroundTaskLimit = 30.0
    @Flag(name: .customLong("warn-on-pressure"), help: "Send running apps memory warnings when pressure reaches warning.") var warnOnPressure = false
    @Flag(help: "Attach jetsam: warn, freeze-dry, then kill supervised apps by the policy when memory runs short.") var jetsam = false
    @Option(name: .customLong("jetsam-policy"), help: "ios, xnu, lmkd, largest, lru or cost.") var jetsamPolicy: JetsamPolicyName = .ios
    @Option(name: .customLong("high-memory"), help: "For jetsam: high memory in bytes (k, m, g) or a share of the budget (12.5%).") var highMemory: String?
    @Option(name: .customLong("within-band"), help: "For jetsam's ios policy: the order inside a band, least-recent (the default) or largest (footprint).") var withinBand: WithinBandChoice?
    @Option(name: .customLong("protect"), help: "For jetsam: an app never killed (repeatable).") var protect: [String] = []
    @Option(name: .customLong("jetsam-reports"), help: "For jetsam: a directory for each episode's report (episode-N.json, mode 0600; made 0700 if missing; one of another user, or that others may write in, is refused).", completion: .directory) var jetsamReports: String?
    @Flag(name: .customLong("no-oom-score-adj"), help: "Leave the apps' oom_score_adj as they inherit it (default: set from each app's state, so that the kernel's OOM killer follows the jetsam bands: active 0, inactive 100, background-running 300, suspended 500, high-memory 700 and 900).") var noOOMScoreAdj = false
    @Option(name: .customLong("max-apps"), help: "The most apps kept on record: one more forgets the app not running idle longest (default 1000).") var maxApps: Int?
    @Option(name: .customLong("log-limit"), help: "The most events the log keeps, the oldest going first (default 100000).") var logLimit: Int?
    @Option(name: .customLong("export"), help: "Also serve /metrics for Prometheus on HOST:PORT ([IPv6]:PORT, or :PORT for every IPv4 address), the supervisor's metrics included (default: off).") var export: String?

    func validate() throws {
        try checkSeconds(backgroundTaskLimit, "--background-task-limit")
        if let maxApps, maxApps < 1 { throw ValidationError("--max-apps must be at least 1") }
        if let logLimit, logLimit < 1 { throw ValidationError("--log-limit must be at least 1") }
        if let export {
            do {
                _ = try ExporterConfiguration.parseListen(export)
            } catch {
                throw ValidationError("--export: \(error)")
            }
        }
    }

    func run() async throws {
        // With --export, in mempressure-server (the HTTP stack is there), before anything starts.
        if export != nil { try ExporterServer.executeServerUnlessServing() }
        var c = SupervisorConfiguration()
        c.runtimeDirectory = dir
        c.suspendMethod = suspend
        c.backgroundTaskLimit = backgroundTaskLimit
        c.expirationWarning = min(5, backgroundTaskLimit / 2)
        if let maxApps { c.maximumApps = maxApps }
        if let logLimit { c.logLimit = logLimit }
        if warnOnPressure { c.policies.append(WarnOnPressure()) }
        if noOOMScoreAdj { c.oomScoreBands = nil }
        do {
            if let budget { c.budgetBytes = try parseBytes(budget, flag: "--budget") }
            if jetsam {
                var j = JetsamConfiguration(policy: jetsamPolicy)
                if let highMemory {
                    switch try parseHighMemory(highMemory) {
                    case .bytes(let b): j.highMemoryBytes = b
                    case .shareOfBudget(let s): j.highMemoryShare = s
                    }
                }
                if let withinBand { j.withinBand = withinBand.order }
                j.protected = protect
                // Checked (and made) now, so that a directory refused for its reports says so at
                // start, not at the first episode.
                if let jetsamReports { _ = try CheckedDirectory.open(jetsamReports, creating: true) }
                j.reportDirectory = jetsamReports
                try j.validate()
                JetsamKiller(configuration: j).attach(to: &c)
            }
            let logger = Logger(label: "mempressure.supervise")
            var services = [ServiceGroupConfiguration.ServiceConfiguration(service: SupervisorService(configuration: c))]
            // The supervisor is made as its service starts, after this bootstrap: it takes the
            // Prometheus factory. The group stops the exporter first, then the supervisor.
            if let export { services.append(.init(service: try exporter(listen: export))) }
            // SIGTERM, SIGINT and SIGHUP come through `Interrupts` (the thread that takes them),
            // not through the group's own signal handling.
            let group = ServiceGroup(configuration: .init(services: services, logger: logger))
            try await Interrupts.handling({ _ in Task { await group.triggerGracefulShutdown() } }) { try await group.run() }
        } catch {
            throw fail(error)
        }
    }
}

extension Supervise {
    /// The exporter's service for `--export`, after bootstrapping swift-metrics with
    /// swift-prometheus over the registry it serves (time to ready in `SupervisorMetrics`' buckets).
    func exporter(listen: String) throws -> any Service {
        var configuration = ExporterConfiguration()
        (configuration.host, configuration.port) = try ExporterConfiguration.parseListen(listen)
        configuration.collector.buildInfo = BuildInfo(version: mempressureVersion)
        var logger = Logger(label: "mempressure.supervise.export")
        logger.logLevel = .warning
        configuration.logger = logger
        configuration.onListening = { host, port in
            output("metrics: http://\(host.contains(":") ? "[\(host)]" : host):\(port)/metrics\n")
        }
        let registry = PrometheusCollectorRegistry()
        var factory = PrometheusMetricsFactory(registry: registry)
        factory.durationHistogramBuckets[SupervisorMetrics.timeToReady] = SupervisorMetrics.timeToReadyBuckets
        MetricsSystem.bootstrap(factory)
        return try ExporterServer.service(configuration, registry)
    }
}

struct SupervisorService: Service {
    let configuration: SupervisorConfiguration

    func run() async throws {
        await Supervisor.prepareEventLoop()
        let supervisor = try Supervisor(configuration: configuration)
        try await supervisor.serveAdmin()
        let stream = await supervisor.logStream()
        // The header first, then the log as it happens (pressure sources included).
        // What a supervisor that died on this directory had left, and was cleaned up now.
        for line in supervisor.recovered { output("recovered: \(line)\n") }
        output("supervising: apps connect to \(await supervisor.socketPath); commands on \(await supervisor.adminSocketPath ?? "?")\n")
        for s in await supervisor.pressureSources { output("pressure: \(s)\n") }
        let printer = Task { for await e in stream { output(renderEvent(e) + "\n") } }
        do {
            try await gracefulShutdown()
        } catch {
            // Cancelled: shut down all the same.
        }
        await supervisor.shutdown()
        _ = await printer.value
        // A run that leaves anything behind says what, and fails.
        let leftovers = await supervisor.leftovers
        for line in leftovers { writeStandardError("mempressure: left behind: \(line)\n") }
        if !leftovers.isEmpty { throw ExitCode(1) }
    }
}

struct Apps: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "apps",
        abstract: "The running supervisor's apps, with their accounting per lifecycle state.",
        discussion: """
            CPU time, minor and major faults, storage I/O and seconds spent in each state, and the \
            latest footprint. --json gives, per app, `accounting` keyed by state name, each with \
            `seconds`, `cpuSeconds`, `minorFaults`, `majorFaults`, `ioReadBytes`, `ioWriteBytes`, \
            and the `footprint` timeline.
            """
    )

    @Option(help: "The supervisor's runtime directory.", completion: .directory) var dir = AdminClient.defaultDirectory
    @Flag(help: "Print JSON.") var json = false
    @Option(help: "Seconds to wait for the supervisor's answer (default \(Int(AdminClient.defaultQueryTimeout))).") var timeout: Double?

    func validate() throws { if let timeout { try checkSeconds(timeout, "--timeout") } }

    func run() async throws {
        do {
            let apps = try AdminClient.call(.apps, as: [AppReport].self, directory: dir, timeout: timeout) ?? []
            output(json ? try encodeJSON(apps) : renderAccounting(apps))
        } catch {
            throw fail(error)
        }
    }
}

extension Command.Verb: ExpressibleByArgument {}

struct AppCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "app",
        abstract: "Drive an app of the running supervisor.",
        discussion: """
            VERB is one of \(AppCommand.verbs.map(\.rawValue).joined(separator: ", ")). \
            `launch NAME -- PROGRAM ARGS...` registers the app on first use. `warn` without a name \
            warns every running app; `notify NAME|all --kind KIND --value VALUE` posts a system change; \
            `allocate NAME --bytes N` and `release NAME --bytes N` make the model app grow or shrink \
            its dirty memory; `background NAME --no-wait` returns once didEnterBackground was delivered; \
            `forget NAME` drops an app that is not running (its record, accounting and metrics). \
            `launch NAME -- PROGRAM` on a known app that is not running runs PROGRAM from then on.
            """
    )

    /// What `app` takes: every command but the scenario's waits.
    static let verbs = Command.Verb.allCases.filter { ![.wait, .waitReady, .waitState, .register].contains($0) }

    @Argument(help: "The command.") var verb: Command.Verb
    @Argument(help: "The app (or \"all\" for warn and notify).") var name: String?
    @Argument(parsing: .postTerminator, help: "For launch: the program and its arguments, after --.") var command: [String] = []
    @Flag(name: .customLong("no-client"), help: "The program does not link the client library.") var noClient = false
    @Option(
        name: .customLong("memory-warning"),
        help: "For launch with a program: what a memory warning becomes for it: callback (the default with a client), none (the default without), or a signal to its main process (SIGUSR1, SIGRTMIN+N, ...).")
    var memoryWarning: String?
    @Option(
        name: .customLong("memory-warning-command"),
        help: "For launch with a program: a memory warning runs this command (repeat for each argument), with MEMPRESSURE_APP and MEMPRESSURE_PID set.")
    var memoryWarningCommand: [String] = []
    @Option(
        name: .customLong("ready-probe"),
        help: "For launch with a program and --no-client: it is ready (after a launch, after a resume) when this command exits 0 (repeat for each argument); tried every 10 ms.")
    var readyProbe: [String] = []
    @Option(help: "For notify: the kind of change.") var kind: String?
    @Option(help: "For notify: the new value.") var value: String?
    @Option(help: "For allocate and release: bytes (k, m, g suffixes).") var bytes: String?
    @Flag(name: .customLong("no-wait"), help: "For background: return once didEnterBackground was delivered.") var noWait = false
    @Option(help: "The supervisor's runtime directory.", completion: .directory) var dir = AdminClient.defaultDirectory
    @Option(help: "Seconds to wait for the supervisor's answer (default \(Int(AdminClient.defaultCommandTimeout)): a command waits for the app's callbacks).") var timeout: Double?

    func validate() throws {
        guard Self.verbs.contains(verb) else { throw ValidationError("VERB must be one of \(Self.verbs.map(\.rawValue).joined(separator: ", "))") }
        if verb != .warn && verb != .notify && name == nil { throw ValidationError("\(verb.rawValue) needs an app name") }
        if let name, name != "all", !ControlProtocol.isAppName(Substring(name)) {
            throw ValidationError("app name \(String(reflecting: name)) is not valid: \(ControlProtocol.appNameRule)")
        }
        if let timeout { try checkSeconds(timeout, "--timeout") }
        if verb == .notify && kind == nil { throw ValidationError("notify needs --kind") }
        if (verb == .allocate || verb == .release) && bytes == nil { throw ValidationError("\(verb.rawValue) needs --bytes") }
        if memoryWarning != nil || !memoryWarningCommand.isEmpty {
            guard verb == .launch, !command.isEmpty else { throw ValidationError("--memory-warning and --memory-warning-command go with launch and a program (after --)") }
            guard memoryWarning == nil || memoryWarningCommand.isEmpty else { throw ValidationError("give --memory-warning or --memory-warning-command, not both") }
            if let memoryWarning, MemoryWarningAction(word: memoryWarning) == nil {
                throw ValidationError("--memory-warning \(String(reflecting: memoryWarning)): give \(MemoryWarningAction.choices)")
            }
            if memoryWarningCommand.first?.isEmpty ?? false { throw ValidationError("--memory-warning-command needs a program") }
        }
        if !readyProbe.isEmpty {
            guard verb == .launch, !command.isEmpty, noClient else { throw ValidationError("--ready-probe goes with launch, --no-client and a program (after --)") }
            if readyProbe[0].isEmpty { throw ValidationError("--ready-probe needs a program") }
        }
    }

    /// The command this invocation asks for.
    func makeCommand() throws -> Command {
        let app = name == "all" ? nil : name
        let target: Supervisor.Target = app.map { .app($0) } ?? .all
        func named() -> String { name ?? "" }
        switch verb {
        case .launch:
            var spec: AppSpec?
            if !command.isEmpty {
                var argv = command
                argv[0] = Programs.resolve(command[0])
                let action = memoryWarningCommand.isEmpty ? memoryWarning.flatMap(MemoryWarningAction.init(word:)) : .command(memoryWarningCommand)
                spec = AppSpec(
                    name: named(), command: argv, client: noClient ? false : nil, memoryWarning: action,
                    ready: readyProbe.isEmpty ? nil : ReadinessProbe(command: readyProbe))
            }
            return .launch(named(), registering: spec)
        case .activate: return .activate(named())
        case .deactivate: return .deactivate(named())
        case .background: return .background(named(), waitForSuspension: !noWait)
        case .terminate: return .terminate(named())
        case .relaunch: return .relaunch(named())
        case .warn: return .warn(target)
        case .notify: return .notify(target, kind: kind ?? "", value: value ?? "")
        case .allocate: return .allocate(named(), bytes: try parseBytes(bytes ?? "", flag: "--bytes"))
        case .release: return .release(named(), bytes: try parseBytes(bytes ?? "", flag: "--bytes"))
        case .forget: return .forget(named())
        case .register, .wait, .waitReady, .waitState:
            throw ValidationError("\(verb.rawValue) is a scenario step, not an app command")
        }
    }

    func run() async throws {
        do {
            let state = try AdminClient.call(.perform(try makeCommand()), as: LifecycleState.self, directory: dir, timeout: timeout)
            output("\(name ?? "all"): \(state?.rawValue ?? "done")\n")
        } catch {
            throw fail(error)
        }
    }
}

