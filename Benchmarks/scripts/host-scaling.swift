// Does this host run one thread alone slower than each of two together? The control of
// purgeable-bench's throughput section, outside the project: the same loop of lookups (an
// array of class references read through a protocol, as the harness-alone row does) and a pure
// compute loop, each on one pthread and on two at once, eight rounds, each thread timed by itself.
//
//   swiftc -O Benchmarks/scripts/host-scaling.swift -o /tmp/host-scaling && /tmp/host-scaling
//
// On our shared 2-CPU hosts the lookups took 25-98 ms on one thread alone and 20-60 ms on each of
// two in the same round, in every round; the compute loop took the same either way. Where that
// holds, purgeable-bench's two-thread ratios above 2x are the host's, not the harness's.

import Glibc

final class Box: @unchecked Sendable { let value: Int; init(_ v: Int) { value = v } }
protocol Lookup: Sendable { func get(_ key: Int) -> Box? }
final class ArrayLookup: Lookup, @unchecked Sendable {
    let values: [Box?]
    init(keys: Int) { values = (0..<keys).map { Box($0) } }
    func get(_ key: Int) -> Box? { key < values.count / 2 ? values[key] : nil }
}

func now() -> Double {
    var t = timespec()
    clock_gettime(CLOCK_MONOTONIC, &t)
    return Double(t.tv_sec) + Double(t.tv_nsec) / 1e9
}

final class Job: @unchecked Sendable {
    let body: (Int) -> Void
    let index: Int
    var seconds = 0.0
    init(_ body: @escaping (Int) -> Void, _ index: Int) { self.body = body; self.index = index }
}

/// Each thread's own time, `count` threads started at once.
func run(_ count: Int, _ body: @escaping (Int) -> Void) -> [Double] {
    let jobs = (0..<count).map { Job(body, $0) }
    var threads: [pthread_t] = []
    for job in jobs {
        var t = pthread_t()
        pthread_create(&t, nil, { p in
            let job = Unmanaged<Job>.fromOpaque(p!).takeUnretainedValue()
            let start = now()
            job.body(job.index)
            job.seconds = now() - start
            return nil
        }, Unmanaged.passUnretained(job).toOpaque())
        threads.append(t)
    }
    for t in threads { pthread_join(t, nil) }
    return jobs.map(\.seconds)
}

let keys = 100_000, operations = 500_000
var seed: UInt64 = 1
let work = (0..<operations).map { _ -> Int in
    seed = seed &* 6_364_136_223_846_793_005 &+ 1
    return Int((seed >> 33) % UInt64(keys))
}
let table: any Lookup = ArrayLookup(keys: 2 * keys)

@inline(never) func lookups(_ t: Int, _ threads: Int) {
    let n = work.count
    var i = (t * n) / threads
    var found = 0
    for _ in 0..<n {
        if table.get(work[i]) != nil { found &+= 1 }
        i += 1
        if i == n { i = 0 }
    }
    if found == -1 { print(found) }
}

@inline(never) func compute(_ t: Int) {
    var x = UInt64(t) + 1
    for _ in 0..<60_000_000 { x = (x &* 6_364_136_223_846_793_005) ^ (x >> 29) &+ 1_442_695_040_888_963_407 }
    if x == 7 { print(x) }
}

func milliseconds(_ s: [Double]) -> String { s.map { String(Int(($0 * 1000).rounded())) }.joined(separator: ", ") }

print("round  lookups: 1 thread | each of 2 (ms)    compute: 1 thread | each of 2 (ms)")
for round in 1...8 {
    let l1 = run(1) { lookups($0, 1) }, l2 = run(2) { lookups($0, 2) }
    let c1 = run(1) { compute($0) }, c2 = run(2) { compute($0) }
    print("\(round)      \(milliseconds(l1)) | \(milliseconds(l2))          \(milliseconds(c1)) | \(milliseconds(c2))")
}
