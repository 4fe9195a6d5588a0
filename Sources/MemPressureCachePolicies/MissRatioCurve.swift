/// LRU's stack distances (Mattson et al., 1970) computed in one pass: the distance of a request
/// is the number of distinct keys requested since the previous request for its key, itself
/// included, so an LRU cache of C objects hits it exactly when the distance is at most C. One
/// pass therefore gives LRU's miss ratio at every capacity in objects.
///
/// Each key's last access time is kept, and a Fenwick tree over times marks the times that are
/// some key's last access; the distance is the number of marks after the previous access. When
/// the clock reaches the tree's size the live times are renumbered 0..<distinct in order (an
/// O(d log d) step every d requests or more), so memory is O(distinct keys), not O(requests),
/// and a request costs O(log d) amortised. Deterministic: nothing depends on hash order.
package struct StackDistanceCounter: Sendable {
    private var lastAccess: [Int: Int] = [:]
    private var tree: [Int32]
    private var clock = 0
    /// `histogram[d]`: requests at stack distance d (d ≥ 1); index 0 is unused.
    package private(set) var histogram: [Int] = [0]
    /// Requests for a key never requested before (misses at every capacity).
    package private(set) var coldMisses = 0
    /// Requests counted.
    package private(set) var requests = 0

    package init() {
        tree = [Int32](repeating: 0, count: 1024)
    }

    /// Distinct keys seen.
    package var distinctKeys: Int { lastAccess.count }

    /// Counts one request for `key`; returns its stack distance, or nil for a first request.
    @discardableResult
    package mutating func access(_ key: Int) -> Int? {
        requests += 1
        if clock == tree.count { compact() }
        let now = clock
        clock += 1
        if let previous = lastAccess.updateValue(now, forKey: key) {
            // Marks after `previous`: all live marks minus those at or before it (itself included).
            let distance = lastAccess.count - prefixCount(previous) + 1
            add(previous, -1)
            add(now, 1)
            if distance >= histogram.count {
                histogram.append(contentsOf: repeatElement(0, count: distance - histogram.count + 1))
            }
            histogram[distance] += 1
            return distance
        }
        add(now, 1)
        coldMisses += 1
        return nil
    }

    /// Requests that would hit an LRU cache of `capacity` objects.
    package func hits(capacity: Int) -> Int {
        hits(capacities: [capacity])[0]
    }

    /// `hits(capacity:)` at each of `capacities` (in any order), in one sweep of the histogram.
    package func hits(capacities: [Int]) -> [Int] {
        let order = capacities.indices.sorted { capacities[$0] < capacities[$1] }
        var out = [Int](repeating: 0, count: capacities.count)
        var d = 0, sum = 0
        for i in order {
            let c = min(max(0, capacities[i]), histogram.count - 1)
            while d < c {
                d += 1
                sum += histogram[d]
            }
            out[i] = sum
        }
        return out
    }

    // MARK: Fenwick tree over times (1-based inside)

    @inline(__always)
    private mutating func add(_ time: Int, _ delta: Int32) {
        var i = time + 1
        while i <= tree.count {
            tree[i - 1] &+= delta
            i += i & -i
        }
    }

    /// Marks at times 0...time.
    @inline(__always)
    private func prefixCount(_ time: Int) -> Int {
        var i = time + 1
        var sum = 0
        while i > 0 {
            sum += Int(tree[i - 1])
            i -= i & -i
        }
        return sum
    }

    /// Renumbers the live times 0..<d in their order and sizes the tree to hold 2d more.
    private mutating func compact() {
        var live: [(time: Int, key: Int)] = []
        live.reserveCapacity(lastAccess.count)
        for (key, time) in lastAccess { live.append((time, key)) }
        live.sort { $0.time < $1.time }  // times are distinct: the order is total
        let size = max(1024, 2 * live.count)
        tree = [Int32](repeating: 0, count: size)
        for (i, entry) in live.enumerated() {
            lastAccess[entry.key] = i
            // Building by additions keeps this simple; it is O(d log d), like the sort.
            add(i, 1)
        }
        clock = live.count
    }
}

/// A miss-ratio curve of LRU by capacity in objects: exact (every request counted) or sampled in
/// the manner of SHARDS (Waldspurger et al., FAST 2015).
///
/// SHARDS samples keys, not requests: a key is in the sample when a fixed-seed hash of it, taken
/// modulo P = 2^24, is below a threshold T, so every request for a sampled key is counted and
/// the stack distances among sampled keys are, in expectation, R = T/P times the true ones. A
/// distance d among the sample stands for d / R, so the sampled curve's miss ratio at capacity C
/// counts the sampled requests whose distance exceeds C·R, divided by the N·R requests a sample
/// should hold (SHARDS_adj: a hot key that falls in or out of the sample moves the count of
/// sampled requests far from N·R; the difference is taken as hits at the smallest distance).
/// This is the fixed-rate variant (the fixed-size one, which lowers the rate as keys arrive, is
/// not implemented); memory is O(R × distinct keys). With R = 1 every key is sampled and the
/// curve is exact.
public struct LRUMissRatioCurve: Sendable {
    /// The modulus P of the sampling hash.
    public static let modulus: UInt64 = 1 << 24
    /// The fixed seed of the sampling hash (so the sample is the same in every process).
    public static let samplingSeed: UInt64 = 0x9E37_79B9_7F4A_7C15

    /// The threshold T (out of `modulus`).
    public let threshold: UInt64
    /// Whether it was made as a SHARDS curve (at rate 1 it counts every request, like an exact one).
    public let isSampled: Bool
    private var counter = StackDistanceCounter()
    /// Requests offered (sampled or not).
    public private(set) var requestsSeen = 0

    /// An exact curve.
    public init() {
        threshold = Self.modulus
        isSampled = false
    }

    /// A SHARDS curve sampling keys at `rate` (in (0, 1]; taken as the nearest T/2^24, at least
    /// 1/2^24).
    public init(sampleRate rate: Double) {
        let r = rate.isFinite ? min(max(rate, 0), 1) : 1
        threshold = max(1, min(Self.modulus, UInt64((r * Double(Self.modulus)).rounded())))
        isSampled = true
    }

    /// The sampling rate R = T/P actually used.
    public var sampleRate: Double { Double(threshold) / Double(Self.modulus) }
    public var isExact: Bool { threshold == Self.modulus }
    /// Requests counted (all of them for an exact curve).
    public var sampledRequests: Int { counter.requests }
    /// Distinct keys counted.
    public var sampledKeys: Int { counter.distinctKeys }

    /// Whether `key` is in the sample.
    @inline(__always)
    public func samples(_ key: Int) -> Bool {
        if threshold == Self.modulus { return true }
        return TraceKeyHash.finalize(UInt64(bitPattern: Int64(key)) ^ Self.samplingSeed) % Self.modulus < threshold
    }

    /// Counts a batch of requests.
    public mutating func add(_ batch: [Request]) {
        requestsSeen += batch.count
        if isExact {
            for r in batch { counter.access(r.key) }
        } else {
            for r in batch where samples(r.key) { counter.access(r.key) }
        }
    }

    /// LRU's miss ratio with a cache of `capacity` objects (the fraction of requests that miss).
    public func missRatio(capacity: Int) -> Double {
        missRatios(capacities: [capacity])[0]
    }

    /// `missRatio(capacity:)` at each of `capacities`, in one sweep.
    public func missRatios(capacities: [Int]) -> [Double] {
        let n = counter.requests
        guard n > 0 else { return capacities.map { _ in 0 } }
        if isExact { return counter.hits(capacities: capacities).map { Double(n - $0) / Double(n) } }
        // Distance d stands for d / R: it hits when d ≤ C·R. SHARDS_adj: the sample should hold
        // N·R requests; the difference (a hot key in or out of the sample) is counted as hits at
        // the smallest distance, so misses are divided by N·R.
        let scaled = capacities.map { Int((Double(max(0, $0)) * sampleRate).rounded(.down)) }
        let expected = Double(requestsSeen) * sampleRate
        return counter.hits(capacities: scaled).map { min(1, max(0, Double(n - $0) / expected)) }
    }

    /// Misses at each of `capacities` (whole numbers; for an exact curve equal to a simulated
    /// LRU's misses, for a sampled one the sampled requests that miss).
    public func misses(capacities: [Int]) -> [Int] {
        let scaled = isExact ? capacities : capacities.map { Int((Double(max(0, $0)) * sampleRate).rounded(.down)) }
        return counter.hits(capacities: scaled).map { counter.requests - $0 }
    }

    /// The largest capacity at which the curve still changes (the distinct keys, scaled).
    public var largestCapacity: Int {
        isExact ? counter.distinctKeys : Int((Double(counter.distinctKeys) / sampleRate).rounded(.up))
    }

    /// `count` points of the curve, capacities evenly spread from 0 to `upTo`.
    public func points(upTo maximum: Int, count: Int = 200) -> [CurvePoint] {
        let count = max(2, count)
        let top = max(1, maximum)
        var capacities: [Int] = []
        for i in 0..<count {
            let c = Int((Double(top) * Double(i) / Double(count - 1)).rounded())
            if c != capacities.last { capacities.append(c) }
        }
        return zip(capacities, missRatios(capacities: capacities)).map { CurvePoint(capacity: $0, missRatio: $1) }
    }

    /// The mean absolute difference between two curves' miss ratios at `capacities`.
    public static func meanAbsoluteError(_ a: LRUMissRatioCurve, _ b: LRUMissRatioCurve, at capacities: [Int]) -> Double {
        guard !capacities.isEmpty else { return 0 }
        let x = a.missRatios(capacities: capacities), y = b.missRatios(capacities: capacities)
        return zip(x, y).reduce(0.0) { $0 + abs($1.0 - $1.1) } / Double(capacities.count)
    }
}

/// One point of a miss-ratio curve.
public struct CurvePoint: Sendable, Hashable, Codable {
    public var capacity: Int
    public var missRatio: Double

    public init(capacity: Int, missRatio: Double) {
        self.capacity = capacity
        self.missRatio = missRatio
    }
}
