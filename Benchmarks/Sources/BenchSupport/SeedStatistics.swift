import Foundation
import MemPressureCachePolicies

/// Statistics over independent runs (one per seed): a mean with its bootstrap confidence
/// interval, and a paired test between two conditions run on the same seeds. Deterministic: the
/// resampling draws from SplitMix64 with a fixed seed, so the same runs give the same figures.
public struct MeanInterval: Codable, Sendable, Hashable {
    public var mean: Double
    /// The percentile-bootstrap interval of the mean (10,000 resamples), at `level`; equal to the
    /// mean for fewer than 2 runs.
    public var low: Double
    public var high: Double
    public var runs: Int

    public init(_ values: [Double], level: Double = 0.95, resamples: Int = 10_000, seed: UInt64 = 0x5EED) {
        runs = values.count
        guard !values.isEmpty else {
            mean = .nan
            low = .nan
            high = .nan
            return
        }
        mean = values.reduce(0, +) / Double(values.count)
        guard values.count >= 2 else {
            low = mean
            high = mean
            return
        }
        var g = SplitMix64(seed: seed)
        var means: [Double] = []
        means.reserveCapacity(resamples)
        let n = values.count
        for _ in 0..<resamples {
            var sum = 0.0
            for _ in 0..<n { sum += values[Int(g.next() % UInt64(n))] }
            means.append(sum / Double(n))
        }
        means.sort()
        let tail = (1 - level) / 2
        low = means[min(resamples - 1, max(0, Int((Double(resamples) * tail).rounded(.down))))]
        high = means[min(resamples - 1, max(0, Int((Double(resamples) * (1 - tail)).rounded(.up)) - 1))]
    }
}

public enum PairedTest {
    /// The smallest p-value the exact test can give with `pairs` pairs (2 / 2^pairs): below 6
    /// pairs it is at least 0.0625, so nothing can be significant at 0.05.
    public static func smallestP(pairs: Int) -> Double { pairs < 1 ? 1 : min(1, 2 / pow(2, Double(min(pairs, 60)))) }

    /// Holm's step-down adjustment of several p-values tested together (the family-wise error
    /// rate kept at the level): the i-th smallest times (m - i + 1), made non-decreasing, at
    /// most 1; in the order given.
    public static func holm(_ ps: [Double]) -> [Double] {
        let m = ps.count
        let order = ps.indices.sorted { ps[$0] < ps[$1] }
        var adjusted = [Double](repeating: 1, count: m)
        var running = 0.0
        for (rank, i) in order.enumerated() {
            running = max(running, min(1, ps[i] * Double(m - rank)))
            adjusted[i] = running
        }
        return adjusted
    }

    /// The two-sided p-value of the paired sign-flip (permutation) test of "no difference"
    /// between `a` and `b`, paired by index (the same seed): under the null hypothesis each
    /// paired difference is as likely positive as negative, so the observed |mean difference| is
    /// ranked among those of every assignment of signs — all 2^n of them for up to 16 pairs,
    /// else 20,000 seeded draws. Pairs beyond the shorter array are ignored; nil below 2 pairs.
    public static func signFlipP(_ a: [Double], _ b: [Double]) -> Double? {
        let d = zip(a, b).map { $0 - $1 }
        let n = d.count
        guard n >= 2, d.allSatisfy(\.isFinite) else { return nil }
        let observed = abs(d.reduce(0, +))
        // A tolerance so that an assignment equal to the observed one counts as "as extreme".
        let tolerance = 1e-9 * max(1, observed)
        var extreme = 0, total = 0
        if n <= 16 {
            for mask in 0..<(1 << n) {
                var sum = 0.0
                for i in 0..<n { sum += (mask >> i) & 1 == 1 ? -d[i] : d[i] }
                if abs(sum) >= observed - tolerance { extreme += 1 }
                total += 1
            }
        } else {
            var g = SplitMix64(seed: 0xF11B)
            for _ in 0..<20_000 {
                var sum = 0.0
                for i in 0..<n { sum += g.next() & 1 == 1 ? -d[i] : d[i] }
                if abs(sum) >= observed - tolerance { extreme += 1 }
                total += 1
            }
            // The observed assignment itself counts (a p-value is never 0).
            extreme += 1
            total += 1
        }
        return Double(extreme) / Double(total)
    }
}
