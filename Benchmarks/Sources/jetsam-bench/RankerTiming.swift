import MemPressureJetsam
import MemPressureSystem
import RankerInputs

/// Timing statistics of one measured operation, in seconds.
struct Stats: Codable, Sendable {
    var rounds: Int
    var median: Double
    var p90: Double
    var p99: Double
    var min: Double
    var max: Double

    init(_ samples: [Double]) {
        let s = samples.sorted()
        func q(_ p: Double) -> Double { s[Swift.min(s.count - 1, Int(Double(s.count - 1) * p + 0.5))] }
        rounds = s.count
        median = s.count % 2 == 1 ? s[s.count / 2] : (s[s.count / 2 - 1] + s[s.count / 2]) / 2
        p90 = q(0.90)
        p99 = q(0.99)
        min = s.first ?? 0
        max = s.last ?? 0
    }
}

struct RankerTiming: Codable, Sendable {
    var apps: Int
    var policy: String
    var decide: Stats
    var rank: Stats
    /// The same snapshots sorted by footprint alone, timed in the same rounds: the floor any
    /// ranking pays.
    var baselineSort: Stats
    var decideOverBaseline: Double { decide.median / max(baselineSort.median, 1e-12) }
}

func rankerTimings(sizes: [Int] = [10, 100, 1000]) throws -> [RankerTiming] {
    var out: [RankerTiming] = []
    for n in sizes {
        try Task.checkCancellation()
        let input = syntheticInput(apps: n)
        let rounds = n <= 100 ? 400 : 80
        for name in JetsamPolicyName.allCases {
            let policy = JetsamPolicy(name: name)
            var decide: [Double] = [], rank: [Double] = [], base: [Double] = []
            for i in 0..<(rounds + 10) {
                var t = monotonicSeconds()
                let d = try Ranker.decide(input, policy: policy)
                let td = monotonicSeconds() - t
                t = monotonicSeconds()
                let r = try Ranker.rank(input, policy: policy)
                let tr = monotonicSeconds() - t
                t = monotonicSeconds()
                let sorted = input.apps.sorted { ($0.footprintBytes, $1.name) > ($1.footprintBytes, $0.name) }
                let tb = monotonicSeconds() - t
                guard !d.victims.isEmpty, !r.order.isEmpty, !sorted.isEmpty else { throw BenchFailure("ranker gave nothing at \(n) apps") }
                if i >= 10 {  // the first rounds warm caches
                    decide.append(td)
                    rank.append(tr)
                    base.append(tb)
                }
            }
            out.append(RankerTiming(apps: n, policy: name.rawValue, decide: Stats(decide), rank: Stats(rank), baselineSort: Stats(base)))
        }
    }
    return out
}

struct BenchFailure: Error, CustomStringConvertible {
    var description: String
    init(_ d: String) { description = d }
}
