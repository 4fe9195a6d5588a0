// purgeable-bench: the purgeable cache against Foundation's NSCache and a plain dictionary plus
// LRU, in the same run; the end/begin access round trip against recreating an entry; the
// simulator's speed; and miss ratios of every policy on Zipf traces. Writes
// Reports/purgeable-cache.{md,json,svg}.

import ArgumentParser
import BenchSupport
import CachePolicies
import Foundation
import LinuxSystem
import Purgeable
import Synchronization

@main
struct PurgeableBench: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "purgeable-bench")

    @Option(help: "Keys resident in the caches for the hit measurements.") var keys = 100_000
    @Option(help: "Operations per thread per measurement.") var operations = 1_000_000
    @Option(help: "Rounds of each throughput measurement (interleaved).") var rounds = 5
    @Option(help: "Round trips (and recreations) of a 1 MiB entry per round.") var roundTrips = 500
    @Option(help: "Requests in each simulated trace.") var requests = 1_000_000
    @Option(help: "Objects in each simulated trace.") var objects = 100_000
    @Option(help: "Where to write purgeable-cache.md, .json, .gp and .svg.") var output = "../Reports"
    @Flag(help: "Re-render the Markdown and SVG from the JSON already in --output.") var renderOnly = false

    func run() async throws {
        if renderOnly {
            try write(try readReport(Report.self, from: output, named: "purgeable-cache"))
            return
        }
        var report = Report(kernel: kernelRelease(), cpus: onlineCPUs, keys: keys, operations: operations, rounds: rounds, requests: requests, objects: objects)
        report.throughput = try measureThroughput()
        report.roundTrip = try measureRoundTrip()
        report.simulator = measureSimulator()
        report.missRatios = measureMissRatios()
        try write(report)
    }

    // MARK: Throughput

    /// The caches compared, behind one interface.
    enum Kind: String, CaseIterable, Codable {
        case nscache = "NSCache (Foundation)"
        case dictionaryLRU = "Dictionary + LRU list, one lock"
        case purgeableSIEVE = "PurgeableCache (SIEVE)"
        case purgeableLRU = "PurgeableCache (LRU)"
        case purgeableS3FIFO = "PurgeableCache (S3-FIFO)"
    }

    enum Operation: String, CaseIterable, Codable {
        case hit = "get (hit)"
        case miss = "get (miss)"
        case set = "set"
    }

    func makeCache(_ kind: Kind, countLimit: Int) -> any BenchCache {
        switch kind {
        case .nscache: NSCacheAdapter(countLimit: countLimit)
        case .dictionaryLRU: DictionaryLRU(countLimit: countLimit)
        case .purgeableSIEVE: PurgeableAdapter(policy: .sieve, countLimit: countLimit)
        case .purgeableLRU: PurgeableAdapter(policy: .lru, countLimit: countLimit)
        case .purgeableS3FIFO: PurgeableAdapter(policy: .s3fifo, countLimit: countLimit)
        }
    }

    func measureThroughput() throws -> [Throughput] {
        var samples: [String: [Double]] = [:]
        var rng = SplitMix64(seed: 1)
        let hitKeys = (0..<operations).map { _ in Int.random(in: 0..<keys, using: &rng) }
        let missKeys = hitKeys.map { $0 + keys }
        let setKeys = (0..<operations).map { _ in Int.random(in: 0..<(2 * keys), using: &rng) }
        let value = Box(1)
        for round in 0..<rounds {
            log("purgeable-bench", "throughput round \(round + 1)/\(rounds)")
            for kind in Kind.allCases {
                for threads in [1, 2] {
                    for op in Operation.allCases {
                        // Hits and misses on a cache holding every key; sets on one capped at
                        // `keys`, so half of them insert and evict.
                        let cache = makeCache(kind, countLimit: op == .set ? keys : 0)
                        for k in 0..<keys { cache.set(k, value) }
                        let work: [Int] = op == .hit ? hitKeys : op == .miss ? missKeys : setKeys
                        let seconds = try runThreads(threads) { t in
                            // Each thread takes its share of the same key sequence, offset.
                            let n = work.count
                            var i = (t * n) / threads
                            var sink = 0
                            for _ in 0..<n {
                                let k = work[i]
                                switch op {
                                case .hit, .miss: if cache.get(k) != nil { sink &+= 1 }
                                case .set: cache.set(k, value)
                                }
                                i += 1
                                if i == n { i = 0 }
                            }
                            blackHole(sink)
                        }
                        samples["\(kind.rawValue)|\(op.rawValue)|\(threads)", default: []].append(Double(operations * threads) / seconds)
                    }
                }
            }
        }
        var out: [Throughput] = []
        for kind in Kind.allCases {
            for op in Operation.allCases {
                for threads in [1, 2] {
                    let s = samples["\(kind.rawValue)|\(op.rawValue)|\(threads)"]!.sorted()
                    out.append(Throughput(cache: kind.rawValue, operation: op.rawValue, threads: threads, samples: s, medianOpsPerSecond: s[s.count / 2]))
                }
            }
        }
        return out
    }

    // MARK: Round trip

    func measureRoundTrip() throws -> RoundTrip {
        let arena = try PurgeableArena.named("purgeable-bench")
        let size = 1 << 20
        let buffer = try PurgeableBuffer(count: size, arena: arena)
        try fill(buffer, seed: 1)
        let deferredArena = try PurgeableArena.named("purgeable-bench-deferred")
        deferredArena.deferredAdviceLimit = 64 << 20
        let deferredBuffer = try PurgeableBuffer(count: size, arena: deferredArena)
        try fill(deferredBuffer, seed: 2)
        var m = Measurements()
        for round in 0..<rounds {
            log("purgeable-bench", "round trip round \(round + 1)/\(rounds)")
            try m.time("round trip") {
                for _ in 0..<roundTrips {
                    try buffer.endContentAccess()
                    guard buffer.beginContentAccess() else { throw BenchError("the kernel took the buffer during the benchmark") }
                }
            }
            try m.time("round trip (deferred advice)") {
                for _ in 0..<roundTrips {
                    try deferredBuffer.endContentAccess()
                    guard deferredBuffer.beginContentAccess() else { throw BenchError("the kernel took the buffer during the benchmark") }
                }
            }
            try m.time("recreate") {
                for i in 0..<roundTrips {
                    let fresh = try PurgeableBuffer(count: size, arena: arena)
                    try fill(fresh, seed: i)  // freed (back to the kernel, decay 0) when released
                }
            }
            try m.time("recreate (copy)") {
                let source = [UInt64](repeating: 7, count: size / 8)
                for _ in 0..<roundTrips {
                    let fresh = try PurgeableBuffer(count: size, arena: arena)
                    try fresh.withUnsafeMutableBytes { raw in
                        source.withUnsafeBytes { raw.copyMemory(from: $0) }
                    }
                }
            }
        }
        let rt = m.median("round trip")! / Double(roundTrips)
        let deferred = m.median("round trip (deferred advice)")! / Double(roundTrips)
        let re = m.median("recreate")! / Double(roundTrips)
        let copy = m.median("recreate (copy)")! / Double(roundTrips)
        return RoundTrip(
            entryBytes: size, roundTripMicroseconds: rt * 1e6, deferredRoundTripMicroseconds: deferred * 1e6,
            recreateMicroseconds: re * 1e6, recreateByCopyMicroseconds: copy * 1e6, fractionOfRecreate: rt / re,
            deferredFractionOfRecreate: deferred / re, fractionOfCopy: rt / copy)
    }

    func fill(_ buffer: PurgeableBuffer, seed: Int) throws {
        try buffer.withUnsafeMutableBytes { raw in
            let words = raw.bindMemory(to: UInt64.self)
            var z = UInt64(truncatingIfNeeded: seed) &+ 0x9E37_79B9_7F4A_7C15
            for i in words.indices {
                z = z &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
                words[i] = z
            }
        }
    }

    // MARK: Simulator

    func measureSimulator() -> [SimulatorSpeed] {
        let trace = TraceGenerator.zipf(objects: objects, alpha: 1.0, requests: requests, seed: 7)
        var speeds: [String: [Double]] = [:]
        for _ in 0..<rounds {
            for r in Simulator.run(PolicyKind.allCases, capacity: objects / 10, trace: trace, unit: .objects) {
                speeds[r.policy, default: []].append(r.requestsPerSecond)
            }
        }
        return PolicyKind.allCases.map { k in
            let s = speeds[k.rawValue]!.sorted()
            return SimulatorSpeed(policy: k.rawValue, requestsPerSecond: s[s.count / 2])
        }
    }

    func measureMissRatios() -> [MissRatioRow] {
        var rows: [MissRatioRow] = []
        for alpha in [0.8, 1.0, 1.2] {
            let trace = TraceGenerator.zipf(objects: objects, alpha: alpha, requests: requests, seed: 11)
            for fraction in [0.01, 0.10] {
                let capacity = Int(Double(trace.uniqueKeys) * fraction)
                let results = Simulator.run(PolicyKind.allCases, capacity: capacity, trace: trace, unit: .objects)
                rows.append(MissRatioRow(
                    alpha: alpha, cacheFraction: fraction, capacity: capacity,
                    missRatios: Dictionary(uniqueKeysWithValues: results.map { ($0.policy, $0.missRatio) })))
            }
        }
        return rows
    }

    // MARK: Report

    func write(_ report: Report) throws {
        try writeReport(report, to: output, named: "purgeable-cache", tool: "purgeable-bench")
    }
}

struct Throughput: Codable {
    var cache: String
    var operation: String
    var threads: Int
    var samples: [Double]
    var medianOpsPerSecond: Double
}

struct RoundTrip: Codable {
    var entryBytes: Int
    var roundTripMicroseconds: Double
    var deferredRoundTripMicroseconds: Double
    var recreateMicroseconds: Double
    var recreateByCopyMicroseconds: Double
    var fractionOfRecreate: Double
    var deferredFractionOfRecreate: Double
    var fractionOfCopy: Double
}

struct SimulatorSpeed: Codable {
    var policy: String
    var requestsPerSecond: Double
}

struct MissRatioRow: Codable {
    var alpha: Double
    var cacheFraction: Double
    var capacity: Int
    var missRatios: [String: Double]
}

struct Report: RenderedReport {
    var kernel: String
    var cpus: Int
    var keys: Int
    var operations: Int
    var rounds: Int
    var requests: Int
    var objects: Int
    var throughput: [Throughput] = []
    var roundTrip: RoundTrip?
    var simulator: [SimulatorSpeed] = []
    var missRatios: [MissRatioRow] = []

    func median(_ cache: PurgeableBench.Kind, _ op: PurgeableBench.Operation, _ threads: Int) -> Double {
        throughput.first { $0.cache == cache.rawValue && $0.operation == op.rawValue && $0.threads == threads }?.medianOpsPerSecond ?? 0
    }

    func markdown() -> String {
        func mops(_ v: Double) -> String { ByteFormat.fixed(v / 1e6, 2) }
        var out = """
            # Purgeable cache performance

            Regenerate with `make bench` (or `cd Benchmarks && swift run -c release purgeable-bench`); \
            `purgeable-cache.json` holds every sample. Machine: Linux \(kernel), \(cpus) CPUs. Every figure \
            below was measured in the same run, rounds interleaved (\(rounds) rounds; medians).

            ## Throughput against NSCache and a dictionary with an LRU list

            \(keys) keys resident for hits (misses ask for absent keys); sets go to a cache capped at \
            \(keys) entries over \(2 * keys) keys, so half of them insert and evict. Values are shared \
            objects, so this measures the caches, not copying. Millions of operations per second \
            (2 threads: both together).

            | cache | get hit, 1 thread | get hit, 2 threads | get miss, 1 | get miss, 2 | set, 1 | set, 2 |
            |---|---:|---:|---:|---:|---:|---:|

            """
        for kind in PurgeableBench.Kind.allCases {
            out += "| \(kind.rawValue) "
            for op in PurgeableBench.Operation.allCases {
                for t in [1, 2] { out += "| \(mops(median(kind, op, t))) " }
            }
            out += "|\n"
        }
        out += "\n| ratio to NSCache (same run) | hit 1 | hit 2 | miss 1 | miss 2 | set 1 | set 2 |\n|---|---:|---:|---:|---:|---:|---:|\n"
        for kind in PurgeableBench.Kind.allCases where kind != .nscache {
            out += "| \(kind.rawValue) "
            for op in PurgeableBench.Operation.allCases {
                for t in [1, 2] {
                    let base = median(.nscache, op, t)
                    out += "| \(base > 0 ? ByteFormat.fixed(median(kind, op, t) / base, 2) + "x" : "-") "
                }
            }
            out += "|\n"
        }
        out += "\nTarget: at least 2x NSCache on hits.\n\n![throughput](purgeable-cache.svg)\n"
        if let rt = roundTrip {
            out += """

                ## End/begin access round trip on a resident 1 MiB entry

                | | µs |
                |---|---:|
                | `endContentAccess()` + `beginContentAccess()`, immediate advice (canaries, MADV_FREE, atomic exchanges) | \(ByteFormat.fixed(rt.roundTripMicroseconds, 1)) |
                | the same with deferred advice (`deferredAdviceLimit` 64 MiB: the buffer waits idle, no system call) | \(ByteFormat.fixed(rt.deferredRoundTripMicroseconds, 2)) |
                | recreating the entry: a new 1 MiB purgeable buffer, content computed 8 bytes at a time | \(ByteFormat.fixed(rt.recreateMicroseconds, 1)) |
                | recreating it by copying from a ready source (the cheapest possible rebuild) | \(ByteFormat.fixed(rt.recreateByCopyMicroseconds, 1)) |

                Round trip as a fraction of recreating (target: under 5%): immediate advice \
                **\(ByteFormat.fixed(rt.fractionOfRecreate * 100, 1))%** (of a copy: \(ByteFormat.fixed(rt.fractionOfCopy * 100, 1))%); \
                deferred advice **\(ByteFormat.fixed(rt.deferredFractionOfRecreate * 100, 2))%**. Most of the immediate round trip is \
                the kernel's: MADV_FREE walks and cleans 256 page-table entries and flushes the TLB, and each \
                exchange then takes a TLB miss to set the page's dirty bit again. Deferral skips both while \
                the entry is reused, at the price of idle memory that is not reclaimable until the arena \
                advises it (beyond the limit, on a memory warning, or when the app enters the background).

                """
        }
        out += "\n## Simulator speed (Zipf 1.0, cache of 10% of the objects)\n\n| policy | requests per second |\n|---|---:|\n"
        for s in simulator { out += "| \(s.policy) | \(ByteFormat.fixed(s.requestsPerSecond / 1e6, 2)) M |\n" }
        out += "\n## Miss ratios\n\nZipf traces of \(requests) requests over \(objects) objects; cache sizes are a share of the distinct objects requested.\n\n"
        out += "| Zipf α | cache | " + PolicyKind.allCases.map(\.rawValue).joined(separator: " | ") + " |\n"
        out += "|---|---|" + PolicyKind.allCases.map { _ in "---:" }.joined(separator: "|") + "|\n"
        for row in missRatios {
            out += "| \(row.alpha) | \(Int(row.cacheFraction * 100))% (\(row.capacity)) | "
            out += PolicyKind.allCases.map { ByteFormat.fixed(row.missRatios[$0.rawValue] ?? 0, 4) }.joined(separator: " | ") + " |\n"
        }
        out += "\nSIEVE and S3-FIFO miss less than LRU throughout, as their papers report; W-TinyLFU, whose sketch learns frequencies, misses least on these independent-reference traces.\n"
        return out
    }

    func plots() -> [Plot] {
        var rows: [(label: String, value: Double, highlight: Bool)] = []
        for kind in PurgeableBench.Kind.allCases {
            rows.append(("\(kind.rawValue), get hit", median(kind, .hit, 1) / 1e6, kind == .nscache))
        }
        return [Plot.bars(name: "purgeable-cache", title: "get (hit), 1 thread, millions of operations per second", rows: rows, unit: "", decimals: 2)]
    }
}

// MARK: The caches, behind one interface

final class Box: @unchecked Sendable {
    let value: Int
    init(_ v: Int) { value = v }
}

protocol BenchCache: Sendable {
    func get(_ key: Int) -> Box?
    func set(_ key: Int, _ value: Box)
}

final class NSCacheAdapter: BenchCache, @unchecked Sendable {
    let cache = NSCache<NSNumber, Box>()
    init(countLimit: Int) { cache.countLimit = countLimit }
    func get(_ key: Int) -> Box? { cache.object(forKey: NSNumber(value: key)) }
    func set(_ key: Int, _ value: Box) { cache.setObject(value, forKey: NSNumber(value: key)) }
}

final class PurgeableAdapter: BenchCache {
    let cache: PurgeableCache<Int, Box>
    init(policy: PolicyKind, countLimit: Int) { cache = PurgeableCache(policy: policy, countLimit: countLimit) }
    func get(_ key: Int) -> Box? { cache.object(forKey: key) }
    func set(_ key: Int, _ value: Box) { cache.setObject(value, forKey: key, cost: 1) }
}

/// The textbook cache: a dictionary of nodes in a doubly linked LRU list, under one lock.
final class DictionaryLRU: BenchCache {
    final class Node: @unchecked Sendable {
        let key: Int
        var value: Box
        var prev: Node?
        var next: Node?
        init(_ k: Int, _ v: Box) { key = k; value = v }
    }

    struct State: ~Copyable {
        var map: [Int: Node] = [:]
        var head: Node?
        var tail: Node?
        let limit: Int

        mutating func unlink(_ n: Node) {
            if let p = n.prev { p.next = n.next } else { head = n.next }
            if let x = n.next { x.prev = n.prev } else { tail = n.prev }
            n.prev = nil
            n.next = nil
        }

        mutating func pushFront(_ n: Node) {
            n.next = head
            head?.prev = n
            head = n
            if tail == nil { tail = n }
        }
    }

    let state: Mutex<State>
    init(countLimit: Int) { state = Mutex(State(limit: countLimit)) }

    func get(_ key: Int) -> Box? {
        state.withLock { s in
            guard let n = s.map[key] else { return nil }
            s.unlink(n)
            s.pushFront(n)
            return n.value
        }
    }

    func set(_ key: Int, _ value: Box) {
        state.withLock { s in
            if let n = s.map[key] {
                n.value = value
                s.unlink(n)
                s.pushFront(n)
                return
            }
            let n = Node(key, value)
            s.map[key] = n
            s.pushFront(n)
            if s.limit > 0 && s.map.count > s.limit, let t = s.tail {
                s.unlink(t)
                s.map.removeValue(forKey: t.key)
            }
        }
    }
}

// MARK: Threads

/// Runs `body(threadIndex)` on `count` OS threads at once; returns the wall time. Throws when
/// the threads cannot be had (the measurement would not be of `count` threads).
func runThreads(_ count: Int, _ body: @escaping @Sendable (Int) -> Void) throws -> Double {
    let start = monotonicSeconds()
    if count == 1 {
        body(0)
    } else {
        let threads = try (0..<count).map { i in try OSThread { body(i) } }
        for t in threads { t.join() }
    }
    return monotonicSeconds() - start
}

@inline(never)
func blackHole(_ x: Int) {
    if x == Int.min { print("") }
}
