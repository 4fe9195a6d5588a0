/// p50, p90 and p99 of a set of samples, with their count, min and max. Quantiles interpolate
/// linearly between the two nearest ranks (R's type 7, numpy's default), so p99 of 20 samples
/// lies between the two largest.
public struct Percentiles: Codable, Sendable, Hashable {
    public var count: Int
    public var p50: Double
    public var p90: Double
    public var p99: Double
    public var min: Double
    public var max: Double

    /// Of `samples` (none: every figure 0 and `count` 0).
    public init(_ samples: [Double]) {
        let s = samples.sorted()
        count = s.count
        func q(_ p: Double) -> Double {
            guard !s.isEmpty else { return 0 }
            let rank = Double(s.count - 1) * p
            let low = Int(rank)
            let high = Swift.min(low + 1, s.count - 1)
            return s[low] + (s[high] - s[low]) * (rank - Double(low))
        }
        p50 = q(0.5)
        p90 = q(0.9)
        p99 = q(0.99)
        min = s.first ?? 0
        max = s.last ?? 0
    }

    /// Each figure of `self` divided by the same figure of `other` (count: the smaller); nil if
    /// a figure of `other` is not above 0.
    public func ratio(to other: Percentiles) -> Percentiles? {
        guard other.count > 0, count > 0, other.p50 > 0, other.p90 > 0, other.p99 > 0, other.min > 0, other.max > 0 else { return nil }
        func d(_ a: Double, _ b: Double) -> Double { a / b }
        var r = self
        r.count = Swift.min(count, other.count)
        r.p50 = d(p50, other.p50)
        r.p90 = d(p90, other.p90)
        r.p99 = d(p99, other.p99)
        r.min = d(min, other.min)
        r.max = d(max, other.max)
        return r
    }
}
