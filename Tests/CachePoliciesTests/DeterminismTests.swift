import MemPressureCachePolicies
import Testing
import MemPressureTestSupport

@Suite("deterministic policies") @CPUBound
struct DeterminismTests {
    /// Every request of `trace` through a new policy of `kind`: the keys evicted, in order.
    static func evictions<Key: Hashable & Sendable>(_ kind: PolicyKind, capacity: Int, _ requests: [(Key, Int)]) -> (evicted: [Key], hits: Int) {
        var policy: AnyCachePolicy<Key> = kind.make(capacity: capacity)
        var all: [Key] = []
        var evicted: [Key] = []
        var hits = 0
        for (key, cost) in requests {
            if policy.access(key, cost: cost, evicted: &evicted) { hits += 1 }
            all.append(contentsOf: evicted)
            evicted.removeAll(keepingCapacity: true)
        }
        return (all, hits)
    }

    @Test("two instances fed the same trace evict the same keys in the same order", arguments: PolicyKind.allCases)
    func sameEvictions(kind: PolicyKind) {
        let trace = TraceGenerator.zipf(objects: 5_000, alpha: 0.9, requests: 100_000, sizes: .uniform(1...50), seed: 3)
        let objects = trace.requests.map { ($0.key, 1) }
        let a = Self.evictions(kind, capacity: 500, objects)
        let b = Self.evictions(kind, capacity: 500, objects)
        #expect(a.evicted.count > 10_000)
        #expect(a.evicted == b.evicted)
        let bytes = trace.requests.map { ("key \($0.key)", $0.size) }
        let c = Self.evictions(kind, capacity: trace.uniqueBytes / 10, bytes)
        let d = Self.evictions(kind, capacity: trace.uniqueBytes / 10, bytes)
        #expect(c.evicted.count > 10_000)
        #expect(c.evicted == d.evicted)
    }

    /// Hit counts recorded once: a sketch hashed with Swift's per-process seeded `Hasher` would
    /// give other counts in (almost) every process, for Int, String and byte-array keys alike.
    @Test("W-TinyLFU's hits are the same in every process, for integer, string and byte keys")
    func sameInEveryProcess() {
        let trace = TraceGenerator.zipf(objects: 5_000, alpha: 1.0, requests: 100_000, seed: 9)
        let ints = Self.evictions(.tinylfu, capacity: 300, trace.requests.map { ($0.key, 1) })
        let int32s = Self.evictions(.tinylfu, capacity: 300, trace.requests.map { (Int32($0.key), 1) })
        let strings = Self.evictions(.tinylfu, capacity: 300, trace.requests.map { ("object-\($0.key)", 1) })
        let bytes = Self.evictions(.tinylfu, capacity: 300, trace.requests.map { (Array("object-\($0.key)".utf8), 1) })
        #expect(ints.hits == Self.goldenIntHits, "Int keys")
        #expect(int32s.hits == Self.goldenIntHits, "Int32 keys hash as the same values in an Int")
        #expect(strings.hits == Self.goldenStringHits, "String keys")
        #expect(bytes.hits == strings.hits, "[UInt8] keys hash as the UTF-8 of the same strings")
    }

    static let goldenIntHits = 67_768
    static let goldenStringHits = 67_848
}
