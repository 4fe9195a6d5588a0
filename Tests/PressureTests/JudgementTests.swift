import FoundationEssentials
import MemPressureSystem
@testable import MemPressureMonitor
import MemPressureValues
import Testing
import MemPressureTestSupport

/// The one judgement of memory (`PressureConfiguration.judge`): a cgroup's working set, the
/// machine's MemAvailable, a task waiting at the limit, PSI; and where a cgroup v1's usage
/// thresholds go for it.
@Suite("the judgement of memory")
struct JudgementTests {
    let c = PressureConfiguration()

    func cgroup(usedPercent: UInt64) -> MemoryStatus {
        MemoryStatus(budgetBytes: 100 << 20, usedBytes: usedPercent << 20, availableBytes: (100 - usedPercent) << 20, source: "test")
    }

    func machine(availablePercent: UInt64) -> MemoryStatus {
        MemoryStatus(
            budgetBytes: 100 << 20, usedBytes: (100 - availablePercent) << 20, availableBytes: availablePercent << 20,
            source: "MemAvailable of /proc/meminfo", scope: .machine)
    }

    @Test("a task waiting at the limit is critical whatever the figures say; the detail says which part decided")
    func taskAtTheLimit() {
        let low = cgroup(usedPercent: 30)
        #expect(c.judge(MemoryEvidence(status: low)).level == .normal)
        let waiting = c.judge(MemoryEvidence(status: low, taskWaitsAtLimit: true))
        #expect(waiting == MemoryJudgement(level: .critical, detail: "a task waits at the limit (under_oom)"))
        #expect(c.judge(MemoryEvidence(status: cgroup(usedPercent: 85))) == MemoryJudgement(level: .warning, detail: "working set 85.00 MiB of 100.00 MiB (85.0%)"))
        #expect(c.judge(MemoryEvidence(status: cgroup(usedPercent: 95))).level == .critical)
        #expect(c.judge(MemoryEvidence()).level == .normal, "nothing known: normal")
    }

    @Test("the machine is judged by MemAvailable's own thresholds, not the cgroup's")
    func machineScope() {
        // 80% used: warning for a cgroup, normal for the machine (MemAvailable 20% > 15%).
        #expect(c.judge(MemoryEvidence(status: cgroup(usedPercent: 80))).level == .warning)
        #expect(c.judge(MemoryEvidence(status: machine(availablePercent: 20))).level == .normal)
        #expect(c.judge(MemoryEvidence(status: machine(availablePercent: 15))) == MemoryJudgement(level: .warning, detail: "MemAvailable 15.00 MiB of 100.00 MiB (15.0%)"))
        #expect(c.judge(MemoryEvidence(status: machine(availablePercent: 5))).level == .critical)
        // Hysteresis the other way round: available memory leaves warning only 5 points above.
        #expect(c.judge(MemoryEvidence(status: machine(availablePercent: 18)), current: .warning).level == .warning)
        #expect(c.judge(MemoryEvidence(status: machine(availablePercent: 21)), current: .warning).level == .normal)
    }

    @Test("PSI: avg10 against the share the monitor's triggers fire at (70 ms and 100 ms of every second)")
    func stall() throws {
        func fixture(_ name: String) throws -> PressureStall {
            try #require(try Fixtures.bytes(Fixtures.directory + "/psi/\(name)").withUnsafeBytes { PressureStall.parse($0) })
        }
        #expect(c.judge(MemoryEvidence(stall: try fixture("memory-idle"))).level == .normal)
        // Thrashing: some 20.19% (warning from 7%), full 4.97% (critical only from 10%).
        #expect(c.judge(MemoryEvidence(stall: try fixture("memory-thrashing"))) == MemoryJudgement(level: .warning, detail: "PSI some avg10 20.19% (warning from 7.00%)"))
        var severe = try fixture("memory-thrashing")
        severe.full?.avg10 = 12.5
        #expect(c.judge(MemoryEvidence(stall: severe)).level == .critical)
        // Merged: the highest part decides, and its detail is the one given.
        let merged = c.judge(MemoryEvidence(status: machine(availablePercent: 50), stall: severe))
        #expect(merged.level == .critical && merged.detail.hasPrefix("PSI full avg10 12.50%"))
    }

    @Test("a cgroup v1's usage thresholds go where the working set reaches the judgement's lines: shifted by its inactive file pages, below the limit")
    func thresholdLines() {
        let limit: UInt64 = 100 << 20
        // 75% (leaving warning), 80% (warning), 90% (leaving critical), 95% (critical), to the
        // byte the arithmetic gives (0.95 - 0.05 is a hair under 0.9).
        let lines = UsageThresholds.lines(limit: limit, inactiveFile: 0, c)
        #expect(lines == [78_643_200, 83_886_080, 94_371_839, 99_614_720])
        // 12 MiB of inactive page cache: the working set is 12 MiB below the usage, so each line
        // is 12 MiB higher; those at or past the limit are dropped (reclaim and OOM events cover it).
        #expect(UsageThresholds.lines(limit: limit, inactiveFile: 12 << 20, c) == [78_643_200 + (12 << 20), 83_886_080 + (12 << 20)])
        #expect(UsageThresholds.lines(limit: limit, inactiveFile: limit, c).isEmpty)
    }
}
