import MemPressureOneShot
import ArgumentParser
import MemPressureCachePolicies
import FoundationEssentials
import Glibc
import MemPressureSystem
import SystemPackage
import MemPressureVMTracker

struct Cache: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "cache",
        abstract: "Cache policies and purgeable memory.",
        subcommands: [Simulate.self, CacheDemo.self]
    )
}

extension PolicyKind: ExpressibleByArgument {}
extension CapacityUnit: ExpressibleByArgument {}

extension TraceFormat: ExpressibleByArgument {}

/// What `--mrc` computes.
enum CurveKind: String, ExpressibleByArgument, CaseIterable {
    /// LRU's exact curve from stack distances (and SHARDS beside it with --sample-rate).
    case lru
    /// SHARDS alone (for traces too large for the exact curve's memory).
    case shards
}

struct Simulate: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "simulate",
        abstract: "Replay a trace through cache policies and print hits, misses and miss ratios.",
        discussion: """
            The trace is streamed from a file in constant memory, in one of three formats (by the \
            file's extension, or --format): csv (`key,size` per line, size in bytes, an optional \
            header line), txt (libCacheSim's plain text: one object id per line, every size 1) or \
            oracle-general (libCacheSim's binary records: uint32 time, uint64 id, uint32 size, int64 \
            next access; 24 bytes, little-endian). Or it is generated (--zipf ALPHA), optionally \
            with scans. Text keys become 64-bit ids by a fixed-seed hash (the same in every run).

            --capacity takes one or more capacities separated by commas, each a number of objects \
            or bytes (--capacity-unit) or a percentage of the trace's distinct objects or bytes \
            ("1%,2%,5%,10%,20%", mixed with numbers if you like): every policy runs at every \
            capacity in one pass over the trace (a percentage costs one more pass, to count the \
            distinct objects). --mrc lru adds LRU's exact miss-ratio curve from stack distances \
            (Mattson), by object count, in the same pass; --sample-rate R adds a SHARDS \
            approximation sampling a share R of the keys, with its mean absolute error against the \
            exact curve; --mrc shards computes the sampled curve alone. --plot FILE.svg draws the \
            curves with gnuplot. On a terminal, a run longer than two seconds shows its progress \
            on standard error.
            """
    )

    @Option(help: "A trace file (csv, txt or oracle-general).", completion: .file()) var trace: String?
    @Option(help: "The trace file's format: csv, txt or oracle-general (default: by its extension, .csv, .txt, .oracleGeneral or .oracleGeneral.bin).") var format: TraceFormat?
    @Option(help: "Generate a Zipf trace with this exponent instead of reading one.") var zipf: Double?
    @Option(help: "Objects in a generated trace.") var objects = 100_000
    @Option(help: "Requests in a generated trace.") var requests = 1_000_000
    @Option(help: "Seed of a generated trace.") var seed: UInt64 = 42
    @Option(help: "Object sizes of a generated trace: N, or MIN-MAX bytes.") var sizes = "4096"
    @Option(help: "In a generated trace, a scan of new keys every N requests (0: none).") var scanEvery = 0
    @Option(help: "Length of each scan.") var scanLength = 1000
    @Option(help: "lru, sieve, s3fifo, tinylfu, all, or none (with --mrc: the curve alone).") var policy = "all"
    @Option(help: "Capacities, separated by commas: numbers, or percentages of the trace's distinct objects or bytes (\"1%,5%,10%\").") var capacity: String
    @Option(name: .customLong("capacity-unit"), help: "objects or bytes.") var capacityUnit: CapacityUnit = .objects
    @Option(help: "A miss-ratio curve in the same pass: lru (exact, from stack distances) or shards (sampled only).") var mrc: CurveKind?
    @Option(name: .customLong("sample-rate"), help: "SHARDS: the share of keys sampled, above 0 and at most 1 (with --mrc; default 0.01 for --mrc shards).") var sampleRate: Double?
    @Option(help: "Draw the miss ratios by capacity into this SVG file with gnuplot.", completion: .file(extensions: ["svg"])) var plot: String?
    @Flag(help: "Print JSON.") var json = false

    func validate() throws {
        if (trace == nil) == (zipf == nil) { throw ValidationError("give --trace FILE or --zipf ALPHA") }
        if policy != "all" && policy != "none" && PolicyKind(rawValue: policy) == nil {
            throw ValidationError("--policy must be one of lru, sieve, s3fifo, tinylfu, all, none")
        }
        if policy == "none" && mrc == nil { throw ValidationError("--policy none leaves nothing to do without --mrc") }
        if format != nil && trace == nil { throw ValidationError("--format is for a --trace file") }
        if !(1...TraceGenerator.maximumObjects).contains(objects) {
            throw ValidationError("--objects must be from 1 to \(TraceGenerator.maximumObjects), not \(objects)")
        }
        if !(0...TraceGenerator.maximumRequests).contains(requests) {
            throw ValidationError("--requests must be from 0 to \(TraceGenerator.maximumRequests), not \(requests)")
        }
        if let zipf, !(zipf >= 0 && zipf <= 100) { throw ValidationError("--zipf must be a number from 0 to 100, not \(zipf)") }
        if scanEvery < 0 || scanLength < 0 { throw ValidationError("--scan-every and --scan-length must not be negative") }
        if scanLength > TraceGenerator.maximumRequests { throw ValidationError("--scan-length must be at most \(TraceGenerator.maximumRequests)") }
        if let sampleRate {
            if mrc == nil { throw ValidationError("--sample-rate is for a miss-ratio curve: add --mrc lru or --mrc shards") }
            if !(sampleRate > 0 && sampleRate <= 1) { throw ValidationError("--sample-rate must be above 0 and at most 1, not \(sampleRate)") }
        }
        if mrc != nil && capacityUnit == .bytes {
            throw ValidationError("--mrc gives LRU's curve by object count: use --capacity-unit objects (byte capacities are simulated with --policy lru)")
        }
        if let plot, plot.contains("\n") || plot.isEmpty { throw ValidationError("--plot takes a file name") }
        do {
            _ = try parseCapacities(capacity)
        } catch {
            throw ValidationError(error.description)
        }
    }

    func run() async throws {
        do {
            try simulate()
        } catch {
            throw fail(error)
        }
    }

    private func simulate() throws {
        if let trace {
            // Opened safely (a FIFO or device is refused); the name's exact bytes. Kept open
            // (and closed at the end of this scope) while every pass reads it.
            let file = try RegularFile.open(PathBytes.argument(trace), maxBytes: Int.max)
            guard let format = format ?? TraceFormat(detectingFrom: trace) else {
                throw CLIError("\(trace): cannot tell the trace's format from its name (.csv, .txt, .oracleGeneral, .oracleGeneral.bin): give --format csv, txt or oracle-general")
            }
            let (fd, name, size) = (file.descriptor, file.path.description, file.size)
            try simulate { TraceFileReader(descriptor: fd, name: name, format: format, fileSize: size) }
        } else {
            let sizeModel = try parseSizes(sizes)
            try simulate {
                ZipfRequestSource(
                    objects: objects, alpha: zipf!, requests: requests, scanEvery: scanEvery, scanLength: scanLength,
                    sizes: sizeModel, seed: seed)
            }
        }
    }

    /// Runs the simulation over sources made by `makeSource` (each a new pass from the start).
    private func simulate(_ makeSource: () -> some RequestSource) throws {
        let kinds: [PolicyKind] = switch policy {
        case "all": PolicyKind.allCases
        case "none": []
        default: [PolicyKind(rawValue: policy)!]
        }
        let specs = try parseCapacities(capacity)
        let progress = ProgressLine()
        // A percentage needs the distinct objects first: one more pass.
        var census: TraceCensus? = nil
        if specs.contains(where: \.isPercentage) {
            var counting = makeSource()
            progress.phase = "counting distinct objects"
            var tally = TraceCensus()
            var batch: [Request] = []
            while try counting.nextBatch(&batch, limit: Simulator.batchSize) {
                tally.add(batch)
                progress.update(requests: tally.requests, fraction: counting.fractionDone)
            }
            census = tally
            progress.clear()
        }
        let total = capacityUnit == .objects ? census?.distinctObjects ?? 0 : census?.distinctBytes ?? 0
        let capacities = specs.map { $0.resolve(total: total) }
        let rate: Double? = switch mrc {
        case .shards: sampleRate ?? 0.01
        case .lru: sampleRate
        case nil: nil
        }
        progress.phase = "simulating"
        var source = makeSource()
        let run = try Simulator.run(
            kinds, capacities: capacities, source: &source, unit: capacityUnit,
            exactLRUCurve: mrc == .lru, sampleRate: rate, census: census == nil,
            progress: { progress.update(requests: $0, fraction: $1) })
        progress.clear()
        let counted = census ?? run.census ?? TraceCensus()
        let report = SimulationReport(run: run, census: counted, capacities: capacities, unit: capacityUnit)
        output(json ? try encodeJSON(report) : report.renderText())
        if let plot { try drawCurves(report, to: plot) }
    }

    func parseSizes(_ text: String) throws -> SizeModel {
        let parts = text.split(separator: "-")
        if parts.count == 1, let n = Int(parts[0]), n >= 0 { return .constant(n) }
        if parts.count == 2, let a = Int(parts[0]), let b = Int(parts[1]), a >= 0, a <= b { return .uniform(a...b) }
        throw CLIError("--sizes takes N or MIN-MAX (bytes), not '\(text)'")
    }

    /// Draws the report's curves with gnuplot into `path`. gnuplot writes its SVG as any program
    /// does (through whatever link is at the name): it draws into a private directory of its own,
    /// and the SVG is then put at `path` safely (`CheckedDirectory`: a directory of this user or
    /// root, the file replaced, never written through a link).
    private func drawCurves(_ report: SimulationReport, to path: String) throws {
        guard let gnuplot = findExecutable("gnuplot") else {
            throw CLIError("gnuplot not found on PATH: --plot \(path) was not drawn (the table above is complete; apt-get install gnuplot-nox to draw it)")
        }
        let (destination, name) = try CheckedDirectory.containing(path)
        let scratch = try CheckedDirectory.makeUnique(prefix: "mempressure-plot-")
        defer { scratch.removeTree() }
        try scratch.replaceFile("plot.gp", with: Array(report.gnuplotScript(output: "\(scratch.path)/plot.svg").utf8))
        let status = try spawnAndWait(gnuplot, [gnuplot, "\(scratch.path)/plot.gp"])
        guard status == 0 else { throw CLIError("gnuplot failed (status \(status)) drawing \(path)") }
        try scratch.copyFile("plot.svg", maxBytes: 64 << 20, to: destination, as: name, mode: 0o644)
    }
}

/// One `--capacity` entry: a number, or a percentage of the distinct objects or bytes.
enum CapacitySpec: Equatable {
    case absolute(Int)
    case percentage(Double)

    var isPercentage: Bool { if case .percentage = self { true } else { false } }

    func resolve(total: Int) -> Int {
        switch self {
        case .absolute(let n): min(n, CachePolicies.maximumCapacity)
        case .percentage(let p): Int(min((Double(total) * p / 100).rounded(), Double(CachePolicies.maximumCapacity)))
        }
    }
}

/// "1000", "10%" or a list of them separated by commas ("1%,2%,5000").
func parseCapacities(_ text: String) throws(CLIError) -> [CapacitySpec] {
    let parts = text.split(separator: ",", omittingEmptySubsequences: false).map { String($0.drop { $0 == " " }.reversed().drop { $0 == " " }.reversed()) }
    guard !parts.isEmpty, parts.count <= 100 else { throw CLIError("--capacity takes from 1 to 100 capacities separated by commas") }
    var specs: [CapacitySpec] = []
    for part in parts {
        if part.hasSuffix("%"), let p = Double(part.dropLast()), p >= 0, p <= 100 {
            specs.append(.percentage(p))
        } else if let n = Int(part), n >= 0 {
            specs.append(.absolute(n))
        } else {
            throw CLIError("--capacity takes non-negative numbers or percentages separated by commas, not '\(part)'")
        }
    }
    return specs
}

/// The path of `name` in a directory of PATH that holds an executable of that name.
func findExecutable(_ name: String) -> String? {
    let path = getenv("PATH").map { String(cString: $0) } ?? "/usr/bin:/bin"
    for dir in path.split(separator: ":") where !dir.isEmpty {
        let candidate = "\(dir)/\(name)"
        if access(candidate, X_OK) == 0 { return candidate }
    }
    return nil
}

/// Runs `executable` with `arguments` (standard input from /dev/null, output and errors
/// inherited) and returns its exit status (128 + the signal when killed).
func spawnAndWait(_ executable: String, _ arguments: [String]) throws -> Int32 {
    var options = SpawnOptions([executable] + arguments.dropFirst())
    options.standardInput = .null
    // gnuplot's standard output stays away from ours (which may be a table or JSON).
    options.standardOutput = .null
    options.newProcessGroup = false
    options.defaultSignals = []
    switch try Spawn.start(options).waitForTermination() {
    case .exited(let code): return code
    case .signaled(let signal): return 128 + signal
    }
}

/// A progress line on standard error, only when it is a terminal and only once a run has gone
/// on for two seconds: requests so far, the rate, and the percentage when the source knows it,
/// redrawn in place at most four times a second and cleared at the end.
final class ProgressLine {
    /// What the run is doing ("simulating"); setting it starts the rate's clock again.
    var phase = "" {
        didSet { phaseStart = ContinuousClock.now }
    }
    private let enabled = isatty(2) == 1
    private let start = ContinuousClock.now
    private var phaseStart = ContinuousClock.now
    private var lastDrawn: ContinuousClock.Instant? = nil
    private var shown = false

    func update(requests: Int, fraction: Double?) {
        guard enabled else { return }
        let now = ContinuousClock.now
        guard seconds(now - start) >= 2 else { return }
        if let lastDrawn, seconds(now - lastDrawn) < 0.25 { return }
        lastDrawn = now
        let rate = Double(requests) / max(seconds(now - phaseStart), 1e-3)
        var text = "\(phase): \(ByteFormat.fixed(Double(requests) / 1e6, 1)) M requests, \(ByteFormat.fixed(rate / 1e6, 2)) M/s"
        if let fraction { text += ", \(Int(fraction * 100))%" }
        draw("\r\u{1b}[K" + text)
        shown = true
    }

    func clear() {
        guard shown else { return }
        draw("\r\u{1b}[K")
        shown = false
    }

    private func seconds(_ d: Duration) -> Double {
        Double(d.components.seconds) + Double(d.components.attoseconds) / 1e18
    }

    private func draw(_ text: String) {
        var bytes = Array(text.utf8)
        do {
            try bytes.withUnsafeMutableBytes { try MemPressureSystem.writeAll(2, UnsafeRawBufferPointer($0)) }
        } catch {
            // Standard error is gone: progress is not worth failing the run for.
        }
        bytes.removeAll()
    }
}

/// `cache simulate`'s report: format 2 adds several capacities, the trace's distinct objects
/// counted while streaming, and the miss-ratio curves.
struct SimulationReport: Codable {
    var formatVersion = 2
    var trace: String
    var requests: Int
    var uniqueObjects: Int
    var uniqueBytes: Int
    var capacityUnit: CapacityUnit
    var capacities: [Int]
    /// One per (policy, capacity), policy by policy.
    var results: [SimulationResult]
    /// LRU's curves: at the capacities asked for, and a full curve for plots.
    var curves: [CurveReport]
    /// SHARDS' mean absolute error against the exact curve at the capacities asked for, when both were computed.
    var sampledMeanAbsoluteError: Double?

    struct CurveReport: Codable {
        /// "lru exact" or "lru shards".
        var name: String
        var sampleRate: Double
        var sampledRequests: Int
        var seconds: Double
        var atCapacities: [CurvePoint]
        var curve: [CurvePoint]
    }

    init(run: StreamedSimulation, census: TraceCensus, capacities: [Int], unit: CapacityUnit) {
        trace = run.trace
        requests = run.requests
        uniqueObjects = census.distinctObjects
        uniqueBytes = census.distinctBytes
        capacityUnit = unit
        self.capacities = capacities
        results = run.results
        let top = max(capacities.max() ?? 0, 1)
        let plotTop = max(top + top / 4, 10)
        func report(_ c: LRUMissRatioCurve, _ seconds: Double) -> CurveReport {
            CurveReport(
                name: c.isSampled ? "lru shards" : "lru exact", sampleRate: c.sampleRate, sampledRequests: c.sampledRequests, seconds: seconds,
                atCapacities: zip(capacities, c.missRatios(capacities: capacities)).map { CurvePoint(capacity: $0, missRatio: $1) },
                curve: c.points(upTo: plotTop))
        }
        curves = []
        if let e = run.exactLRU { curves.append(report(e, run.exactLRUSeconds)) }
        if let s = run.sampledLRU { curves.append(report(s, run.sampledLRUSeconds)) }
        if let e = run.exactLRU, let s = run.sampledLRU {
            sampledMeanAbsoluteError = LRUMissRatioCurve.meanAbsoluteError(e, s, at: capacities)
        }
    }

    func renderText() -> String {
        var out = "trace: \(trace)\n\(requests) requests, \(uniqueObjects) distinct objects, \(ByteFormat.human(UInt64(uniqueBytes))) of distinct objects\n"
        let unit = capacityUnit.rawValue
        if capacities.count == 1 { out += "capacity: \(capacities[0]) \(unit)\n" } else { out += "capacities: \(capacities.map(String.init).joined(separator: ", ")) \(unit)\n" }
        if !results.isEmpty {
            var table = TextTable([
                .init("Policy", .left), .init("Capacity"), .init("Requests"), .init("Hits"), .init("Misses"), .init("Miss ratio"),
                .init("Byte miss ratio"), .init("Requests/s"),
            ])
            for r in results {
                table.append([
                    r.policy, "\(r.capacity)", "\(r.requests)", "\(r.hits)", "\(r.misses)", ByteFormat.fixed(r.missRatio, 4),
                    ByteFormat.fixed(r.byteMissRatio, 4), ByteFormat.fixed(r.requestsPerSecond, 0),
                ])
            }
            out += "\n" + table.render()
        }
        if capacities.count > 1 && !results.isEmpty {
            out += "\nMiss ratio by capacity (\(unit)):\n"
            var matrix = TextTable([.init("Policy", .left)] + capacities.map { .init("\($0)") })
            var row: [String] = []
            for (i, r) in results.enumerated() {
                if i % capacities.count == 0 { row = [r.policy] }
                row.append(ByteFormat.fixed(r.missRatio, 4))
                if row.count == capacities.count + 1 { matrix.append(row) }
            }
            out += matrix.render()
        }
        if !curves.isEmpty {
            out += "\nLRU miss-ratio curve from stack distances, one pass (objects):\n"
            var table = TextTable([.init("Capacity")] + curves.map { .init($0.name == "lru exact" ? "exact" : "SHARDS \(ByteFormat.fixed($0.sampleRate, 4))") })
            for (i, c) in capacities.enumerated() {
                table.append(["\(c)"] + curves.map { ByteFormat.fixed($0.atCapacities[i].missRatio, 4) })
            }
            out += table.render()
            for c in curves {
                let rate = c.sampledRequests > 0 && c.seconds > 0 ? ByteFormat.fixed(Double(requests) / c.seconds / 1e6, 2) : "-"
                out += "\(c.name == "lru exact" ? "exact" : "SHARDS at rate \(ByteFormat.fixed(c.sampleRate, 4))"): \(c.sampledRequests) requests counted, \(rate) M requests/s\n"
            }
            if let mae = sampledMeanAbsoluteError {
                out += "SHARDS mean absolute error against the exact curve: \(ByteFormat.fixed(mae, 4)) over \(capacities.count) capacities\n"
            }
        }
        return out
    }

    /// A gnuplot script drawing miss ratio against capacity: a line per policy through its
    /// simulated capacities, and the LRU curves in full.
    func gnuplotScript(output path: String) -> String {
        // gnuplot's single-quoted strings: a quote is doubled, and nothing else is special but a
        // line break, which would end the command (control characters become spaces).
        func quoted(_ s: String) -> String {
            let printable = String(String.UnicodeScalarView(s.unicodeScalars.map { $0.value < 0x20 || $0.value == 0x7f ? " " : $0 }))
            return "'" + printable.split(separator: "'", omittingEmptySubsequences: false).joined(separator: "''") + "'"
        }
        var s = "set terminal svg size 900,540 dynamic noenhanced font 'sans,11' background rgb 'white'\n"
        s += "set output \(quoted(path))\n"
        s += "set title \(quoted("miss ratio by cache size: \(trace)"))\n"
        s += "set xlabel \(quoted("capacity (\(capacityUnit.rawValue))"))\nset ylabel 'miss ratio'\nset yrange [0:1]\nset grid lc rgb '#dddddd'\nset key top right\n"
        var plots: [String] = []
        var policies: [String] = []
        for r in results where !policies.contains(r.policy) { policies.append(r.policy) }
        for (i, p) in policies.enumerated() {
            s += "$p\(i) << EOD\n"
            for r in results.filter({ $0.policy == p }).sorted(by: { $0.capacity < $1.capacity }) { s += "\(r.capacity)\t\(r.missRatio)\n" }
            s += "EOD\n"
            plots.append("$p\(i) using 1:2 with linespoints lw 2 pt 7 title \(quoted(p))")
        }
        for (i, c) in curves.enumerated() {
            s += "$c\(i) << EOD\n"
            for point in c.curve { s += "\(point.capacity)\t\(point.missRatio)\n" }
            s += "EOD\n"
            let title = c.name == "lru exact" ? "LRU exact (stack distances)" : "LRU SHARDS, rate \(ByteFormat.fixed(c.sampleRate, 4))"
            plots.append("$c\(i) using 1:2 with lines lw \(c.name == "lru exact" ? 2 : 1) dt \(c.name == "lru exact" ? 1 : 2) title \(quoted(title))")
        }
        s += "plot " + plots.joined(separator: ", \\\n     ") + "\n"
        return s
    }
}
