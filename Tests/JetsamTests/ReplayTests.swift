import MemPressureCachePolicies
import FoundationEssentials
import MemPressureJetsam
import MemPressureLifecycleProtocol
import MemPressureValues
import Testing

@Suite("Replay")
struct ReplayTests {
    @Test func givesIdenticalDecisionsTwice() throws {
        let first = try JetsamReplay(mixedInput())
        let second = try JetsamReplay(mixedInput())
        #expect(first == second)
        #expect(first.outcomes.map(\.policy.name) == JetsamPolicyName.allCases)
        for outcome in first.outcomes {
            #expect(outcome.decision == (try Ranker.decide(mixedInput(), policy: outcome.policy)))
        }
    }

    @Test func encodesToTheSameBytesEveryTime() throws {
        // Two runs of the same path, and a third from the input decoded back from its JSON, as
        // a replay of a recorded episode does.
        let bytes1 = try encode(JetsamReplay(mixedInput()))
        let bytes2 = try encode(JetsamReplay(mixedInput()))
        #expect(bytes1 == bytes2)
        let recorded = try JSONDecoder().decode(RankingInput.self, from: encode(mixedInput()))
        #expect(try encode(JetsamReplay(recorded)) == bytes1)
        // And from the apps in another order.
        var shuffled = mixedInput()
        var random = SplitMix64(seed: 99)
        random.shuffle(&shuffled.apps)
        #expect(try encode(JetsamReplay(shuffled)) == bytes1)
    }

    @Test func countsRelaunchTimeAndSaysWhenItIsThePrior() throws {
        let replay = try JetsamReplay(mixedInput(), policies: JetsamPolicy.all([.xnu, .ios]))
        #expect(replay.outcomes.map(\.policy.name) == [.xnu, .ios])
        #expect(replay.neededBytes == 250 * mib)
        let xnu = replay.outcomes[0]
        #expect(xnu.victimNames == ["Clock", "Notes", "Mail"])
        // Clock has no measurement: the median of the 8 measured, 0.95 s.
        #expect(xnu.relaunchSecondsTotal == 0.95 + 0.5 + 1.2)
        #expect(xnu.victimsWithoutMeasuredRelaunch == ["Clock"])
        #expect(xnu.relaunchPriorSeconds == 0.95)
        #expect(xnu.costExplanation.hasPrefix("Clock 0.950 s (prior) + Notes 0.500 s + Mail 1.20 s = 2.65 s; 1 without a measured relaunch time, assumed 0.950 s (median of 8 measured relaunch times)"))
        let ios = replay.outcomes[1]
        #expect(ios.victimNames == ["Mail"])
        #expect(ios.relaunchSecondsTotal == 1.2)
        #expect(ios.victimsWithoutMeasuredRelaunch.isEmpty)
        #expect(ios.expectedCostSeconds == ios.decision.expectedCostSeconds)
    }

    @Test func rendersSideBySide() throws {
        let table = try JetsamReplay(mixedInput()).table()
        #expect(table == """
            policy   victims                          freed      needed     enough  relaunch  expected cost
            ios      Mail                             300.0 MiB  250.0 MiB  yes     1.20 s    0.686 s
            xnu      Clock, Notes and Mail            360.0 MiB  250.0 MiB  yes     2.65 s*   0.838 s
            lmkd     Clock, Notes and Mail            360.0 MiB  250.0 MiB  yes     2.65 s*   0.838 s
            largest  Maps and Mail                    450.0 MiB  250.0 MiB  yes     3.20 s    2.35 s
            lru      Clock, Notes, Podcasts and Mail  420.0 MiB  250.0 MiB  yes     3.45 s*   1.18 s
            cost     Mail                             300.0 MiB  250.0 MiB  yes     1.20 s    0.686 s
            * includes victims without a measured relaunch time, counted at the prior

            """)
    }

    @Test func replayResultsRoundTrip() throws {
        let replay = try JetsamReplay(mixedInput(level: .critical, available: 0, target: 1000))
        #expect(try JSONDecoder().decode(JetsamReplay.self, from: encode(replay)) == replay)
    }
}
