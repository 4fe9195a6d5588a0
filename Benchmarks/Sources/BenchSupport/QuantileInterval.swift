import Foundation

/// A distribution-free confidence interval for a quantile of a sample, from its order
/// statistics: the number of samples below the true q-quantile is Binomial(n, q), so the
/// interval between the l-th and u-th smallest samples covers it with probability
/// P(l ≤ B ≤ u − 1). The ranks are chosen symmetrically in probability, each tail at most
/// (1 − level) / 2. No resampling, nothing random: the same samples give the same interval.
public struct QuantileInterval: Codable, Sendable, Hashable {
    /// The bounds; nil where the sample is too small for one (too few samples beyond the
    /// quantile: a p99 from 90 rounds has no upper bound at 95%).
    public var low: Double?
    public var high: Double?

    /// For quantile `q` (0...1) of `samples`, at confidence `level`.
    public init(_ samples: [Double], quantile q: Double, level: Double = 0.95) {
        let s = samples.sorted()
        let n = s.count
        guard n > 0, q > 0, q < 1 else { return }
        let tail = (1 - level) / 2
        // cdf[k] = P(B ≤ k), B ~ Binomial(n, q), through logarithms (n in the thousands is fine).
        var cdf = [Double](repeating: 0, count: n + 1)
        var sum = 0.0
        for k in 0...n {
            let logP = lgamma(Double(n + 1)) - lgamma(Double(k + 1)) - lgamma(Double(n - k + 1)) + Double(k) * log(q) + Double(n - k) * log1p(-q)
            sum += exp(logP)
            cdf[k] = min(1, sum)
        }
        // Lower rank l (1-based): the largest with P(B ≤ l − 1) ≤ tail.
        var l = 0
        while l < n, cdf[l] <= tail { l += 1 }
        // Upper rank u: the smallest with P(B ≤ u − 1) ≥ 1 − tail.
        var u = 1
        while u <= n, cdf[u - 1] < 1 - tail { u += 1 }
        low = l >= 1 ? s[l - 1] : nil
        high = u <= n ? s[u - 1] : nil
    }
}
