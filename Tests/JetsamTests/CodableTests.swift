import FoundationEssentials
import Jetsam
import LifecycleProtocol
import Testing

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
        #expect(try json([PressureLevelValue.normal, .warning, .critical]) == "[\"normal\",\"warning\",\"critical\"]")
        #expect(PressureLevelValue.critical.rawValue == 2)
        #expect(throws: DecodingError.self) { try JSONDecoder().decode(PressureLevelValue.self, from: Data("\"severe\"".utf8)) }
        #expect(throws: DecodingError.self) { try JSONDecoder().decode(PressureLevelValue.self, from: Data("1".utf8)) }
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
}
