import ArgumentParser
import CachePolicies
import FoundationEssentials
import LinuxSystem
import VMTracker

struct Cache: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Cache policies and purgeable memory.",
        subcommands: [Simulate.self, CacheDemo.self]
    )
}

extension PolicyKind: ExpressibleByArgument {}
extension CapacityUnit: ExpressibleByArgument {}

struct Simulate: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Replay a trace through cache policies and print hits, misses and miss ratios.",
        discussion: """
            The trace is a CSV file, one request per line as `key,size` (size in bytes; an optional \
            header line), or a generated Zipf trace (--zipf ALPHA), optionally with scans. Capacity \
            is a number of objects or bytes (--capacity-unit), or a percentage of the trace's \
            distinct objects or bytes ("10%").
            """
    )

    @Option(help: "A CSV trace file (key,size per line).") var trace: String?
    @Option(help: "Generate a Zipf trace with this exponent instead of reading one.") var zipf: Double?
    @Option(help: "Objects in a generated trace.") var objects = 100_000
    @Option(help: "Requests in a generated trace.") var requests = 1_000_000
    @Option(help: "Seed of a generated trace.") var seed: UInt64 = 42
    @Option(help: "Object sizes of a generated trace: N, or MIN-MAX bytes.") var sizes = "4096"
    @Option(help: "In a generated trace, a scan of new keys every N requests (0: none).") var scanEvery = 0
    @Option(help: "Length of each scan.") var scanLength = 1000
    @Option(help: "lru, sieve, s3fifo, tinylfu or all.") var policy = "all"
    @Option(help: "Capacity: a number, or a percentage of the trace's distinct objects or bytes (\"10%\").") var capacity: String
    @Option(name: .customLong("capacity-unit"), help: "objects or bytes.") var capacityUnit: CapacityUnit = .objects
    @Flag(help: "Print JSON.") var json = false

    func validate() throws {
        if (trace == nil) == (zipf == nil) { throw ValidationError("give --trace FILE or --zipf ALPHA") }
        if policy != "all" && PolicyKind(rawValue: policy) == nil {
            throw ValidationError("--policy must be one of lru, sieve, s3fifo, tinylfu, all")
        }
        if !(1...TraceGenerator.maximumObjects).contains(objects) {
            throw ValidationError("--objects must be from 1 to \(TraceGenerator.maximumObjects), not \(objects)")
        }
        if !(0...TraceGenerator.maximumRequests).contains(requests) {
            throw ValidationError("--requests must be from 0 to \(TraceGenerator.maximumRequests), not \(requests)")
        }
        if let zipf, !(zipf >= 0 && zipf <= 100) { throw ValidationError("--zipf must be a number from 0 to 100, not \(zipf)") }
        if scanEvery < 0 || scanLength < 0 { throw ValidationError("--scan-every and --scan-length must not be negative") }
        if scanLength > TraceGenerator.maximumRequests { throw ValidationError("--scan-length must be at most \(TraceGenerator.maximumRequests)") }
    }

    func run() async throws {
        do {
            let trace = try loadTrace()
            let kinds = policy == "all" ? PolicyKind.allCases : [PolicyKind(rawValue: policy)!]
            let total = capacityUnit == .objects ? trace.uniqueKeys : trace.uniqueBytes
            let cap = try parseCapacity(capacity, total: total)
            let results = Simulator.run(kinds, capacity: cap, trace: trace, unit: capacityUnit)
            let report = SimulationReport(trace: trace.name, requests: trace.requests.count, uniqueObjects: trace.uniqueKeys, uniqueBytes: trace.uniqueBytes, results: results)
            output(json ? try encodeJSON(report) : report.renderText())
        } catch {
            throw fail(error)
        }
    }

    /// The most read from a trace file (tens of millions of `key,size` lines).
    static let maximumTraceBytes = 1 << 30

    func loadTrace() throws -> Trace {
        if let trace {
            // Opened safely (a FIFO or device is refused); the name's exact bytes.
            let path = PathBytes.argument(trace)
            return try TraceReader.parse(try RegularFile.read(path, maxBytes: Self.maximumTraceBytes), name: path.description)
        }
        let sizeModel = try parseSizes(sizes)
        if scanEvery > 0 {
            return TraceGenerator.scanMixed(
                objects: objects, alpha: zipf!, requests: requests, scanEvery: scanEvery, scanLength: scanLength, sizes: sizeModel, seed: seed)
        }
        return TraceGenerator.zipf(objects: objects, alpha: zipf!, requests: requests, sizes: sizeModel, seed: seed)
    }

    func parseSizes(_ text: String) throws -> SizeModel {
        let parts = text.split(separator: "-")
        if parts.count == 1, let n = Int(parts[0]), n >= 0 { return .constant(n) }
        if parts.count == 2, let a = Int(parts[0]), let b = Int(parts[1]), a >= 0, a <= b { return .uniform(a...b) }
        throw CLIError("--sizes takes N or MIN-MAX (bytes), not '\(text)'")
    }
}

/// "1000" or "10%" (of `total`).
func parseCapacity(_ text: String, total: Int) throws -> Int {
    if text.hasSuffix("%"), let p = Double(text.dropLast()), p >= 0, p <= 100 {
        return Int(min((Double(total) * p / 100).rounded(), Double(CachePolicies.maximumCapacity)))
    }
    if let n = Int(text), n >= 0 { return n }
    throw CLIError("--capacity takes a non-negative number or a percentage, not '\(text)'")
}

struct SimulationReport: Codable {
    var formatVersion = 1
    var trace: String
    var requests: Int
    var uniqueObjects: Int
    var uniqueBytes: Int
    var results: [SimulationResult]

    func renderText() -> String {
        var out = "trace: \(trace)\n\(requests) requests, \(uniqueObjects) distinct objects, \(ByteFormat.human(UInt64(uniqueBytes))) of distinct objects\n"
        if let first = results.first {
            out += "capacity: \(first.capacity) \(first.capacityUnit.rawValue)\n\n"
        }
        var table = TextTable([
            .init("Policy", .left), .init("Requests"), .init("Hits"), .init("Misses"), .init("Miss ratio"),
            .init("Byte miss ratio"), .init("Requests/s"),
        ])
        for r in results {
            table.append([
                r.policy, "\(r.requests)", "\(r.hits)", "\(r.misses)", ByteFormat.fixed(r.missRatio, 4),
                ByteFormat.fixed(r.byteMissRatio, 4), ByteFormat.fixed(r.requestsPerSecond, 0),
            ])
        }
        return out + table.render()
    }
}
