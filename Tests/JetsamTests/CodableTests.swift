import MemPressureLifecycle
import FoundationEssentials
import MemPressureJetsam
import MemPressureLifecycleProtocol
import MemPressureMonitor
import MemPressureValues
import Testing
import MemPressureTestSupport

func encode<T: Encodable>(_ value: T) throws -> Data {
    let encoder = JSONEncoder()
    encoder.outputFormatting = [.sortedKeys]
    return try encoder.encode(value)
}

func json<T: Encodable>(_ value: T) throws -> String {
    String(decoding: try encode(value), as: UTF8.self)
}

@Suite("Codable forms")
struct CodableTests {
    @Test func rankingInputRoundTrips() throws {
        var input = mixedInput(level: .critical)
        input.apps[0].relaunchSeconds = 0.123456789
        let decoded = try JSONDecoder().decode(RankingInput.self, from: encode(input))
        #expect(decoded == input)
        let text = try json(input)
        #expect(text.contains("\"level\":\"critical\""))
        #expect(text.contains("\"formatVersion\":1"))
        #expect(text.contains("\"state\":\"backgroundRunning\""))
    }

    @Test(arguments: JetsamPolicyName.allCases)
    func rankingAndDecisionRoundTrip(_ name: JetsamPolicyName) throws {
        let ranking = try Ranker.rank(mixedInput(), policy: JetsamPolicy(name: name))
        #expect(try JSONDecoder().decode(Ranking.self, from: encode(ranking)) == ranking)
        let decision = try Ranker.decide(mixedInput(level: .warning, available: 0, target: 1000), policy: JetsamPolicy(name: name))
        #expect(try JSONDecoder().decode(Decision.self, from: encode(decision)) == decision)
    }

    @Test func pressureLevelsAreWords() throws {
        // One `PressureLevel` (PressureValues), written as words. The integers the Pressure
        // module's level was once written as are read too (PressureTests checks that form).
        #expect(try json([PressureLevel.normal, .warning, .critical]) == "[\"normal\",\"warning\",\"critical\"]")
        #expect(throws: DecodingError.self) { try JSONDecoder().decode(PressureLevel.self, from: Data("\"severe\"".utf8)) }
    }

    @Test("an episode written before the level was one type decodes, replays, and writes the one form back")
    func anEpisodeOfTheEarlierFormatDecodes() throws {
        let episode = try JSONDecoder().decode(JetsamEpisode.self, from: Fixtures.readFile(Fixtures.directory + "/jetsam/episode-format1.json"))
        #expect(episode.formatVersion == 1 && episode.number == 1)
        #expect(episode.trigger.level == .warning && episode.trigger.source == .pressure("cgroup usage against its limit"))
        #expect(episode.outcome == .recovered(kills: 3))
        #expect(episode.victims.map(\.reason) == [.vmPageShortage, .vmPageShortage, .vmPageShortage])
        #expect(episode.victims.map(\.band) == [.suspendedHigh, .suspendedHigh, .backgroundHigh])
        #expect(episode.timeline.map(\.kind).filter { $0 == .kill }.count == 3)
        #expect(episode.trigger.wakeup == nil, "not said in that format")
        #expect(episode.memoryBefore.scope == .cgroup && episode.memoryAfter?.scope == .cgroup, "a working set's reading")
        #expect(episode.victims.map(\.name) == ["Photos", "Maps", "Music"])
        let inputs = episode.decisions.map(\.input)
        #expect(!inputs.isEmpty && inputs.allSatisfy { $0.level == .warning })
        // The recorded decisions run again (what `mempressure jetsam replay` does with the file),
        // and the first takes the recorded victim.
        let first = try Ranker.decide(inputs[0], policy: episode.policy)
        #expect(first.victims.first?.snapshot.name == episode.decisions[0].victim)
        // Written again (in its own format: the outcome in words), it reads back the same.
        #expect(try JSONDecoder().decode(JetsamEpisode.self, from: encode(episode)) == episode)
        #expect(try json(episode).contains("\"level\":\"warning\""))
        #expect(try json(episode).contains("\"outcome\":\"recovered after 3 kill(s)\""))
        // As format 2, the outcome is an object.
        var current = episode
        current.formatVersion = JetsamEpisode.currentFormatVersion
        #expect(try json(current).contains(#""outcome":{"kills":3,"result":"recovered","text":"recovered after 3 kill(s)"}"#))
        #expect(try JSONDecoder().decode(JetsamEpisode.self, from: encode(current)) == current)
    }

    @Test("a replay written before the level was one type decodes")
    func aReplayOfTheEarlierFormatDecodes() throws {
        // `mempressure jetsam replay --json`: each decision's replay is a `JetsamReplay`.
        struct File: Decodable {
            struct Decision: Decodable { var replay: JetsamReplay }
            var decisions: [Decision]
        }
        let file = try JSONDecoder().decode(File.self, from: Fixtures.readFile(Fixtures.directory + "/jetsam/replay-format1.json"))
        #expect(!file.decisions.isEmpty)
        #expect(file.decisions.allSatisfy { $0.replay.level == .warning && $0.replay.outcomes.count == JetsamPolicyName.allCases.count })
    }

    @Test func thresholdsAreReadable() throws {
        #expect(try json(HighMemoryThreshold.bytes(64 * mib)) == "{\"bytes\":67108864}")
        #expect(try json(HighMemoryThreshold.shareOfBudget(0.125)) == "{\"shareOfBudget\":0.125}")
        #expect(try JSONDecoder().decode(HighMemoryThreshold.self, from: Data("{\"bytes\":5}".utf8)) == .bytes(5))
        #expect(throws: DecodingError.self) {
            try JSONDecoder().decode(HighMemoryThreshold.self, from: Data("{\"bytes\":5,\"shareOfBudget\":0.5}".utf8))
        }
        #expect(throws: DecodingError.self) { try JSONDecoder().decode(HighMemoryThreshold.self, from: Data("{}".utf8)) }
    }

    @Test func aPolicyDocumentMayCarryOnlyItsName() throws {
        let policy = try JSONDecoder().decode(JetsamPolicy.self, from: Data("{\"name\":\"cost\"}".utf8))
        #expect(policy == JetsamPolicy(name: .cost))
        #expect(policy.maxSampleAgeSeconds == 2)
        #expect(policy.reuseHorizonSeconds == 300)
        #expect(policy.defaultRelaunchSeconds == 1)
        #expect(policy.exactSearchLimit == 20)
        let tuned = JetsamPolicy(name: .xnu, highMemory: .bytes(1), maxSampleAgeSeconds: 0.5)
        #expect(try JSONDecoder().decode(JetsamPolicy.self, from: encode(tuned)) == tuned)
        #expect(throws: DecodingError.self) { try JSONDecoder().decode(JetsamPolicy.self, from: Data("{\"name\":\"oom\"}".utf8)) }
    }

    @Test func aSnapshotRecordedBeforeTheLaunchTimeDecodes() throws {
        // An episode's input as recorded before `secondsSinceLaunch` existed.
        let old = #"{"activations":0,"footprintBytes":1048576,"isProtected":false,"lifetimeMaxFootprintBytes":1048576,"name":"Clock","pid":7,"purgeableBytes":0,"residentBytes":2097152,"sampleAgeSeconds":0.1,"secondsInState":10,"state":"suspended"}"#
        let app = try JSONDecoder().decode(JetsamAppSnapshot.self, from: Data(old.utf8))
        #expect(app.secondsSinceLaunch == nil && app.secondsSinceActive == nil && app.lastUseSeconds == nil)
        #expect(try json(app) == old, "and it writes the same back: nil fields are left out")
    }

    @Test func theJetsamSectionRefusesKeysItDoesNotKnow() throws {
        func decode(_ text: String) throws -> JetsamConfiguration { try JSONDecoder().decode(JetsamConfiguration.self, from: Data(text.utf8)) }
        #expect(try decode(#"{"policy": "xnu", "highMemoryBytes": 1}"#).highMemoryBytes == 1)
        for (text, key) in [
            (#"{"policy": "ios", "highMemoryByte": 1}"#, "highMemoryByte"),
            (#"{"zeta": 1, "alpha": 2, "policy": "ios"}"#, "alpha"),  // the first by name, whatever the order
            (#"{"limits": {"Maps": {"activeBytes": 1, "inactivBytes": 2}}}"#, "inactivBytes"),
        ] {
            do {
                _ = try decode(text)
                Issue.record("\(text) was accepted")
            } catch let DecodingError.dataCorrupted(context) {
                #expect(context.debugDescription.hasPrefix("unknown key '\(key)'"), "\(context.debugDescription)")
                #expect(context.codingPath.last?.stringValue == key)
            }
        }
    }
}
