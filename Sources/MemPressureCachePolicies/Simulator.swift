import Glibc

/// What replaying a trace through a policy gave.
public struct SimulationResult: Sendable, Hashable, Codable {
    public var policy: String
    public var capacity: Int
    public var capacityUnit: CapacityUnit
    public var requests: Int
    public var hits: Int
    public var misses: Int
    public var hitBytes: Int
    public var missBytes: Int
    /// Wall-clock seconds the replay took (not part of the result's meaning; for speed figures).
    public var seconds: Double

    public var missRatio: Double { requests == 0 ? 0 : Double(misses) / Double(requests) }
    public var byteMissRatio: Double {
        let total = Double(hitBytes) + Double(missBytes)  // each saturates at Int.max: their sum must not trap
        return total == 0 ? 0 : Double(missBytes) / total
    }
    public var requestsPerSecond: Double { seconds > 0 ? Double(requests) / seconds : 0 }

    enum CodingKeys: String, CodingKey {
        case policy, capacity, capacityUnit, requests, hits, misses, hitBytes, missBytes, missRatio, byteMissRatio, seconds
    }

    public init(policy: String, capacity: Int, capacityUnit: CapacityUnit, requests: Int, hits: Int, misses: Int, hitBytes: Int, missBytes: Int, seconds: Double) {
        self.policy = policy
        self.capacity = capacity
        self.capacityUnit = capacityUnit
        self.requests = requests
        self.hits = hits
        self.misses = misses
        self.hitBytes = hitBytes
        self.missBytes = missBytes
        self.seconds = seconds
    }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        self.init(
            policy: try c.decode(String.self, forKey: .policy), capacity: try c.decode(Int.self, forKey: .capacity),
            capacityUnit: try c.decode(CapacityUnit.self, forKey: .capacityUnit), requests: try c.decode(Int.self, forKey: .requests),
            hits: try c.decode(Int.self, forKey: .hits), misses: try c.decode(Int.self, forKey: .misses),
            hitBytes: try c.decode(Int.self, forKey: .hitBytes), missBytes: try c.decode(Int.self, forKey: .missBytes),
            seconds: try c.decode(Double.self, forKey: .seconds))
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(policy, forKey: .policy)
        try c.encode(capacity, forKey: .capacity)
        try c.encode(capacityUnit, forKey: .capacityUnit)
        try c.encode(requests, forKey: .requests)
        try c.encode(hits, forKey: .hits)
        try c.encode(misses, forKey: .misses)
        try c.encode(hitBytes, forKey: .hitBytes)
        try c.encode(missBytes, forKey: .missBytes)
        try c.encode(missRatio, forKey: .missRatio)
        try c.encode(byteMissRatio, forKey: .byteMissRatio)
        try c.encode(seconds, forKey: .seconds)
    }
}

/// Replays traces through policies.
public enum Simulator {
    /// Replays `trace` through `policy`: each request is a hit if its key is resident, else a
    /// miss that inserts it (with cost 1 or its size, by `unit`). Objects larger than the whole
    /// capacity are never cached and always miss.
    public static func run<P: CachePolicy>(_ policy: inout P, trace: Trace, unit: CapacityUnit) -> SimulationResult where P.Key == Int {
        var hits = 0, hitBytes = 0, missBytes = 0
        var evicted: [Int] = []
        evicted.reserveCapacity(16)
        let start = monotonicNow()
        for r in trace.requests {
            let cost = unit == .objects ? 1 : r.size
            if policy.contains(r.key) {
                policy.recordHit(r.key)
                hits += 1
                hitBytes = saturatingAdd(hitBytes, r.size)
            } else {
                policy.insert(r.key, cost: cost, evicted: &evicted)
                evicted.removeAll(keepingCapacity: true)
                missBytes = saturatingAdd(missBytes, r.size)
            }
        }
        let seconds = monotonicNow() - start
        return SimulationResult(
            policy: policy.name, capacity: policy.capacity, capacityUnit: unit, requests: trace.requests.count,
            hits: hits, misses: trace.requests.count - hits, hitBytes: hitBytes, missBytes: missBytes, seconds: seconds)
    }

    /// Replays `trace` through a new policy of each kind.
    public static func run(_ kinds: [PolicyKind], capacity: Int, trace: Trace, unit: CapacityUnit) -> [SimulationResult] {
        kinds.map { kind in
            var policy: AnyCachePolicy<Int> = kind.make(capacity: capacity)
            return run(&policy, trace: trace, unit: unit)
        }
    }
}

extension Simulator {
    /// Requests read from a source at a time.
    public static let batchSize = 1 << 16

    /// Replays `source` once, to its end, through one new policy of each kind at each of
    /// `capacities` (results kind by kind, capacities in the order given), and, when asked, into
    /// LRU's exact miss-ratio curve (`exactLRUCurve`), a SHARDS curve sampled at `sampleRate`,
    /// and a census of the distinct objects. Memory beyond the policies, curves and census is one
    /// batch of requests and the source's own (a 1 MiB chunk for a file): constant in the
    /// number of requests. `progress` is called after every batch with the requests so far and
    /// the source's fraction done.
    public static func run(
        _ kinds: [PolicyKind], capacities: [Int], source: inout some RequestSource, unit: CapacityUnit,
        exactLRUCurve: Bool = false, sampleRate: Double? = nil, census: Bool = false,
        progress: (_ requests: Int, _ fractionDone: Double?) -> Void = { _, _ in }
    ) throws(TraceError) -> StreamedSimulation {
        var policies: [AnyCachePolicy<Int>] = []
        for kind in kinds {
            for capacity in capacities { policies.append(kind.make(capacity: capacity)) }
        }
        var counts = [Counts](repeating: Counts(), count: policies.count)
        var exact = exactLRUCurve ? LRUMissRatioCurve() : nil
        var sampled = sampleRate.map { LRUMissRatioCurve(sampleRate: $0) }
        var tally = census ? TraceCensus() : nil
        var exactSeconds = 0.0, sampledSeconds = 0.0
        var batch: [Request] = []
        batch.reserveCapacity(batchSize)
        var evicted: [Int] = []
        evicted.reserveCapacity(16)
        var requests = 0
        let start = monotonicNow()
        while try source.nextBatch(&batch, limit: batchSize) {
            requests += batch.count
            for i in policies.indices {
                let t0 = monotonicNow()
                replay(batch, through: &policies[i], unit: unit, counts: &counts[i], evicted: &evicted)
                counts[i].seconds += monotonicNow() - t0
            }
            if exact != nil {
                let t0 = monotonicNow()
                exact!.add(batch)
                exactSeconds += monotonicNow() - t0
            }
            if sampled != nil {
                let t0 = monotonicNow()
                sampled!.add(batch)
                sampledSeconds += monotonicNow() - t0
            }
            tally?.add(batch)
            progress(requests, source.fractionDone)
        }
        let results = policies.indices.map { i in
            SimulationResult(
                policy: policies[i].name, capacity: policies[i].capacity, capacityUnit: unit, requests: requests,
                hits: counts[i].hits, misses: requests - counts[i].hits, hitBytes: counts[i].hitBytes, missBytes: counts[i].missBytes,
                seconds: counts[i].seconds)
        }
        return StreamedSimulation(
            trace: source.name, requests: requests, results: results, exactLRU: exact, sampledLRU: sampled, census: tally,
            seconds: monotonicNow() - start, exactLRUSeconds: exactSeconds, sampledLRUSeconds: sampledSeconds)
    }

    /// One batch through one policy (the policy passed in place: no copy of its storage).
    private static func replay(_ batch: [Request], through policy: inout AnyCachePolicy<Int>, unit: CapacityUnit, counts c: inout Counts, evicted: inout [Int]) {
        for r in batch {
            let cost = unit == .objects ? 1 : r.size
            if policy.contains(r.key) {
                policy.recordHit(r.key)
                c.hits += 1
                c.hitBytes = saturatingAdd(c.hitBytes, r.size)
            } else {
                policy.insert(r.key, cost: cost, evicted: &evicted)
                evicted.removeAll(keepingCapacity: true)
                c.missBytes = saturatingAdd(c.missBytes, r.size)
            }
        }
    }

    private struct Counts {
        var hits = 0, hitBytes = 0, missBytes = 0
        var seconds = 0.0
    }
}

/// What one streamed pass over a trace gave (`Simulator.run(_:capacities:source:unit:...)`).
public struct StreamedSimulation: Sendable {
    /// The source's name.
    public var trace: String
    public var requests: Int
    /// One per (policy kind, capacity), kind by kind. Each result's `seconds` is the time spent
    /// in that policy alone.
    public var results: [SimulationResult]
    /// LRU's exact miss-ratio curve, when asked for.
    public var exactLRU: LRUMissRatioCurve?
    /// LRU's SHARDS curve, when asked for.
    public var sampledLRU: LRUMissRatioCurve?
    /// The distinct objects and their bytes, when asked for.
    public var census: TraceCensus?
    /// Wall-clock seconds of the whole pass, reading included.
    public var seconds: Double
    /// Seconds spent in the exact curve, and in the sampled one.
    public var exactLRUSeconds: Double
    public var sampledLRUSeconds: Double
}

/// `a + b`, or Int.max where that would overflow.
@inline(__always)
func saturatingAdd(_ a: Int, _ b: Int) -> Int {
    let (sum, overflow) = a.addingReportingOverflow(b)
    return overflow ? Int.max : sum
}

func monotonicNow() -> Double {
    var ts = timespec()
    clock_gettime(CLOCK_MONOTONIC, &ts)
    return Double(ts.tv_sec) + Double(ts.tv_nsec) / 1e9
}
