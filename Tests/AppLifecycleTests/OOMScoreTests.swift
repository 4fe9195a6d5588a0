import MemPressureLifecycle
import Glibc
import MemPressureLifecycleProtocol
import MemPressureSystem
import Testing
import MemPressureTestSupport

@Suite("every process of an app carries the oom_score_adj of its state", .serialized)
struct OOMScoreTests {
    /// Bands whose every value differs from the 0 a process inherits, so that each check tells
    /// the supervisor's write from no write at all.
    static func bands(highMemoryBytes: UInt64?) -> OOMScoreBands {
        var b = OOMScoreBands()
        b.active = 50
        b.inactive = 150
        b.backgroundRunningLowMemory = 300
        b.suspendedLowMemory = 500
        b.backgroundRunningHighMemory = 700
        b.suspendedHighMemory = 900
        b.highMemoryBytes = highMemoryBytes
        return b
    }

    /// The main process's and the helper's values, as the kernel holds them.
    static func scores(_ pids: [Int32]) -> [Int32?] { pids.map { OOMScore.read(pid: $0) } }

    @Test("active, suspended (low and high memory) and active again: the main process and a helper that left the process tree both follow; the view says the same", arguments: AppGroupTests.containments)
    func followsState(_ containment: AppContainment) async throws {
        // High memory from 1 byte: every app with a reading is high-memory.
        for (highMemory, suspendedScore) in [(UInt64?.some(1), Int32(900)), (UInt64?.some(1 << 40), Int32(500))] {
            let s = try Supervisor(configuration: supervisorConfiguration {
                $0.containment = containment
                if containment == .cgroup { $0.budgetBytes = 64 << 20 }
                $0.terminateGrace = 0.2
                $0.oomScoreBands = Self.bands(highMemoryBytes: highMemory)
            })
            try await withCleanup({ await s.shutdown() }) {
                try await s.register(AppSpec(name: "A", command: doubleForking, client: false))
                try await s.activate("A")
                let main = try #require(try await s.pid(of: "A"))
                let helper = try #require(try await helpers(of: s, "A").first)
                // Forked before the app became active (written) or after (inherited): 50 either way.
                #expect(Self.scores([main, helper.pid]) == [50, 50])
                #expect(await s.view(of: "A")?.oomScoreAdj == 50)
                try await s.background("A")
                try await s.waitForState("A", .suspended, timeout: 20)
                #expect(Self.scores([main, helper.pid]) == [suspendedScore, suspendedScore], "suspended, high-memory line \(highMemory.map(String.init) ?? "-")")
                #expect(await s.view(of: "A")?.oomScoreAdj == suspendedScore)
                // Lowered again on resume (an unprivileged supervisor may lower it to 0 too).
                try await s.activate("A")
                #expect(Self.scores([main, helper.pid]) == [50, 50])
                let log = await s.log
                #expect(!log.contains { $0.kind == .error }, "\(log.filter { $0.kind == .error })")
                try await s.terminate("A")
            }
        }
    }

    @Test("without bands the supervisor leaves the value the app inherited")
    func noBands() async throws {
        let s = try Supervisor(configuration: supervisorConfiguration {
            $0.oomScoreBands = nil
            $0.terminateGrace = 0.2
        })
        let inherited = try #require(OOMScore.read(pid: getpid()))
        try await withCleanup({ await s.shutdown() }) {
            try await s.register(AppSpec(name: "P", command: ["/bin/sleep", "60"], client: false))
            try await s.activate("P")
            try await s.background("P")
            let pid = try #require(try await s.pid(of: "P"))
            #expect(OOMScore.read(pid: pid) == inherited)
            #expect(await s.view(of: "P")?.oomScoreAdj == nil)
            try await s.terminate("P")
        }
    }

    @Test("the table: the iOS kill order read backwards, split at the high-memory line; bands out of range or out of order are refused")
    func table() throws {
        let b = OOMScoreBands()
        let line = b.highMemoryLine(budgetBytes: 800 << 20)
        #expect(line == 200 << 20, "a quarter of the budget, jetsam's default line")
        let order: [(LifecycleState, UInt64?)] = [(.active, 0), (.inactive, 0), (.backgroundRunning, 1), (.suspended, 1), (.backgroundRunning, line), (.suspended, line)]
        let scores = order.map { b.score(for: $0.0, footprintBytes: $0.1, highMemoryLine: line)! }
        #expect(scores == [0, 100, 300, 500, 700, 900])
        #expect(b.score(for: .notRunning, footprintBytes: 0, highMemoryLine: line) == nil)
        #expect(b.score(for: .suspended, footprintBytes: nil, highMemoryLine: line) == 500, "no reading yet: low memory")
        var bad = b
        bad.suspendedHighMemory = 1001
        #expect(throws: ConfigurationError.self) { try bad.validate() }
        bad = b
        bad.active = 600
        #expect(throws: ConfigurationError.self) { try bad.validate() }
        var c = SupervisorConfiguration()
        c.oomScoreBands = bad
        #expect(throws: SupervisorError.self) { _ = try Supervisor(configuration: c) }
    }
}
