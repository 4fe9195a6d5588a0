// The jetsam ranker's decision (whom to kill, in which order, until the target is met) under
// every policy with 10, 100 and 1000 apps: the input jetsam-bench uses, seeded, the same on
// every run.

import Benchmark
import MemPressureJetsam
import MicroSupport
import RankerInputs

struct NoVictims: Error, CustomStringConvertible {
    var apps: Int
    var description: String { "the ranker chose no victim among \(apps) apps, though memory is short" }
}

let benchmarks: @Sendable () -> Void = {
    Micro.configure()

    for apps in [10, 100, 1000] {
        for name in JetsamPolicyName.allCases {
            let policy = JetsamPolicy(name: name)
            Benchmark(Micro.name("Ranker.decide \(name.rawValue), \(apps) apps")) { (benchmark: Benchmark, input: RankingInput) in
                for _ in benchmark.scaledIterations {
                    let decision = try Ranker.decide(input, policy: policy)
                    guard !decision.victims.isEmpty else { throw NoVictims(apps: apps) }
                    blackHole(decision)
                }
            } setup: {
                syntheticInput(apps: apps)
            }
        }
    }
}
