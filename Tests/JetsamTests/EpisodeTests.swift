// The hindsight judgment of an episode's kills, on an episode built by hand (its memberwise
// initializer is internal: the killer builds episodes, users read them).
import MemPressureLifecycle
@testable import MemPressureJetsam
import MemPressureLifecycleProtocol
import MemPressureSystem
import MemPressureMonitor
import MemPressureValues
import Testing

@Suite("jetsam episode reports")
struct EpisodeTests {
    @Test("needed in hindsight: from the last kill back, kills whose bytes the end could spare were not needed")
    func neededInHindsight() throws {
        func victim(_ name: String, _ reclaimed: UInt64, reason: KillReason = .vmPageShortage) -> JetsamEpisode.Victim {
            JetsamEpisode.Victim(
                name: name, pid: 1, state: .suspended, reason: reason, rank: 1, band: .suspendedHigh, policy: .ios, footprintBytes: reclaimed,
                purgeableBytes: 0, secondsFromEvent: 0, secondsFromLatestEvent: 0, reclaimedBytes: reclaimed, memoryReleased: true, exited: true,
                needed: true, explanation: "")
        }
        let status = MemoryStatus(budgetBytes: 1000 << 20, usedBytes: 0, availableBytes: 0, source: "test")
        var ep = JetsamEpisode(
            number: 1, startedAt: Timestamp.now(), start: 0, end: 1,
            trigger: .init(level: .critical, source: .jetsam, detail: "", t: 0), policy: .default, memoryBefore: status,
            memoryAfter: MemoryStatus(budgetBytes: 1000 << 20, usedBytes: 550 << 20, availableBytes: 450 << 20, source: "test"),
            targetAvailableBytes: 300 << 20, largestApp: nil, apps: [], timeline: [],
            victims: [victim("A", 200 << 20), victim("B", 100 << 20), victim("C", 40 << 20), victim("L", 500 << 20, reason: .perProcessLimit)],
            freezes: [], decisions: [], kernelOOMKillsBefore: 0, kernelOOMKillsAfter: 0, outcome: .stillShort)
        // 150 MiB above the target at the end: C (40) and B (100) could have been spared
        // together, A (200) not; a per-process-limit kill is needed by its limit.
        ep.markNeeded()
        #expect(ep.victims.map(\.needed) == [true, false, false, true])
        ep.memoryAfter?.availableBytes = 300 << 20
        ep.markNeeded()
        #expect(ep.victims.map(\.needed) == [true, true, true, true], "ending just at the target, every kill was needed")
    }
}
