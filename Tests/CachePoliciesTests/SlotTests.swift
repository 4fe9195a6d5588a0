import MemPressureCachePolicies
import MemPressureTestSupport
import Testing

/// A hit told with the key's slot (`recordHit(_:at:)`, what PurgeableCache replays) leaves every
/// policy exactly as a hit told by key would, also when the slot is stale: its key was removed
/// and the slot given to another.
@Suite("Hits told with slots")
struct SlotTests {
    /// Evicts both policies down to empty and expects the same keys in the same order.
    static func expectSameDrain(_ a: inout AnyCachePolicy<Int>, _ b: inout AnyCachePolicy<Int>, sourceLocation: SourceLocation = #_sourceLocation) {
        var drainA: [Int] = [], drainB: [Int] = []
        while let k = a.evictOne() { drainA.append(k) }
        while let k = b.evictOne() { drainB.append(k) }
        #expect(drainA == drainB, "the orders of eviction differ", sourceLocation: sourceLocation)
    }

    @Test("the same evictions as hits told by key, with slots kept by the caller and often stale", arguments: PolicyKind.allCases)
    func sameAsByKey(kind: PolicyKind) {
        var byKey = kind.make(capacity: 2_000, keyType: Int.self)
        var bySlot = kind.make(capacity: 2_000, keyType: Int.self)
        // What a cache would keep beside its values: the slot each key had when it was stored.
        var slots: [Int: CacheSlot] = [:]
        var rng = SplitMix64(seed: 25)
        var stale = 0
        for step in 0..<40_000 {
            let key = Int.random(in: 0..<600, using: &rng)
            var evictedA: [Int] = [], evictedB: [Int] = []
            switch Int.random(in: 0..<10, using: &rng) {
            case 0..<6:
                guard byKey.contains(key) else { fallthrough }
                byKey.recordHit(key)
                // A slot of another key's (or one never given) is as good as a stale one.
                let slot = slots[key] ?? CacheSlot(rawValue: Int32(Int.random(in: -1..<700, using: &rng)))
                if bySlot.slot(of: key) != slot { stale += 1 }
                bySlot.recordHit(key, at: slot)
            case 6..<9:
                let cost = Int.random(in: 1...40, using: &rng)
                byKey.insert(key, cost: cost, evicted: &evictedA)
                bySlot.insert(key, cost: cost, evicted: &evictedB)
                // Now and then the caller does not learn the new slot: its old one goes stale.
                if step % 7 != 0 { slots[key] = bySlot.slot(of: key) }
            default:
                byKey.remove(key)
                bySlot.remove(key)
            }
            #expect(evictedA == evictedB, "step \(step)")
            if evictedA != evictedB { return }
        }
        #expect(byKey.count == bySlot.count && byKey.totalCost == bySlot.totalCost)
        Self.expectSameDrain(&byKey, &bySlot)
        #expect(stale > 100, "too few stale slots to test the fallback (\(stale))")
    }

    /// PurgeableCache replays its read buffers' hits in batches (`recordHits`); W-TinyLFU's
    /// batch prefetches sketch blocks several hits ahead, and must still record each hit as one
    /// told alone would, in order, stale slots included.
    @Test("hits told in batches of any length leave a policy as hits told one at a time", arguments: PolicyKind.allCases)
    func batchesAsSingles(kind: PolicyKind) {
        var singly = kind.make(capacity: 3_000, keyType: Int.self)
        var batched = kind.make(capacity: 3_000, keyType: Int.self)
        var slots: [Int: CacheSlot] = [:]
        var pending: [(Int, CacheSlot)] = []
        var batchLength = 1
        var rng = SplitMix64(seed: 26)
        // Batches longer than the read-ahead distance (8).
        var longBatches = 0
        func flush() {
            if pending.count > 8 { longBatches += 1 }
            batched.recordHits(pending)
            pending.removeAll()
        }
        for step in 0..<60_000 {
            let key = Int.random(in: 0..<800, using: &rng)
            // One write in 25 steps: runs of hits between writes of 24 on average.
            if Int.random(in: 0..<25, using: &rng) != 0 {
                // Mostly resident keys; now and then one that is not (a hit that raced a
                // removal in a cache): told alone or in a batch, it changes nothing.
                guard singly.contains(key) || Int.random(in: 0..<10, using: &rng) == 0 else { continue }
                let slot = slots[key] ?? CacheSlot(rawValue: Int32(Int.random(in: -1..<900, using: &rng)))
                singly.recordHit(key, at: slot)
                pending.append((key, slot))
                if pending.count >= batchLength {
                    flush()
                    // From one hit to several times the read-ahead distance.
                    batchLength = Int.random(in: 1...40, using: &rng)
                }
                continue
            }
            // As the cache does: what is pending reaches the policy before a write.
            flush()
            var evictedA: [Int] = [], evictedB: [Int] = []
            let cost = Int.random(in: 1...30, using: &rng)
            singly.insert(key, cost: cost, evicted: &evictedA)
            batched.insert(key, cost: cost, evicted: &evictedB)
            if step % 5 != 0 { slots[key] = batched.slot(of: key) }
            #expect(evictedA == evictedB, "step \(step)")
            if evictedA != evictedB { return }
        }
        flush()
        Self.expectSameDrain(&singly, &batched)
        #expect(longBatches > 500, "too few batches longer than the read-ahead (\(longBatches))")
    }

    /// Every batch length from 0 to 20 (around the read-ahead distance of 8 and its double),
    /// each batch ending with a hit through a stale slot and one on a key not resident.
    @Test("batches of every length up to 20, ending in a stale slot and an absent key, as single hits", arguments: PolicyKind.allCases)
    func batchLengths(kind: PolicyKind) {
        var singly = kind.make(capacity: 64, keyType: Int.self)
        var batched = kind.make(capacity: 64, keyType: Int.self)
        var rng = SplitMix64(seed: 27)
        var next = 0
        for length in 0...20 {
            for _ in 0..<3 {
                // New keys (a few of them seen before), so that the window overflows into the
                // admission contest, which reads the counters the batches left.
                var evictedA: [Int] = [], evictedB: [Int] = []
                for _ in 0..<4 {
                    let key = Int.random(in: 0..<10, using: &rng) < 3 ? Int.random(in: 0..<max(1, next), using: &rng) : next
                    if key == next { next += 1 }
                    singly.insert(key, cost: 1, evicted: &evictedA)
                    batched.insert(key, cost: 1, evicted: &evictedB)
                }
                #expect(evictedA == evictedB, "length \(length)")
                let resident = (0..<next).filter { batched.contains($0) }
                guard !resident.isEmpty else { continue }
                var batch: [(Int, CacheSlot)] = (0..<length).map { _ in
                    let key = resident[Int.random(in: 0..<resident.count, using: &rng)]
                    return (key, batched.slot(of: key)!)
                }
                if length > 1 {
                    // The last two: a resident key through another key's slot, and a key never inserted.
                    let key = resident[0]
                    batch[length - 2] = (key, CacheSlot(rawValue: batched.slot(of: key)!.rawValue &+ 1))
                    batch[length - 1] = (1_000_000 + length, CacheSlot(rawValue: 0))
                }
                for (key, slot) in batch { singly.recordHit(key, at: slot) }
                batched.recordHits(batch)
            }
        }
        Self.expectSameDrain(&singly, &batched)
    }

    /// Policies are values: a batch of hits told to a copy leaves the original as it was.
    @Test("a batch of hits told to a copy of a policy leaves the original unchanged", arguments: PolicyKind.allCases)
    func batchOnACopy(kind: PolicyKind) {
        var original = kind.make(capacity: 200, keyType: Int.self)
        // The same policy built apart, sharing no storage with the original.
        var fresh = kind.make(capacity: 200, keyType: Int.self)
        var evicted: [Int] = []
        for k in 0..<200 {
            original.insert(k, cost: 1, evicted: &evicted)
            fresh.insert(k, cost: 1, evicted: &evicted)
        }
        var copy = original
        // Many hits on a few keys: in W-TinyLFU they raise those keys' counters, which decide
        // the admission contests below.
        copy.recordHits((0..<2_000).map { i in (i % 20, copy.slot(of: i % 20)!) })
        var fromOriginal: [Int] = [], fromFresh: [Int] = [], fromCopy: [Int] = []
        // Each new key stored twice: W-TinyLFU admits to main only a key requested more than
        // once, so that these contests evict from main, where the hits moved entries around.
        for k in 1_000..<1_300 {
            for _ in 0..<2 {
                original.insert(k, cost: 1, evicted: &fromOriginal)
                fresh.insert(k, cost: 1, evicted: &fromFresh)
                copy.insert(k, cost: 1, evicted: &fromCopy)
            }
        }
        #expect(fromOriginal == fromFresh, "the copy's hits reached the original")
        #expect(fromOriginal != fromCopy, "the copy's hits changed nothing: the test shows nothing")
    }

    @Test("a resident key's slot stays the same while hits move it between lists", arguments: PolicyKind.allCases)
    func stable(kind: PolicyKind) {
        var policy = kind.make(capacity: 100, keyType: Int.self)
        var evicted: [Int] = []
        for k in 0..<100 { policy.insert(k, cost: 1, evicted: &evicted) }
        let before = (0..<100).map { policy.slot(of: $0) }
        for _ in 0..<3 { for k in 0..<100 where policy.contains(k) { policy.recordHit(k, at: policy.slot(of: k)!) } }
        for k in 0..<100 where policy.contains(k) { #expect(policy.slot(of: k) == before[k]) }
        #expect(policy.slot(of: 1_000) == nil)
    }
}
