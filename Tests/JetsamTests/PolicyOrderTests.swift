import Foundation
import MemPressureCachePolicies
import MemPressureJetsam
import MemPressureLifecycleProtocol
import MemPressureValues
import Testing

@Suite("Every policy's order on the mixed set")
struct PolicyOrderTests {
    @Test func ios() throws {
        // suspended-high (≥ 128 MiB): Mail 300, Maps 150; background-high: Music 200;
        // suspended-low: Notes 40, Clock 20; background-low: Podcasts 60; inactive: Messages 100,
        // Camera 80; the foreground app last.
        let ranking = try Ranker.rank(mixedInput(), policy: JetsamPolicy(name: .ios))
        #expect(names(ranking) == ["Mail", "Maps", "Music", "Notes", "Clock", "Podcasts", "Messages", "Camera", "Safari"])
        #expect(ranking.order.map(\.band.rawValue) == [
            "suspended-high", "suspended-high", "background-high", "suspended-low", "suspended-low",
            "background-low", "inactive", "inactive", "foreground",
        ])
        #expect(ranking.order.map(\.rank) == Array(1...9))
        #expect(ranking.order.map(\.bandOrder) == [0, 0, 1, 2, 2, 3, 4, 4, 5])
    }

    @Test func iosLeastRecentFirstWithinItsBands() throws {
        // The same bands; inside each, least recently used first: suspended-low Clock (never
        // used) before Notes (1200 s), where by size Notes (40) went first; suspended-high Mail
        // (600 s) before Maps (60 s); inactive Messages and Camera both in use now, so by size.
        var policy = JetsamPolicy(name: .ios)
        policy.withinBand = .leastRecentFirst
        let ranking = try Ranker.rank(mixedInput(), policy: policy)
        #expect(names(ranking) == ["Mail", "Maps", "Music", "Clock", "Notes", "Podcasts", "Messages", "Camera", "Safari"])
        #expect(ranking.order.map(\.bandOrder) == [0, 0, 1, 2, 2, 3, 4, 4, 5])
        // Said in the tunables a document carries, and in a scenario's jetsam section.
        let decoded = try JSONDecoder().decode(JetsamPolicy.self, from: Data(#"{"name": "ios", "withinBand": "leastRecentFirst"}"#.utf8))
        #expect(decoded == policy)
        let configuration = try JSONDecoder().decode(JetsamConfiguration.self, from: Data(#"{"withinBand": "leastRecentFirst"}"#.utf8))
        #expect(configuration.rankingPolicy.withinBand == .leastRecentFirst)
        // The killer's default is least recent first (Reports/switching.md); the ranker's own,
        // for `mempressure jetsam --dry-run` and replays, stays largest first.
        #expect(try JSONDecoder().decode(JetsamConfiguration.self, from: Data("{}".utf8)).rankingPolicy.withinBand == .leastRecentFirst)
        #expect(JetsamPolicy.default.withinBand == .largestFirst)
    }

    @Test func iosIsTheDefault() throws {
        #expect(try Ranker.rank(mixedInput()) == Ranker.rank(mixedInput(), policy: JetsamPolicy(name: .ios)))
        #expect(JetsamPolicy.default.name == .ios)
    }

    @Test func xnu() throws {
        // idle (suspended) least recently used first: Clock (never), Notes 1200 s, Mail 600 s,
        // Maps 60 s; background: Podcasts 900 s, Music 30 s; foreground-inactive by size:
        // Messages 100, Camera 80; the active app last.
        let ranking = try Ranker.rank(mixedInput(), policy: JetsamPolicy(name: .xnu))
        #expect(names(ranking) == ["Clock", "Notes", "Mail", "Maps", "Podcasts", "Music", "Messages", "Camera", "Safari"])
        #expect(ranking.order.map(\.band.rawValue) == [
            "idle", "idle", "idle", "idle", "background", "background", "foreground-inactive",
            "foreground-inactive", "foreground",
        ])
    }

    @Test func lmkd() throws {
        // cached and service least recently used, as xnu; visible by resident size (the
        // heaviest): Camera (90 MiB resident) before Messages (85 MiB resident, 100 footprint).
        let ranking = try Ranker.rank(mixedInput(), policy: JetsamPolicy(name: .lmkd))
        #expect(names(ranking) == ["Clock", "Notes", "Mail", "Maps", "Podcasts", "Music", "Camera", "Messages", "Safari"])
        #expect(ranking.order.map(\.band.rawValue) == [
            "cached", "cached", "cached", "cached", "service", "service", "visible", "visible", "foreground",
        ])
        let adj = ranking.order.map { $0.factors.first { $0.name == "oom_score_adj" }?.value }
        #expect(adj == ["900", "900", "900", "900", "500", "500", "100", "100", "0"])
    }

    @Test func largest() throws {
        // badness = max(resident, footprint): Maps 400, Mail 320, Music 210, Messages 100,
        // Camera 90, Podcasts 64, Notes 50, Clock 30, whatever the state; Safari (260) last.
        let ranking = try Ranker.rank(mixedInput(), policy: JetsamPolicy(name: .largest))
        #expect(names(ranking) == ["Maps", "Mail", "Music", "Messages", "Camera", "Podcasts", "Notes", "Clock", "Safari"])
        #expect(ranking.order.last?.band == .foreground)
    }

    @Test func lru() throws {
        let ranking = try Ranker.rank(mixedInput(), policy: JetsamPolicy(name: .lru))
        #expect(names(ranking) == ["Clock", "Notes", "Podcasts", "Mail", "Maps", "Music", "Messages", "Camera", "Safari"])
    }

    @Test func cost() throws {
        // 250 MiB needed. Mail alone (300 MiB) costs 1.2 s × P 0.57 = 0.686 s; every set without
        // it costs more (Music + Notes + Clock: 1.52 s). Then the rest by expected cost per byte:
        // Clock (never active: P 0.01 × the prior 0.95 s, over 20 MiB), Notes, Podcasts, Camera,
        // Messages, Music, Maps; the foreground app last.
        let ranking = try Ranker.rank(mixedInput(), policy: JetsamPolicy(name: .cost))
        #expect(names(ranking) == ["Mail", "Clock", "Notes", "Podcasts", "Camera", "Messages", "Music", "Maps", "Safari"])
        #expect(ranking.order.map(\.band) == [.leastCostSet] + Array(repeating: .byCost, count: 7) + [.foreground])
        #expect(ranking.relaunchPriorSeconds == 0.95)
        #expect(ranking.relaunchPriorSource == "median of 8 measured relaunch times")
    }

    @Test(arguments: JetsamPolicyName.allCases)
    func foregroundIsLastUnderEveryPolicy(_ name: JetsamPolicyName) throws {
        let ranking = try Ranker.rank(mixedInput(level: .critical), policy: JetsamPolicy(name: name))
        #expect(ranking.order.last?.snapshot.name == "Safari")
        #expect(ranking.order.last?.band == .foreground)
    }

    @Test(arguments: JetsamPolicyName.allCases)
    func theInputOrderDoesNotShowThrough(_ name: JetsamPolicyName) throws {
        let policy = JetsamPolicy(name: name)
        let reference = try Ranker.rank(mixedInput(), policy: policy)
        var random = SplitMix64(seed: 0xC0FFEE)
        for _ in 0..<20 {
            var input = mixedInput()
            random.shuffle(&input.apps)
            #expect(try Ranker.rank(input, policy: policy) == reference)
            #expect(try Ranker.decide(input, policy: policy) == Ranker.decide(mixedInput(), policy: policy))
        }
    }

    @Test func emptyInput() throws {
        let input = RankingInput(apps: [], budgetBytes: 512 * mib, availableBytes: 10 * mib, targetAvailableBytes: 100 * mib, level: .critical)
        for policy in JetsamPolicy.all() {
            let ranking = try Ranker.rank(input, policy: policy)
            #expect(ranking.order.isEmpty)
            #expect(ranking.spared.isEmpty)
            let decision = try Ranker.decide(input, policy: policy)
            #expect(decision.victims.isEmpty)
            #expect(decision.neededBytes == 90 * mib)
            #expect(!decision.sufficient)
            #expect(decision.explanation.contains("no candidate to kill"))
        }
    }
}

@Suite("Ties end on footprint, then name bytes, then PID")
struct TieTests {
    @Test(arguments: JetsamPolicyName.allCases)
    func equalAppsAreOrderedByNameBytes(_ name: JetsamPolicyName) throws {
        // Same state, size, recency, relaunch: only the names differ. By UTF-8 bytes "B" (0x42)
        // sorts before "a" (0x61), and a decomposed "a\u{301}" (61 CC 81) before the precomposed
        // "á" (C3 A1), which Swift's String comparison would call equal.
        let apps = ["á", "a\u{301}", "a", "B"].enumerated().map { index, appName in
            app(appName, Int32(200 + index), .suspended, mib: 50, since: 100, activations: 1, relaunch: 1)
        }
        // Nothing needed, so that the cost policy's order is its cost-per-byte order too.
        let input = RankingInput(apps: apps, budgetBytes: 1024 * mib, availableBytes: 0, targetAvailableBytes: 0, level: .warning)
        let ranking = try Ranker.rank(input, policy: JetsamPolicy(name: name))
        #expect(ranking.order.map { Array($0.snapshot.name.utf8) } == [
            Array("B".utf8), Array("a".utf8), Array("a\u{301}".utf8), Array("á".utf8),
        ])
        #expect(ranking.order[0].explanation.contains("name sorts first by bytes (\"B\" < \"a\")"))
    }

    @Test func footprintBreaksATieInRecency() throws {
        let apps = [
            app("Small", 301, .suspended, mib: 10, since: 100, activations: 1),
            app("Large", 302, .suspended, mib: 90, since: 100, activations: 1),
        ]
        let input = RankingInput(apps: apps, budgetBytes: 1024 * mib, availableBytes: 0, targetAvailableBytes: 10 * mib, level: .warning)
        let ranking = try Ranker.rank(input, policy: JetsamPolicy(name: .lru))
        #expect(names(ranking) == ["Large", "Small"])
        #expect(ranking.order[0].explanation.contains("same band, both active 100.0 s ago, larger footprint (90.0 MiB > 10.0 MiB)"))
    }

    @Test func bytesThatRoundAlikeAreShownExactly() throws {
        let apps = [
            JetsamAppSnapshot(name: "A", pid: 1, state: .suspended, footprintBytes: 100 * mib + 1),
            JetsamAppSnapshot(name: "B", pid: 2, state: .suspended, footprintBytes: 100 * mib),
        ]
        let input = RankingInput(apps: apps, budgetBytes: 1024 * mib, availableBytes: 0, targetAvailableBytes: 0, level: .normal)
        let ranking = try Ranker.rank(input)
        #expect(names(ranking) == ["A", "B"])
        #expect(ranking.order[0].explanation.contains("larger footprint (104857601 B > 104857600 B)"))
    }
}

@Suite("Recency: an app being launched or resumed is in use, an app never active was used at its launch")
struct RecencyTests {
    /// A device in the middle of a switch: Mail is being launched (inactive, never active, its
    /// process a second old), Maps is being resumed (inactive, last active 20 minutes ago),
    /// Notes and Clock sit in the background, Safari is in the foreground.
    func switching() -> RankingInput {
        var mail = app("Mail", 201, .inactive, mib: 40)
        mail.secondsSinceLaunch = 1
        var maps = app("Maps", 202, .inactive, mib: 60, since: 1200, activations: 3)
        maps.secondsSinceLaunch = 3000
        var notes = app("Notes", 203, .suspended, mib: 30, since: 300, activations: 2)
        notes.secondsSinceLaunch = 3000
        var clock = app("Clock", 204, .backgroundRunning, mib: 20)
        clock.secondsSinceLaunch = 600       // launched in the background, never active
        var safari = app("Safari", 205, .active, mib: 80, since: 0, activations: 9)
        safari.secondsSinceLaunch = 4000
        return RankingInput(apps: [mail, maps, notes, clock, safari], budgetBytes: 512 * mib, availableBytes: 10 * mib,
                            targetAvailableBytes: 100 * mib, level: .critical)
    }

    @Test func lruTakesTheAppsInTheBackgroundBeforeTheAppsComingToTheForeground() throws {
        let ranking = try Ranker.rank(switching(), policy: JetsamPolicy(name: .lru))
        // Clock (launched 600 s ago, never active), Notes (active 300 s ago); then the two apps
        // coming to the foreground, in use now, by size; Safari last.
        #expect(names(ranking) == ["Clock", "Notes", "Maps", "Mail", "Safari"])
        let clock = try #require(ranking.order.first)
        #expect(clock.explanation.contains("less recently used (600.0 s ago vs 300.0 s ago: launched, never active vs last active)"))
        #expect(clock.factors.contains { $0.name == "since used" && $0.detail.contains("launched 600.0 s ago, never active") })
        let maps = ranking.order[2]
        #expect(maps.factors.contains { $0.name == "since used" && $0.detail.contains("in the foreground (inactive): in use now") })
        // The app being launched is not the first to die, as it would be if "never active"
        // counted as least recent: its decision takes Clock first.
        let decision = try Ranker.decide(switching(), policy: JetsamPolicy(name: .lru))
        #expect(decision.victims.first?.snapshot.name == "Clock")
        #expect(!names(decision).contains("Mail"))
    }

    @Test func xnuAndLmkdOrderNeverActiveAppsByTheirLaunch() throws {
        var input = switching()
        // Two suspended apps never active: the one launched longer ago entered its band first.
        var old = app("Old", 206, .suspended, mib: 10)
        old.secondsSinceLaunch = 900
        var young = app("Young", 207, .suspended, mib: 50)
        young.secondsSinceLaunch = 5
        input.apps += [old, young]
        for name in [JetsamPolicyName.xnu, .lmkd] {
            let ranking = try Ranker.rank(input, policy: JetsamPolicy(name: name))
            #expect(Array(names(ranking).prefix(3)) == ["Old", "Notes", "Young"], "\(name)")
        }
    }

    @Test func withoutALaunchTimeANeverActiveAppIsTheLeastRecent() throws {
        // Episodes recorded before `secondsSinceLaunch` existed replay as they were decided.
        let apps = [
            app("Recorded", 301, .suspended, mib: 10),
            app("Used", 302, .suspended, mib: 90, since: 5000, activations: 1),
        ]
        let input = RankingInput(apps: apps, budgetBytes: 1024 * mib, availableBytes: 0, targetAvailableBytes: 10 * mib, level: .warning)
        let ranking = try Ranker.rank(input, policy: JetsamPolicy(name: .lru))
        #expect(names(ranking) == ["Recorded", "Used"])
        #expect(ranking.order[0].explanation.contains("never active, while Used was active 5000.0 s ago"))
    }

    @Test func costCountsAnAppComingToTheForegroundAsInUse() throws {
        // 30 MiB needed. Mail, being launched, has never been active: scored as never used
        // (P 0.01) it would be the cheapest way to free them (40 MiB for 0.0095 s); in use now
        // (P 0.67) it costs 0.63 s, more than Notes (30 MiB, active 300 s ago: P 0.6, 0.57 s).
        var input = switching()
        input.targetAvailableBytes = 40 * mib
        let decision = try Ranker.decide(input, policy: JetsamPolicy(name: .cost))
        #expect(names(decision) == ["Notes"])
        // The explanation reads the estimate as the policy does.
        let ranking = try Ranker.rank(input, policy: JetsamPolicy(name: .cost))
        let mail = try #require(ranking.order.first { $0.snapshot.name == "Mail" })
        let reuse = try #require(mail.factors.first { $0.name == "reuse probability" })
        #expect(reuse.detail.hasPrefix("in the foreground (inactive): in use now, g = 0"), "\(reuse.detail)")
    }

    @Test func aLaunchTimeThatIsNotANumberSparesTheApp() throws {
        var input = switching()
        input.apps[3].secondsSinceLaunch = -.infinity
        let ranking = try Ranker.rank(input, policy: JetsamPolicy(name: .lru))
        #expect(!names(ranking).contains("Clock"))
        #expect(ranking.spared.contains { $0.snapshot.name == "Clock" && $0.reason == .invalid })
    }
}
