import MemPressureJetsam
import MemPressureLifecycleProtocol
import MemPressureValues
import Testing

@Suite("Who is never ranked, and the foreground rule")
struct SparingTests {
    @Test(arguments: JetsamPolicyName.allCases)
    func protectedAndNotRunningAreSpared(_ name: JetsamPolicyName) throws {
        let ranking = try Ranker.rank(mixedInput(level: .critical), policy: JetsamPolicy(name: name))
        #expect(!names(ranking).contains("Photos"))
        #expect(!names(ranking).contains("Weather"))
        #expect(ranking.spared.map(\.snapshot.name) == ["Photos", "Weather"])
        #expect(ranking.spared.map(\.reason) == [.protected, .notRunning])
        // Even when every other app together is not enough and pressure is critical.
        let decision = try Ranker.decide(mixedInput(level: .critical, available: 0, target: 2000, budget: 2048), policy: JetsamPolicy(name: name))
        #expect(!names(decision).contains("Photos"))
        #expect(!names(decision).contains("Weather"))
        #expect(!decision.sufficient)
    }

    @Test func staleSamplesAreSpared() throws {
        var input = mixedInput()
        input.apps[0].sampleAgeSeconds = 2.5  // Mail: older than the default 2 s
        input.apps[1].sampleAgeSeconds = 2.0  // Maps: exactly the limit is still fresh
        let ranking = try Ranker.rank(input)
        #expect(!names(ranking).contains("Mail"))
        #expect(names(ranking).contains("Maps"))
        let mail = try #require(ranking.spared.first { $0.snapshot.name == "Mail" })
        #expect(mail.reason == .staleSample)
        #expect(mail.field == "sampleAgeSeconds")
        #expect(mail.explanation.contains("no fresh memory reading"))
        #expect(mail.explanation.contains("never kill on stale data"))
        // The decision passes over it: Maps and Music (150 + 200 MiB) instead of Mail.
        #expect(names(try Ranker.decide(input)) == ["Maps", "Music"])
        // A policy that allows older readings ranks it again.
        var lenient = JetsamPolicy.default
        lenient.maxSampleAgeSeconds = 5
        #expect(names(try Ranker.decide(input, policy: lenient)) == ["Mail"])
    }

    @Test func aStaleForegroundAppIsSparedToo() throws {
        var input = mixedInput(level: .critical, available: 0, target: 1024)
        input.apps[8].sampleAgeSeconds = 10  // Safari
        let decision = try Ranker.decide(input)
        #expect(!names(decision).contains("Safari"))
        #expect(decision.spared.contains { $0.snapshot.name == "Safari" && $0.reason == .staleSample })
    }

    @Test func foregroundIsNotTakenBelowCritical() throws {
        // All the others together free 950 MiB; 1000 MiB needed.
        let input = mixedInput(level: .warning, available: 0, target: 1000)
        let decision = try Ranker.decide(input)
        #expect(names(decision) == ["Mail", "Maps", "Music", "Notes", "Clock", "Podcasts", "Messages", "Camera"])
        #expect(decision.expectedFreedBytes == 950 * mib)
        #expect(!decision.sufficient)
        let safari = try #require(decision.spared.first { $0.snapshot.name == "Safari" })
        #expect(safari.reason == .foregroundNotCritical)
        #expect(decision.explanation.contains("the foreground app Safari spared: pressure is warning, not critical; not sufficient"))
        // The ranking itself still lists it, last.
        #expect(try Ranker.rank(input).order.last?.snapshot.name == "Safari")
    }

    @Test func foregroundIsTakenLastAtCriticalWhenNothingElseSuffices() throws {
        let decision = try Ranker.decide(mixedInput(level: .critical, available: 0, target: 1000))
        #expect(names(decision) == ["Mail", "Maps", "Music", "Notes", "Clock", "Podcasts", "Messages", "Camera", "Safari"])
        #expect(decision.sufficient)
        #expect(decision.victims.last?.rank == 9)
        #expect(decision.explanation.contains("pressure is critical: the foreground app Safari (rank 9, 250.0 MiB) taken last"))
        #expect(!decision.spared.contains { $0.reason == .foregroundNotCritical })
    }

    @Test(arguments: JetsamPolicyName.allCases)
    func foregroundIsNotTakenAtCriticalWhenTheOthersSuffice(_ name: JetsamPolicyName) throws {
        let decision = try Ranker.decide(mixedInput(level: .critical, available: 0, target: 900), policy: JetsamPolicy(name: name))
        #expect(decision.sufficient)
        #expect(!names(decision).contains("Safari"))
    }

    @Test func theCostPolicyAlsoKeepsTheForegroundForLast() throws {
        // Safari alone (250 MiB) would cover 250 MiB, but it is the foreground app.
        let decision = try Ranker.decide(mixedInput(level: .critical), policy: JetsamPolicy(name: .cost))
        #expect(names(decision) == ["Mail"])
    }

    @Test func brokenReadingsAreSparedAsInvalid() throws {
        var input = mixedInput()
        input.apps[0].secondsInState = .nan                 // Mail
        input.apps[1].relaunchSeconds = -1                  // Maps
        input.apps[2].activations = -3                      // Notes
        input.apps[4].secondsSinceActive = nil              // Music: 10 activations, no recency
        input.apps[5].sampleAgeSeconds = -.infinity         // Podcasts
        let ranking = try Ranker.rank(input)
        #expect(names(ranking) == ["Clock", "Messages", "Camera", "Safari"])
        let invalid = ranking.spared.filter { $0.reason == .invalid }
        #expect(invalid.map(\.snapshot.name) == ["Mail", "Maps", "Music", "Notes", "Podcasts"])
        #expect(invalid.map(\.field) == ["secondsInState", "relaunchSeconds", "secondsSinceActive", "activations", "sampleAgeSeconds"])
        #expect(invalid.allSatisfy { $0.explanation.contains("never ranked on partial data") })
    }

    @Test func contradictionsFromSamplingRacesAreRepaired() throws {
        var input = mixedInput()
        input.apps[0].lifetimeMaxFootprintBytes = 100 * mib  // Mail: below its 300 MiB footprint
        input.apps[8].secondsSinceActive = 4                 // Safari is active: 0
        input.apps[3].secondsSinceActive = 50                // Clock: active once, 0 activations
        let ranking = try Ranker.rank(input)
        let mail = try #require(ranking.order.first { $0.snapshot.name == "Mail" })
        #expect(mail.snapshot.lifetimeMaxFootprintBytes == 300 * mib)
        #expect(mail.factors.contains { $0.name == "repaired" && $0.value == "lifetimeMaxFootprintBytes" })
        let safari = try #require(ranking.order.first { $0.snapshot.name == "Safari" })
        #expect(safari.snapshot.secondsSinceActive == 0)
        #expect(safari.factors.contains { $0.name == "repaired" && $0.value == "secondsSinceActive" })
        let clock = try #require(ranking.order.first { $0.snapshot.name == "Clock" })
        #expect(clock.snapshot.activations == 1)
    }

    @Test func aBudgetSmallerThanOneAppIsRankedAndSaidSo() throws {
        let apps = [
            app("Huge", 401, .suspended, mib: 300, since: 10, activations: 1),
            app("Tiny", 402, .suspended, mib: 5, since: 10, activations: 1),
        ]
        let input = RankingInput(apps: apps, budgetBytes: 256 * mib, availableBytes: 0, targetAvailableBytes: 64 * mib, level: .critical)
        let decision = try Ranker.decide(input)
        #expect(names(decision) == ["Huge"])
        let huge = decision.victims[0]
        #expect(huge.factors.contains { $0.name == "budget" && $0.value == "exceeded" })
        #expect(huge.explanation.contains("exceeds the whole budget 256.0 MiB"))
    }
}

@Suite("Inputs that are refused, with typed errors")
struct RankingErrorTests {
    @Test func unsupportedFormatVersion() {
        var input = mixedInput()
        input.formatVersion = 2
        #expect(throws: RankingError.unsupportedFormatVersion(2)) { try Ranker.rank(input) }
        #expect(throws: RankingError.unsupportedFormatVersion(2)) { try Ranker.decide(input) }
        #expect(throws: RankingError.unsupportedFormatVersion(2)) { try JetsamReplay(input) }
    }

    @Test func duplicatePID() {
        var input = mixedInput()
        input.apps[3].pid = 101  // Clock takes Mail's PID
        #expect(throws: RankingError.duplicatePID(101)) { try Ranker.decide(input) }
    }

    @Test func notRunningAppsMayShareAnOldPID() throws {
        var input = mixedInput()
        input.apps.append(app("Stocks", 0, .notRunning, mib: 0))
        input.apps.append(app("Books", 101, .notRunning, mib: 0))  // Mail's PID, recorded long ago
        #expect(try Ranker.rank(input).spared.count == 4)
    }

    @Test func duplicateName() {
        var input = mixedInput()
        input.apps[3].name = "Mail"
        #expect(throws: RankingError.duplicateName("Mail")) { try Ranker.rank(input) }
    }

    @Test func brokenIdentity() {
        var input = mixedInput()
        input.apps[3].pid = 0  // Clock is suspended: it has a process
        #expect(throws: RankingError.invalidField(app: "Clock", field: "pid", reason: "is 0, but a suspended app has a process")) {
            try Ranker.rank(input)
        }
        input = mixedInput()
        input.apps[3].pid = -1
        do {
            let error = #expect(throws: RankingError.self) { try Ranker.decide(input) }
            #expect(error?.app == "Clock")
            #expect(error?.field == "pid")
            #expect(error?.kind == "invalidField")
        }
        input = mixedInput()
        input.apps[3].name = ""
        do {
            let error = #expect(throws: RankingError.self) { try Ranker.decide(input) }
            #expect(error?.field == "name")
            #expect(error?.kind == "invalidField")
        }
    }

    @Test func contradictoryMemoryFigures() {
        let budget = 1024 * mib
        var input = mixedInput()
        input.budgetBytes = 0
        input.availableBytes = 0
        input.targetAvailableBytes = 0
        #expect(throws: RankingError.invalidInput(field: "budgetBytes", reason: "is 0")) { try Ranker.rank(input) }
        input = mixedInput()
        input.availableBytes = budget + 1
        do {
            let error = #expect(throws: RankingError.self) { try Ranker.rank(input) }
            #expect(error?.field == "availableBytes")
            #expect(error?.kind == "invalidInput")
        }
        input = mixedInput()
        input.targetAvailableBytes = budget + 1
        do {
            let error = #expect(throws: RankingError.self) { try Ranker.rank(input) }
            #expect(error?.field == "targetAvailableBytes")
            #expect(error?.kind == "invalidInput")
        }
    }

    @Test func policyOutOfRange() {
        var policy = JetsamPolicy(name: .ios, highMemory: .shareOfBudget(1.5))
        do {
            let error = #expect(throws: RankingError.self) { try Ranker.rank(mixedInput(), policy: policy) }
            #expect(error?.field == "highMemory.shareOfBudget")
            #expect(error?.kind == "invalidPolicy")
        }
        policy = JetsamPolicy(name: .cost, exactSearchLimit: 30)
        do {
            let error = #expect(throws: RankingError.self) { try Ranker.decide(mixedInput(), policy: policy) }
            #expect(error?.field == "exactSearchLimit")
            #expect(error?.kind == "invalidPolicy")
        }
        policy = JetsamPolicy(name: .cost, reuseHorizonSeconds: .nan)
        do {
            let error = #expect(throws: RankingError.self) { try Ranker.decide(mixedInput(), policy: policy) }
            #expect(error?.field == "reuseHorizonSeconds")
            #expect(error?.kind == "invalidPolicy")
        }
    }

    @Test func errorsDescribeThemselves() {
        #expect(RankingError.duplicatePID(7).description == "two apps have PID 7: a kill would be ambiguous")
        #expect(RankingError.unsupportedFormatVersion(9).description.contains("format version 9"))
    }
}
