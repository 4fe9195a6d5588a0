import BenchSupport
import CachePolicies
import Foundation
import LinuxSystem
import Purgeable
import Synchronization

// MARK: Throughput of the caches (owned by the hit-path work)

extension PurgeableBench {
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
}

struct Throughput: Codable {
    var cache: String
    var operation: String
    var threads: Int
    var samples: [Double]
    var medianOpsPerSecond: Double
}

extension Report {
    func median(_ cache: PurgeableBench.Kind, _ op: PurgeableBench.Operation, _ threads: Int) -> Double {
        throughput.first { $0.cache == cache.rawValue && $0.operation == op.rawValue && $0.threads == threads }?.medianOpsPerSecond ?? 0
    }

    func throughputMarkdown() -> String {
        func mops(_ v: Double) -> String { ByteFormat.fixed(v / 1e6, 2) }
        var out = """
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
