import CMemPressurePrefetch

/// W-TinyLFU (Einziger, Friedman and Manes, 2017) with Caffeine's adaptive window: a small LRU
/// "window" admits every new entry; entries leaving the window must win a frequency contest to
/// enter the main segmented LRU (probation and protected), judged by a count-min sketch of recent
/// popularity; and a hill climber moves capacity between the window and main, towards whichever
/// split hits more.
///
/// - Window: 1% of the capacity to begin with; main: the rest, of which the protected segment is
///   80%. A hit counts in the sketch; in the window it refreshes recency, in probation it
///   promotes the entry to protected (demoting protected's oldest back to probation when
///   protected is full).
/// - Hill climbing (after Caffeine's `BoundedLocalCache.climb`): hits and misses are counted
///   over a sample period of Caffeine's length, 10 requests per entry the sketch is sized for
///   (the entries held, rounded up to a power of two). At the end of each period, if the hit rate did not fall the window
///   keeps moving the way it moved last (at first: smaller), else it turns round. The step starts
///   at 6.25% of the capacity and decays by 0.98 each period, and restarts at 6.25% when the hit
///   rate changes by more than 5 points (the workload changed). Unlike Caffeine, a change of
///   less than 1 point (noise, on a stable workload) ends the climb: the window stays where it
///   is, and the step at zero, until a change of more than 5 points restarts it. Without that
///   rule the window wandered on stationary traces: on purgeable-bench's, caches of 1% of the
///   objects missed up to 0.008 more (Zipf 1.2: 0.2001 against 0.1924) and the loop 0.009 more;
///   keeping the step through quiet periods instead cost up to 0.0036. Growing the window
///   takes the capacity from protected (whose oldest entries move to probation) and moves main's
///   oldest entries into the window; shrinking it moves the window's oldest into probation. The
///   window stays between 0 and 80% of the capacity.
/// - Admission, by cost: when the window overflows its oldest entry is the candidate. If main
///   has room for it, it enters probation. Otherwise the victims it would displace are the
///   fewest oldest entries of probation, then of protected, whose costs make room for it, and
///   it is admitted only if it was requested more than once lately (a sketch estimate of at
///   least 2) and its frequency per unit of cost (per byte, when costs are sizes) is higher
///   than the victims' frequencies added up per unit of cost they free. When every entry costs
///   1 that is the classic contest against one victim. Per unit of cost, because the victims
///   often free more than the candidate needs and the rest of that room serves the next
///   candidates, so the candidate is charged for its own cost only (the density of value that
///   size-aware caches such as AdaptSize and LHD rank by); a large candidate still needs as
///   much frequency per byte as all it pushes out. Never a key seen once, because a key
///   requested once has shown no reuse: it may stay in the window, but displaces nothing from
///   main (S3-FIFO's quick demotion, 2Q's A1in; this is what keeps scans, whose keys are all
///   new, out of main). On purgeable-bench's byte-capacity traces the two rules lowered the
///   miss ratio by 0.002 to 0.017 (Zipf 0.8 with scans, 10%: 0.4264 to 0.4096); the byte miss
///   ratio fell at 10% (0.4399 to 0.4254 there) and rose at 1% (by 0.004 and 0.003), as
///   favouring small objects does. Object-capacity rows moved by at most 0.001: lower on seven,
///   the same on two, higher on two (by 0.0001 and 0.0002). A candidate costing more than half
///   of main is never admitted to main: it is cached only while the window holds it. Like
///   Caffeine, a warm candidate (estimate at least 6) that loses is still admitted 1 time in
///   128 (by a fixed-seed generator), so victims' frequencies inflated by hash collisions
///   cannot block admission forever; this matters more with a fixed-seed hash, whose collisions
///   can be found offline by whoever chooses the keys.
/// - The sketch (4-bit counters, four per key in one cache line, conservative update, four 64-bit
///   words per entry) halves all counters after 10 increments per word it is sized for (aging),
///   so popularity is recent popularity.
///
/// Deterministic: the sketch hashes keys with a fixed-seed hash (`StableKeyHash`) for integer,
/// `String` and byte-array keys, so the same requests give the same evictions in every process.
/// Keys of any other type are hashed with `hashValue`, which Swift seeds per process: for those
/// only, admissions (and so hit counts) may differ slightly from run to run.
public struct TinyLFUPolicy<Key: Hashable & Sendable>: CachePolicy {
    public let name = "tinylfu"
    public private(set) var capacity: Int
    @usableFromInline var store = NodeStore<Key>()
    @usableFromInline var window = NodeStore<Key>.List()
    @usableFromInline var probation = NodeStore<Key>.List()
    @usableFromInline var protected = NodeStore<Key>.List()
    @usableFromInline var sketch = FrequencySketch()
    @usableFromInline let hasher = StableKeyHash<Key>()
    @usableFromInline var random: UInt64 = 0x2545_F491_4F6C_DD1D
    /// What the window may hold now (moved by the climber).
    @usableFromInline var windowCapacity: Int
    /// What the protected segment may hold now (the window grows at its expense).
    @usableFromInline var protectedCapacity: Int
    @usableFromInline var climber: HillClimber

    @inlinable static var inWindow: UInt8 { 1 }
    @inlinable static var inProbation: UInt8 { 2 }
    @inlinable static var inProtected: UInt8 { 3 }

    /// The window's share of the capacity at the start (Caffeine's).
    public static var initialWindowShare: Double { 0.01 }
    /// The largest share of the capacity the climber gives the window.
    public static var maximumWindowShare: Double { 0.8 }

    /// A new, empty policy. With `adaptive` false the window stays at 1% of the capacity (the
    /// classic W-TinyLFU, as libCacheSim's); by default the hill climber moves it.
    public init(capacity: Int, adaptive: Bool = true) {
        self.capacity = min(max(0, capacity), CachePolicies.maximumCapacity)
        windowCapacity = 0
        protectedCapacity = 0
        climber = HillClimber(capacity: self.capacity, enabled: adaptive)
        resetSegments()
    }

    /// Whether the window adapts.
    public var isAdaptive: Bool { climber.enabled }
    /// The capacity the window has now (1% at first; the hill climber moves it).
    public var currentWindowCapacity: Int { windowCapacity }

    @inlinable public var totalCost: Int { window.cost + probation.cost + protected.cost }
    @inlinable public var count: Int { store.count }
    @inlinable public func contains(_ key: Key) -> Bool { store.slot(of: key) != nil }

    @inlinable var mainCapacity: Int { capacity - windowCapacity }
    @inlinable var mainCost: Int { probation.cost + protected.cost }

    /// Window at 1%, protected at 80% of main.
    mutating func resetSegments() {
        windowCapacity = max(Int(Double(capacity) * Self.initialWindowShare), capacity > 0 ? 1 : 0)
        protectedCapacity = (capacity - windowCapacity) * 8 / 10
    }

    @inlinable public mutating func recordHit(_ key: Key) {
        guard let slot = store.slot(of: key) else { return }
        hit(key, slot)
    }

    @inlinable public func slot(of key: Key) -> CacheSlot? { store.slot(of: key).map(CacheSlot.init(rawValue:)) }

    @inlinable public mutating func recordHit(_ key: Key, at slot: CacheSlot) {
        guard store.holds(slot.rawValue, key) else { return recordHit(key) }
        hit(key, slot.rawValue)
    }

    /// How many hits ahead of the one it records `recordHits` asks for a sketch block (a power
    /// of two: the ring of hashes is indexed by a mask).
    @inlinable static var readAhead: Int { 8 }

    /// Records `hits` in order, exactly as `recordHit(_:at:)` would one by one. A hit's counters
    /// are one cache line of a sketch that, for a large cache, is mostly not in the processor's
    /// caches (4 MiB for 100,000 entries): while a hit is recorded, the line of the hit
    /// `readAhead` places on is prefetched, so the waits for memory overlap instead of following
    /// one another.
    @inlinable public mutating func recordHits<C: Collection>(_ hits: C) where C.Element == (Key, CacheSlot) {
        let mask = Self.readAhead - 1
        // The sketch's table is taken out for the batch and put back after it (so that it is
        // made unique and borrowed once, not once per hit); what a hit does besides counting
        // (`reorder`) never reads it.
        var table = sketch.table
        sketch.table = []
        defer {
            assert(sketch.table.isEmpty, "the sketch's table was replaced during a batch of hits")
            sketch.table = table
        }
        table.withUnsafeMutableBufferPointer { t in
            withUnsafeTemporaryAllocation(of: UInt64.self, capacity: Self.readAhead) { hashes in
                var ahead = hits.makeIterator()
                for j in 0..<Self.readAhead {
                    guard let (key, _) = ahead.next() else { break }
                    hashes[j] = hasher.hash(key)
                    sketch.prefetch(hashes[j], in: t)
                }
                var i = 0
                for (key, slot) in hits {
                    let hash = hashes[i & mask]
                    if let (next, _) = ahead.next() {
                        hashes[i & mask] = hasher.hash(next)
                        sketch.prefetch(hashes[i & mask], in: t)
                    }
                    // The slot told, or the key's own when the told one is stale; none if it left.
                    if let resident = store.holds(slot.rawValue, key) ? slot.rawValue : store.slot(of: key) {
                        sketch.increment(hash, in: t)
                        reorder(resident)
                    }
                    i &+= 1
                }
            }
        }
    }

    /// A hit on `key`, resident at `slot`: counted in the sketch; recency refreshed in the window
    /// and protected, a promotion from probation to protected.
    @inlinable mutating func hit(_ key: Key, _ slot: Int32) {
        hit(slot, hash: hasher.hash(key))
    }

    /// `hit(_:_:)` for a key whose sketch hash is `hash`.
    @inlinable mutating func hit(_ slot: Int32, hash: UInt64) {
        sketch.increment(hash)
        reorder(slot)
    }

    /// What a hit does besides counting: recency refreshed in the window and protected, a
    /// promotion from probation to protected; and the hill climber's count.
    @inlinable @inline(__always) mutating func reorder(_ slot: Int32) {
        switch store.links[Int(slot)].list {
        case Self.inWindow:
            store.moveToHead(slot, &window)
        case Self.inProbation:
            store.unlink(slot, &probation)
            store.links[Int(slot)].list = Self.inProtected
            store.pushHead(slot, &protected)
            demoteFromProtected(keeping: slot)
        default:
            store.moveToHead(slot, &protected)
        }
        if climber.enabled, climber.record(hit: true, sampleSize: sketch.climberSample) { climb() }
    }

    /// Moves protected's oldest entries to probation until protected fits (never `keeping`).
    @inlinable mutating func demoteFromProtected(keeping: Int32 = NodeStore<Key>.none) {
        while protected.cost > protectedCapacity, protected.tail != NodeStore<Key>.none, protected.tail != keeping {
            let demoted = protected.tail
            store.unlink(demoted, &protected)
            store.links[Int(demoted)].list = Self.inProbation
            store.pushHead(demoted, &probation)
        }
    }

    @discardableResult
    @inlinable public mutating func insert(_ key: Key, cost: Int, evicted: inout [Key]) -> Bool {
        if contains(key) { remove(key) }
        let cost = max(0, cost)
        guard cost <= capacity else { return false }
        if climber.enabled, climber.record(hit: false, sampleSize: sketch.climberSample) { climb() }
        sketch.ensureCapacity(forEntries: store.count + 1)
        sketch.increment(hasher.hash(key))
        let slot = store.add(key, cost: cost)
        store.links[Int(slot)].list = Self.inWindow
        store.pushHead(slot, &window)
        drainWindow(evicted: &evicted)
        return contains(key)
    }

    /// Moves the window's overflow into main, through the admission contest.
    @inlinable mutating func drainWindow(evicted: inout [Key]) {
        while window.cost > windowCapacity, window.tail != NodeStore<Key>.none {
            let candidate = window.tail
            store.unlink(candidate, &window)
            if admitToMain(candidate, evicted: &evicted) {
                store.links[Int(candidate)].list = Self.inProbation
                store.pushHead(candidate, &probation)
            } else {
                evicted.append(store.release(candidate))
            }
        }
    }

    /// The size-aware contest: whether `candidate` (off every list) may enter main, evicting the
    /// victims that make room for it when it may.
    @inlinable mutating func admitToMain(_ candidate: Int32, evicted: inout [Key]) -> Bool {
        let candidateCost = store.cost(candidate)
        if candidateCost > mainCapacity / 2 && candidateCost > 1 { return false }
        let needed = candidateCost - (mainCapacity - mainCost)
        if needed <= 0 { return true }
        let candidateFrequency = sketch.estimate(hasher.hash(store.key(candidate)))
        // The fewest oldest entries of probation, then of protected, that make room.
        var freed = 0, victimFrequency = 0, fromProbation = 0, fromProtected = 0
        var p = probation.tail
        var onProbation = true
        while freed < needed {
            if p == NodeStore<Key>.none {
                guard onProbation else { break }
                onProbation = false
                p = protected.tail
                continue
            }
            freed += store.cost(p)
            victimFrequency += sketch.estimate(hasher.hash(store.key(p)))
            if onProbation { fromProbation += 1 } else { fromProtected += 1 }
            p = store.newerThan(p)
        }
        guard freed >= needed else { return false }
        guard Self.outbids(candidateFrequency, cost: candidateCost, victims: victimFrequency, freeing: freed)
            || warmCandidateWins(candidateFrequency) else { return false }
        for _ in 0..<fromProbation {
            let victim = probation.tail
            store.unlink(victim, &probation)
            evicted.append(store.release(victim))
        }
        for _ in 0..<fromProtected {
            let victim = protected.tail
            store.unlink(victim, &protected)
            evicted.append(store.release(victim))
        }
        return true
    }

    /// Whether a candidate of `frequency` and `cost` wins its place from victims whose
    /// frequencies add up to `victims` and whose costs to `freeing`: it must have been requested
    /// more than once (an estimate of at least 2), and its frequency per unit of cost must be
    /// higher than the victims' frequency per unit they free. When every entry costs 1 that is
    /// the classic contest against one victim, except that a key seen once never displaces one.
    @inlinable static func outbids(_ frequency: Int, cost: Int, victims: Int, freeing: Int) -> Bool {
        guard frequency > 1 else { return false }
        // frequency / cost > victims / freeing, in exact integer arithmetic: no division, and
        // full-width products (victims' estimates add up to 15 a victim and costs reach 2^60,
        // so a product can need more than 64 bits).
        let candidateSide = frequency.multipliedFullWidth(by: freeing)
        let victimSide = victims.multipliedFullWidth(by: max(1, cost))
        return candidateSide > victimSide
    }

    /// A losing candidate with an estimate of at least 6 still wins 1 time in 128.
    @inlinable mutating func warmCandidateWins(_ frequency: Int) -> Bool {
        guard frequency >= 6 else { return false }
        // xorshift64, from a fixed seed
        random ^= random << 13
        random ^= random >> 7
        random ^= random << 17
        return random & 127 == 0
    }

    /// Applies the climber's decision at the end of a sample period. Moving capacity between
    /// the window and main never evicts: only the admission contest does.
    @usableFromInline mutating func climb() {
        let step = climber.adjustment()
        guard step != 0 else { return }
        let maximumWindow = Int(Double(capacity) * Self.maximumWindowShare)
        if step > 0 {
            let quota = min(step, maximumWindow - windowCapacity, protectedCapacity)
            guard quota > 0 else { return }
            windowCapacity += quota
            protectedCapacity -= quota
            demoteFromProtected()
            // Main's oldest entries fill the window's new room, as its newest.
            while true {
                let oldest = probation.tail != NodeStore<Key>.none ? probation.tail : protected.tail
                guard oldest != NodeStore<Key>.none, store.cost(oldest) <= windowCapacity - window.cost else { break }
                if store.links[Int(oldest)].list == Self.inProbation { store.unlink(oldest, &probation) } else { store.unlink(oldest, &protected) }
                store.links[Int(oldest)].list = Self.inWindow
                store.pushHead(oldest, &window)
            }
        } else {
            let quota = min(-step, windowCapacity)
            guard quota > 0 else { return }
            windowCapacity -= quota
            protectedCapacity += quota
            // The window's oldest go to probation without a contest (main has the room).
            while window.cost > windowCapacity, window.tail != NodeStore<Key>.none {
                let oldest = window.tail
                store.unlink(oldest, &window)
                store.links[Int(oldest)].list = Self.inProbation
                store.pushHead(oldest, &probation)
            }
        }
    }

    @discardableResult
    @inlinable public mutating func remove(_ key: Key) -> Bool {
        guard let slot = store.slot(of: key) else { return false }
        unlinkFromItsList(slot)
        store.release(slot)
        return true
    }

    @inlinable mutating func unlinkFromItsList(_ slot: Int32) {
        switch store.links[Int(slot)].list {
        case Self.inWindow: store.unlink(slot, &window)
        case Self.inProbation: store.unlink(slot, &probation)
        default: store.unlink(slot, &protected)
        }
    }

    /// Changes the capacity. The window and protected keep their shares of it; the climber
    /// starts again from its first step.
    public mutating func setCapacity(_ capacity: Int, evicted: inout [Key]) {
        let old = self.capacity
        self.capacity = min(max(0, capacity), CachePolicies.maximumCapacity)
        if old > 0 {
            let scale = Double(self.capacity) / Double(old)
            windowCapacity = min(Int(Double(windowCapacity) * scale), self.capacity)
            protectedCapacity = min(Int(Double(protectedCapacity) * scale), self.capacity - windowCapacity)
        } else {
            resetSegments()
        }
        climber = HillClimber(capacity: self.capacity, enabled: climber.enabled)
        demoteFromProtected()
        while mainCost > mainCapacity, let victim = evictOne() { evicted.append(victim) }
        drainWindow(evicted: &evicted)
        while totalCost > self.capacity, let victim = evictOne() { evicted.append(victim) }
    }

    @inlinable public mutating func evictOne() -> Key? {
        for list in [Self.inProbation, Self.inProtected, Self.inWindow] {
            let tail: Int32
            switch list {
            case Self.inProbation: tail = probation.tail
            case Self.inProtected: tail = protected.tail
            default: tail = window.tail
            }
            guard tail != NodeStore<Key>.none else { continue }
            unlinkFromItsList(tail)
            return store.release(tail)
        }
        return nil
    }
}

/// Caffeine's hill climber for the window's size: hits and misses per sample period, and a step
/// that keeps its direction while the hit rate does not fall.
@usableFromInline
struct HillClimber: Sendable {
    @usableFromInline let enabled: Bool
    @usableFromInline let restartStep: Double
    @usableFromInline var step: Double
    @usableFromInline var hits = 0
    @usableFromInline var misses = 0
    @usableFromInline var previousHitRate = 0.0
    @usableFromInline var pending = 0

    @inlinable static var stepShare: Double { 0.0625 }
    @inlinable static var decay: Double { 0.98 }
    @inlinable static var restartThreshold: Double { 0.05 }
    @inlinable static var tolerance: Double { 0.01 }

    @usableFromInline init(capacity: Int, enabled: Bool) {
        self.enabled = enabled
        restartStep = Self.stepShare * Double(capacity)
        step = -restartStep  // the first move shrinks the window
    }

    /// Counts a request; true when a sample period ended and `adjustment()` has a step to take.
    @inlinable mutating func record(hit: Bool, sampleSize: Int) -> Bool {
        if hit { hits += 1 } else { misses += 1 }
        guard hits + misses >= sampleSize else { return false }
        let hitRate = Double(hits) / Double(hits + misses)
        let change = hitRate - previousHitRate
        // A change within the noise of a sample moves nothing, and the step decays to zero: the
        // climb is over until a change of more than 5 points restarts it (Caffeine would step on).
        let amount = abs(change) < Self.tolerance ? 0 : change >= 0 ? step : -step
        step = abs(change) >= Self.restartThreshold ? (amount >= 0 ? restartStep : -restartStep) : Self.decay * amount
        previousHitRate = hitRate
        hits = 0
        misses = 0
        pending = Int(amount)
        return pending != 0
    }

    /// The step decided at the end of the last period (positive: a larger window), once.
    @inlinable mutating func adjustment() -> Int {
        defer { pending = 0 }
        return pending
    }
}

/// A count-min sketch of 4-bit counters, 16 to a 64-bit word, four counters per key, with
/// conservative update and periodic halving. A key's four counters lie in one block of eight
/// words (64 bytes, one cache line), laid out as Caffeine's FrequencySketch lays them: the block is chosen by
/// the high bits of one product of the key's 64-bit hash, and each counter by one byte of
/// another: counter i is in word 2i or 2i + 1 of the block (the byte's low bit) and is that
/// word's nibble given by the byte's next four bits. So the four counters are always in four
/// different words, and a hit or an estimate touches one cache line instead of four: on
/// purgeable-bench's 100,000 resident keys, whose sketch is 4 MiB, that was most of the time a
/// W-TinyLFU hit spent in the policy. (A copy of a policy whose table is then made unique by a
/// change keeps the same layout, and so the same estimates, but its blocks may no longer start at
/// a 64-byte boundary until the table next grows: slower, never different.)
///
/// It is sized by four words (64 counters) per entry of the cache, four times Caffeine's: fewer
/// keys share counters, which lowered miss ratios by 0.009 to 0.017 on purgeable-bench's Zipf
/// traces at caches of 1% of the objects (against one word per entry); and it halves all its
/// counters after 10 increments per word it is sized for (40 per entry), so it also remembers
/// four times longer. The cost: 32 bytes per entry.
///
/// The table itself has at least 64 blocks (4 KiB). With one block per key only, a small cache's
/// few blocks each hold the counters of many keys: at 8 blocks (a cache of about ten entries),
/// keys requested once were estimated at 2 and displaced main's entries, which the policy must
/// never let a key seen once do. The floor changes only where counters lie: the halving period
/// and the hill climber's sample still follow the size the cache asks for (`sizedWords`).
@usableFromInline
struct FrequencySketch: Sendable {
    /// The counters: blocks of eight words from `base` on. The array has eight words
    /// more than the blocks need, so that the blocks can start at a 64-byte boundary (an array's
    /// elements follow a 32-byte header: unaligned, every block would straddle two cache lines).
    @usableFromInline var table: [UInt64]
    /// The first word of the first block.
    @usableFromInline var base: Int
    @usableFromInline var additions = 0
    /// The words the entries ask for (four per entry, a power of two, at least 64): what the
    /// halving period and the climber's sample are reckoned in, whatever the floor adds.
    @usableFromInline var sizedWords = 64
    /// 64 minus log2 of the number of blocks: a product shifted right by it is a block's index.
    @usableFromInline var blockShift: UInt64

    @inlinable static var wordsPerEntry: Int { 4 }
    /// The smallest table: 64 blocks of eight words.
    @inlinable static var minimumWords: Int { 512 }
    @usableFromInline var sampleSize: Int { sizedWords * 10 }
    /// The hill climber's sample period: Caffeine's, 10 requests per word of a sketch of one word
    /// per entry (a quarter of this sketch's aging period).
    @usableFromInline var climberSample: Int { sizedWords / Self.wordsPerEntry * 10 }

    @usableFromInline init() {
        (table, base, blockShift) = Self.makeTable(words: Self.minimumWords)
    }

    /// A zeroed table of `words` words (a power of two) in aligned blocks, its base and shift.
    @usableFromInline static func makeTable(words: Int) -> ([UInt64], Int, UInt64) {
        let table = [UInt64](repeating: 0, count: words + 8)
        let address = table.withUnsafeBufferPointer { UInt(bitPattern: $0.baseAddress) }
        let base = Int((64 - address % 64) % 64) / 8
        return (table, base, UInt64(64 - (words / 8).trailingZeroBitCount))
    }

    /// Grows (and clears) the table so it has `wordsPerEntry` words per entry.
    @inlinable mutating func ensureCapacity(forEntries entries: Int) {
        let wanted = entries.multipliedReportingOverflow(by: Self.wordsPerEntry)
        guard !wanted.overflow, wanted.partialValue > sizedWords, sizedWords < 1 << 40 else { return }
        var words = sizedWords
        while words < wanted.partialValue && words < 1 << 40 { words *= 2 }
        sizedWords = words
        additions = 0
        let tableWords = max(words, Self.minimumWords)
        if tableWords > table.count - 8 {
            table = []
            (table, base, blockShift) = Self.makeTable(words: tableWords)
        } else {
            // Still within the floor: the same table, cleared as a grown one would be.
            table.withUnsafeMutableBufferPointer { $0.update(repeating: 0) }
        }
    }

    /// Where a key's counters are: the first word of its block, and four bytes (from the high
    /// half of a second product of the hash) that pick one counter each (`counter`).
    @inlinable func locations(_ hash: UInt64) -> (block: Int, counters: UInt64) {
        let block = base &+ Int(truncatingIfNeeded: (hash &* 0x9E37_79B9_7F4A_7C15) >> blockShift) &<< 3
        return (block, (hash &* 0xC2B2_AE3D_27D4_EB4F) >> 32)
    }

    /// Asks the processor for the block of `hash`'s counters, without waiting for it. `table` is
    /// this sketch's table, borrowed.
    @inlinable @inline(__always) func prefetch(_ hash: UInt64, in table: UnsafeMutableBufferPointer<UInt64>) {
        if let words = table.baseAddress { mempressure_prefetch_for_write(words + locations(hash).block) }
    }

    /// Counter i's word index and nibble shift, from `locations`.
    @inlinable static func counter(_ i: Int, block: Int, counters: UInt64) -> (word: Int, shift: UInt64) {
        let byte = (counters >> UInt64(i &<< 3)) & 0xFF
        return (block &+ (i &<< 1) &+ Int(truncatingIfNeeded: byte & 1), ((byte >> 1) & 15) &<< 2)
    }

    @inlinable func estimate(_ hash: UInt64) -> Int {
        assert(!table.isEmpty, "the sketch's table is lent to a batch of hits (recordHits)")
        let (block, counters) = locations(hash)
        return table.withUnsafeBufferPointer { t in
            var low: UInt64 = 15
            for i in 0..<4 {
                let (w, s) = Self.counter(i, block: block, counters: counters)
                low = min(low, (t[w] >> s) & 15)
            }
            return Int(low)
        }
    }

    @inlinable mutating func increment(_ hash: UInt64) {
        assert(!table.isEmpty, "the sketch's table is lent to a batch of hits (recordHits)")
        // (A copy of the table, were it shared, is made here, before the counters change.)
        var table = self.table
        self.table = []
        table.withUnsafeMutableBufferPointer { increment(hash, in: $0) }
        self.table = table
    }

    /// `increment(_:)`, with this sketch's table borrowed as `t` (the caller holds it across a
    /// batch of hits).
    @inlinable @inline(__always) mutating func increment(_ hash: UInt64, in t: UnsafeMutableBufferPointer<UInt64>) {
        let (block, counters) = locations(hash)
        let (w0, s0) = Self.counter(0, block: block, counters: counters)
        let (w1, s1) = Self.counter(1, block: block, counters: counters)
        let (w2, s2) = Self.counter(2, block: block, counters: counters)
        let (w3, s3) = Self.counter(3, block: block, counters: counters)
        let values = ((t[w0] >> s0) & 15, (t[w1] >> s1) & 15, (t[w2] >> s2) & 15, (t[w3] >> s3) & 15)
        let low = min(values.0, values.1, values.2, values.3)
        guard low < 15 else { return }
        // Conservative update: only the counters at the minimum grow (four different words).
        if values.0 == low { t[w0] &+= 1 &<< s0 }
        if values.1 == low { t[w1] &+= 1 &<< s1 }
        if values.2 == low { t[w2] &+= 1 &<< s2 }
        if values.3 == low { t[w3] &+= 1 &<< s3 }
        additions += 1
        if additions >= sampleSize { Self.halve(t); additions /= 2 }
    }

    /// Halves every counter of `t`.
    @inlinable static func halve(_ t: UnsafeMutableBufferPointer<UInt64>) {
        for i in t.indices {
            // Shift every nibble right by one: clear each nibble's top bit after the shift.
            t[i] = (t[i] >> 1) & 0x7777_7777_7777_7777
        }
    }
}
