// The report: every scrape's figures in Reports/exporter.json; Reports/exporter.md renders them
// (a table per population, ratios against node_exporter from the same run, the 200 ms target,
// the leak check) and Reports/exporter-latency.{gp,svg} plots the latencies.

import BenchSupport
import MemPressureSystem

/// One scrape.
struct ScrapeSample: Codable, Sendable {
    /// Client wall time, connect to the end of the response.
    var seconds: Double
    /// Exposition size.
    var bytes: Int
    /// Sample lines in the exposition.
    var series: Int
    /// The exporter's CPU time (user + system, all threads) from just before the request to
    /// just after the response, in clock ticks.
    var cpuTicks: UInt64
    /// Bytes the exporter allocated since its previous scrape (nil where not measured: the
    /// first reading, or the instance without the counter).
    var allocatedBytes: Double?
    /// Blocks allocated since its previous scrape (the counted instance).
    var allocations: UInt64?
    /// Allocated minus freed since its previous scrape (the counted instance).
    var netBytes: Int64?
}

struct ExporterRun: Codable, Sendable {
    var exporter: ExporterID
    var samples: [ScrapeSample]
    /// VmRSS after the rounds (nil: it had crashed).
    var residentBytesAfter: UInt64?

    var latencyMs: Percentiles { Percentiles(samples.map { $0.seconds * 1000 }) }
    var allocated: Percentiles? {
        let a = samples.compactMap(\.allocatedBytes)
        return a.isEmpty ? nil : Percentiles(a)
    }
    func cpuMsPerScrape(ticksPerSecond: Int) -> Double {
        samples.isEmpty ? 0 : Double(samples.reduce(0) { $0 + $1.cpuTicks }) * 1000 / Double(ticksPerSecond) / Double(samples.count)
    }
    var series: Percentiles { Percentiles(samples.map { Double($0.series) }) }
    var bytes: Percentiles { Percentiles(samples.map { Double($0.bytes) }) }
}

struct PopulationRun: Codable, Sendable {
    /// Processes the benchmark added.
    var extraProcesses: Int
    /// Processes on the machine (/proc) before and after the rounds.
    var processesAtStart: Int
    var processesAtEnd: Int
    var runs: [ExporterRun]
    /// Exporters that exited by themselves during the warm-up (round 0) or the rounds.
    var crashes: [Crash]

    /// The figures of `id`, if it has any.
    func run(_ id: ExporterID) -> ExporterRun? { runs.first { $0.exporter == id && !$0.samples.isEmpty } }
}

/// An exporter that exited by itself while the benchmark scraped it.
struct Crash: Codable, Sendable {
    var exporter: ExporterID
    /// 0: the warm-up scrape; -1: its first GET /metrics, as it was started.
    var round: Int
    /// "with status N" or "on signal N".
    var exit: String
    /// The line of its log that says why (a Go panic's first line), else its last line.
    var cause: String
}

struct LeakCheck: Codable, Sendable {
    var extraProcesses: Int
    var scrapes: Int
    /// Allocated minus freed from just before the first scrape to just after each.
    var netBytesAfter: [Int64]
    var allocatedBytes: UInt64
    var freedBytes: UInt64
    var allocations: UInt64
    var frees: UInt64
    var residentBytesBefore: UInt64
    var residentBytesAfter: UInt64
    /// The control, after the scrapes: as many requests of `GET /` (the index page: the server's
    /// path without a collection), and the live heap's change after each.
    var indexNetBytesAfter: [Int64]
    /// The exposition's series over the scrapes (other work on the machine comes and goes).
    var seriesMin: Int
    var seriesMax: Int
    /// Processes on the machine before the first scrape, and processes seen (listing /proc
    /// after each scrape) that were not there then: the churn of other work.
    var processesAtStart: Int
    var processesAppeared: Int
}

struct ExporterVersion: Codable, Sendable {
    var exporter: ExporterID
    var version: String
}

struct Collector: Codable, Sendable {
    var name: String
    var succeeded: Bool
}

struct ExporterReport: RenderedReport, Sendable {
    var formatVersion = 1
    var command: String
    var quick: Bool
    var totalSeconds: Double
    var machine: Machine
    /// Processes on the machine before the benchmark started anything.
    var baselineProcesses: Int
    var clockTicksPerSecond: Int
    var rounds: Int
    var versions: [ExporterVersion]
    /// node_exporter's collectors (its defaults), from its own exposition.
    var nodeCollectors: [Collector]
    var processExporterConfig: String
    var selfChecks: [ShimSelfCheck]
    var populations: [PopulationRun]
    var leak: LeakCheck?

    static let targetMs = 200.0
    static let targetProcesses = 1000

    func plots() -> [Plot] { [latencyPlot()] }

    func markdown() -> String {
        var md = "# Prometheus exporters: scrape latency and allocation per scrape\n\n"
        md += regenerateLines(command: command, totalSeconds: totalSeconds, quick: quick, json: "exporter.json")
        md += "\n" + machine.summary
        md += "Before the benchmark started anything the machine had \(baselineProcesses) processes (this container's own, and the other work on it: builds and tests of other branches come and go, so the count moves during the run; each table gives it at the start and end of its rounds).\n\n"
        md += whatIsMeasured()
        for p in populations { md += populationSection(p) }
        md += seriesSection()
        md += targetSection()
        md += leakSection()
        md += selfCheckSection()
        md += notes()
        return md
    }

    // MARK: Sections

    private func whatIsMeasured() -> String {
        var md = "## What is measured\n\n"
        md += "The benchmark starts every exporter itself on a loopback port and adds \(populations.map { String($0.extraProcesses) }.joined(separator: ", then ")) processes of its own to the machine (`population-worker`, a small C program holding 64 to 256 KiB of dirty heap, run under 40 names, `xbench-00` to `xbench-39`, so that grouping by name has work). At each size it scrapes every exporter once and discards that scrape, then runs \(rounds) rounds in which each exporter is scraped once, the order rotating from round to round. A scrape is `GET /metrics` over a new loopback connection (`Accept: \(textFormat)`, the text format all of them serve), timed by the client from before connect to the last byte.\n\n"
        md += "| exporter | version | what it reports | allocated bytes per scrape |\n|---|---|---|---|\n"
        for id in ExporterID.allCases where populations.contains(where: { $0.runs.contains { $0.exporter == id } }) {
            let v = versions.first { $0.exporter == id || (id == .mempressureCounted && $0.exporter == .mempressure) }?.version ?? "unknown"
            md += "| \(id.label) | \(v.replacingOccurrences(of: "|", with: "\\|")) | \(description(of: id)) | \(id.allocationSource) |\n"
        }
        md += "\n"
        md += "They do different work: node_exporter reports the machine (no process at all with its defaults), process-exporter a few figures per group of processes of one name, `mempressure export` per app the VM Tracker's footprint, dirty, clean, purgeable, swapped, PSS and USS with the machine's and cgroups' memory and pressure. The comparison is of what an operator would run to get memory per process or per app, each as it comes; node_exporter is the baseline every fleet already runs, and the ratios are against it.\n\n"
        md += "CPU per scrape is the exporter's user + system time over the scrape (/proc/PID/stat, all threads; \(clockTicksPerSecond) ticks a second, so one scrape's figure is coarse: the column gives the mean over the rounds). RSS is the exporter's VmRSS after the rounds.\n\n"
        return md
    }

    private func description(of id: ExporterID) -> String {
        switch id {
        case .node:
            let ran = nodeCollectors.filter(\.succeeded).map(\.name)
            let failed = nodeCollectors.filter { !$0.succeeded }.map(\.name)
            var s = "the machine; its default collectors"
            if !nodeCollectors.isEmpty {
                s += " (\(nodeCollectors.count) enabled; succeeding here: \(ran.joined(separator: ", "))"
                if !failed.isEmpty { s += "; failing here, their hardware or files absent: \(failed.joined(separator: ", "))" }
                s += ")"
            }
            return s
        case .process:
            return "every process with a command line, one group per process name (config: `- name: \"{{.Comm}}\"` with `cmdline: ['.+']`), its defaults otherwise (`-threads` and `-gather-smaps` on: per-thread-name figures and PSS from smaps_rollup)"
        case .mempressure:
            return "per app as `mempressure top` groups them, with the machine's memory and pressure"
        case .mempressureCounted:
            return "the same, a second instance with the allocation counter loaded (its latency shows the counter's own cost)"
        }
    }

    /// Each exporter's series count across the population sizes: whether it grows with the
    /// processes added (a label per process) or stays flat (series per group, as Prometheus'
    /// guidance on cardinality asks).
    private func seriesSection() -> String {
        guard populations.count > 1 else { return "" }
        var md = "## Series as processes are added\n\n"
        md += "| exporter | " + populations.map { "\($0.extraProcesses) added" }.joined(separator: " | ") + " | |\n"
        md += "|---|" + String(repeating: "---:|", count: populations.count) + "---|\n"
        for id in ExporterID.allCases {
            let counts = populations.map { p in p.run(id).flatMap { $0.samples.isEmpty ? nil : Int($0.series.p50) } }
            guard counts.contains(where: { $0 != nil }) else { continue }
            let known = counts.compactMap { $0 }
            let verdict = known.count < 2 ? "" : known.max()! == known.min()! ? "flat" : "grows by \(known.last! - known.first!) from the first size to the last"
            md += "| \(id.label) | " + counts.map { $0.map(String.init) ?? "–" }.joined(separator: " | ") + " | \(verdict) |\n"
        }
        md += "\nThe added processes run under 40 names. `mempressure export` groups them into apps as `mempressure top` does and, by default, labels an app's series without its PID (`--pid-label` adds it, and with it a series per process and new series at every restart), so its count follows the apps, not the processes. process-exporter groups by name as configured; node_exporter reports no process.\n\n"
        return md
    }

    private func populationSection(_ p: PopulationRun) -> String {
        var md = "## \(p.extraProcesses) processes added (\(p.processesAtStart) on the machine at the start of the rounds, \(p.processesAtEnd) at the end)\n\n"
        md += "| exporter | median ms | p90 ms | p99 ms | min–max ms | allocated per scrape (median, p90) | CPU ms per scrape | series | exposition | RSS after |\n"
        md += "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n"
        for r in p.runs.sorted(by: { order($0.exporter) < order($1.exporter) }) {
            guard !r.samples.isEmpty else {
                md += "| \(r.exporter.label) | crashed, no scrape measured |" + String(repeating: " |", count: 8) + "\n"
                continue
            }
            let l = r.latencyMs
            let allocated = r.allocated.map { "\(ByteFormat.human(UInt64($0.p50))) (\(ByteFormat.human(UInt64($0.p90))))" } ?? "–"
            md += "| \(r.exporter.label) | \(ms(l.p50)) | \(ms(l.p90)) | \(ms(l.p99)) | \(ms(l.min))–\(ms(l.max)) | \(allocated) | \(ByteFormat.fixed(r.cpuMsPerScrape(ticksPerSecond: clockTicksPerSecond), 1)) | \(Int(r.series.p50)) | \(ByteFormat.human(UInt64(r.bytes.p50))) | \(r.residentBytesAfter.map(ByteFormat.human) ?? "crashed") |\n"
        }
        md += "\n"
        for c in p.crashes {
            md += "**\(c.exporter.label) crashed** (exited \(c.exit)) \(c.round < 0 ? "as it was started, at its first GET /metrics" : c.round == 0 ? "at its warm-up scrape" : "in round \(c.round)")\(p.run(c.exporter).map { "; the table has its \($0.samples.count) scrapes before that" } ?? ""): `\(c.cause.replacingOccurrences(of: "`", with: "'"))`.\(p.extraProcesses == populations.last?.extraProcesses ? "" : " It is started again at the next size.")\n\n"
        }
        if let node = p.run(.node) {
            var lines: [String] = []
            for r in p.runs where r.exporter != .node && !r.samples.isEmpty {
                var s = "\(r.exporter.label) / node_exporter: latency \(ratioText(r.latencyMs.p50 / node.latencyMs.p50))x (median), \(ratioText(r.latencyMs.p90 / node.latencyMs.p90))x (p90)"
                if let a = r.allocated, let b = node.allocated, b.p50 > 0 { s += "; allocated per scrape \(ratioText(a.p50 / b.p50))x (median)" }
                let nodeCPU = node.cpuMsPerScrape(ticksPerSecond: clockTicksPerSecond)
                if nodeCPU > 0 { s += "; CPU per scrape \(ratioText(r.cpuMsPerScrape(ticksPerSecond: clockTicksPerSecond) / nodeCPU))x" }
                lines.append(s)
            }
            if !lines.isEmpty { md += "Ratios against node_exporter, same run (higher is slower or more):\n\n" + lines.map { "- " + $0 + "\n" }.joined() + "\n" }
        }
        if let ours = p.run(.mempressure), let process = p.run(.process) {
            md += "mempressure export / process-exporter: latency \(ratioText(ours.latencyMs.p50 / process.latencyMs.p50))x (median)"
            if let counted = p.run(.mempressureCounted)?.allocated, let b = process.allocated, b.p50 > 0 {
                md += ", allocated per scrape \(ratioText(counted.p50 / b.p50))x (median; ours counted by the shim, theirs by the Go runtime)"
            }
            md += ".\n\n"
        }
        return md
    }

    private func order(_ id: ExporterID) -> Int { ExporterID.allCases.firstIndex(of: id) ?? 0 }

    private func targetSection() -> String {
        var md = "## The target: a scrape of a machine with \(Self.targetProcesses) processes under \(Int(Self.targetMs)) ms\n\n"
        guard let p = populations.first(where: { $0.extraProcesses >= Self.targetProcesses }) ?? populations.last, let ours = p.run(.mempressure) else {
            return md + "Not measured: `mempressure export` was not among the exporters of this run.\n\n"
        }
        let l = ours.latencyMs
        let cpu = "; its CPU time was \(ByteFormat.fixed(ours.cpuMsPerScrape(ticksPerSecond: clockTicksPerSecond), 1)) ms per scrape (user + system, mean), on a machine whose load average was \(machine.loadAverageAtStart) at the start of the run and \(machine.loadAverageAtEnd ?? "?") at its end (2 CPUs), so part of the wall time is waiting for a CPU"
        let machineCount = "\(p.extraProcesses) processes added, \(p.processesAtStart)–\(p.processesAtEnd) on the machine"
        if p.extraProcesses < Self.targetProcesses {
            return md + "Not measured at \(Self.targetProcesses) processes: the largest population of this run was \(machineCount), where `mempressure export` took \(ms(l.p50)) ms at the median and \(ms(l.p99)) ms at p99 (\(l.count) scrapes).\n\n"
        }
        if l.max < Self.targetMs {
            md += "**Met**, every scrape: at \(machineCount), `mempressure export` took \(ms(l.p50)) ms at the median, \(ms(l.p99)) ms at p99 and \(ms(l.max)) ms at most (\(l.count) scrapes)\(cpu).\n\n"
        } else if l.p99 < Self.targetMs {
            md += "**Met** at the median and p99: at \(machineCount), `mempressure export` took \(ms(l.p50)) ms at the median and \(ms(l.p99)) ms at p99; its slowest scrape took \(ms(l.max)) ms (\(l.count) scrapes)\(cpu).\n\n"
        } else if l.p50 < Self.targetMs {
            md += "**Met at the median only**: at \(machineCount), `mempressure export` took \(ms(l.p50)) ms at the median but \(ms(l.p90)) ms at p90 and \(ms(l.p99)) ms at p99 (\(l.count) scrapes)\(cpu).\n\n"
        } else {
            md += "**Not met**: at \(machineCount), `mempressure export` took \(ms(l.p50)) ms at the median (p90 \(ms(l.p90)), p99 \(ms(l.p99)); \(l.count) scrapes)\(cpu).\n\n"
        }
        return md
    }

    private func leakSection() -> String {
        var md = "## Does a scrape free what it allocates?\n\n"
        guard let leak, !leak.netBytesAfter.isEmpty else {
            return md + "Not measured in this run (`mempressure export` was not among the exporters, or `--leak-scrapes 0`).\n\n"
        }
        let n = leak.netBytesAfter.count
        md += "\(leak.scrapes) consecutive scrapes of `mempressure export` with the allocation counter loaded, at \(leak.extraProcesses) processes added, after the rounds above and one more warm-up scrape. The live heap's change (bytes allocated minus bytes freed, usable sizes) from just before the first scrape to just after scrape N:\n\n"
        let control = leak.indexNetBytesAfter
        md += "| after request | live heap change, GET /metrics | control: GET / (no collection) |\n|---:|---:|---:|\n"
        var marks = [1, 10, 50, 100, 150, 200, n].filter { $0 <= n }
        marks = Array(Set(marks)).sorted()
        for m in marks { md += "| \(m) | \(ByteFormat.signed(leak.netBytesAfter[m - 1])) | \(m <= control.count ? ByteFormat.signed(control[m - 1]) : "–") |\n" }
        md += "\n"
        md += "The control runs after the scrapes, on the same process: the same number of requests of the index page, which collects nothing, so its column is what the server's own path (connection, request, response) leaves behind.\n\n"
        let perScrape = Double(leak.allocatedBytes) / Double(n)
        md += "Over the \(n) scrapes it allocated \(ByteFormat.human(leak.allocatedBytes)) in \(leak.allocations) blocks (\(ByteFormat.human(UInt64(perScrape))) per scrape) and freed \(ByteFormat.human(leak.freedBytes)) in \(leak.frees) blocks. "
        let final = leak.netBytesAfter[n - 1]
        md += "After the last scrape the live heap was \(ByteFormat.signed(final)) from where it started"
        if n > 10 {
            let settled = final - leak.netBytesAfter[9]
            md += "; from scrape 10 to scrape \(n) it changed by \(ByteFormat.signed(settled))"
            // A scrape that kept one block would add at least the smallest block (16 bytes) a
            // scrape.
            if settled <= 0 {
                md += " (**flat: no growth once warm**)"
            } else if settled < 16 * Int64(n - 10) {
                md += " (**flat**: less than one smallest, 16-byte, block a scrape, so no scrape keeps a block)"
            } else {
                md += " (\(ByteFormat.signed(settled / Int64(n - 10))) a scrape: **it grows**)"
            }
            if control.count == n {
                let controlSettled = control[n - 1] - control[9]
                md += ". The control's requests of `GET /` changed it by \(ByteFormat.signed(controlSettled)) over the same span"
                if settled > 0 && controlSettled > 0 {
                    md += controlSettled * 2 >= settled
                        ? ": at least half as much without any collection, so the growth is in the server's path (connection, request, response), not in the collection"
                        : ": less than half as much, so most of the growth comes with the collection"
                }
            }
        }
        md += ". Its RSS went from \(ByteFormat.human(leak.residentBytesBefore)) to \(ByteFormat.human(leak.residentBytesAfter)). The exposition had \(leak.seriesMin) to \(leak.seriesMax) series over these scrapes: other work on the machine started and ended processes meanwhile (\(leak.processesAtStart) processes before the first scrape; \(leak.processesAppeared) others appeared during the check, seen by listing /proc after each scrape; shorter-lived ones are not counted).\n\n"
        return md
    }

    private func selfCheckSection() -> String {
        var md = "## The allocation counter, checked\n\n"
        md += "Before measuring, the harness runs itself again with the counter loaded (a plain Swift program) and checks the counts around known allocations: a raw block (UnsafeMutableRawPointer.allocate, which is malloc) allocated then freed, and a [UInt8] made then released.\n\n"
        md += "| allocator | raw block: asked / counted asked / counted usable / counted freed | array: elements / counted asked / counted usable / counted freed | result |\n|---|---|---|---|\n"
        for c in selfChecks {
            md += "| \(c.allocator) | \(c.bytes) / \(c.rawAllocated.requestedBytes) / \(c.rawAllocated.allocatedBytes) / \(c.rawFreed.freedBytes) | \(c.bytes / 10) / \(c.arrayAllocated.requestedBytes) / \(c.arrayAllocated.allocatedBytes) / \(c.arrayFreed.freedBytes) | \(c.failure.map { "FAILED: \($0)" } ?? "exact") |\n"
        }
        md += "\n`mempressure-server` (where `export` runs) links jemalloc, so in it the counter wraps jemalloc's malloc (the second row's case). Usable sizes are the allocator's (malloc_usable_size): what a block really holds, so allocated minus freed is the live heap's change exactly.\n\n"
        return md
    }

    private func notes() -> String {
        var md = "## Notes\n\n"
        md += "- The Go exporters' allocation figure is their runtime's own counter (`go_memstats_alloc_bytes_total`), read from each scrape's exposition: the delta between consecutive scrapes is everything that runtime allocated in the interval, the scrape's work and the runtime's own; Go frees by garbage collection, so no live-heap figure comparable to ours is taken for them. Ours counts malloc's blocks in the same interval (from the end of one scrape to the end of the next).\n"
        md += "- Every exporter was running through the whole run; between its own scrapes it was idle while the others were scraped. The rounds are interleaved, so all exporters share the same conditions; other work on this 2-CPU machine (builds and tests of other branches) runs beside them and shows in the p90 and p99.\n"
        md += "- The counted instance's latency, beside the plain one's, is the counter's own cost (an atomic add per allocation and free, into a shared page).\n"
        if populations.contains(where: { !$0.crashes.isEmpty }) {
            md += "- A crash is the exporter's own: it exited by itself while the benchmark scraped it; the cause quoted is the first line of its log that says why. Its figures at that size are those of the scrapes before.\n"
        }
        md += "\n![scrape latency](exporter-latency.svg)\n"
        return md
    }

    // MARK: The plot

    private func latencyPlot() -> Plot {
        var p = Plot(name: "exporter-latency", title: "scrape latency (median; bars min to p99) by processes added", width: 900, height: 520)
        let colors: [ExporterID: String] = [.node: "#888888", .process: "#d08a3a", .mempressure: "#2a5bb0", .mempressureCounted: "#8fb3e8"]
        var plots: [String] = []
        var low = Double.infinity
        var high = 0.0
        for id in ExporterID.allCases {
            let rows: [[PlotValue]] = populations.compactMap { pop in
                guard let r = pop.run(id) else { return nil }
                let l = r.latencyMs
                low = min(low, l.min)
                high = max(high, l.p99)
                // Each exporter a little to the side of the others, so that their bars do not hide each other.
                let x = Double(pop.extraProcesses) + (Double(order(id)) - 1.5) * 10
                return [.number(x), .number(l.p50), .number(l.min), .number(l.p99)]
            }
            guard !rows.isEmpty else { continue }
            let block = "e\(order(id))"
            p.data(block, columns: ["processes", "p50", "min", "p99"], rows: rows)
            plots.append("$\(block) using 1:2:3:4 with yerrorlines lw 2 pt 7 ps 0.8 lc rgb '\(colors[id] ?? "#000000")' title \(Plot.quoted(id.label))")
        }
        guard low.isFinite else { return p }
        let xs = populations.map(\.extraProcesses)
        p.command("set logscale y 10")
        p.command("set yrange [\(max(low / 2, 0.01)):\(max(high, Self.targetMs) * 2)]")
        p.command("set xrange [\(Double(xs.min() ?? 0) - 60):\(Double(xs.max() ?? 1000) + 60)]")
        p.command("set xtics (\(xs.map { "\"\($0)\" \($0)" }.joined(separator: ", "))) nomirror")
        p.command("set ytics nomirror")
        p.command("set xlabel 'processes added to the machine'")
        p.command("set ylabel 'milliseconds (log scale)'")
        p.command("set key inside top left vertical opaque box lc rgb '#cccccc'")
        plots.append("\(Self.targetMs) with lines dt 2 lw 1.5 lc rgb '#c03030' title '\(Int(Self.targetMs)) ms target'")
        p.command("plot " + plots.joined(separator: ", \\\n     "))
        return p
    }
}
