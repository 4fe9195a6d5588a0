// The ranker's benchmark input, shared by jetsam-bench (the ranker timed against sorting) and
// the JetsamBenchmarks micro-benchmarks, so both measure the very same apps.

import MemPressureCachePolicies
import MemPressureJetsam
import MemPressureLifecycleProtocol

/// A fixed, seeded mix of `n` apps in every state (SplitMix64: the same input in any process),
/// the first one active; the machine is short by a fifth of its budget, so a decision has
/// several victims.
public func syntheticInput(apps n: Int, seed: UInt64 = 0x5eed) -> RankingInput {
    var random = SplitMix64(seed: seed)
    func next() -> UInt64 { random.next() }
    let states: [LifecycleState] = [.suspended, .suspended, .suspended, .backgroundRunning, .backgroundRunning, .inactive]
    var apps: [JetsamAppSnapshot] = []
    for i in 0..<n {
        let state: LifecycleState = i == 0 ? .active : states[Int(next() % UInt64(states.count))]
        let footprint = (next() % 300 + 2) << 20
        apps.append(JetsamAppSnapshot(
            name: "app\(i)", pid: Int32(1000 + i), state: state, footprintBytes: footprint, purgeableBytes: (next() % 20) << 20,
            residentBytes: footprint + ((next() % 40) << 20), lifetimeMaxFootprintBytes: footprint + ((next() % 50) << 20),
            secondsInState: Double(next() % 600), secondsSinceActive: state == .active ? 0 : Double(next() % 3600 + 1),
            activations: Int(next() % 20) + 1, isProtected: next() % 50 == 0,
            relaunchSeconds: next() % 4 == 0 ? nil : Double(next() % 3000) / 1000 + 0.2, sampleAgeSeconds: Double(next() % 1000) / 1000))
    }
    let total = apps.reduce(0) { $0 + $1.footprintBytes }
    let budget = total + total / 8
    // Short by a fifth of the budget: several victims.
    return RankingInput(apps: apps, budgetBytes: budget, availableBytes: budget / 20, targetAvailableBytes: budget / 4, level: .critical)
}
