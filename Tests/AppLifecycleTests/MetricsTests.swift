import MemPressureLifecycle
import CoreMetrics
import MemPressureLifecycleProtocol
import MemPressureSystem
import MetricsTestKit
import Synchronization
import Testing
import MemPressureTestSupport

/// TestMetrics, with floating-point counters of their own: TestMetrics leaves them to
/// swift-metrics' default, which rounds each increment down to whole units (and a test's states
/// last less than a second). Everything else goes to `metrics`.
final class FloatingTestMetrics: MetricsFactory {
    let metrics = TestMetrics()
    private let sums = Sums()

    final class Sums: Sendable {
        let values = Mutex<[String: Double]>([:])
    }

    final class Handler: FloatingPointCounterHandler {
        let key: String
        let sums: Sums
        init(key: String, sums: Sums) {
            self.key = key
            self.sums = sums
        }
        func increment(by amount: Double) { sums.values.withLock { $0[key, default: 0] += amount } }
        func reset() {}
    }

    static func key(_ label: String, _ dimensions: [(String, String)]) -> String {
        ([label] + dimensions.sorted { $0.0 < $1.0 }.map { "\($0.0)=\($0.1)" }).joined(separator: ",")
    }

    /// The sum of a floating-point counter's increments (nil: never made).
    func floatingCounter(_ label: String, _ dimensions: [(String, String)]) -> Double? {
        sums.values.withLock { $0[Self.key(label, dimensions)] }
    }

    func makeFloatingPointCounter(label: String, dimensions: [(String, String)]) -> any FloatingPointCounterHandler {
        let key = Self.key(label, dimensions)
        sums.values.withLock { s in if s[key] == nil { s[key] = 0 } }
        return Handler(key: key, sums: sums)
    }

    func destroyFloatingPointCounter(_ handler: any FloatingPointCounterHandler) {}
    func makeCounter(label: String, dimensions: [(String, String)]) -> any CounterHandler { metrics.makeCounter(label: label, dimensions: dimensions) }
    func makeRecorder(label: String, dimensions: [(String, String)], aggregate: Bool) -> any RecorderHandler {
        metrics.makeRecorder(label: label, dimensions: dimensions, aggregate: aggregate)
    }
    func makeTimer(label: String, dimensions: [(String, String)]) -> any TimerHandler { metrics.makeTimer(label: label, dimensions: dimensions) }
    func destroyCounter(_ handler: any CounterHandler) { metrics.destroyCounter(handler) }
    func destroyRecorder(_ handler: any RecorderHandler) { metrics.destroyRecorder(handler) }
    func destroyTimer(_ handler: any TimerHandler) { metrics.destroyTimer(handler) }
}

extension FloatingTestMetrics: @unchecked Sendable {}  // `metrics` and `sums` lock themselves

/// The state set: which of the app's five state gauges read 1 (nil: one of them is missing).
func statesAtOne(_ m: TestMetrics, _ app: String) -> [String]? {
    var on: [String] = []
    for s in LifecycleState.allCases {
        let value: Double?
        do {
            value = try m.expectGauge(SupervisorMetrics.appState, [("app", app), ("state", s.rawValue)]).lastValue
        } catch {
            return nil
        }
        if value == 1 { on.append(s.rawValue) } else if value != 0 { return nil }
    }
    return on
}

func counter(_ m: TestMetrics, _ label: String, _ dimensions: [(String, String)]) -> Int64? {
    do {
        return try m.expectCounter(label, dimensions).totalValue
    } catch {
        return nil
    }
}

/// The supervisor's metrics through swift-metrics. Each test binds a factory of its own to the
/// supervisor it makes (`withMetricsFactory`): nothing process-global, so these run beside the
/// others.
@Suite("supervisor metrics")
struct SupervisorMetricsTests {
    @Test("a real app: one launch, the state set following its states, time to ready, seconds per state, warnings sent, a page-out, a kill by reason; the state set is gone after shutdown")
    func lifecycle() async throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let factory = FloatingTestMetrics()
        let m = factory.metrics
        let s = try withMetricsFactory(factory) { () throws(SupervisorError) -> Supervisor in try Supervisor(configuration: supervisorConfiguration()) }
        let a = [("app", "A")]
        var registered = 0.0, beforeRegistering = 0.0, closing = 0.0
        try await withCleanup({ await s.shutdown() }) {
            beforeRegistering = await s.now()
            try await s.register(AppSpec(name: "A", command: workloadCommand(dir)))
            registered = await s.now()
            #expect(statesAtOne(m, "A") == ["notRunning"])
            #expect(counter(m, SupervisorMetrics.launches, a) == 0)

            try await s.activate("A")
            try await s.waitForReady("A")
            #expect(statesAtOne(m, "A") == ["active"])
            #expect(counter(m, SupervisorMetrics.launches, a) == 1)
            let timer = try m.expectTimer(SupervisorMetrics.timeToReady, a)
            let ready = try #require(await s.view(of: "A")?.launchToReadySeconds.first)
            #expect(timer.values == [Int64(ready * 1e9)], "launch to ready, in nanoseconds: \(ready) s")

            #expect(await s.warn(.all) == ["A"])
            #expect(counter(m, SupervisorMetrics.memoryWarnings, a) == 1)

            try await s.background("A")
            #expect(statesAtOne(m, "A") == ["suspended"])
            #expect(await s.warn(.all) == [], "a suspended app is not warned")
            #expect(counter(m, SupervisorMetrics.memoryWarnings, a) == 1)
            let pid = try #require(try await s.pid(of: "A"))
            _ = try await s.pageOut("A", pid: pid)
            #expect(counter(m, SupervisorMetrics.freezeDrys, a) == 1)

            _ = try await s.kill("A", pid: pid, reason: .vmPageShortage)
            #expect(await s.waitForExit("A", pid: pid, timeout: 10))
            #expect(statesAtOne(m, "A") == ["notRunning"])
            #expect(counter(m, SupervisorMetrics.jetsamKills, a + [("reason", "vm-pageshortage")]) == 1)
            #expect(counter(m, SupervisorMetrics.jetsamKills, a + [("reason", "per-process-limit")]) == 0)
            #expect(counter(m, SupervisorMetrics.crashes, a) == 0, "a kill with a reason is not a crash")

            closing = await s.now()
        }
        let closed = await s.now()
        // The state set no longer claims anything; the counters stay.
        #expect(m.recorders(label: SupervisorMetrics.appState).isEmpty)
        #expect(counter(m, SupervisorMetrics.launches, a) == 1)
        // Seconds per state: every state the app was in has some, and together they are the time
        // from its registration to the supervisor's close.
        var seconds: [String: Double] = [:]
        for state in LifecycleState.allCases {
            seconds[state.rawValue] = factory.floatingCounter(SupervisorMetrics.stateSeconds, a + [("state", state.rawValue)])
        }
        for state in ["notRunning", "inactive", "active", "backgroundRunning", "suspended"] {
            #expect((seconds[state] ?? 0) > 0, "\(state): \(seconds)")
        }
        let total = seconds.values.reduce(0, +)
        #expect(total >= closing - registered && total <= closed - beforeRegistering, "\(total) s in states; registered at \(registered), closed between \(closing) and \(closed)")
    }

    @Test("an app that exits by itself counts a crash; a second launch counts a second launch")
    func crash() async throws {
        let factory = TestMetrics()
        let s = try withMetricsFactory(factory) { () throws(SupervisorError) -> Supervisor in try Supervisor(configuration: supervisorConfiguration()) }
        let a = [("app", "P")]
        try await withCleanup({ await s.shutdown() }) {
            try await s.register(AppSpec(name: "P", command: protocolClientCommand(dieOn: "didBecomeActive")))
            try await s.launch("P")
            #expect(statesAtOne(factory, "P") == ["inactive"])
            await #expect(throws: SupervisorError.self) { try await s.activate("P") }
            try await s.waitForState("P", .notRunning, timeout: 10)
            #expect(counter(factory, SupervisorMetrics.crashes, a) == 1)
            #expect(statesAtOne(factory, "P") == ["notRunning"])
            try await s.launch("P")
            #expect(counter(factory, SupervisorMetrics.launches, a) == 2)
            #expect(counter(factory, SupervisorMetrics.crashes, a) == 1)
            // This client never reports ready: no time to ready.
            #expect(try factory.expectTimer(SupervisorMetrics.timeToReady, a).values.isEmpty)
        }
    }
}
