import MemPressureCachePolicies
import MemPressureJetsam
import MemPressureLifecycleProtocol
import MemPressureValues
import Testing

@Suite("The cost policy")
struct CostPolicyTests {
    /// Big: 120 MiB, used 10 times, 10 s ago, 5 s to relaunch. A and B: 60 and 50 MiB, never
    /// active, 1 s to relaunch. 100 MiB needed.
    func constructed() -> RankingInput {
        RankingInput(
            apps: [
                app("Big", 501, .suspended, mib: 120, since: 10, activations: 10, relaunch: 5),
                app("A", 502, .suspended, mib: 60, relaunch: 1),
                app("B", 503, .suspended, mib: 50, relaunch: 1),
                app("Front", 504, .active, mib: 200, since: 0, activations: 30, relaunch: 1),
            ],
            budgetBytes: 512 * mib,
            availableBytes: 20 * mib,
            targetAvailableBytes: 120 * mib,
            level: .critical
        )
    }

    @Test func picksACheaperSetThanLargestFirst() throws {
        let input = constructed()
        // ios and largest take Big alone: 120 MiB ≥ 100 MiB, but the user is likely back soon
        // and waits 5 s: P = 0.91, 4.57 s expected.
        let ios = try Ranker.decide(input, policy: JetsamPolicy(name: .ios))
        let largest = try Ranker.decide(input, policy: JetsamPolicy(name: .largest))
        #expect(names(ios) == ["Big"])
        #expect(names(largest) == ["Big"])
        // cost takes A and B (110 MiB), never active: 2 × 1 s × 0.01.
        let cost = try Ranker.decide(input, policy: JetsamPolicy(name: .cost))
        #expect(names(cost) == ["A", "B"])
        #expect(cost.sufficient)
        #expect(cost.expectedFreedBytes == 110 * mib)
        let costSeconds = try #require(cost.expectedCostSeconds)
        let iosSeconds = try #require(ios.expectedCostSeconds)
        #expect(costSeconds == 0.02)
        #expect(iosSeconds == 4.570637)  // 5 s × 3300/3610
        #expect(cost.explanation.contains("the least expected relaunch cost, 0.020 s (exact search over 3 candidates)"))
        #expect(cost.explanation.contains("Big (rank 3) not needed"))
        let ranking = try Ranker.rank(input, policy: JetsamPolicy(name: .cost))
        #expect(names(ranking) == ["A", "B", "Big", "Front"])
        #expect(ranking.order[0].explanation.contains("in the least-cost set that frees the 100.0 MiB needed: 2 apps, 110.0 MiB"))
    }

    @Test func theReuseProbabilityFollowsRecencyAndFrequency() throws {
        // Same size and relaunch; only the history differs.
        let apps = [
            app("Daily", 601, .suspended, mib: 50, since: 60, activations: 10, relaunch: 1),
            app("Once", 602, .suspended, mib: 50, since: 60, activations: 1, relaunch: 1),
            app("Stale", 603, .suspended, mib: 50, since: 3600, activations: 1, relaunch: 1),
            app("Never", 604, .suspended, mib: 50, relaunch: 1),
        ]
        let input = RankingInput(apps: apps, budgetBytes: 1024 * mib, availableBytes: 0, targetAvailableBytes: 0, level: .warning)
        let ranking = try Ranker.rank(input, policy: JetsamPolicy(name: .cost))
        #expect(names(ranking) == ["Never", "Stale", "Once", "Daily"])
        let p = ranking.order.map { $0.factors.first { $0.name == "reuse probability" }?.value }
        // Never: the minimum; Stale: λ = 2/3900, x = 0.15 → 0.13; Once: 2/360 → 0.63; Daily: 11/360 → 0.90.
        #expect(p == ["0.01", "0.13", "0.63", "0.90"])
        #expect(ranking.order.map(\.expectedCostSeconds) == [0.01, 0.133333, 0.625, 0.901639])
    }

    @Test func unknownRelaunchTimesTakeTheMedianOfTheKnown() throws {
        let apps = [
            app("K1", 701, .suspended, mib: 10, since: 10, activations: 1, relaunch: 1),
            app("K2", 702, .suspended, mib: 10, since: 10, activations: 1, relaunch: 3),
            app("U", 703, .suspended, mib: 10, since: 10, activations: 1),
        ]
        let input = RankingInput(apps: apps, budgetBytes: 1024 * mib, availableBytes: 0, targetAvailableBytes: 0, level: .warning)
        let ranking = try Ranker.rank(input, policy: JetsamPolicy(name: .cost))
        #expect(ranking.relaunchPriorSeconds == 2)
        let u = try #require(ranking.order.first { $0.snapshot.name == "U" })
        #expect(u.factors.contains { $0.name == "relaunch" && $0.value == "2.00 s" && $0.detail.contains("the prior, median of 2") })
        // Nobody measured: the policy's default.
        var unknown = input
        for index in unknown.apps.indices { unknown.apps[index].relaunchSeconds = nil }
        let fallback = try Ranker.rank(unknown, policy: JetsamPolicy(name: .cost, defaultRelaunchSeconds: 1.5))
        #expect(fallback.relaunchPriorSeconds == 1.5)
        #expect(fallback.relaunchPriorSource.contains("policy default"))
    }

    /// Random inputs from a fixed seed: up to 12 candidates, so every subset can be tried.
    func randomInput(_ random: inout SplitMix64) -> RankingInput {
        let count = 1 + Int(random.below(12))
        let states: [LifecycleState] = [.suspended, .backgroundRunning, .inactive]
        var apps: [JetsamAppSnapshot] = []
        var total: UInt64 = 0
        for i in 0..<count {
            let footprint = random.below(4) == 0 ? (1 + random.below(4)) * 16 * mib : 1 + random.below(200 * mib)
            total += footprint
            let everActive = random.below(5) != 0
            apps.append(JetsamAppSnapshot(
                name: "R\(i)",
                pid: Int32(1000 + i),
                state: states[Int(random.below(3))],
                footprintBytes: footprint,
                residentBytes: footprint,
                lifetimeMaxFootprintBytes: footprint,
                secondsInState: 1,
                // Coarse values so that equal costs, and the tie-breaks, really happen.
                secondsSinceActive: everActive ? Double(random.below(6) * 120) : nil,
                activations: everActive ? 1 + Int(random.below(4)) : 0,
                relaunchSeconds: random.below(4) == 0 ? nil : Double(1 + random.below(4)) / 2,
                sampleAgeSeconds: 0
            ))
        }
        if random.below(3) == 0 {
            apps.append(app("Front", 999, .active, mib: 100, since: 0, activations: 5, relaunch: 1))
        }
        let needed = random.below(total + total / 5 + 1)
        let budget = max(needed, total) + 64 * mib
        return RankingInput(apps: apps, budgetBytes: budget, availableBytes: 0, targetAvailableBytes: needed, level: .warning)
    }

    /// The least-cost set by trying every subset, with the documented tie-breaks: cost, then
    /// fewer victims, then more bytes, then the set holding the earliest app in footprint
    /// descending, name, PID order.
    func bruteForce(_ ranking: Ranking, needed: UInt64) -> (names: [String], micros: UInt64) {
        let candidates = ranking.order.filter { $0.snapshot.state != .active }.sorted { a, b in
            if a.snapshot.footprintBytes != b.snapshot.footprintBytes { return a.snapshot.footprintBytes > b.snapshot.footprintBytes }
            return a.snapshot.name.utf8.lexicographicallyPrecedes(b.snapshot.name.utf8)
        }
        let micros = candidates.map { UInt64($0.expectedCostSeconds * 1e6 + 0.5) }
        let n = candidates.count
        var best: (cost: UInt64, count: Int, bytes: UInt64, members: [Int])?
        for mask in 0..<(1 << n) {
            let members = (0..<n).filter { mask & (1 << $0) != 0 }
            let bytes = members.reduce(UInt64(0)) { $0 + candidates[$1].snapshot.footprintBytes }
            guard bytes >= needed else { continue }
            let key = (cost: members.reduce(UInt64(0)) { $0 + micros[$1] }, count: members.count, bytes: bytes, members: members)
            guard let current = best else { best = key; continue }
            let better: Bool
            if key.cost != current.cost { better = key.cost < current.cost }
            else if key.count != current.count { better = key.count < current.count }
            else if key.bytes != current.bytes { better = key.bytes > current.bytes }
            else {
                let differing = zip(key.members, current.members).first { $0 != $1 }
                better = differing.map { $0.0 < $0.1 } ?? false
            }
            if better { best = key }
        }
        guard let best else { return (candidates.map(\.snapshot.name), micros.reduce(0, +)) }
        return (best.members.map { candidates[$0].snapshot.name }, best.cost)
    }

    @Test func theExactSearchAgreesWithBruteForce() throws {
        var random = SplitMix64(seed: 0x1234_5678)
        let policy = JetsamPolicy(name: .cost)
        var nonTrivial = 0
        for _ in 0..<300 {
            let input = randomInput(&random)
            let ranking = try Ranker.rank(input, policy: policy)
            let decision = try Ranker.decide(input, policy: policy)
            let expected = bruteForce(ranking, needed: input.neededBytes)
            #expect(Set(names(decision)) == Set(expected.names), "input \(input.apps.map(\.footprintBytes)) needed \(input.neededBytes)")
            #expect(UInt64((decision.expectedCostSeconds ?? -1) * 1e6 + 0.5) == expected.micros)
            // In the set, the largest dies first.
            #expect(decision.victims.map(\.snapshot.footprintBytes) == decision.victims.map(\.snapshot.footprintBytes).sorted(by: >))
            if decision.victims.count > 1 { nonTrivial += 1 }
        }
        #expect(nonTrivial > 50)
    }

    @Test func theGreedyFallbackIsSoundAndMinimal() throws {
        var random = SplitMix64(seed: 0xFEED)
        let greedy = JetsamPolicy(name: .cost, exactSearchLimit: 0)
        for _ in 0..<200 {
            let input = randomInput(&random)
            let ranking = try Ranker.rank(input, policy: greedy)
            let decision = try Ranker.decide(input, policy: greedy)
            let optimum = bruteForce(ranking, needed: input.neededBytes)
            let candidatesTotal = ranking.order.filter { $0.snapshot.state != .active }.reduce(UInt64(0)) { $0 + $1.snapshot.footprintBytes }
            guard candidatesTotal >= input.neededBytes else { continue }
            #expect(decision.sufficient)
            #expect(UInt64((decision.expectedCostSeconds ?? -1) * 1e6 + 0.5) >= optimum.micros)
            // Minimal: no victim could have been left out.
            for victim in decision.victims {
                #expect(decision.expectedFreedBytes - victim.snapshot.footprintBytes < input.neededBytes)
            }
        }
    }

    @Test func manyAppsUseTheGreedySearchAndSaySo() throws {
        let apps = (0..<60).map { (i: Int) -> JetsamAppSnapshot in
            let relaunch: Double = 0.5 + Double(i % 5) / 2
            let since: Double = Double(i * 30)
            return app("G\(i)", Int32(2000 + i), .suspended, mib: UInt64(5 + i), since: since, activations: 1 + i % 4, relaunch: relaunch)
        }
        let input = RankingInput(apps: apps, budgetBytes: 8192 * mib, availableBytes: 0, targetAvailableBytes: 500 * mib, level: .warning)
        let decision = try Ranker.decide(input, policy: JetsamPolicy(name: .cost))
        #expect(decision.sufficient)
        #expect(decision.explanation.contains("greedy by cost per byte over 60 candidates, more than the exact-search limit 20"))
    }
}
