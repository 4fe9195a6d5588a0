// export-bench: the Prometheus exporter's scrape against the exporters operators already run.
// `mempressure export`, Debian's node_exporter (its default collectors) and Debian's
// process-exporter (tracking every process), all started by the benchmark on loopback, scraped in
// interleaved rounds with 100, 400 and 1000 processes of the benchmark's own added to the
// machine: latency (median, p90, p99, min–max), bytes allocated per scrape (the Go exporters'
// own counter; ours through an LD_PRELOAD allocation counter, checked first on a plain Swift
// program), CPU time per scrape, series and exposition size; then a leak check (the live heap
// over consecutive scrapes). Writes Reports/exporter.{md,json} and exporter-latency.{gp,svg}.
//
// Needs prometheus-node-exporter and prometheus-process-exporter (`make bench-deps` installs
// them without starting their services), cc, and a release build of mempressure.

import ArgumentParser
import BenchSupport
import Glibc
import MemPressureSystem

@main
struct ExportBench: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "export-bench",
        abstract: "mempressure export against node_exporter and process-exporter: scrape latency, bytes allocated per scrape, leak check; writes Reports/exporter.{md,json} and exporter-latency.{gp,svg}.")

    @Option(help: "Where the report goes.") var output = "../Reports"
    @Option(help: "Directory holding the release build of mempressure.") var build = "../.build/release"
    @Option(help: "Processes to add to the machine, one population after another, comma-separated.") var populations = "100,400,1000"
    @Option(help: "Rounds per population, each scraping every exporter once (default 100; 8 with --quick).") var rounds: Int?
    @Option(name: .customLong("leak-scrapes"), help: "Consecutive scrapes of the counted mempressure export for the leak check (default 200; 40 with --quick; 0 skips it).") var leakScrapes: Int?
    @Option(help: "The exporters to measure, comma-separated: node_exporter, process-exporter, mempressure (which adds its counted instance).") var exporters = "node_exporter,process-exporter,mempressure"
    @Option(name: .customLong("node-exporter"), help: "node_exporter's executable.") var nodeExporter = "/usr/bin/prometheus-node-exporter"
    @Option(name: .customLong("process-exporter"), help: "process-exporter's executable.") var processExporter = "/usr/bin/prometheus-process-exporter"
    @Option(help: "Directory for the benchmark's scratch directory (compiled helpers, logs, the counters file).") var scratch = "/tmp"
    @Option(help: "Seconds a scrape may take before the run fails.") var timeout = 30.0
    @Flag(help: "A smoke run: few rounds, a short leak check.") var quick = false
    @Flag(name: .customLong("render-only"), help: "Re-render exporter.md and the plot from the exporter.json in --output, without measuring.") var renderOnly = false

    @Option(name: .customLong("alloc-self-check-child"), help: .hidden) var allocSelfCheckChild: String?
    @Option(name: .customLong("self-check-bytes"), help: .hidden) var selfCheckBytes = 1 << 20

    func validate() throws {
        if let rounds, rounds < 1 { throw ValidationError("--rounds must be at least 1 (got \(rounds))") }
        if let leakScrapes, leakScrapes < 0 { throw ValidationError("--leak-scrapes must be 0 or more (got \(leakScrapes))") }
        if timeout <= 0 { throw ValidationError("--timeout must be above 0 (got \(timeout))") }
        let sizes = try populationSizes()
        if sizes.isEmpty { throw ValidationError("--populations names no size") }
        _ = try exporterIDs()
    }

    func populationSizes() throws -> [Int] {
        var sizes: [Int] = []
        for part in populations.split(separator: ",") {
            guard let n = Int(part.trimmingCharacters(in: .whitespaces)), n >= 1, n <= 10_000 else {
                throw ValidationError("--populations takes sizes of 1 to 10000 separated by commas, not '\(part)'")
            }
            sizes.append(n)
        }
        return Array(Set(sizes)).sorted()
    }

    func exporterIDs() throws -> [ExporterID] {
        var ids: [ExporterID] = []
        for part in exporters.split(separator: ",") {
            let name = part.trimmingCharacters(in: .whitespaces)
            guard let id = ExporterID(rawValue: name), id != .mempressureCounted else {
                throw ValidationError("--exporters takes node_exporter, process-exporter and mempressure, not '\(name)'")
            }
            if !ids.contains(id) { ids.append(id) }
        }
        guard !ids.isEmpty else { throw ValidationError("--exporters names no exporter") }
        return ExporterID.allCases.filter { ids.contains($0) }
    }

    func run() async throws {
        if let allocSelfCheckChild {
            try selfCheckChild(counterPath: allocSelfCheckChild, bytes: selfCheckBytes)
            return
        }
        if renderOnly {
            try writeReport(try readReport(ExporterReport.self, from: output, named: "exporter"), to: output, named: "exporter", tool: "export-bench")
            return
        }
        guard ProcFS.isDirectory(output) else { throw BenchError("--output \(output) is not a directory") }
        guard ProcFS.isDirectory(scratch) else { throw BenchError("--scratch \(scratch) is not a directory") }
        let ids = try exporterIDs()
        let mempressure = "\(build)/mempressure"
        if ids.contains(.node) {
            guard access(nodeExporter, X_OK) == 0 else {
                throw BenchError("no node_exporter at \(nodeExporter): apt-get install -y prometheus-node-exporter (`make bench-deps` does, without starting its service), or give --node-exporter")
            }
        }
        if ids.contains(.process) {
            guard access(processExporter, X_OK) == 0 else {
                throw BenchError("no process-exporter at \(processExporter): apt-get install -y prometheus-process-exporter (`make bench-deps` does, without starting its service), or give --process-exporter")
            }
        }
        if ids.contains(.mempressure) {
            guard access(mempressure, X_OK) == 0 else { throw BenchError("no mempressure at \(mempressure): build it (swift build -c release) or give --build") }
            let (status, text) = try runCollecting([mempressure, "export", "--help"])
            guard status == 0 else {
                throw BenchError("\(mempressure) has no export command (`mempressure export --help` ended with status \(status): \(text.split(separator: "\n").first ?? "")); build one that has, or leave it out: --exporters node_exporter,process-exporter")
            }
        }
        raiseFileLimit()
        let settings = Settings(
            populations: try populationSizes(), rounds: rounds ?? (quick ? 8 : 100), leakScrapes: leakScrapes ?? (quick ? 40 : 200),
            exporters: ids, mempressure: mempressure, nodeExporter: nodeExporter, processExporter: processExporter,
            scratch: scratch, timeout: timeout, quick: quick, command: regeneratingCommand("export-bench"))

        // Ctrl-C (or SIGTERM) cancels the measurement: the exporters are killed through their
        // pidfds at once, the scrape in flight fails, and the cleanup kills and reaps the
        // population and removes the scratch directory.
        try await runProgramBench(
            tool: "export-bench", output: output, named: "exporter",
            interrupted: "interrupted: the exporters and the processes the benchmark started were killed; its scratch directory was removed",
            dataLost: { _ in nil }
        ) { killSwitch in
            Bench(settings: settings, killSwitch: killSwitch)
        }
    }
}

/// The soft limit on open files raised to the hard one: each process of the population is held
/// by a pidfd.
func raiseFileLimit() {
    var limit = rlimit()
    guard getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0 else { return }
    limit.rlim_cur = limit.rlim_max
    setrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit)
}
