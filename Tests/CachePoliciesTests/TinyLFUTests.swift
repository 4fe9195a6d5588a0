import MemPressureCachePolicies
import Testing
import MemPressureTestSupport

@Suite("W-TinyLFU: adaptive window and size-aware admission") @CPUBound
struct TinyLFUTests {
    /// Requests of a workload that rewards recency: half the requests are for a new key, half
    /// for one of the last 150 new keys, uniformly. No key stays popular, so frequency earns
    /// little; the larger the window (the LRU part), the more of these reuses hit.
    static func recent(_ count: Int) -> [Int] {
        var rng = SplitMix64(seed: 5)
        var next = 0
        var out: [Int] = []
        for _ in 0..<count {
            if next < 150 || Bool.random(using: &rng) {
                out.append(next)
                next += 1
            } else {
                out.append(next - 1 - Int.random(in: 0..<150, using: &rng))
            }
        }
        return out
    }

    @Test("the hill climber grows the window when recency pays, within 80% of the capacity")
    func climbs() {
        var adaptive = TinyLFUPolicy<Int>(capacity: 200)
        var fixed = TinyLFUPolicy<Int>(capacity: 200, adaptive: false)
        #expect(adaptive.isAdaptive && !fixed.isAdaptive)
        #expect(adaptive.currentWindowCapacity == 2)
        var e: [Int] = []
        var adaptiveHits = 0, fixedHits = 0
        var largest = 0
        for key in Self.recent(300_000) {
            if adaptive.access(key, cost: 1, evicted: &e) { adaptiveHits += 1 }
            if fixed.access(key, cost: 1, evicted: &e) { fixedHits += 1 }
            largest = max(largest, adaptive.currentWindowCapacity)
            e.removeAll(keepingCapacity: true)
        }
        #expect(fixed.currentWindowCapacity == 2)
        #expect(adaptive.currentWindowCapacity > 40, "the window grew to hold the bursts")
        #expect(largest <= 160)
        #expect(adaptiveHits > fixedHits * 3 / 2, "adaptive \(adaptiveHits) hits, fixed window \(fixedHits)")
    }

    @Test("a large candidate must beat the victims it displaces added up, not one at a time")
    func sizeAware() {
        var p = TinyLFUPolicy<Int>(capacity: 100, adaptive: false)
        var e: [Int] = []
        // 99 entries of cost 1 fill main (the window holds 1), each asked for twice: frequency 2.
        for k in 0..<99 { p.insert(k, cost: 1, evicted: &e) }
        for k in 0..<99 { p.recordHit(k) }
        #expect(e.isEmpty)
        #expect(p.count == 99)
        // Key 1000 costs 10: room for it means ten victims of frequency 2 (20 together). Asked
        // for five times, its frequency (5) beats each of them but not their sum: turned away.
        for _ in 0..<5 {
            #expect(!p.insert(1000, cost: 10, evicted: &e))
            #expect(e == [1000])
            e.removeAll()
        }
        #expect((0..<99).allSatisfy { p.contains($0) })
        // A key of cost 1 asked for three times beats the one victim it displaces.
        for _ in 0..<2 { p.insert(2000, cost: 1, evicted: &e); e.removeAll() }
        p.insert(2000, cost: 1, evicted: &e)
        p.insert(2001, cost: 1, evicted: &e)  // pushes 2000 out of the window, into the contest
        #expect(p.contains(2000))
        #expect(e == [0], "2000 displaced probation's oldest; 2001 is in the window")
    }

    @Test("a candidate is judged by frequency per unit of cost, against the victims' per unit they free")
    func frequencyPerCost() {
        // Window 1, main 100, filled by ten entries of cost 10, each asked for four times.
        var p = TinyLFUPolicy<Int>(capacity: 101, adaptive: false)
        var e: [Int] = []
        for k in 0..<10 { p.insert(k, cost: 10, evicted: &e) }
        for _ in 0..<3 { for k in 0..<10 { p.recordHit(k) } }
        #expect(e.isEmpty)
        #expect(p.totalCost == 100)
        // Key 500 costs 5: room for it means one victim of cost 10 and frequency 4. At its third
        // request its frequency (3) is below the victim's (4), but per unit of cost it is higher
        // (3/5 against 4/10): admitted, displacing the one victim. The second request (2/5
        // against 4/10) is not enough.
        for _ in 0..<2 {
            #expect(!p.insert(500, cost: 5, evicted: &e))
            #expect(e == [500])
            e.removeAll()
        }
        #expect(p.insert(500, cost: 5, evicted: &e))
        #expect(e.count == 1 && (0..<10).contains(e[0]), "one victim of cost 10 made room: \(e)")
        #expect(p.totalCost == 95)
    }

    @Test("a key requested once displaces nothing from main: a scan of new keys leaves main as it was")
    func seenOnce() {
        // Window 1, main 100, filled by ten entries of cost 10, each asked for once (frequency 1).
        var p = TinyLFUPolicy<Int>(capacity: 101, adaptive: false)
        var e: [Int] = []
        for k in 0..<10 { p.insert(k, cost: 10, evicted: &e) }
        #expect(e.isEmpty)
        // New keys of cost 2 (each leaves the window at once, into the contest): per unit of cost
        // their frequency (1/2) beats a victim's (1/10), but they were requested only once.
        for k in 1_000..<1_100 {
            #expect(!p.insert(k, cost: 2, evicted: &e))
            #expect(e == [k])
            e.removeAll()
        }
        #expect((0..<10).allSatisfy { p.contains($0) })
        // Requested a second time, a key shows reuse and wins its place (2/2 against 1/10).
        #expect(p.insert(1_000, cost: 2, evicted: &e))
        #expect(e.count == 1 && (0..<10).contains(e[0]), "\(e)")
    }

    @Test("an object costing more than half of main is not admitted to main")
    func large() {
        var p = TinyLFUPolicy<String>(capacity: 100, adaptive: false)
        var e: [String] = []
        #expect(!p.insert("large", cost: 60, evicted: &e))
        #expect(e == ["large"])
        #expect(p.totalCost == 0)
        e.removeAll()
        #expect(p.insert("half", cost: 49, evicted: &e))
        #expect(p.contains("half"))
    }
}
