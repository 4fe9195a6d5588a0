import MemPressureJetsam
import MemPressureLifecycleProtocol
import MemPressureValues
import Testing

@Suite("The high-memory threshold")
struct ThresholdTests {
    @Test func theDefaultIsAnEighthOfTheBudget() throws {
        #expect(HighMemoryThreshold.default == .shareOfBudget(0.125))
        let ranking = try Ranker.rank(mixedInput())
        #expect(ranking.highMemoryBytes == 128 * mib)
        let factor = try #require(ranking.order[0].factors.first { $0.name == "high-memory" })
        #expect(factor.value == "128.0 MiB")
        #expect(factor.detail.contains("12.5% of the budget 1024.0 MiB"))
    }

    @Test func inBytes() throws {
        // 200 MiB: Maps (150) drops to suspended-low; Music (exactly 200) is still high.
        let policy = JetsamPolicy(name: .ios, highMemory: .bytes(200 * mib))
        let ranking = try Ranker.rank(mixedInput(), policy: policy)
        #expect(ranking.highMemoryBytes == 200 * mib)
        #expect(names(ranking) == ["Mail", "Music", "Maps", "Notes", "Clock", "Podcasts", "Messages", "Camera", "Safari"])
        #expect(ranking.order.map(\.band).prefix(3) == [.suspendedHigh, .backgroundHigh, .suspendedLow])
        #expect(ranking.order[1].explanation.contains("footprint 200.0 MiB ≥ high-memory 200.0 MiB"))
    }

    @Test func asAShareOfTheBudget() throws {
        // A quarter of 1024 MiB = 256 MiB: only Mail is high; Music is background-low.
        let policy = JetsamPolicy(name: .ios, highMemory: .shareOfBudget(0.25))
        let ranking = try Ranker.rank(mixedInput(), policy: policy)
        #expect(ranking.highMemoryBytes == 256 * mib)
        #expect(names(ranking) == ["Mail", "Maps", "Notes", "Clock", "Music", "Podcasts", "Messages", "Camera", "Safari"])
        #expect(ranking.order.map(\.band).prefix(5) == [.suspendedHigh, .suspendedLow, .suspendedLow, .suspendedLow, .backgroundLow])
    }

    @Test func theShareFollowsTheBudget() throws {
        var input = mixedInput()
        input.budgetBytes = 4096 * mib  // an eighth is now 512 MiB: nobody is high
        let ranking = try Ranker.rank(input)
        #expect(ranking.highMemoryBytes == 512 * mib)
        #expect(!ranking.order.contains { $0.band == .suspendedHigh || $0.band == .backgroundHigh })
    }
}

@Suite("decide stops when enough is freed")
struct DecideTests {
    @Test func stopsAtTheFirstPrefixThatSuffices() throws {
        // ios: Mail 300 covers 250; Maps is not needed.
        let decision = try Ranker.decide(mixedInput())
        #expect(names(decision) == ["Mail"])
        #expect(decision.neededBytes == 250 * mib)
        #expect(decision.expectedFreedBytes == 300 * mib)
        #expect(decision.sufficient)
        #expect(decision.explanation.contains("Mail (rank 1, 300.0 MiB) frees 300.0 MiB ≥ 250.0 MiB needed"))
        #expect(decision.explanation.contains("Maps (rank 2) not needed"))

        // 400 MiB: Mail and Maps (450); Music not needed.
        let more = try Ranker.decide(mixedInput(available: 0, target: 400))
        #expect(names(more) == ["Mail", "Maps"])
        #expect(more.explanation.contains("Mail (rank 1, 300.0 MiB) and Maps (rank 2, 150.0 MiB) free 450.0 MiB ≥ 400.0 MiB needed"))
        #expect(more.explanation.contains("Music (rank 3) not needed"))
    }

    @Test(arguments: JetsamPolicyName.allCases)
    func victimsAreAPrefixOfTheRankingAndMinimalAtTheirEnd(_ name: JetsamPolicyName) throws {
        let policy = JetsamPolicy(name: name)
        for target: UInt64 in [1, 50, 120, 250, 400, 700, 900] {
            let input = mixedInput(available: 0, target: target)
            let ranking = try Ranker.rank(input, policy: policy)
            let decision = try Ranker.decide(input, policy: policy)
            #expect(decision.victims == Array(ranking.order.prefix(decision.victims.count)))
            #expect(decision.sufficient)
            #expect(decision.expectedFreedBytes >= target * mib)
            // Without its last victim, the decision would not have been enough.
            let withoutLast = decision.victims.dropLast().reduce(UInt64(0)) { $0 + $1.snapshot.footprintBytes }
            #expect(withoutLast < target * mib)
        }
    }

    @Test func nothingNeededNoVictims() throws {
        for policy in JetsamPolicy.all() {
            let decision = try Ranker.decide(mixedInput(available: 400, target: 350), policy: policy)
            #expect(decision.victims.isEmpty)
            #expect(decision.neededBytes == 0)
            #expect(decision.sufficient)
            #expect(decision.expectedCostSeconds == 0)
            #expect(decision.explanation.contains("available 400.0 MiB ≥ target 350.0 MiB: nothing to kill"))
        }
    }

    @Test func purgeableBytesAreNotCountedAsFreed() throws {
        // Mail holds 100 MiB purgeable besides its 300 MiB footprint: 350 MiB needed still takes
        // Maps too.
        var input = mixedInput(available: 0, target: 350)
        input.apps[0].purgeableBytes = 100 * mib
        let decision = try Ranker.decide(input)
        #expect(names(decision) == ["Mail", "Maps"])
        #expect(decision.expectedFreedBytes == 450 * mib)
        #expect(decision.explanation.contains("the victims' 100.0 MiB purgeable not counted"))
        #expect(decision.victims[0].factors.contains { $0.name == "purgeable" && $0.detail.contains("not counted") })
    }

    @Test func insufficientWhenEverythingTogetherIsNotEnough() throws {
        // All nine together free 1200 MiB; 1500 MiB needed, at critical pressure.
        let decision = try Ranker.decide(mixedInput(level: .critical, available: 0, target: 1500, budget: 2048))
        #expect(decision.victims.count == 9)
        #expect(decision.expectedFreedBytes == 1200 * mib)
        #expect(!decision.sufficient)
        #expect(decision.explanation.contains("taken last; together 1200.0 MiB < 1500.0 MiB needed"))
        #expect(decision.explanation.contains("nothing else to kill; not sufficient"))
    }

    @Test func insufficientWithoutAForegroundApp() throws {
        var input = mixedInput(level: .warning, available: 0, target: 1024)
        input.apps.remove(at: 8)  // no Safari
        let decision = try Ranker.decide(input)
        #expect(decision.victims.count == 8)
        #expect(!decision.sufficient)
        #expect(decision.explanation.contains("all 8 candidates other than the foreground app"))
        #expect(decision.explanation.contains("free only 950.0 MiB < 1024.0 MiB needed"))
        #expect(decision.explanation.contains("nothing else to kill; not sufficient"))
    }
}
