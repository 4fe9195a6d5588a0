import MemPressureLifecycle
import CoreMetrics
import MemPressureJetsam
import MemPressureLifecycleProtocol
import MetricsTestKit
import Testing
import MemPressureTestSupport

/// Jetsam's kills in the supervisor's metrics (`mempressure_jetsam_kills_total{app,reason}`):
/// counted where the supervisor signals a kill with a reason, whichever policy decided it. The
/// supervisor takes a factory of this test's own (`withMetricsFactory`): nothing process-global.
@Suite("jetsam metrics", .serialized, .enabled(if: canBudget, "needs root and a cgroup memory controller to give the apps a device budget"))
struct JetsamMetricsTests {
    @Test("a kill by the killer counts its reason: an app over its inactive limit, per-process-limit; no crash")
    func perProcessLimit() async throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let m = TestMetrics()
        var j = JetsamConfiguration(policy: .ios)
        j.limits = ["Hard": .init(activeBytes: 512 << 20, inactiveBytes: 16 << 20)]
        j.holdKernelOOMKiller = false
        let (s, _) = try withMetricsFactory(m) { try supervisor(budgetMB: 512, j) }
        let a = [("app", "Hard")]
        func kills(_ reason: KillReason) throws -> Int64 {
            try m.expectCounter(SupervisorMetrics.jetsamKills, a + [("reason", reason.rawValue)]).totalValue
        }
        try await withCleanup({ await s.shutdown() }) {
            try await s.register(model(dir, "Hard", dirtyMB: 30))
            let events = await s.logStream()
            #expect(try kills(.perProcessLimit) == 0)
            try await s.activate("Hard")  // within its active limit
            try await s.background("Hard")  // over its inactive limit once suspended
            let kill = await first(of: events, within: 30) { $0.kind == .jetsam && $0.app == "Hard" }
            guard case .policy(.kill(let k)) = kill?.payload else {
                Issue.record("no kill of Hard: \(String(describing: kill))")
                return
            }
            #expect(k.reason == .perProcessLimit)
            try await s.waitForState("Hard", .notRunning, timeout: 10)
            #expect(try kills(.perProcessLimit) == 1)
            #expect(try kills(.vmPageShortage) == 0)
            #expect(try m.expectCounter(SupervisorMetrics.crashes, a).totalValue == 0)
            #expect(try m.expectCounter(SupervisorMetrics.launches, a).totalValue == 1)
        }
    }
}
