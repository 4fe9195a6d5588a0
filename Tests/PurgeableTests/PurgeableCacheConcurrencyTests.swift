import MemPressureCachePolicies
import MemPressurePurgeable
import Synchronization
import Testing
import MemPressureTestSupport

/// The hit path that does not take the policy's lock: hits reach the policy through read
/// buffers (LRU, W-TinyLFU) or wait in their shards (SIEVE and S3-FIFO, and only while they can
/// still change the policy's state). These tests check that single-threaded use still evicts
/// exactly as the policy would, and that many threads at once keep every invariant
/// (ShardTableTests fills shards past a replay and past their limit).
@Suite("purgeable cache: hits without the global lock")
struct PurgeableCacheConcurrencyTests {
    typealias Reason = PurgeableCache<Int, Int>.EvictionReason

    @Test("a hit protects a SIEVE entry from the hand")
    func sieveHitProtects() {
        let cache = PurgeableCache<Int, Int>(policy: .sieve, countLimit: 3)
        let gone = Mutex<[Int]>([])
        cache.setEvictionHandler { key, _, _ in gone.withLock { $0.append(key) } }
        for k in 0..<3 { cache.setObject(k, forKey: k, cost: 1) }
        // The hand starts at the oldest entry, 0. Visited, it survives (its bit cleared), and the
        // hand evicts 1. Without the hit, 0 would go.
        #expect(cache.object(forKey: 0) == 0)
        cache.setObject(3, forKey: 3, cost: 1)
        #expect(gone.withLock { $0 } == [1])
        // The hand stopped after 1; 0's bit is clear again and 2 was never hit: 2 goes next.
        cache.setObject(4, forKey: 4, cost: 1)
        #expect(gone.withLock { $0 } == [1, 2])
    }

    @Test("more hits than a read buffer holds all reach an LRU policy, in order")
    func lruOrderBeyondOneBuffer() {
        let cache = PurgeableCache<Int, Int>(policy: .lru, countLimit: 3)
        let gone = Mutex<[Int]>([])
        cache.setEvictionHandler { key, _, _ in gone.withLock { $0.append(key) } }
        for k in 0..<3 { cache.setObject(k, forKey: k, cost: 1) }
        // A hit on 1, one on 0, then 998 on 2 (several read buffers' worth, replayed as they
        // fill): from least to most recent, 1, 0, 2. Had the first buffer been lost, 0 would go
        // first; had it been replayed out of order, 0 too.
        _ = cache.object(forKey: 1)
        _ = cache.object(forKey: 0)
        for _ in 0..<998 { _ = cache.object(forKey: 2) }
        for k in 3..<6 { cache.setObject(k, forKey: k, cost: 1) }
        #expect(gone.withLock { $0 } == [1, 0, 2])
        #expect(cache.statistics.hits == 1_000)
    }

    /// The cache and a bare policy driven by the same requests, one thread: the cache must evict
    /// the same keys, for the same reasons, in the same order.
    @Test("single-threaded, the cache evicts exactly as its policy does", arguments: PolicyKind.allCases)
    func matchesPolicy(policy: PolicyKind) {
        let countLimit = 40, costLimit = 300
        let cache = PurgeableCache<Int, Int>(policy: policy, countLimit: countLimit, totalCostLimit: costLimit)
        let seen = Mutex<[String]>([])
        cache.setEvictionHandler { key, _, reason in seen.withLock { $0.append("\(key) \(reason.rawValue)") } }
        var model = PolicyModel(policy: policy.make(capacity: costLimit), countLimit: countLimit)
        var rng = SplitMix64(seed: 13)
        var hitsThatDiffer = 0
        for i in 0..<60_000 {
            // Mostly hits on a skewed key set, so runs of hits longer than a read buffer happen
            // between writes, and hits repeat on the same entries.
            let key = Int.random(in: 0..<8, using: &rng) * Int.random(in: 0..<16, using: &rng)
            // Every other 200 requests are all lookups: read buffers (LRU, W-TinyLFU) fill and are
            // replayed.
            let onlyLookups = (i / 200) % 2 == 0
            switch onlyLookups ? 0 : Int.random(in: 0..<100, using: &rng) {
            case 0..<90:
                let hit = cache.object(forKey: key) != nil
                if hit != model.get(key) { hitsThatDiffer += 1 }
            case 90..<98:
                let cost = Int.random(in: 1...20, using: &rng)
                cache.setObject(key, forKey: key, cost: cost)
                model.set(key, cost: cost)
            default:
                cache.removeObject(forKey: key)
                model.remove(key)
            }
        }
        let log = seen.withLock { $0 }
        #expect(hitsThatDiffer == 0)
        #expect(log.count == model.log.count)
        #expect(log == model.log)
        let stats = cache.statistics
        #expect(stats.count == model.present.count)
        #expect(stats.totalCost == model.policy.totalCost)
    }

    @Test("many threads hitting, missing, setting, removing and warning keep every invariant", arguments: PolicyKind.allCases)
    func stress(policy: PolicyKind) throws {
        let countLimit = 64, costLimit = 800, threads = 4, operations = 30_000, keySpace = 200
        let events = MemoryEvents()
        let cache = PurgeableCache<Int, Item>(name: "stress", policy: policy, countLimit: countLimit, totalCostLimit: costLimit, events: events)
        // Every item ever set, and how many times the handler saw each leave, and why.
        let ledger = Mutex(Ledger())
        cache.setEvictionHandler { key, item, reason in
            ledger.withLock { l in
                l.departures[item.serial, default: 0] += 1
                l.byReason[reason, default: 0] += 1
                if item.key != key { l.wrongKey += 1 }
            }
        }
        let serials = Atomic<Int>(0)
        let gets = Atomic<Int>(0)
        let wrongValues = Atomic<Int>(0)
        let workers = (0..<threads).map { t in
            TestThread {
                var rng = SplitMix64(seed: UInt64(100 + t))
                for _ in 0..<operations {
                    let key = Int.random(in: 0..<keySpace, using: &rng)
                    switch Int.random(in: 0..<1_000, using: &rng) {
                    case 0..<700:
                        gets.add(1, ordering: .relaxed)
                        if let item = cache.object(forKey: key) {
                            if item.key != key { wrongValues.add(1, ordering: .relaxed) }
                            // Now and then the content is lost while cached: the next lookup
                            // must remove it as a discard.
                            if Int.random(in: 0..<50, using: &rng) == 0 { item.discardContentIfPossible() }
                        }
                    case 700..<900:
                        let serial = serials.wrappingAdd(1, ordering: .relaxed).newValue
                        let item = Item(key: key, serial: serial)
                        // Recorded before the set: a rejected item leaves during the call.
                        ledger.withLock { $0.inserted[serial] = item }
                        cache.setObject(item, forKey: key, cost: Int.random(in: 1...40, using: &rng))
                    case 900..<995:
                        cache.removeObject(forKey: key)
                    default:
                        cache.didReceiveMemoryWarning()
                    }
                }
            }
        }
        for w in workers { w.join() }

        // What is left: every key looked up once more (these lookups count too).
        var present: [Int: Item] = [:]
        for key in 0..<keySpace {
            gets.add(1, ordering: .relaxed)
            if let item = cache.object(forKey: key) { present[item.serial] = item }
        }
        let stats = cache.statistics
        let l = ledger.withLock { $0 }
        #expect(wrongValues.load(ordering: .relaxed) == 0)
        #expect(l.wrongKey == 0)
        #expect(stats.count <= countLimit)
        #expect(stats.totalCost <= costLimit)
        #expect(stats.count == present.count)
        #expect(stats.hits + stats.misses == gets.load(ordering: .relaxed))
        #expect(stats.insertions == l.inserted.count)
        // Every item set either left exactly once or is still there, never both.
        var leftTwice = 0, leftAndPresent = 0, lost = 0
        for serial in l.inserted.keys {
            let departures = l.departures[serial, default: 0]
            if departures > 1 { leftTwice += 1 }
            if departures == 1 && present[serial] != nil { leftAndPresent += 1 }
            if departures == 0 && present[serial] == nil { lost += 1 }
        }
        #expect(leftTwice == 0)
        #expect(leftAndPresent == 0)
        #expect(lost == 0)
        #expect(l.departures.keys.allSatisfy { l.inserted[$0] != nil })
        // The counters agree with what the handler saw.
        #expect(stats.evictions == l.byReason[.policy, default: 0] + l.byReason[.rejected, default: 0] + l.byReason[.countLimit, default: 0])
        #expect(stats.discards == l.byReason[.discarded, default: 0])
        #expect(stats.memoryWarningEvictions == l.byReason[.memoryWarning, default: 0])
        #expect(stats.removals == l.byReason[.removed, default: 0] + l.byReason[.replaced, default: 0])
        #expect(stats.insertions == l.departures.values.reduce(0, +) + stats.count)
        #expect(stats.discards > 0, "the test must exercise discard detection")
        #expect(stats.memoryWarningEvictions > 0, "the test must exercise memory warnings")
    }
}

/// A value whose content can be discarded, telling which set made it.
final class Item: DiscardableContent {
    let key: Int
    let serial: Int
    private let discarded = Atomic<Bool>(false)

    init(key: Int, serial: Int) {
        self.key = key
        self.serial = serial
    }

    func beginContentAccess() -> Bool { !discarded.load(ordering: .relaxed) }
    func endContentAccess() throws(PurgeableError) {}
    func discardContentIfPossible() { discarded.store(true, ordering: .relaxed) }
    var isContentDiscarded: Bool { discarded.load(ordering: .relaxed) }
}

struct Ledger: Sendable {
    var inserted: [Int: Item] = [:]
    var departures: [Int: Int] = [:]
    var byReason: [PurgeableCache<Int, Item>.EvictionReason: Int] = [:]
    var wrongKey = 0
}

/// What a `PurgeableCache` with a count limit does, written directly on a policy: every request
/// applied to the policy at once, in order.
struct PolicyModel {
    var policy: AnyCachePolicy<Int>
    let countLimit: Int
    var present: Set<Int> = []
    var log: [String] = []

    init(policy: AnyCachePolicy<Int>, countLimit: Int) {
        self.policy = policy
        self.countLimit = countLimit
    }

    mutating func get(_ key: Int) -> Bool {
        guard present.contains(key) else { return false }
        policy.recordHit(key)
        return true
    }

    mutating func set(_ key: Int, cost: Int) {
        if present.remove(key) != nil {
            policy.remove(key)
            log.append("\(key) replaced")
        }
        var evicted: [Int] = []
        var rejected = !policy.insert(key, cost: cost, evicted: &evicted)
        for victim in evicted {
            if victim == key {
                rejected = true
            } else if present.remove(victim) != nil {
                log.append("\(victim) policy")
            }
        }
        if rejected {
            log.append("\(key) rejected")
        } else {
            present.insert(key)
        }
        while present.count > countLimit, let victim = policy.evictOne() {
            if present.remove(victim) != nil { log.append("\(victim) countLimit") }
        }
    }

    mutating func remove(_ key: Int) {
        guard present.remove(key) != nil else { return }
        policy.remove(key)
        log.append("\(key) removed")
    }
}
