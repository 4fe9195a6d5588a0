import BenchSupport
import MemPressureCachePolicies
import Foundation
import MemPressureSystem
import MemPressurePurgeable
import Synchronization

// MARK: Throughput of the caches (owned by the hit-path work)

extension PurgeableBench {
    // MARK: Throughput

    /// The caches compared, behind one interface.
    enum Kind: String, CaseIterable, Codable {
        case nscache = "NSCache (Foundation)"
        case dictionaryMutex = "Dictionary, one Mutex (get/set only)"
        case dictionaryLRU = "Dictionary + LRU list, one lock"
        case purgeableLRU = "PurgeableCache (LRU)"
        case purgeableSIEVE = "PurgeableCache (SIEVE)"
        case purgeableS3FIFO = "PurgeableCache (S3-FIFO)"
        case purgeableTinyLFU = "PurgeableCache (W-TinyLFU)"
        case harness = "harness alone (array read, no lock)"

        /// The name `--caches` knows it by.
        var slug: String {
            switch self {
            case .nscache: "nscache"
            case .dictionaryMutex: "dictionary"
            case .dictionaryLRU: "dictionary-lru"
            case .purgeableLRU: "lru"
            case .purgeableSIEVE: "sieve"
            case .purgeableS3FIFO: "s3fifo"
            case .purgeableTinyLFU: "tinylfu"
            case .harness: "harness"
            }
        }

        var isPurgeable: Bool { [.purgeableLRU, .purgeableSIEVE, .purgeableS3FIFO, .purgeableTinyLFU].contains(self) }
    }

    enum Operation: String, CaseIterable, Codable {
        case hit = "get (hit)"
        case miss = "get (miss)"
        case set = "set"
    }

    func makeCache(_ kind: Kind, countLimit: Int) -> any BenchCache {
        switch kind {
        case .nscache: NSCacheAdapter(countLimit: countLimit)
        case .dictionaryMutex: DictionaryMutex()
        case .dictionaryLRU: DictionaryLRU(countLimit: countLimit)
        case .purgeableLRU: PurgeableAdapter(policy: .lru, countLimit: countLimit, metricsName: metricsName)
        case .purgeableSIEVE: PurgeableAdapter(policy: .sieve, countLimit: countLimit, metricsName: metricsName)
        case .purgeableS3FIFO: PurgeableAdapter(policy: .s3fifo, countLimit: countLimit, metricsName: metricsName)
        case .purgeableTinyLFU: PurgeableAdapter(policy: .tinylfu, countLimit: countLimit, metricsName: metricsName)
        case .harness: HarnessOnly(keys: 2 * keys)
        }
    }

    /// One measured condition: a cache, an operation, a thread count.
    struct Condition: Hashable {
        var kind: Kind
        var op: Operation
        var threads: Int
        var key: String { "\(kind.rawValue)|\(op.rawValue)|\(threads)" }
    }

    func measureThroughput(operations measured: [Operation] = Operation.allCases, kinds: [Kind] = Kind.allCases, threadCounts: [Int] = [1, 2]) throws -> [Throughput] {
        var samples: [String: [Double]] = [:]
        var rng = SplitMix64(seed: 1)
        let hitKeys = (0..<operations).map { _ in Int.random(in: 0..<keys, using: &rng) }
        let missKeys = hitKeys.map { $0 + keys }
        let setKeys = (0..<operations).map { _ in Int.random(in: 0..<(2 * keys), using: &rng) }
        // One object per key: a hit retains the value it returns, and threads hitting different
        // keys must not all write the reference count of one shared object (that would measure
        // the contention on that count, not the caches).
        let values = (0..<(2 * keys)).map { Box($0) }
        var conditions: [Condition] = []
        for kind in kinds { for threads in threadCounts { for op in measured { conditions.append(Condition(kind: kind, op: op, threads: threads)) } } }
        for round in 0..<rounds {
            log("purgeable-bench", "throughput round \(round + 1)/\(rounds)")
            // A new order every round (seeded: the same in every run), so that no condition
            // always follows the same one, nor always runs at the same point of a round.
            var order = SplitMix64(seed: 1000 + UInt64(round))
            for c in conditions.shuffled(using: &order) {
                // Hits and misses on a cache holding every key; sets on one capped at `keys`,
                // so half of them insert and evict.
                let cache = makeCache(c.kind, countLimit: c.op == .set ? keys : 0)
                for k in 0..<keys { cache.set(k, values[k]) }
                let work: [Int] = c.op == .hit ? hitKeys : c.op == .miss ? missKeys : setKeys
                let op = c.op, threads = c.threads
                let seconds = try runThreads(threads) { t in
                    // Each thread takes its share of the same key sequence, offset.
                    let n = work.count
                    var i = (t * n) / threads
                    var sink = 0
                    for _ in 0..<n {
                        let k = work[i]
                        switch op {
                        case .hit, .miss: if cache.get(k) != nil { sink &+= 1 }
                        case .set: cache.set(k, values[k])
                        }
                        i += 1
                        if i == n { i = 0 }
                    }
                    blackHole(sink)
                }
                samples[c.key, default: []].append(Double(operations * threads) / seconds)
            }
        }
        var out: [Throughput] = []
        for kind in Kind.allCases {
            for op in Operation.allCases {
                for threads in [1, 2] {
                    let s = samples[Condition(kind: kind, op: op, threads: threads).key, default: []].sorted()
                    guard !s.isEmpty else { continue }
                    out.append(Throughput(cache: kind.rawValue, operation: op.rawValue, threads: threads, samples: s, medianOpsPerSecond: s[s.count / 2]))
                }
            }
        }
        try Self.refuseImpossible(out, cpus: onlineCPUs)
        return out
    }

    /// What the machine cannot have done fails the run instead of reaching the report. Two
    /// threads are at most `cpus` times one (× 1.1 for noise), at the median and at p90, unless
    /// the same run's control says otherwise: the harness alone (no lock, no shared write) shows
    /// what this host gives a second thread. On our shared hosts one thread alone runs slower than
    /// each of two together (Benchmarks/scripts/host-scaling.swift shows it with plain pthreads), so the
    /// control itself can exceed 2×; then no cache may scale more than the control (× 1.1), since
    /// none can do better than the same loop without a lock.
    static func refuseImpossible(_ rows: [Throughput], cpus: Int) throws {
        func ratios(_ cache: String, _ operation: String) -> (median: Double, p90: Double)? {
            guard let one = rows.first(where: { $0.cache == cache && $0.operation == operation && $0.threads == 1 }),
                let two = rows.first(where: { $0.cache == cache && $0.operation == operation && $0.threads == 2 })
            else { return nil }
            return (two.medianOpsPerSecond / one.medianOpsPerSecond, two.p90 / one.p90)
        }
        var problems: [String] = []
        let cpuLimit = Double(min(2, cpus)) * 1.1
        for op in Operation.allCases {
            let control = ratios(Kind.harness.rawValue, op.rawValue)
            let limit = max(cpuLimit, control.map { max($0.median, $0.p90) * 1.1 } ?? cpuLimit)
            for kind in Kind.allCases where kind != .harness {
                guard let r = ratios(kind.rawValue, op.rawValue) else { continue }
                if r.median > limit || r.p90 > limit {
                    problems.append("\(kind.rawValue), \(op.rawValue): 2 threads did \(ByteFormat.fixed(r.median, 2))x one thread at the median and \(ByteFormat.fixed(r.p90, 2))x at p90, more than \(ByteFormat.fixed(limit, 2))x, which \(cpus) CPUs and the harness alone in this run (\(control.map { ByteFormat.fixed($0.median, 2) + "x" } ?? "not measured")) allow")
                }
            }
        }
        if !problems.isEmpty { throw ImpossibleResult(problems: problems) }
    }
}

struct ImpossibleResult: Error, CustomStringConvertible {
    var problems: [String]
    var description: String {
        "impossible results, nothing written (a bug in the harness, not a finding):\n" + problems.map { "  - " + $0 }.joined(separator: "\n")
    }
}

struct Throughput: Codable {
    var cache: String
    var operation: String
    var threads: Int
    /// Operations per second (all threads together), one per round, sorted.
    var samples: [Double]
    var medianOpsPerSecond: Double
    /// The 90th percentile of the rounds.
    var p90: Double { Percentiles(samples).p90 }
}

/// The hit-path targets (issue 25): every policy at least 10 M hits a second on one thread and at
/// least the textbook dictionary + LRU list under one lock, measured in the same run; SIEVE, whose
/// hit sets one bit, at least 20 M.
enum HitTargets {
    static let oneThread = 10e6
    static let sieve = 20e6
    static func target(_ kind: PurgeableBench.Kind) -> Double { kind == .purgeableSIEVE ? sieve : oneThread }
}

extension Report {
    func row(_ cache: PurgeableBench.Kind, _ op: PurgeableBench.Operation, _ threads: Int) -> Throughput? {
        throughput.first { $0.cache == cache.rawValue && $0.operation == op.rawValue && $0.threads == threads }
    }

    func median(_ cache: PurgeableBench.Kind, _ op: PurgeableBench.Operation, _ threads: Int) -> Double {
        row(cache, op, threads)?.medianOpsPerSecond ?? 0
    }

    func throughputMarkdown() -> String {
        func mops(_ v: Double) -> String { ByteFormat.fixed(v / 1e6, 2) }
        /// The median, and the spread of the rounds (min–max).
        func spread(_ kind: PurgeableBench.Kind, _ op: PurgeableBench.Operation, _ t: Int) -> String {
            guard let r = row(kind, op, t), let lo = r.samples.min(), let hi = r.samples.max() else { return "-" }
            return "\(mops(r.medianOpsPerSecond)) (p90 \(mops(r.p90)), \(mops(lo))–\(mops(hi)))"
        }
        func scaling(_ kind: PurgeableBench.Kind, _ op: PurgeableBench.Operation) -> Double {
            let one = median(kind, op, 1)
            return one > 0 ? median(kind, op, 2) / one : 0
        }
        let caches = PurgeableBench.Kind.allCases.filter { $0 != .harness }
        var out = """
            ## Throughput against NSCache and dictionaries under one lock

            \(keys) keys resident for hits (misses ask for absent keys); sets go to a cache capped at \
            \(keys) entries over \(2 * keys) keys, so half of them insert and evict. Every key has a value \
            object of its own, stored by reference, so this measures the caches, not copying nor the \
            reference count of one shared object. Millions of operations per second (2 threads: both \
            together): the median of \(rounds) rounds, with the 90th percentile and the slowest and \
            fastest round in brackets. Every condition runs on fresh threads (one as well as two), \
            started together at a gate; the conditions run in a new order each round (seeded). A run \
            in which a cache's two threads do more than 1.1 × 2 times its one thread (at the median \
            or p90), and more than 1.1 times what the harness alone gains from a second thread in \
            the same run, stops with an error instead of writing this page.

            ### Hits

            | cache | 1 thread | 2 threads | 2 threads / 1 |
            |---|---:|---:|---:|

            """
        for kind in PurgeableBench.Kind.allCases {
            out += "| \(kind.rawValue) | \(spread(kind, .hit, 1)) | \(spread(kind, .hit, 2)) | \(ByteFormat.fixed(scaling(kind, .hit), 2))x |\n"
        }
        let harness = median(.harness, .hit, 1), floor = median(.dictionaryMutex, .hit, 1)
        out += """

            The harness alone (the same loop and calls through the same protocol, answered from an \
            array with no lock) does \(mops(harness)) M gets a second on one thread, and a `Dictionary` \
            under one `Mutex` \(mops(floor)) M: the harness is \(harness >= 2 * max(floor, HitTargets.oneThread) ? "not" : "close to") \
            the limit of what is measured here. With two threads the harness alone does \
            \(ByteFormat.fixed(scaling(.harness, .hit), 2))x its one-thread figure, a control: well below 2x \
            means the machine's two CPUs were not both free while it ran; above 2x, that this host ran \
            one thread alone slower than each of two together (Benchmarks/scripts/host-scaling.swift \
            shows it with plain pthreads), so no ratio here is read against 2x but against this one.

            Targets (issue 25): on one thread, at least \(mops(HitTargets.oneThread)) M hits a second for \
            every policy (\(mops(HitTargets.sieve)) M for SIEVE) and at least the textbook dictionary + LRU \
            list under one lock (\(mops(median(.dictionaryLRU, .hit, 1))) M in this run). Two threads are \
            shown, not targeted: on a shared two-CPU machine what a second thread adds depends on what \
            else runs.

            | PurgeableCache | 1 thread | target | met | ≥ textbook LRU | 2 threads / 1 |
            |---|---:|---:|---|---|---:|

            """
        let textbook = median(.dictionaryLRU, .hit, 1)
        for kind in PurgeableBench.Kind.allCases where kind.isPurgeable {
            let one = median(kind, .hit, 1), ratio = scaling(kind, .hit), target = HitTargets.target(kind)
            out += "| \(kind.rawValue) | \(mops(one)) | \(mops(target)) | \(one >= target ? "yes" : "**no**") | \(one >= textbook ? "yes" : "**no**") | \(ByteFormat.fixed(ratio, 2))x |\n"
        }
        out += """

            ### Misses and sets

            | cache | get miss, 1 | get miss, 2 | set, 1 | set, 2 |
            |---|---:|---:|---:|---:|

            """
        for kind in caches {
            out += "| \(kind.rawValue) | \(spread(kind, .miss, 1)) | \(spread(kind, .miss, 2)) | \(spread(kind, .set, 1)) | \(spread(kind, .set, 2)) |\n"
        }
        out += "\n| ratio to NSCache (same run) | hit 1 | hit 2 | miss 1 | miss 2 | set 1 | set 2 |\n|---|---:|---:|---:|---:|---:|---:|\n"
        for kind in caches where kind != .nscache {
            out += "| \(kind.rawValue) "
            for op in PurgeableBench.Operation.allCases {
                for t in [1, 2] {
                    let base = median(.nscache, op, t)
                    out += "| \(base > 0 ? ByteFormat.fixed(median(kind, op, t) / base, 2) + "x" : "-") "
                }
            }
            out += "|\n"
        }
        out += "\n![throughput](purgeable-cache.svg)\n"
        return out
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

/// The floor of any locked cache: a dictionary under one `Mutex`, plain get and set (no
/// recency list, no limit).
final class DictionaryMutex: BenchCache {
    let map = Mutex<[Int: Box]>([:])
    func get(_ key: Int) -> Box? { map.withLock { $0[key] } }
    func set(_ key: Int, _ value: Box) { map.withLock { $0[key] = value } }
}

/// What the harness costs by itself: the same calls through `BenchCache`, answered from an
/// array without a lock (keys beyond it miss; sets are not stored).
final class HarnessOnly: BenchCache {
    let values: [Box?]
    init(keys: Int) { values = (0..<keys).map { Box($0) } }
    func get(_ key: Int) -> Box? { key < values.count / 2 ? values[key] : nil }
    func set(_ key: Int, _ value: Box) { blackHole(value.value) }
}

final class PurgeableAdapter: BenchCache {
    let cache: PurgeableCache<Int, Box>
    init(policy: PolicyKind, countLimit: Int, metricsName: String? = nil) {
        cache = PurgeableCache(policy: policy, countLimit: countLimit, metricsName: metricsName)
    }
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

/// Runs `body(threadIndex)` on `count` new OS threads at once, one thread as well as two, so
/// that every thread count is measured on threads of the same kind (never the calling thread for
/// one and fresh threads for two). The threads are created first and wait at a gate; the time
/// runs from opening the gate to the last one's end. Throws when the threads cannot be had (the
/// measurement would not be of `count` threads).
func runThreads(_ count: Int, _ body: @escaping @Sendable (Int) -> Void) throws -> Double {
    let ready = Atomic<Int>(0)
    let go = Atomic<Bool>(false)
    let threads = try (0..<count).map { i in
        try OSThread {
            ready.wrappingAdd(1, ordering: .releasing)
            while !go.load(ordering: .acquiring) {}
            body(i)
        }
    }
    while ready.load(ordering: .acquiring) < count {}
    let start = monotonicSeconds()
    go.store(true, ordering: .releasing)
    for t in threads { t.join() }
    return monotonicSeconds() - start
}

@inline(never)
func blackHole(_ x: Int) {
    if x == Int.min { print("") }
}
