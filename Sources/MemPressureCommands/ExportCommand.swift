import MemPressureOneShot
import ArgumentParser
import MemPressureExporter
import MemPressureSystem
import Logging
import CoreMetrics
import Prometheus
import ServiceLifecycle
import MemPressureVMTracker

struct Export: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "export",
        abstract: "Serve /metrics for Prometheus: memory per app, per memory cgroup and for the machine, read at each scrape.",
        discussion: """
            Each scrape reads every process's smaps_rollup, stat, cgroup and io, the memory \
            cgroups holding them, /proc/meminfo and /proc/pressure/memory, and answers in \
            OpenMetrics or the Prometheus text format, as the scraper's Accept header asks. \
            Metrics are named mempressure_*, in base units (bytes, seconds), counters end in \
            _total. Process names are arbitrary bytes: in a label, bytes that are not UTF-8 are \
            written \\xNN and a backslash \\\\, so every label is UTF-8 and two names never share \
            one. Apps that share their labels (the same program in the same cgroup) share a \
            series; --pid-label adds the app's root PID, at the cost of new series at every \
            restart. An app's counters keep what its exited processes used, as last seen, so \
            they never go down. Also served: mempressure_build_info and the exporter's own \
            process_* metrics; HEAD as GET without the body; gzip when the scraper accepts it. \
            Rules, their promtool tests and a Grafana dashboard ship in the repository \
            (Sources/MemPressureExporter/Operator). Stops on SIGINT or SIGTERM, finishing the scrapes in \
            flight. Runs in mempressure-server, installed beside mempressure: the program with the \
            HTTP stack, which the other commands do not load.
            """
    )

    @Option(
        name: .long,
        help: "The address and port to listen on (HOST:PORT, [IPv6]:PORT, or :PORT for every IPv4 address). 29464 is in no list of well-known ports, Prometheus' exporters' included.")
    var listen = ExporterConfiguration.defaultListen

    @Option(
        name: .customLong("log-level"),
        help: "What to log on standard error: trace, debug (a line per scrape: format, bytes, seconds), info, notice, warning (the default; failed scrapes are errors), error, critical.")
    var logLevel: Logger.Level = .warning

    @OptionGroup var collection: ExportCollectionOptions

    func validate() throws {
        do {
            _ = try ExporterConfiguration.parseListen(listen)
        } catch {
            throw ValidationError("--listen: \(error)")
        }
        if let retention = collection.counterRetention { try checkSeconds(retention, "--counter-retention") }
    }

    func run() async throws {
        do {
            try ExporterServer.executeServerUnlessServing()
            var configuration = ExporterConfiguration()
            (configuration.host, configuration.port) = try ExporterConfiguration.parseListen(listen)
            configuration.collector = collection.collectorOptions
            var logger = Logger(label: "mempressure.export")
            logger.logLevel = logLevel
            configuration.logger = logger
            configuration.onListening = { host, port in
                let shown = host.contains(":") ? "[\(host)]" : host
                writeStandardError("mempressure export: serving http://\(shown):\(port)/metrics\n")
            }
            // What the process emits through swift-metrics (the exporter's own scrape counts)
            // goes to this registry, served in the same response.
            let registry = PrometheusCollectorRegistry()
            MetricsSystem.bootstrap(PrometheusMetricsFactory(registry: registry))
            let service = try ExporterServer.service(configuration, registry)
            // SIGTERM, SIGINT and SIGHUP come through `Interrupts`, as for `supervise`.
            let group = ServiceGroup(configuration: .init(services: [.init(service: service)], logger: logger))
            try await Interrupts.handling({ _ in Task { await group.triggerGracefulShutdown() } }) { try await group.run() }
        } catch {
            throw fail(error)
        }
    }
}

/// What `export` and `top --format openmetrics` collect.
struct ExportCollectionOptions: ParsableArguments {
    @Option(name: .customLong("group-by"), help: "app, process or cgroup.")
    var grouping: AppGrouping = .app

    @Option(
        name: .customLong("region-types-for"),
        help: "Also publish memory by region type for the apps whose name matches this shell pattern (repeatable; reads their full smaps).")
    var regionTypesFor: [String] = []

    @Flag(
        name: .customLong("pid-label"),
        help: "Give each app's series a pid label (its root process): one series per app process tree, new series at each restart.")
    var pidLabel = false

    @Option(
        name: .customLong("counter-retention"),
        help: "Seconds an app with no process left keeps its counters' totals, to go on from them if it comes back (default 3600).")
    var counterRetention: Double?

    @OptionGroup var source: SourceOptions

    var collectorOptions: CollectorOptions {
        var o = CollectorOptions()
        o.grouping = grouping
        o.regionTypePatterns = regionTypesFor
        o.pidLabel = pidLabel
        if let counterRetention { o.counterRetention = counterRetention }
        o.buildInfo = BuildInfo(version: mempressureVersion)
        o.procRoot = source.procRoot
        o.cgroupRoot = source.cgroupRoot
        return o
    }
}

/// The formats `top --format` prints besides its table.
enum TopFormat: String, ExpressibleByArgument, CaseIterable {
    /// The exporter's exposition, once (OpenMetrics 1.0), for node_exporter's textfile collector.
    case openmetrics
}

/// `top --format openmetrics`: one scrape of the exporter, printed as OpenMetrics text.
func printExposition(grouping: AppGrouping, source: SourceOptions) throws {
    var o = CollectorOptions()
    o.grouping = grouping
    o.procRoot = source.procRoot
    o.cgroupRoot = source.cgroupRoot
    o.buildInfo = BuildInfo(version: mempressureVersion)
    let bytes = try Collector(options: o).scrape(format: .openMetrics)
    // The bytes as they are (already valid UTF-8, escaped): not through `output`'s terminal filter.
    try bytes.withUnsafeBytes { try MemPressureSystem.writeAll(1, $0) }
}

extension Logger.Level: @retroactive ExpressibleByArgument {}
