import FoundationEssentials
import Glibc
import Subprocess
import SystemPackage
import Testing
import MemPressureTestSupport

/// `cache simulate` on streamed trace files of every format, several capacities in one pass,
/// miss-ratio curves and plots.
@Suite("mempressure CLI: cache simulate, streamed traces and miss-ratio curves")
struct SimulateCLITests {
    struct Report: Decodable {
        var formatVersion: Int
        var requests: Int
        var uniqueObjects: Int
        var capacities: [Int]
        var results: [Row]
        var curves: [Curve]
        var sampledMeanAbsoluteError: Double?
    }
    struct Row: Decodable, Equatable {
        var policy: String
        var capacity: Int
        var requests: Int
        var hits: Int
        var misses: Int
        var hitBytes: Int
        var missBytes: Int
        var missRatio: Double
    }
    struct Curve: Decodable {
        var name: String
        var sampleRate: Double
        var atCapacities: [Point]
        var curve: [Point]
    }
    struct Point: Decodable { var capacity: Int; var missRatio: Double }

    func simulate(_ arguments: [String]) async throws -> Report {
        let r = try await runMempressure(["cache", "simulate", "--json"] + arguments)
        #expect(r.status == 0, "\(arguments): \(r.standardError)")
        // Not a terminal: no progress line, nothing on standard error.
        #expect(r.standardError == "", "\(arguments)")
        return try JSONDecoder().decode(Report.self, from: Data(r.standardOutput.utf8))
    }

    /// The same 3 000 requests as csv, txt and oracleGeneral (ids 1...400, sizes 1 for txt).
    static func writeTraces(in dir: String) throws -> (csv: String, txt: String, oracle: String) {
        var csv = "key,size\n", txt = ""
        var oracle: [UInt8] = []
        var x: UInt64 = 12345
        for i in 0..<3000 {
            x = x &* 6364136223846793005 &+ 1442695040888963407
            // Mostly 40 hot ids, a third of the time any of 400.
            let hot: UInt64 = (x >> 40) % 40
            let wide: UInt64 = (x >> 20) % 3 == 0 ? (x >> 33) % 400 : 0
            let id: UInt64 = 1 + hot + wide
            csv += "\(id),1\n"
            txt += i % 100 == 0 ? "\(id)\r\n\n" : "\(id)\n"
            withUnsafeBytes(of: UInt32(i).littleEndian) { oracle += $0 }
            withUnsafeBytes(of: id.littleEndian) { oracle += $0 }
            withUnsafeBytes(of: UInt32(1).littleEndian) { oracle += $0 }
            withUnsafeBytes(of: Int64(-1).littleEndian) { oracle += $0 }
        }
        try writeText(csv, to: "\(dir)/t.csv")
        try writeText(txt, to: "\(dir)/t.txt")
        try writeBytes(oracle, to: "\(dir)/t.oracleGeneral.bin")
        return ("\(dir)/t.csv", "\(dir)/t.txt", "\(dir)/t.oracleGeneral.bin")
    }

    @Test("the three formats, detected by extension, give the same results; several capacities in one pass equal separate runs")
    func formatsAndCapacities() async throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let files = try Self.writeTraces(in: dir.path)
        let together = try await simulate(["--trace", files.oracle, "--capacity", "5%,20,10%"])
        #expect(together.formatVersion == 2)
        #expect(together.requests == 3000)
        #expect(together.results.count == 4 * 3)
        #expect(together.capacities[1] == 20)
        #expect(together.capacities[0] == Int((Double(together.uniqueObjects) * 0.05).rounded()))
        for file in [files.csv, files.txt] {
            let other = try await simulate(["--trace", file, "--capacity", "5%,20,10%", "--policy", "lru"])
            #expect(other.results.map(\.hits) == together.results.filter { $0.policy == "lru" }.map(\.hits), "\(file)")
        }
        // Compared across processes, every policy: W-TinyLFU's sketch hashes with a fixed seed.
        for (i, c) in together.capacities.enumerated() {
            let alone = try await simulate(["--trace", files.oracle, "--capacity", "\(c)"])
            #expect(alone.results == PolicyNames.all.map { p in together.results.filter { $0.policy == p }[i] }, "capacity \(c)")
        }
        // Text output: a row per policy and capacity, and the matrix of miss ratios.
        let text = try await runMempressure(["cache", "simulate", "--trace", files.csv, "--capacity", "10,20"])
        #expect(text.status == 0)
        #expect(text.standardOutput.contains("Miss ratio by capacity (objects):"))
        for p in PolicyNames.all { #expect(text.standardOutput.contains("\n\(p) ")) }
    }

    @Test("--mrc lru gives simulated LRU's miss ratio exactly at every capacity; SHARDS at rate 1 has no error")
    func exactCurve() async throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let files = try Self.writeTraces(in: dir.path)
        let r = try await simulate(["--trace", files.txt, "--capacity", "1%,2%,5%,10%,20%,50", "--policy", "lru", "--mrc", "lru", "--sample-rate", "1"])
        let exact = try #require(r.curves.first { $0.name == "lru exact" })
        #expect(exact.atCapacities.map(\.missRatio) == r.results.map(\.missRatio))
        #expect(exact.atCapacities.map(\.capacity) == r.capacities)
        #expect(exact.curve.count > 10)
        let sampled = try #require(r.curves.first { $0.name == "lru shards" })
        #expect(sampled.atCapacities.map(\.missRatio) == exact.atCapacities.map(\.missRatio))
        #expect(r.sampledMeanAbsoluteError == 0)
        // A generated trace, curve alone.
        let g = try await simulate(["--zipf", "0.9", "--objects", "2000", "--requests", "50000", "--capacity", "1%,10%", "--policy", "none", "--mrc", "shards", "--sample-rate", "0.5"])
        #expect(g.results.isEmpty)
        #expect(g.curves.map(\.name) == ["lru shards"])
        #expect(g.curves[0].sampleRate == 0.5)
    }

    @Test("a format that cannot be told, a truncated record and bad flags are refused, naming what was wrong")
    func refusals() async throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        try writeText("a,1\n", to: "\(dir.path)/t.dat")
        let unknown = try await runMempressure(["cache", "simulate", "--trace", "\(dir.path)/t.dat", "--capacity", "1"])
        #expect(unknown.status == 1)
        #expect(unknown.standardError.contains("cannot tell the trace's format from its name"))
        let forced = try await runMempressure(["cache", "simulate", "--trace", "\(dir.path)/t.dat", "--format", "csv", "--capacity", "1", "--policy", "lru"])
        #expect(forced.status == 0, "\(forced.standardError)")
        try writeBytes([UInt8](repeating: 7, count: 24 * 2 + 10), to: "\(dir.path)/t.oracleGeneral")
        let truncated = try await runMempressure(["cache", "simulate", "--trace", "\(dir.path)/t.oracleGeneral", "--capacity", "1"])
        #expect(truncated.status == 1)
        #expect(truncated.standardError == "mempressure: \(dir.path)/t.oracleGeneral: truncated record at byte offset 48: 10 of 24 bytes\n")
        let badLine = try await runMempressure(["cache", "simulate", "--trace", "\(dir.path)/t.dat", "--format", "oracle-general", "--capacity", "1"])
        #expect(badLine.standardError.contains("truncated record at byte offset 0: 4 of 24 bytes"))
        for (arguments, words) in [
            (["--capacity", "1,x"], "--capacity takes non-negative numbers or percentages separated by commas, not 'x'"),
            (["--capacity", "1", "--sample-rate", "0.1"], "--sample-rate is for a miss-ratio curve"),
            (["--capacity", "1", "--mrc", "lru", "--sample-rate", "0"], "--sample-rate must be above 0 and at most 1"),
            (["--capacity", "1", "--mrc", "lru", "--capacity-unit", "bytes"], "--mrc gives LRU's curve by object count"),
            (["--capacity", "1", "--policy", "none"], "--policy none leaves nothing to do without --mrc"),
        ] {
            let r = try await runMempressure(["cache", "simulate", "--zipf", "1", "--requests", "100"] + arguments)
            #expect(r.status == 64, "\(arguments)")
            #expect(r.standardError.contains(words), "\(arguments): \(r.standardError)")
        }
    }

    @Test("--plot draws the curves with gnuplot; without gnuplot the table is still printed and the run says why there is no plot")
    func plot() async throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let arguments = ["cache", "simulate", "--zipf", "1", "--objects", "1000", "--requests", "20000", "--capacity", "1%,5%,10%", "--mrc", "lru", "--plot"]
        if access("/usr/bin/gnuplot", X_OK) == 0 {
            let r = try await runMempressure(arguments + ["\(dir.path)/curve's.svg"])
            #expect(r.status == 0, "\(r.standardError)")
            let svg = try String(decoding: readAll("\(dir.path)/curve's.svg"), as: UTF8.self)
            #expect(svg.contains("<svg"))
            #expect(svg.contains("LRU exact (stack distances)"))
        }
        // No gnuplot on PATH.
        let empty = "\(dir.path)/empty"
        try #require(mkdir(empty, 0o700) == 0)
        let result = try await Subprocess.run(
            .path(FilePath(buildDirectory + "/mempressure")), arguments: Arguments(arguments + ["\(dir.path)/none.svg"]),
            environment: .inherit.updating(["PATH": empty]), output: .string(limit: 1 << 20), error: .string(limit: 1 << 20))
        #expect(result.terminationStatus == .exited(1))
        #expect(result.standardOutput.contains("Miss ratio by capacity") == true)
        #expect(result.standardError.contains("gnuplot not found on PATH: --plot \(dir.path)/none.svg was not drawn") == true)
        #expect(access("\(dir.path)/none.svg", F_OK) != 0)
    }
}

enum PolicyNames {
    static let all = ["lru", "sieve", "s3fifo", "tinylfu"]
}

func readAll(_ path: String) throws -> [UInt8] {
    let fd = open(path, O_RDONLY | O_CLOEXEC)
    guard fd >= 0 else { throw TestFailure("open \(path): errno \(errno)") }
    defer { close(fd) }
    var out: [UInt8] = []
    var buf = [UInt8](repeating: 0, count: 65536)
    while true {
        let n = buf.withUnsafeMutableBytes { read(fd, $0.baseAddress!, $0.count) }
        guard n > 0 else { break }
        out += buf[0..<n]
    }
    return out
}
