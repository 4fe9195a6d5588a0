import MemPressureJetsam
import MemPressureLifecycleProtocol
import Testing

@Suite("Explanations name the factors and the next app")
struct ExplanationTests {
    @Test func theFirstAppUnderIOS() throws {
        let mail = try Ranker.rank(mixedInput()).order[0]
        #expect(mail.explanation == "rank 1 of 9: band suspended-high (suspended, footprint 300.0 MiB ≥ high-memory 128.0 MiB); 1st of 2 in its band (largest footprint first); ahead of Maps (rank 2): same band, larger footprint (300.0 MiB > 150.0 MiB)")
        #expect(mail.factors.map(\.name) == ["band", "footprint", "high-memory"])
        #expect(mail.factors[0] == Factor(name: "band", value: "suspended-high", detail: "suspended, footprint 300.0 MiB ≥ high-memory 128.0 MiB"))
    }

    @Test func aBandBoundarySaysWhyTheNextAppIsInALaterBand() throws {
        let maps = try Ranker.rank(mixedInput()).order[1]
        #expect(maps.explanation.hasSuffix("ahead of Music (rank 3): band suspended-high comes before Music's band background-high (running in the background, footprint 200.0 MiB ≥ high-memory 128.0 MiB)"))
    }

    @Test(arguments: JetsamPolicyName.allCases)
    func everyRankedAppNamesItsBandAndTheNextApp(_ name: JetsamPolicyName) throws {
        let ranking = try Ranker.rank(mixedInput(), policy: JetsamPolicy(name: name))
        for (index, ranked) in ranking.order.enumerated() {
            #expect(ranked.explanation.hasPrefix("rank \(ranked.rank) of 9: band \(ranked.band) ("))
            #expect(ranked.factors.first?.name == "band")
            #expect(ranked.factors.contains { $0.name == "footprint" })
            if index + 1 < ranking.order.count {
                let next = ranking.order[index + 1]
                #expect(ranked.explanation.contains("ahead of \(next.snapshot.name) (rank \(next.rank)): "))
            } else {
                #expect(ranked.explanation.hasSuffix("last: no candidate after it"))
            }
        }
    }

    @Test func recencyIsExplainedUnderXNU() throws {
        let ranking = try Ranker.rank(mixedInput(), policy: JetsamPolicy(name: .xnu))
        #expect(ranking.order[0].explanation.contains("ahead of Notes (rank 2): same band, never active, while Notes was active 1200.0 s ago"))
        #expect(ranking.order[2].explanation.contains("ahead of Maps (rank 4): same band, less recently active (600.0 s ago vs 60.0 s ago)"))
        #expect(ranking.order[0].factors.contains(Factor(name: "priority", value: "0", detail: "JETSAM_PRIORITY_IDLE")))
    }

    @Test func theCostPolicyShowsItsArithmetic() throws {
        let ranking = try Ranker.rank(mixedInput(), policy: JetsamPolicy(name: .cost))
        let clock = ranking.order[1]
        #expect(clock.snapshot.name == "Clock")
        #expect(clock.explanation.contains("expected relaunch cost 0.010 s = relaunch 0.950 s (the prior) × P(reuse within 300.0 s) 0.01"))
        #expect(clock.explanation.contains("ahead of Notes (rank 3): same band, cheaper per byte freed (expected cost 0.010 s for 20.0 MiB vs 0.143 s for 40.0 MiB)"))
        #expect(clock.factors.map(\.name) == ["band", "footprint", "relaunch", "reuse probability", "expected cost"])
    }

    @Test func theDecisionSaysWhyItStopsWhereItStops() throws {
        let decision = try Ranker.decide(mixedInput(available: 0, target: 400))
        #expect(decision.explanation == "policy ios, pressure warning: need 400.0 MiB (target available 400.0 MiB − available 0.0 MiB); Mail (rank 1, 300.0 MiB) and Maps (rank 2, 150.0 MiB) free 450.0 MiB ≥ 400.0 MiB needed; expected relaunch cost 2.35 s; Music (rank 3) not needed; spared: Photos (protected) and Weather (not running)")
    }

    @Test func spareReasonsAreExplained() throws {
        let ranking = try Ranker.rank(mixedInput())
        #expect(ranking.spared.map(\.explanation) == [
            "protected: never ranked, never killed",
            "not running: no process to kill",
        ])
    }
}
