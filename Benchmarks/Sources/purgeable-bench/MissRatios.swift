import BenchSupport
import MemPressureCachePolicies
import Foundation
import MemPressureSystem

// Miss ratios of our policies against libCacheSim's (its Python package, run as a subprocess in
// the same run, on the same trace files). Each trace is generated here, written to a scratch
// directory in libCacheSim's oracleGeneral binary format, replayed by both sides, and removed.

extension PurgeableBench {
    /// One trace of the comparison and the cache sizes it is replayed at.
    struct TraceCase {
        var trace: Trace
        var label: String
        var unit: CapacityUnit
        /// (label, capacity) pairs.
        var capacities: [(String, Int)]
    }

    func missRatioTraces() -> [TraceCase] {
        var cases: [TraceCase] = []
        func shares(_ total: Int, _ fractions: [Double]) -> [(String, Int)] {
            fractions.map { ("\(Int(($0 * 100).rounded()))%", max(1, Int(Double(total) * $0))) }
        }
        for alpha in [0.8, 1.0, 1.2] {
            let trace = TraceGenerator.zipf(objects: objects, alpha: alpha, requests: requests, seed: 11)
            cases.append(TraceCase(trace: trace, label: "Zipf \(alpha)", unit: .objects, capacities: shares(trace.uniqueKeys, [0.01, 0.10])))
        }
        let scans = TraceGenerator.scanMixed(
            objects: objects, alpha: 1.0, requests: requests, scanEvery: max(1, objects / 2), scanLength: max(1, objects / 10), seed: 13)
        cases.append(TraceCase(trace: scans, label: "Zipf 1.0 + scans", unit: .objects, capacities: shares(scans.uniqueKeys, [0.01, 0.10])))
        // A loop over 11 keys for every 10 the cache holds: LRU and FIFO miss every request.
        let loopCache = max(1, objects / 10)
        let loop = Self.loopTrace(keys: loopCache + loopCache / 10, requests: requests)
        cases.append(TraceCase(trace: loop, label: "loop", unit: .objects, capacities: [("91%", loopCache)]))
        let shifting = Self.shiftingTrace(objects: objects, alpha: 1.0, requests: requests, phases: 10, seed: 17)
        cases.append(TraceCase(trace: shifting, label: "shifting Zipf 1.0", unit: .objects, capacities: shares(shifting.uniqueKeys, [0.01, 0.10])))
        let sized = TraceGenerator.zipf(objects: objects, alpha: 1.0, requests: requests, sizes: .uniform(100...10_000), seed: 19)
        cases.append(TraceCase(trace: sized, label: "Zipf 1.0, 100 B-10 KB", unit: .bytes, capacities: shares(sized.uniqueBytes, [0.01, 0.10])))
        let sizedScans = TraceGenerator.scanMixed(
            objects: objects, alpha: 0.8, requests: requests, scanEvery: max(1, objects / 2), scanLength: max(1, objects / 10),
            sizes: .uniform(100...10_000), seed: 23)
        cases.append(TraceCase(trace: sizedScans, label: "Zipf 0.8 + scans, 100 B-10 KB", unit: .bytes, capacities: shares(sizedScans.uniqueBytes, [0.01, 0.10])))
        return cases
    }

    /// Keys 1...keys requested in order, over and over.
    static func loopTrace(keys: Int, requests: Int) -> Trace {
        let keys = max(1, keys)
        return Trace(name: "loop over \(keys) keys", requests: (0..<requests).map { Request(key: $0 % keys + 1, size: 1) })
    }

    /// Zipf popularity whose ranking moves to other keys `phases` times: in phase p the rank-r
    /// object is key (r + p * objects / 7) mod objects, so yesterday's favourites go cold.
    static func shiftingTrace(objects: Int, alpha: Double, requests: Int, phases: Int, seed: UInt64) -> Trace {
        let base = TraceGenerator.zipf(objects: objects, alpha: alpha, requests: requests, seed: seed)
        let phaseLength = max(1, requests / max(1, phases))
        var out = base.requests
        for i in out.indices {
            let shift = (i / phaseLength) * (objects / 7)
            out[i].key = (out[i].key - 1 + shift) % objects + 1
        }
        return Trace(name: "shifting zipf(alpha \(alpha), \(objects) objects, \(phases) phases)", requests: out)
    }

    func measureMissRatios() throws -> (rows: [MissRatioRow], libCacheSim: String?, missing: String?) {
        let scratch = try CheckedDirectory.makeUnique(prefix: "purgeable-bench-traces-")
        defer { scratch.removeTree() }
        let directory = scratch.path
        var rows: [MissRatioRow] = []
        var version: String?
        var missing: String?
        for (n, c) in missRatioTraces().enumerated() {
            let path = "\(directory)/trace-\(n).oracleGeneral"
            if missing == nil { try writeOracleGeneral(c.trace, to: path) }
            var jobs: [LibCacheSimJob] = []
            for (label, capacity) in c.capacities {
                let ours = Simulator.run(PolicyKind.allCases, capacity: capacity, trace: c.trace, unit: c.unit)
                rows.append(MissRatioRow(
                    trace: c.label, unit: c.unit, cache: label, capacity: capacity, requests: c.trace.requests.count,
                    ours: Dictionary(uniqueKeysWithValues: ours.map { ($0.policy, $0.missRatio) }),
                    oursBytes: Dictionary(uniqueKeysWithValues: ours.map { ($0.policy, $0.byteMissRatio) })))
                jobs.append(LibCacheSimJob(id: rows.count - 1, trace: path, unit: c.unit.rawValue, capacity: capacity))
            }
            guard missing == nil else { continue }
            switch try runLibCacheSim(jobs, directory: directory) {
            case .measured(let v, let results):
                version = v
                for r in results {
                    guard rows.indices.contains(r.id) else { throw BenchError("libcachesim driver answered for job \(r.id), which was not asked") }
                    rows[r.id].theirs[r.policy] = r.missRatio
                    rows[r.id].theirsBytes[r.policy] = r.byteMissRatio
                }
            case .missing(let why):
                missing = why
                log("purgeable-bench", "libCacheSim not measured: \(why)")
            }
            unlink(path)
        }
        return (rows, version, missing)
    }

    /// libCacheSim's oracleGeneral records: uint32 time, uint64 id, uint32 size, int64 next
    /// access (-1: not known), little-endian, 24 bytes each.
    func writeOracleGeneral(_ trace: Trace, to path: String) throws {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(trace.requests.count * 24)
        func append<T: FixedWidthInteger>(_ v: T) { withUnsafeBytes(of: v.littleEndian) { bytes.append(contentsOf: $0) } }
        for (i, r) in trace.requests.enumerated() {
            guard r.key >= 0, r.size >= 0, r.size <= Int(UInt32.max) else {
                throw BenchError("request \(i) of \(trace.name) does not fit oracleGeneral (key \(r.key), size \(r.size))")
            }
            append(UInt32(truncatingIfNeeded: i))
            append(UInt64(r.key))
            append(UInt32(r.size))
            append(Int64(-1))
        }
        try CheckedDirectory.replaceFile(at: path, with: bytes)
    }

    enum LibCacheSimOutcome {
        case measured(version: String, [LibCacheSimResult])
        case missing(String)
    }

    /// Runs Benchmarks/scripts/libcachesim_missratios.py on `jobs` with python3 from PATH.
    func runLibCacheSim(_ jobs: [LibCacheSimJob], directory: String) throws -> LibCacheSimOutcome {
        let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("scripts/libcachesim_missratios.py").path
        let jobsPath = "\(directory)/jobs.json"
        try CheckedDirectory.replaceFile(at: jobsPath, with: Array(try JSONEncoder().encode(jobs)))
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["python3", script, jobsPath]
        let output = Pipe(), errors = Pipe()
        process.standardOutput = output
        process.standardError = errors
        do {
            try process.run()
        } catch {
            return .missing("python3 could not be started (\(error))")
        }
        let stdout = output.fileHandleForReading.readDataToEndOfFile()
        let stderr = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
            .trimmingCharacters(in: .whitespacesAndNewlines)
        process.waitUntilExit()
        switch process.terminationStatus {
        case 0:
            let answer = try JSONDecoder().decode(LibCacheSimAnswer.self, from: stdout)
            return .measured(version: answer.libcachesim, answer.results)
        case 3:
            return .missing(stderr)
        case 127:
            return .missing("python3 not found on PATH")
        default:
            throw BenchError("\(script) failed (status \(process.terminationStatus)): \(stderr)")
        }
    }
}

struct LibCacheSimJob: Codable {
    var id: Int
    var trace: String
    var unit: String
    var capacity: Int
}

struct LibCacheSimResult: Codable {
    var id: Int
    var policy: String
    var missRatio: Double
    var byteMissRatio: Double
}

struct LibCacheSimAnswer: Codable {
    var libcachesim: String
    var results: [LibCacheSimResult]
}

struct MissRatioRow: Codable {
    var trace: String
    var unit: CapacityUnit
    var cache: String
    var capacity: Int
    var requests: Int
    /// Our policies' miss ratios (by request), by policy name.
    var ours: [String: Double]
    var oursBytes: [String: Double]
    /// libCacheSim's, by the same names; empty when it was not measured.
    var theirs: [String: Double] = [:]
    var theirsBytes: [String: Double] = [:]

    static let policies = PolicyKind.allCases.map(\.rawValue)

    func best(_ ratios: [String: Double]) -> (policy: String, ratio: Double)? {
        Self.policies.compactMap { p in ratios[p].map { (p, $0) } }.min { $0.1 < $1.1 }
    }
}

extension Report {
    func missRatioMarkdown() -> String {
        var out = "\n## Miss ratios against libCacheSim\n\n"
        let compared = missRatios.contains { !$0.theirs.isEmpty }
        out += "Traces of \(requests) requests over \(objects) objects (the loop: a cycle of 11 keys for every 10 the cache holds; "
        out += "the shifting trace: Zipf 1.0 whose popular keys move ten times; the scans: \(objects / 10) new keys every \(objects / 2) requests). "
        out += "Cache sizes are a share of the distinct objects requested, or of their bytes for the byte-capacity traces, "
        out += "where the miss ratio is by request and the byte miss ratio by bytes. "
        if compared {
            out += "libCacheSim \(libCacheSimVersion ?? "?") (its Python package, defaults; W-TinyLFU with a fixed 1% window) replayed the same trace files in the same run; "
            out += "an object capacity is a count on both sides (its reader told to ignore object sizes). "
            out += "Ours: `tinylfu` is W-TinyLFU with the adaptive window and size-aware admission. **Bold**: the best of each side.\n\n"
        } else {
            out += "\n\nlibCacheSim was not measured: \(libCacheSimMissing ?? "unknown reason"). Ours only.\n\n"
        }
        let names = MissRatioRow.policies
        func table(_ rows: [MissRatioRow], _ mine: (MissRatioRow) -> [String: Double], _ theirs: (MissRatioRow) -> [String: Double]) -> String {
            var t = "| trace | cache | " + names.joined(separator: " | ")
            if compared { t += " | lcs " + names.joined(separator: " | lcs ") + " | ours ≤ theirs | LRU Δ" }
            t += " |\n|---|---|" + String(repeating: "---:|", count: names.count)
            if compared { t += String(repeating: "---:|", count: names.count) + "---|---:|" }
            t += "\n"
            for row in rows {
                let o = mine(row), l = theirs(row)
                let ob = row.best(o), lb = row.best(l)
                func cell(_ v: Double?, _ best: (policy: String, ratio: Double)?) -> String {
                    guard let v else { return "–" }
                    let text = ByteFormat.fixed(v, 4)
                    return v == best?.ratio ? "**\(text)**" : text
                }
                t += "| \(row.trace) | \(row.cache) (\(row.capacity)) | " + names.map { cell(o[$0], ob) }.joined(separator: " | ")
                if compared {
                    t += " | " + names.map { cell(l[$0], lb) }.joined(separator: " | ")
                    if let ob, let lb { t += " | \(ob.ratio <= lb.ratio + sameRatio ? "yes" : "**no**") (\(ByteFormat.fixed(ob.ratio - lb.ratio, 5)))" } else { t += " | –" }
                    if let a = o["lru"], let b = l["lru"] { t += " | \(ByteFormat.fixed(abs(a - b), 4))\(abs(a - b) <= 0.01 ? "" : " ✗")" } else { t += " | –" }
                }
                t += " |\n"
            }
            return t
        }
        out += "### Miss ratio (by request)\n\n" + table(missRatios, \.ours, \.theirs)
        let byBytes = missRatios.filter { $0.unit == .bytes }
        if !byBytes.isEmpty {
            out += "\n### Byte miss ratio (byte-capacity traces)\n\n" + table(byBytes, \.oursBytes, \.theirsBytes)
        }
        if compared {
            func worse(_ mine: (MissRatioRow) -> [String: Double], _ theirs: (MissRatioRow) -> [String: Double], _ rows: [MissRatioRow]) -> [String] {
                rows.filter { r in
                    guard let o = r.best(mine(r)), let l = r.best(theirs(r)) else { return false }
                    return o.ratio > l.ratio + sameRatio
                }.map { "\($0.trace) \($0.cache)" }
            }
            let lruOff = missRatios.filter { r in
                guard let a = r.ours["lru"], let b = r.theirs["lru"] else { return false }
                return abs(a - b) > 0.01
            }
            out += "\nHarness check: our LRU and libCacheSim's LRU \(lruOff.isEmpty ? "agree within 0.01 on every row" : "differ by more than 0.01 on \(lruOff.map { "\($0.trace) \($0.cache)" }.joined(separator: ", ")) (✗)").\n\n"
            let byRequest = worse(\.ours, \.theirs, missRatios)
            out += byRequest.isEmpty
                ? "By request, our best policy misses no more than libCacheSim's best on every row.\n"
                : "By request, our best policy misses more than libCacheSim's best on: \(byRequest.joined(separator: "; ")).\n"
            if !byBytes.isEmpty {
                let inBytes = worse(\.oursBytes, \.theirsBytes, byBytes)
                out += inBytes.isEmpty
                    ? "By bytes, our best policy misses no more than libCacheSim's best on every byte-capacity row.\n"
                    : "By bytes, our best policy misses more than libCacheSim's best on: \(inBytes.joined(separator: "; ")).\n"
            }
        }
        return out
    }
}

/// Two miss ratios this close are the same count of misses: the two sides divide in their own
/// floating point (libCacheSim in C, through Python), and a tie must not read as a loss.
let sameRatio = 1e-9
