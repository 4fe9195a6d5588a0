import MemPressureCachePolicies
import Testing
import MemPressureTestSupport

@Suite("cache policies") @CPUBound
struct PolicyTests {
    /// Random operations against every policy, checked against the invariants every policy owes.
    @Test("capacity is never exceeded and residency matches what the policy reported", arguments: PolicyKind.allCases)
    func invariants(kind: PolicyKind) {
        var policy: AnyCachePolicy<Int> = kind.make(capacity: 1000)
        var resident = Set<Int>()
        var rng = SplitMix64(seed: 7)
        var evicted: [Int] = []
        for step in 0..<20_000 {
            let key = Int.random(in: 0..<300, using: &rng)
            let cost = Int.random(in: 0...120, using: &rng)
            switch Int.random(in: 0..<10, using: &rng) {
            case 0:
                #expect(policy.remove(key) == resident.contains(key))
                resident.remove(key)
            case 1 where step % 500 == 0:
                policy.setCapacity(Int.random(in: 100...1500, using: &rng), evicted: &evicted)
            default:
                if policy.contains(key) {
                    policy.recordHit(key)
                } else {
                    let admitted = policy.insert(key, cost: cost, evicted: &evicted)
                    // An admission policy may take the key in and turn it away in the same call:
                    // then it is reported as evicted.
                    if admitted || evicted.contains(key) { resident.insert(key) }
                    #expect(admitted == policy.contains(key))
                }
            }
            for k in evicted {
                #expect(resident.contains(k), "\(kind): evicted \(k), which was not resident")
                resident.remove(k)
                #expect(!policy.contains(k))
            }
            evicted.removeAll()
            #expect(policy.totalCost <= policy.capacity)
            #expect(policy.count == resident.count)
        }
        // Shrinking to nothing evicts everything, one by one.
        var drained = 0
        while policy.evictOne() != nil { drained += 1 }
        #expect(drained == resident.count)
        #expect(policy.totalCost == 0)
    }

    @Test("an object larger than the whole capacity is never cached", arguments: PolicyKind.allCases)
    func oversized(kind: PolicyKind) {
        var policy: AnyCachePolicy<String> = kind.make(capacity: 100)
        var evicted: [String] = []
        #expect(!policy.insert("big", cost: 101, evicted: &evicted))
        #expect(!policy.contains("big"))
        #expect(evicted.isEmpty)
        var zero: AnyCachePolicy<String> = kind.make(capacity: 0)
        #expect(!zero.insert("a", cost: 1, evicted: &evicted))
    }

    @Test("LRU evicts the least recently used")
    func lru() {
        var p = LRUPolicy<String>(capacity: 3)
        var e: [String] = []
        for k in ["a", "b", "c"] { p.insert(k, cost: 1, evicted: &e) }
        p.recordHit("a")
        p.insert("d", cost: 1, evicted: &e)
        #expect(e == ["b"])
    }

    @Test("SIEVE keeps visited entries in place and evicts at the hand")
    func sieve() {
        var p = SIEVEPolicy<String>(capacity: 3)
        var e: [String] = []
        for k in ["a", "b", "c"] { p.insert(k, cost: 1, evicted: &e) }
        p.recordHit("a")
        p.recordHit("b")
        p.insert("d", cost: 1, evicted: &e)  // hand passes a and b (clearing them), evicts c
        #expect(e == ["c"])
        p.insert("e", cost: 1, evicted: &e)  // the hand continues from d: wraps to a (now clear)
        #expect(e == ["c", "a"])
    }

    @Test("S3-FIFO: one-hit wonders leave through the small queue; a ghost hit goes to main")
    func s3fifo() {
        var p = S3FIFOPolicy<Int>(capacity: 20)
        var e: [Int] = []
        for k in 0..<20 { p.insert(k, cost: 1, evicted: &e) }
        for k in 0..<5 { p.recordHit(k) }
        // A burst of new keys: the unhit ones go, the hit ones are promoted and survive.
        for k in 100..<110 { p.insert(k, cost: 1, evicted: &e) }
        for k in 0..<5 { #expect(p.contains(k), "\(k) was hit and should be in main") }
        #expect(e.contains(5))
        // 5 was evicted from small into the ghost: asking for it again places it in main,
        // where it outlives a burst of new keys that pass through small.
        e.removeAll()
        p.insert(5, cost: 1, evicted: &e)
        for k in 200..<215 { p.insert(k, cost: 1, evicted: &e) }
        #expect(p.contains(5), "a ghost hit is admitted to main and outlives a burst")
        #expect(!p.contains(6), "6 was not asked for again and stays out")
    }

    @Test("TinyLFU: a frequent entry survives a scan that flushes LRU")
    func tinylfu() {
        var t = TinyLFUPolicy<Int>(capacity: 100)
        var l = LRUPolicy<Int>(capacity: 100)
        var e: [Int] = []
        for _ in 0..<20 {
            for k in 0..<50 {
                t.access(k, cost: 1, evicted: &e)
                l.access(k, cost: 1, evicted: &e)
            }
        }
        for k in 1000..<1500 {
            t.access(k, cost: 1, evicted: &e)
            l.access(k, cost: 1, evicted: &e)
        }
        #expect((0..<50).filter { t.contains($0) }.count >= 45)
        #expect((0..<50).filter { l.contains($0) }.isEmpty)
    }

    @Test("costs and capacities near Int.max never trap", arguments: PolicyKind.allCases)
    func hugeCosts(kind: PolicyKind) {
        var p: AnyCachePolicy<Int> = kind.make(capacity: Int.max)
        var e: [Int] = []
        p.insert(1, cost: Int.max, evicted: &e)
        p.insert(2, cost: Int.max / 2, evicted: &e)
        p.insert(3, cost: 1, evicted: &e)
        #expect(p.totalCost <= p.capacity)
        #expect(p.capacity == CachePolicies.maximumCapacity)
    }

    @Test("keys whose hashes collide are still told apart", arguments: PolicyKind.allCases)
    func collidingHashes(kind: PolicyKind) {
        struct Colliding: Hashable, Sendable {
            var id: Int
            func hash(into h: inout Hasher) { h.combine(0) }
        }
        var p: AnyCachePolicy<Colliding> = kind.make(capacity: 50)
        var e: [Colliding] = []
        for i in 0..<40 { p.insert(Colliding(id: i), cost: 1, evicted: &e) }
        #expect(p.count + e.count == 40)
        #expect(p.remove(Colliding(id: 39)) == !e.contains(Colliding(id: 39)))
    }

    /// The published result (SIEVE, NSDI'24; S3-FIFO, SOSP'23): on Zipf 1.0 with a cache of 10%
    /// of the objects both miss less than LRU, and so does W-TinyLFU.
    @Test("on Zipf(1.0) with a cache of 10% of the objects, SIEVE, S3-FIFO and TinyLFU miss less than LRU")
    func zipf() {
        let trace = TraceGenerator.zipf(objects: 10_000, alpha: 1.0, requests: 200_000, seed: 1)
        let results = Simulator.run(PolicyKind.allCases, capacity: 1_000, trace: trace, unit: .objects)
        let ratio = Dictionary(uniqueKeysWithValues: results.map { ($0.policy, $0.missRatio) })
        let lru = ratio["lru"]!
        #expect(ratio["sieve"]! < lru, "\(ratio)")
        #expect(ratio["s3fifo"]! < lru, "\(ratio)")
        #expect(ratio["tinylfu"]! < lru, "\(ratio)")
        for r in results {
            #expect(r.hits + r.misses == 200_000)
        }
    }

    @Test("byte capacity: hit and miss ratios by bytes")
    func bytes() {
        let trace = TraceGenerator.zipf(objects: 2_000, alpha: 0.9, requests: 50_000, sizes: .uniform(100...10_000), seed: 3)
        for r in Simulator.run(PolicyKind.allCases, capacity: trace.uniqueBytes / 10, trace: trace, unit: .bytes) {
            #expect(r.hitBytes + r.missBytes == trace.requests.reduce(0) { $0 + $1.size })
            #expect(r.byteMissRatio > 0 && r.byteMissRatio < 1)
        }
    }

    @Test("scans: S3-FIFO and TinyLFU resist them, LRU does not")
    func scans() {
        let trace = TraceGenerator.scanMixed(objects: 5_000, alpha: 1.0, requests: 200_000, scanEvery: 5_000, scanLength: 2_000, seed: 5)
        let results = Simulator.run(PolicyKind.allCases, capacity: 500, trace: trace, unit: .objects)
        let ratio = Dictionary(uniqueKeysWithValues: results.map { ($0.policy, $0.missRatio) })
        #expect(ratio["s3fifo"]! < ratio["lru"]!, "\(ratio)")
        #expect(ratio["tinylfu"]! < ratio["lru"]!, "\(ratio)")
    }
}

@Suite("trace files") @CPUBound
struct TraceReaderTests {
    @Test("key,size lines; an optional header; CRLF; empty lines")
    func parse() throws {
        let text = "key,size\r\na,100\r\nb,200\n\na,100\nweird key with spaces,0\n"
        let trace = try TraceReader.parse(Array(text.utf8), name: "t.csv")
        #expect(trace.requests.count == 4)
        #expect(trace.requests[0] == Request(key: 1, size: 100))
        #expect(trace.requests[2] == Request(key: 1, size: 100))
        #expect(trace.requests[3].size == 0)
        #expect(trace.uniqueKeys == 3)
    }

    @Test("a bad line is an error naming the file and the line", arguments: [
        ("a,1\nb\n", 2, "expected 'key,size'"),
        ("a,1\nb,-4\n", 2, "not a non-negative integer"),
        ("a,1\nb,12x\n", 2, "not a non-negative integer"),
        (",5\n", 1, "empty key"),
        ("a,1\na,99999999999999999999\n", 2, "not a non-negative integer"),
    ])
    func errors(text: String, line: Int, words: String) {
        #expect(throws: TraceError(file: "t.csv", line: line, reason: words.hasPrefix("expected") ? "expected 'key,size'" : words == "empty key" ? "empty key" : "size is not a non-negative integer of at most \(TraceReader.maximumSize) bytes")) {
            try TraceReader.parse(Array(text.utf8), name: "t.csv")
        }
    }
}
