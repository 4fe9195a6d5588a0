import FoundationEssentials
import Testing
import MemPressureTestSupport

/// `cache simulate` must give the same result for the same trace, capacity and seed in any
/// process: a simulator whose hit counts change from run to run cannot be cited.
@Suite("cache simulate is deterministic")
struct SimulateDeterminismTests {
    struct Report: Decodable { var results: [Row] }
    struct Row: Decodable, Equatable { var policy: String; var requests: Int; var hits: Int; var hitBytes: Int }

    /// The rows of one `cache simulate --json` run, in a process of its own.
    func simulate(_ arguments: [String]) async throws -> [Row] {
        let result = try await runMempressure(["cache", "simulate"] + arguments + ["--json"])
        #expect(result.status == 0, "\(result.standardError)")
        return try JSONDecoder().decode(Report.self, from: Data(result.standardOutput.utf8)).results
    }

    @Test("every policy's hits are identical in two processes", arguments: [
        ["--zipf", "1.0", "--seed", "7", "--policy", "all", "--capacity", "10%", "--requests", "200000"],
        ["--zipf", "1.0", "--seed", "7", "--policy", "all", "--capacity", "10%", "--requests", "200000", "--capacity-unit", "bytes", "--sizes", "100-10000"],
    ])
    func twoProcesses(arguments: [String]) async throws {
        let first = try await simulate(arguments)
        let second = try await simulate(arguments)
        #expect(first.map(\.policy) == ["lru", "sieve", "s3fifo", "tinylfu"])
        #expect(first.allSatisfy { $0.requests == 200_000 && $0.hits > 0 })
        for (a, b) in zip(first, second) {
            #expect(a == b, "\(a.policy): \(a.hits) hits in one process, \(b.hits) in another")
        }
    }
}
