import MemPressureCachePolicies
import Testing
import MemPressureTestSupport

@Suite("miss-ratio curves") @CPUBound
struct MissRatioCurveTests {
    /// Traces of different shapes: skewed, flat, with scans, and tiny with repeats.
    nonisolated static let traces: [Trace] = [
        TraceGenerator.zipf(objects: 5_000, alpha: 1.0, requests: 60_000, seed: 1),
        TraceGenerator.zipf(objects: 2_000, alpha: 0.3, requests: 40_000, seed: 2),
        TraceGenerator.scanMixed(objects: 3_000, alpha: 0.8, requests: 50_000, scanEvery: 2_000, scanLength: 700, seed: 3),
        Trace(name: "small", requests: [1, 2, 3, 1, 2, 4, 1, 5, 5, 5, 2, 3, 6, 1].map { Request(key: $0, size: 1) }),
    ]

    @Test("the exact LRU curve (stack distances) equals simulated LRU's misses at every capacity", arguments: traces.indices)
    func exactEqualsSimulation(index: Int) throws {
        let trace = Self.traces[index]
        var source = InMemoryRequestSource(trace)
        let distinct = trace.uniqueKeys
        let capacities = [0, 1, 2, 3, distinct / 100, distinct / 20, distinct / 10, distinct / 3, distinct - 1, distinct, distinct + 5]
        let run = try Simulator.run([.lru], capacities: capacities, source: &source, unit: .objects, exactLRUCurve: true)
        let curve = try #require(run.exactLRU)
        #expect(curve.isExact)
        #expect(curve.misses(capacities: capacities) == run.results.map(\.misses), "\(trace.name)")
        #expect(curve.missRatios(capacities: capacities) == run.results.map(\.missRatio), "\(trace.name)")
        // And against a policy run on its own, the way `cache simulate` ran before.
        for c in [distinct / 10, distinct / 2] {
            var lru = LRUPolicy<Int>(capacity: c)
            #expect(Simulator.run(&lru, trace: trace, unit: .objects).misses == curve.misses(capacities: [c])[0])
        }
    }

    @Test("the stack distances of a small trace, by hand")
    func byHand() {
        var counter = StackDistanceCounter()
        // a b c a b d a e e e b c f a
        let distances = [1, 2, 3, 1, 2, 4, 1, 5, 5, 5, 2, 3, 6, 1].map { counter.access($0) }
        #expect(distances == [nil, nil, nil, 3, 3, nil, 3, nil, 1, 1, 4, 5, nil, 5])
        #expect(counter.coldMisses == 6)
        #expect(counter.hits(capacities: [0, 1, 3, 5, 100]) == [0, 2, 5, 8, 8])
    }

    @Test("compaction keeps distances exact across many renumberings")
    func compaction() {
        // A cyclic scan over 3 000 keys: every reuse is at distance 3 000, long after the first
        // 1 024-slot tree filled.
        var counter = StackDistanceCounter()
        for round in 0..<10 {
            for k in 0..<3_000 {
                let d = counter.access(k)
                #expect(d == (round == 0 ? nil : 3_000))
                if d != (round == 0 ? nil : 3_000) { return }
            }
        }
        #expect(counter.distinctKeys == 3_000)
    }

    @Test("SHARDS at rate 1 is the exact curve")
    func shardsAtOne() throws {
        let trace = Self.traces[0]
        var source = InMemoryRequestSource(trace)
        let run = try Simulator.run([], capacities: [], source: &source, unit: .objects, exactLRUCurve: true, sampleRate: 1.0)
        let exact = try #require(run.exactLRU), sampled = try #require(run.sampledLRU)
        let capacities = Array(stride(from: 0, through: 5_000, by: 50))
        #expect(sampled.missRatios(capacities: capacities) == exact.missRatios(capacities: capacities))
        #expect(LRUMissRatioCurve.meanAbsoluteError(exact, sampled, at: capacities) == 0)
    }

    @Test("SHARDS at 10% samples about a tenth of the keys, every request of a sampled key, and follows the exact curve")
    func shardsSampled() throws {
        var source = ZipfRequestSource(objects: 50_000, alpha: 0.9, requests: 400_000, seed: 5)
        let run = try Simulator.run([], capacities: [], source: &source, unit: .objects, exactLRUCurve: true, sampleRate: 0.1)
        let exact = try #require(run.exactLRU), sampled = try #require(run.sampledLRU)
        #expect(sampled.sampleRate == 0.1 || abs(sampled.sampleRate - 0.1) < 1e-6)
        #expect(sampled.requestsSeen == 400_000)
        let share = Double(sampled.sampledKeys) / Double(exact.sampledKeys)
        #expect(share > 0.08 && share < 0.12, "\(share)")
        let capacities = [500, 1_000, 2_500, 5_000, 10_000]
        // Deterministic (fixed-seed sampling): this is an accuracy check, not a timing one.
        #expect(LRUMissRatioCurve.meanAbsoluteError(exact, sampled, at: capacities) < 0.02)
    }

    @Test("several capacities in one pass give what separate runs give, for every policy and unit")
    func multiCapacity() throws {
        let trace = TraceGenerator.scanMixed(objects: 4_000, alpha: 0.9, requests: 40_000, scanEvery: 4_000, scanLength: 500, sizes: .uniform(100...8000), seed: 8)
        for unit in CapacityUnit.allCases {
            let total = unit == .objects ? trace.uniqueKeys : trace.uniqueBytes
            let capacities = [total / 100, total / 50, total / 20, 37, total / 5]
            var source = InMemoryRequestSource(trace)
            let run = try Simulator.run(PolicyKind.allCases, capacities: capacities, source: &source, unit: unit)
            #expect(run.results.count == PolicyKind.allCases.count * capacities.count)
            var i = 0
            for kind in PolicyKind.allCases {
                for c in capacities {
                    let alone = Simulator.run([kind], capacity: c, trace: trace, unit: unit)[0]
                    let together = run.results[i]
                    #expect(together.policy == alone.policy && together.capacity == alone.capacity)
                    #expect(together.hits == alone.hits, "\(kind) \(c) \(unit)")
                    #expect(together.hitBytes == alone.hitBytes && together.missBytes == alone.missBytes, "\(kind) \(c) \(unit)")
                    i += 1
                }
            }
        }
    }
}
