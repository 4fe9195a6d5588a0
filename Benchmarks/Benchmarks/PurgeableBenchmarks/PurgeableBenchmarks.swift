// The purgeable cache's operations (hits, misses, sets that evict) under each policy, and the
// purgeable buffer's end/begin content access round trip (MADV_FREE and the check that the
// kernel left the pages), with immediate and deferred advice.

import Benchmark
import MemPressureCachePolicies
import MicroSupport
import MemPressurePurgeable

final class Box: Sendable {
    let value: Int
    init(_ value: Int) { self.value = value }
}

/// Keys resident in the caches.
let residentKeys = 10_000

/// The keys one iteration looks up (1000: the `.kilo` scaling factor), seeded so every run and
/// every policy gets the same sequence.
func keySequence(below bound: Int, offset: Int = 0, seed: UInt64) -> [Int] {
    var random = SplitMix64(seed: seed)
    return (0..<BenchmarkScalingFactor.kilo.rawValue).map { _ in Int(random.next() % UInt64(bound)) + offset }
}

func filledCache(_ policy: PolicyKind, countLimit: Int) -> PurgeableCache<Int, Box> {
    let cache = PurgeableCache<Int, Box>(name: "micro-\(policy.rawValue)", policy: policy, countLimit: countLimit)
    let value = Box(1)
    for k in 0..<residentKeys { cache.setObject(value, forKey: k, cost: 1) }
    return cache
}

struct BufferLost: Error, CustomStringConvertible {
    var description: String { "the kernel took the buffer's pages during the benchmark" }
}

let benchmarks: @Sendable () -> Void = {
    Micro.configure()
    let perOperation = Benchmark.Configuration(scalingFactor: .kilo)

    for policy in PolicyKind.allCases {
        Benchmark(Micro.name("PurgeableCache get hit (\(policy.rawValue))"), configuration: perOperation) { (benchmark: Benchmark, state: (PurgeableCache<Int, Box>, [Int])) in
            let (cache, keys) = state
            for i in benchmark.scaledIterations {
                blackHole(cache.object(forKey: keys[i]))
            }
        } setup: {
            (filledCache(policy, countLimit: 0), keySequence(below: residentKeys, seed: 1))
        }

        Benchmark(Micro.name("PurgeableCache get miss (\(policy.rawValue))"), configuration: perOperation) { (benchmark: Benchmark, state: (PurgeableCache<Int, Box>, [Int])) in
            let (cache, keys) = state
            for i in benchmark.scaledIterations {
                blackHole(cache.object(forKey: keys[i]))
            }
        } setup: {
            (filledCache(policy, countLimit: 0), keySequence(below: residentKeys, offset: residentKeys, seed: 2))
        }

        // A full cache capped at its size; keys drawn from twice as many, so about half of the
        // sets insert and evict, the others replace.
        Benchmark(Micro.name("PurgeableCache set (\(policy.rawValue))"), configuration: perOperation) { (benchmark: Benchmark, state: (PurgeableCache<Int, Box>, [Int], Box)) in
            let (cache, keys, value) = state
            for i in benchmark.scaledIterations {
                cache.setObject(value, forKey: keys[i], cost: 1)
            }
        } setup: {
            (filledCache(policy, countLimit: residentKeys), keySequence(below: 2 * residentKeys, seed: 3), Box(2))
        }
    }

    for deferred in [false, true] {
        let name = "PurgeableBuffer end/begin access, 1 MiB" + (deferred ? " (deferred advice)" : "")
        Benchmark(Micro.name(name)) { (benchmark: Benchmark, buffer: PurgeableBuffer) in
            for _ in benchmark.scaledIterations {
                try buffer.endContentAccess()
                guard buffer.beginContentAccess() else { throw BufferLost() }
            }
        } setup: {
            let arena = try PurgeableArena.named(deferred ? "micro-deferred" : "micro")
            if deferred { arena.deferredAdviceLimit = 64 << 20 }
            let buffer = try PurgeableBuffer(count: 1 << 20, arena: arena)
            // Every page written: resident and dirty, as an entry's content is.
            try buffer.withUnsafeMutableBytes { raw in
                for i in stride(from: 0, to: raw.count, by: PurgeableArena.pageSize) { raw[i] = UInt8(truncatingIfNeeded: i >> 12 | 1) }
            }
            return buffer
        }
    }
}
