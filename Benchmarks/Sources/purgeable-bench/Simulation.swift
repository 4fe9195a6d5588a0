import BenchSupport
import MemPressureCachePolicies
import Foundation
import Glibc
import MemPressureSystem
import SystemPackage

extension PurgeableBench {
    // MARK: Simulator

    /// The simulator streaming a trace file: a Zipf 1.0 trace of `streamRequests` requests over
    /// `streamObjects` objects written in libCacheSim's oracleGeneral format to a temporary
    /// directory (removed afterwards). Each round streams it once through the four policies at
    /// 10% of the objects (each policy timed on its own); then the memory the process held
    /// while streaming, for a tenth of the requests and for all of them; then LRU's exact
    /// miss-ratio curve and SHARDS, their speed, and SHARDS' error against the exact curve.
    func measureSimulator() throws -> SimulatorSection {
        let scratch = try CheckedDirectory.makeUnique(prefix: "purgeable-bench-trace-")
        defer { scratch.removeTree() }
        let dir = scratch.path
        let short = max(1, streamRequests / 10)
        let longPath = "\(dir)/zipf.oracleGeneral", shortPath = "\(dir)/zipf-short.oracleGeneral"
        log("purgeable-bench", "simulator: writing \(streamRequests) and \(short) requests to \(dir)")
        try writeOracleGeneral(ZipfRequestSource(objects: streamObjects, alpha: 1.0, requests: streamRequests, seed: 7), to: "zipf.oracleGeneral", in: scratch)
        try writeOracleGeneral(ZipfRequestSource(objects: streamObjects, alpha: 1.0, requests: short, seed: 7), to: "zipf-short.oracleGeneral", in: scratch)

        var section = SimulatorSection(requests: streamRequests, objects: streamObjects, capacity: streamObjects / 10, traceBytes: Int(try fileSize(longPath)))
        // Throughput, per policy, rounds.
        var perPolicy: [String: [Double]] = [:]
        var passes: [Double] = []
        for round in 0..<rounds {
            let run = try streamFile(longPath, kinds: PolicyKind.allCases, capacities: [section.capacity])
            for r in run.results { perPolicy[r.policy, default: []].append(r.requestsPerSecond) }
            passes.append(Double(run.requests) / run.seconds)
            log("purgeable-bench", "simulator round \(round + 1)/\(rounds): " + run.results.map { "\($0.policy) \(ByteFormat.fixed($0.requestsPerSecond / 1e6, 2)) M/s" }.joined(separator: ", "))
        }
        section.speeds = PolicyKind.allCases.map { SimulatorSpeed(policy: $0.rawValue, samples: perPolicy[$0.rawValue] ?? []) }
        section.wholePass = SimulatorSpeed(policy: "all four, reading included", samples: passes)

        // Memory while streaming: a tenth of the requests, then all of them.
        for (path, count) in [(shortPath, short), (longPath, streamRequests)] {
            let reading = try peakDuringStream(path, policies: false)
            let simulating = try peakDuringStream(path, policies: true)
            section.memory.append(StreamMemory(requests: count, readerBytes: reading, withPoliciesBytes: simulating))
        }

        // Miss-ratio curves: exact and SHARDS in one pass (each timed on its own).
        let capacities = [0.01, 0.02, 0.05, 0.10, 0.20].map { Int(Double(streamObjects) * $0) }
        for rate in [0.01, 0.1] {
            let run = try streamFile(longPath, kinds: [], capacities: [], exact: true, sampleRate: rate)
            guard let exact = run.exactLRU, let sampled = run.sampledLRU else { throw BenchError("the curves were not computed") }
            section.curves.append(CurveMeasurement(
                sampleRate: rate, exactRequestsPerSecond: Double(run.requests) / run.exactLRUSeconds,
                sampledRequestsPerSecond: Double(run.requests) / run.sampledLRUSeconds,
                meanAbsoluteError: LRUMissRatioCurve.meanAbsoluteError(exact, sampled, at: capacities),
                capacities: capacities, exact: exact.missRatios(capacities: capacities), sampled: sampled.missRatios(capacities: capacities)))
            log("purgeable-bench", "curves: exact \(ByteFormat.fixed(Double(run.requests) / run.exactLRUSeconds / 1e6, 2)) M/s, SHARDS \(rate) \(ByteFormat.fixed(Double(run.requests) / run.sampledLRUSeconds / 1e6, 2)) M/s")
        }
        // The exact LRU curve against simulated LRU at the same capacities (they must agree).
        let lru = try streamFile(longPath, kinds: [.lru], capacities: capacities)
        section.simulatedLRU = lru.results.map(\.missRatio)
        return section
    }

    /// One streamed pass over an oracleGeneral file.
    func streamFile(_ path: String, kinds: [PolicyKind], capacities: [Int], exact: Bool = false, sampleRate: Double? = nil) throws -> StreamedSimulation {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw SystemCallError("open", errno: Errno(rawValue: errno), subject: path) }
        defer { close(fd) }
        var reader = TraceFileReader(descriptor: fd, name: path, format: .oracleGeneral)
        return try Simulator.run(kinds, capacities: capacities, source: &reader, unit: .objects, exactLRUCurve: exact, sampleRate: sampleRate)
    }

    /// The most resident memory a fresh process gains while streaming `path`, with the four
    /// policies at 10% of the objects or without (reading alone): this benchmark run again as a child
    /// (`--stream-memory-probe`), so that no heap freed by earlier measurements is reused.
    func peakDuringStream(_ path: String, policies: Bool) throws -> Int {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/proc/self/exe")
        process.arguments = ["--stream-memory-probe", path, "--stream-objects", "\(streamObjects)"] + (policies ? ["--probe-policies"] : [])
        let out = Pipe()
        process.standardOutput = out
        try process.run()
        let text = String(decoding: out.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        guard process.terminationStatus == 0, let bytes = Int(text.trimmingCharacters(in: .whitespacesAndNewlines)) else {
            throw BenchError("the stream memory probe failed (status \(process.terminationStatus)): \(text)")
        }
        return bytes
    }

    /// The probe itself: resets the peak (VmHWM) to the current resident memory, streams `path`
    /// once (through the four policies at 10% of `streamObjects` with --probe-policies), and
    /// prints VmHWM after the pass minus VmRSS before it, in bytes.
    func probeStreamMemory(_ path: String) throws {
        try resetPeakResident()
        let before = try ownStatus().residentBytes ?? 0
        _ = try streamFile(path, kinds: probePolicies ? PolicyKind.allCases : [], capacities: probePolicies ? [streamObjects / 10] : [])
        let peak = try ownStatus().peakResidentBytes ?? 0
        print(Int(peak) - Int(before))
    }

    func ownStatus() throws -> ProcessStatus {
        let bytes = try ProcFS.readBytes("/proc/self/status")
        return try bytes.withUnsafeBytes { try ProcessStatus.parse($0, pid: nil) }
    }

    /// Writes "5" to /proc/self/clear_refs: VmHWM starts again from VmRSS.
    func resetPeakResident() throws {
        let fd = open("/proc/self/clear_refs", O_WRONLY | O_CLOEXEC)
        guard fd >= 0 else { throw SystemCallError("open", errno: Errno(rawValue: errno), subject: "/proc/self/clear_refs") }
        defer { close(fd) }
        let ok = "5".withCString { Glibc.write(fd, $0, 1) } == 1
        if !ok { throw SystemCallError("write", errno: Errno(rawValue: errno), subject: "/proc/self/clear_refs") }
    }

    /// Writes every request of `source` as oracleGeneral records (next access -1).
    func writeOracleGeneral(_ source: ZipfRequestSource, to name: String, in directory: CheckedDirectory) throws {
        var source = source
        let file = try directory.createFile(name)
        var batch: [Request] = []
        var out: [UInt8] = []
        out.reserveCapacity(Simulator.batchSize * TraceFormat.oracleGeneralRecordSize)
        var clock: UInt32 = 0
        while try source.nextBatch(&batch, limit: Simulator.batchSize) {
            out.removeAll(keepingCapacity: true)
            for r in batch {
                withUnsafeBytes(of: clock.littleEndian) { out.append(contentsOf: $0) }
                withUnsafeBytes(of: UInt64(bitPattern: Int64(r.key)).littleEndian) { out.append(contentsOf: $0) }
                withUnsafeBytes(of: UInt32(truncatingIfNeeded: r.size).littleEndian) { out.append(contentsOf: $0) }
                withUnsafeBytes(of: Int64(-1).littleEndian) { out.append(contentsOf: $0) }
                clock &+= 1
            }
            try file.write(out)
        }
    }
}

struct SimulatorSection: Codable {
    var requests: Int
    var objects: Int
    var capacity: Int
    var traceBytes: Int
    var speeds: [SimulatorSpeed] = []
    var wholePass: SimulatorSpeed?
    var memory: [StreamMemory] = []
    var curves: [CurveMeasurement] = []
    var simulatedLRU: [Double] = []
}

struct SimulatorSpeed: Codable {
    var policy: String
    /// Requests per second, one per round.
    var samples: [Double]
    var median: Double { let s = samples.sorted(); return s.isEmpty ? 0 : s[s.count / 2] }
    var min: Double { samples.min() ?? 0 }
    var max: Double { samples.max() ?? 0 }
}

struct StreamMemory: Codable {
    var requests: Int
    /// Peak resident memory gained streaming the file alone (reader, chunk, batch).
    var readerBytes: Int
    /// The same, with the four policies at 10% of the objects.
    var withPoliciesBytes: Int
}

struct CurveMeasurement: Codable {
    var sampleRate: Double
    var exactRequestsPerSecond: Double
    var sampledRequestsPerSecond: Double
    var meanAbsoluteError: Double
    var capacities: [Int]
    var exact: [Double]
    var sampled: [Double]
}

extension Report {
    func simulatorMarkdown() -> String {
        guard let s = simulatorStream else { return "" }
        func mib(_ b: Int) -> String { ByteFormat.fixed(Double(b) / Double(1 << 20), 1) + " MiB" }
        func rate(_ v: SimulatorSpeed) -> String {
            "\(ByteFormat.fixed(v.median / 1e6, 2)) M (\(ByteFormat.fixed(v.min / 1e6, 2))–\(ByteFormat.fixed(v.max / 1e6, 2)))"
        }
        var out = "\n## Simulator speed, streaming a trace file\n\n"
        out += "A Zipf 1.0 trace of \(s.requests) requests over \(s.objects) objects, written in libCacheSim's oracleGeneral format "
        out += "(\(mib(s.traceBytes))) and streamed from the file in 1 MiB chunks; every policy at \(s.capacity) objects (10%), "
        out += "all four in one pass, each timed on its own. Requests per second, median (min–max) over \(s.speeds.first?.samples.count ?? 0) rounds.\n\n"
        out += "| policy | requests per second |\n|---|---:|\n"
        for v in s.speeds { out += "| \(v.policy) | \(rate(v)) |\n" }
        if let w = s.wholePass { out += "| the whole pass (reading and all four) | \(rate(w)) |\n" }
        out += "\n### Memory held while streaming\n\nPeak resident memory a fresh process gained during one pass (VmHWM after it minus VmRSS before it, "
        out += "the peak reset through /proc/self/clear_refs; the benchmark run again as a child for each figure). "
        out += "Target: constant in the number of requests, under 64 MiB beyond the cache itself (reading alone).\n\n"
        out += "| requests | reading alone | with the four policies | the policies' share |\n|---:|---:|---:|---:|\n"
        for m in s.memory {
            out += "| \(m.requests) | \(mib(m.readerBytes)) | \(mib(m.withPoliciesBytes)) | \(mib(m.withPoliciesBytes - m.readerBytes)) |\n"
        }
        out += "\n### LRU miss-ratio curves in one pass\n\nLRU's exact curve from stack distances (a Fenwick tree over last-access times) and SHARDS "
        out += "(keys sampled by a fixed-seed hash), on the same trace; error is the mean absolute difference of miss ratios at 1, 2, 5, 10 and 20% of the objects.\n\n"
        out += "| SHARDS rate | exact, requests/s | SHARDS, requests/s | SHARDS' mean absolute error |\n|---:|---:|---:|---:|\n"
        for c in s.curves {
            out += "| \(c.sampleRate) | \(ByteFormat.fixed(c.exactRequestsPerSecond / 1e6, 2)) M | \(ByteFormat.fixed(c.sampledRequestsPerSecond / 1e6, 2)) M | \(ByteFormat.fixed(c.meanAbsoluteError, 4)) |\n"
        }
        if let first = s.curves.first {
            out += "\n| capacity | simulated LRU | exact curve | " + s.curves.map { "SHARDS \($0.sampleRate)" }.joined(separator: " | ") + " |\n"
            out += "|---:|---:|---:|" + s.curves.map { _ in "---:" }.joined(separator: "|") + "|\n"
            for (i, c) in first.capacities.enumerated() {
                let simulated = i < s.simulatedLRU.count ? ByteFormat.fixed(s.simulatedLRU[i], 4) : "-"
                out += "| \(c) | \(simulated) | \(ByteFormat.fixed(first.exact[i], 4)) | " + s.curves.map { ByteFormat.fixed($0.sampled[i], 4) }.joined(separator: " | ") + " |\n"
            }
        }
        out += "\n![LRU miss-ratio curves](purgeable-cache-mrc.svg)\n"
        return out
    }

    /// Miss ratio against capacity: the exact LRU curve and SHARDS, for a plot.
    func simulatorPlots() -> [Plot] {
        guard let s = simulatorStream, let first = s.curves.first else { return [] }
        var p = Plot(name: "purgeable-cache-mrc", title: "LRU miss-ratio curve: exact (stack distances) and SHARDS, Zipf 1.0, \(s.requests) requests")
        p.data("exact", columns: ["capacity", "miss ratio"], rows: zip(first.capacities, first.exact).map { [.int($0), .number($1)] })
        for (i, c) in s.curves.enumerated() {
            p.data("shards\(i)", columns: ["capacity", "miss ratio"], rows: zip(c.capacities, c.sampled).map { [.int($0), .number($1)] })
        }
        p.command("set key top right")
        p.command("set xlabel 'capacity (objects)'")
        p.command("set ylabel 'miss ratio'")
        p.command("set yrange [0:1]")
        var plots = ["$exact using 1:2 with linespoints lw 2 pt 7 title 'exact'"]
        for (i, c) in s.curves.enumerated() { plots.append("$shards\(i) using 1:2 with linespoints dt 2 title \(Plot.quoted("SHARDS \(c.sampleRate)"))") }
        p.command("plot " + plots.joined(separator: ", "))
        return [p]
    }
}
