import Glibc
import MemPressureJetsam
import MemPressureLifecycle
import MemPressureLifecycleProtocol
import MemPressureMonitor
import MemPressureSystem
import MemPressureTestSupport
import MemPressureValues
import Testing

/// The lmkd emulation's decisions on TestSupport's `FakeDevice`: apps in memory, the kernel
/// files lmkd reads (`vmstat`, `zoneinfo`, `meminfo`) as fixtures under the device's `procRoot`,
/// wakes yielded by the test. Every wait is on a real event (a look, a kill), never a sleep.
@Suite("lmkd emulation, on a fake device")
struct LmkdEmulationTests {
    static let mib: UInt64 = 1 << 20
    /// How long a test waits for what the emulation does: far longer than it takes (nothing here
    /// is timed).
    static let wait: Double = 180

    // MARK: Fixtures

    /// `/proc/vmstat` as lmkd reads it: the file LRU is 999 pages, so a refault delta of N is
    /// N / 10 percent of it.
    static func vmstat(refaults: Int64 = 1000) -> String {
        """
        nr_free_pages 100000
        nr_inactive_file 500
        nr_active_file 499
        workingset_refault_anon 0
        workingset_refault_file \(refaults)
        pgrefill 0
        pgscan_kswapd 0
        pgscan_direct 0

        """
    }

    static func app(
        _ name: String, pid: Int32, _ state: LifecycleState, mib: UInt64, adj: Int32, secondsInState: Double = 60, exits: Bool = true
    ) -> FakeDevice.App {
        var a = FakeDevice.App(name, pid: pid, state: state, footprintBytes: mib * Self.mib)
        a.oomScoreAdj = adj
        a.secondsInState = secondsInState
        a.exitsOnKill = exits
        return a
    }

    /// A device of 1000 MiB whose kernel files are in `root`.
    static func device(_ root: TemporaryDirectory, outside: UInt64, apps: [FakeDevice.App]) -> FakeDevice {
        var pressure = PressureConfiguration()
        pressure.procRoot = root.path
        return FakeDevice(budgetBytes: 1000 * mib, outsideAppsBytes: outside * mib, apps: apps, pressure: pressure)
    }

    /// An emulation on `device`, run until `body` is done; `body` gets its looks and kills from
    /// the start. Watermarks: 5%, 10%, 15% of the budget (50, 100, 150 MiB) unless configured.
    func withLmkd(
        _ device: FakeDevice, _ configure: (inout LmkdConfiguration) -> Void = { _ in },
        _ body: (LmkdEmulation, AsyncStream<LmkdLook>, AsyncStream<LmkdKill>) async throws -> Void
    ) async throws {
        var c = LmkdConfiguration()
        c.watermarks = .shareOfBudget(min: 0.05, low: 0.10, high: 0.15)
        configure(&c)
        let lmkd = LmkdEmulation(configuration: c)
        let looks = lmkd.lookUpdates()
        let kills = lmkd.killUpdates()
        let log = device.eventUpdates()
        let run = Task { await lmkd.run(device) }
        try await withCleanup({
            run.cancel()
            device.finish()
            await run.value
        }) {
            // It says how it is woken once it listens to the device: from then on, nothing the
            // test yields is lost.
            let listening = await first(of: log, within: Self.wait) { if case .policy(.note(.wokenBy)) = $0.payload { true } else { false } }
            try #require(listening != nil, "the emulation did not start")
            try await body(lmkd, looks, kills)
        }
    }

    /// The first `n` elements of `stream` that satisfy `predicate`, or nil if they did not come.
    func next<T: Sendable>(_ n: Int, of stream: AsyncStream<T>, where predicate: @escaping @Sendable (T) -> Bool = { _ in true }) async -> [T]? {
        await within(Self.wait) {
            var got: [T] = []
            for await element in stream where predicate(element) {
                got.append(element)
                if got.count == n { return got }
            }
            return nil
        }
    }

    static func killed(_ actions: [FakeDevice.Action]) -> [String] {
        actions.compactMap { if case .killed(let name, _, _) = $0 { name } else { nil } }
    }

    // MARK: The victim

    @Test("the victim: the highest oom_score_adj first, within one the app whose value was set longest ago; then, still under min after the kill, PRESSURE_AFTER_KILL")
    func victimOrder() async throws {
        let root = try TemporaryDirectory("mempressure-lmkd")
        defer { root.remove() }
        try writeText(Self.vmstat(), to: "\(root.path)/vmstat")
        // 470 MiB outside the apps and 600 MiB of apps: the budget is full (no free memory).
        // Killing one 900 app leaves 30 MiB free (under min, 50 MiB); killing both, 130 MiB
        // (under high, above low: no reason left).
        let device = Self.device(root, outside: 470, apps: [
            Self.app("Foreground", pid: 101, .active, mib: 300, adj: 0),
            Self.app("BackgroundLow", pid: 102, .backgroundRunning, mib: 50, adj: 300),
            Self.app("SuspendedLow", pid: 103, .suspended, mib: 50, adj: 500),
            // Registered first, but suspended only 10 s ago: the newer of the two at 900.
            Self.app("SuspendedHighNew", pid: 104, .suspended, mib: 100, adj: 900, secondsInState: 10),
            Self.app("SuspendedHighOld", pid: 105, .suspended, mib: 100, adj: 900, secondsInState: 100),
        ])
        try await withLmkd(device) { lmkd, _, kills in
            device.yieldWake(["psi (/proc/pressure/memory): some memory stall above 70000 µs in 1000 ms"])
            let two = try #require(await next(2, of: kills), "not two kills")
            #expect(two.map(\.app) == ["SuspendedHighOld", "SuspendedHighNew"])
            #expect(two.map(\.oomScoreAdj) == [900, 900])
            #expect(two[0].reason == .lowMem && two[0].minScoreAdj == 701, "the first: \(two[0].reason), \(two[0].minScoreAdj)")
            #expect(two[0].detail == "min watermark is breached")
            #expect(two[0].breachedWatermark == .min && two[0].freeBytes == 0)
            #expect(two[0].wakeup == .event)
            #expect(two[1].reason == .pressureAfterKill && two[1].minScoreAdj == 0, "the second: \(two[1].reason), \(two[1].minScoreAdj)")
            #expect(two[1].detail == "min watermark is breached even after kill")
            #expect(two[1].freeBytes == 30 * Self.mib)
            #expect(Array(Self.killed(await device.actions).prefix(2)) == ["SuspendedHighOld", "SuspendedHighNew"])
            #expect(await device.app("Foreground")?.running == true)
            // Each kill is in the device's log too, as lmkd's.
            let logged = await device.events.compactMap { e -> KillRecord? in if case .policy(.kill(let k)) = e.payload { k } else { nil } }
            #expect(logged.prefix(2).map(\.policy) == ["lmkd", "lmkd"])
            #expect(logged.first?.reason == .vmPageShortage)
            #expect(lmkd.kills.prefix(2).map(\.app) == ["SuspendedHighOld", "SuspendedHighNew"])
        }
    }

    @Test("no kill while free memory is above the high watermark; one as soon as it is under the low one")
    func highWatermarkGate() async throws {
        let root = try TemporaryDirectory("mempressure-lmkd")
        defer { root.remove() }
        try writeText(Self.vmstat(), to: "\(root.path)/vmstat")
        // 100 MiB outside, 300 MiB of apps: 600 MiB free, far above high (150 MiB).
        let device = Self.device(root, outside: 100, apps: [
            Self.app("Foreground", pid: 101, .active, mib: 100, adj: 0),
            Self.app("SuspendedHigh", pid: 102, .suspended, mib: 200, adj: 900),
        ])
        try await withLmkd(device) { lmkd, looks, kills in
            device.yieldWake()
            let look = try #require(await next(1, of: looks) { $0.wakeup == .event }?.first, "no look")
            guard case .noKill(let free, let watermark, _) = look.outcome else {
                Issue.record("outcome \(look.outcome)")
                return
            }
            #expect(free == 600 * Self.mib && watermark == .none)
            #expect(lmkd.kills.isEmpty)
            #expect(Self.killed(await device.actions).isEmpty)
            // 590 MiB more outside: 10 MiB free, under min.
            await device.setOutsideAppsBytes(690 * Self.mib)
            device.yieldWake()
            let kill = try #require(await next(1, of: kills)?.first, "no kill")
            #expect(kill.app == "SuspendedHigh" && kill.reason == .lowMem)
            #expect(kill.watermarks == LmkdWatermarkLevels(minBytes: 50 * Self.mib, lowBytes: 100 * Self.mib, highBytes: 150 * Self.mib))
        }
    }

    @Test("min_score_adj above every app's value: nothing is taken (LOW_MEM takes cached apps only, 701 and up)")
    func minScoreAdjSpares() async throws {
        let root = try TemporaryDirectory("mempressure-lmkd")
        defer { root.remove() }
        try writeText(Self.vmstat(), to: "\(root.path)/vmstat")
        // 30 MiB free: under min. No app at 701 or above (700 is background-running high-memory).
        let device = Self.device(root, outside: 470, apps: [
            Self.app("Foreground", pid: 101, .active, mib: 200, adj: 0),
            Self.app("Inactive", pid: 102, .inactive, mib: 50, adj: 100),
            Self.app("BackgroundLow", pid: 103, .backgroundRunning, mib: 50, adj: 300),
            Self.app("SuspendedLow", pid: 104, .suspended, mib: 50, adj: 500),
            Self.app("BackgroundHigh", pid: 105, .backgroundRunning, mib: 150, adj: 700),
        ])
        try await withLmkd(device) { lmkd, looks, _ in
            device.yieldWake()
            // The event's look, and the polls lmkd makes in direct reclaim after it.
            let three = try #require(await next(3, of: looks), "not three looks")
            for look in three {
                #expect(look.outcome == .nothingToKill(.lowMem, minScoreAdj: 701), "outcome \(look.outcome)")
            }
            #expect(lmkd.kills.isEmpty)
            #expect(Self.killed(await device.actions).isEmpty)
        }
    }

    // MARK: The kill timeout

    @Test("after a kill, no other until the victim has exited (the kill timeout not yet passed)")
    func noKillUntilExit() async throws {
        let root = try TemporaryDirectory("mempressure-lmkd")
        defer { root.remove() }
        try writeText(Self.vmstat(), to: "\(root.path)/vmstat")
        // The budget full; the first victim does not exit when killed (it holds its memory).
        let device = Self.device(root, outside: 470, apps: [
            Self.app("Foreground", pid: 101, .active, mib: 300, adj: 0),
            Self.app("BackgroundLow", pid: 102, .backgroundRunning, mib: 50, adj: 300),
            Self.app("SuspendedLow", pid: 103, .suspended, mib: 50, adj: 500),
            Self.app("SuspendedHighNew", pid: 104, .suspended, mib: 100, adj: 900, secondsInState: 10),
            Self.app("SuspendedHighOld", pid: 105, .suspended, mib: 100, adj: 900, secondsInState: 100, exits: false),
        ])
        await device.setExitWaits(true)
        try await withLmkd(device, { $0.killTimeoutMilliseconds = 600_000 }) { lmkd, looks, kills in
            device.yieldWake()
            let first = try #require(await next(1, of: kills)?.first, "no kill")
            #expect(first.app == "SuspendedHighOld")
            // Memory is as short as before, and three more events come: each is skipped.
            for _ in 0..<3 { device.yieldWake() }
            let skipped = try #require(
                await next(3, of: looks) { if case .killPending = $0.outcome { true } else { false } }, "the events were not skipped")
            #expect(skipped.allSatisfy { $0.outcome == .killPending(app: "SuspendedHighOld", pid: 105) })
            #expect(Self.killed(await device.actions) == ["SuspendedHighOld"])
            #expect(lmkd.kills.count == 1)
            // It exits: lmkd looks again at once, memory still under min after the kill.
            await device.exit("SuspendedHighOld")
            let second = try #require(await next(1, of: kills)?.first, "no kill after the exit")
            #expect(second.app == "SuspendedHighNew")
            #expect(second.reason == .pressureAfterKill)
            #expect(Self.killed(await device.actions) == ["SuspendedHighOld", "SuspendedHighNew"])
        }
    }

    @Test("after a kill, the next once the kill timeout has passed, though the victim never exits")
    func nextKillAfterTimeout() async throws {
        let root = try TemporaryDirectory("mempressure-lmkd")
        defer { root.remove() }
        try writeText(Self.vmstat(), to: "\(root.path)/vmstat")
        let device = Self.device(root, outside: 470, apps: [
            Self.app("Foreground", pid: 101, .active, mib: 300, adj: 0),
            Self.app("BackgroundLow", pid: 102, .backgroundRunning, mib: 50, adj: 300),
            Self.app("SuspendedLow", pid: 103, .suspended, mib: 50, adj: 500),
            Self.app("SuspendedHighNew", pid: 104, .suspended, mib: 100, adj: 900, secondsInState: 10),
            Self.app("SuspendedHighOld", pid: 105, .suspended, mib: 100, adj: 900, secondsInState: 100, exits: false),
        ])
        await device.setExitWaits(true)
        try await withLmkd(device, { $0.killTimeoutMilliseconds = 50 }) { _, _, kills in
            device.yieldWake()
            let two = try #require(await next(2, of: kills), "not two kills")
            #expect(two.map(\.app) == ["SuspendedHighOld", "SuspendedHighNew"])
            // The first victim is still there, dying: the timeout, not its exit, let the second come.
            let old = await device.app("SuspendedHighOld")
            #expect(old?.running == true && old?.dying == true)
            #expect(two[1].reason == .pressureAfterKill)
        }
    }

    // MARK: The other reasons

    @Test("thrashing under the low watermark (LOW_MEM_AND_THRASHING) takes an app LOW_MEM would not")
    func thrashingLowersMinScoreAdj() async throws {
        let root = try TemporaryDirectory("mempressure-lmkd")
        defer { root.remove() }
        try writeText(Self.vmstat(refaults: 1000), to: "\(root.path)/vmstat")
        // 70 MiB free: under low (100), above min (50). Nothing at 701 or above.
        let device = Self.device(root, outside: 630, apps: [
            Self.app("Foreground", pid: 101, .active, mib: 150, adj: 0),
            Self.app("BackgroundHigh", pid: 102, .backgroundRunning, mib: 150, adj: 700),
        ])
        try await withLmkd(device) { lmkd, looks, kills in
            device.yieldWake()
            let look = try #require(await next(1, of: looks) { $0.wakeup == .event }?.first, "no look")
            #expect(look.outcome == .nothingToKill(.lowMem, minScoreAdj: 701), "outcome \(look.outcome)")
            // The page cache refaults ~10^14 % of itself over: far over the limit (100) and its
            // critical level (300), however many one-second windows halve it meanwhile.
            try writeText(Self.vmstat(refaults: 1000 + 1_000_000_000_000_000), to: "\(root.path)/vmstat")
            device.yieldWake()
            let kill = try #require(await next(1, of: kills)?.first, "no kill")
            #expect(kill.app == "BackgroundHigh")
            #expect(kill.reason == .lowMemAndThrashing)
            #expect(kill.minScoreAdj == 0, "thrashing at the critical level lets perceptible apps go")
            #expect(kill.detail.hasPrefix("low watermark is breached and thrashing ("))
            #expect(kill.thrashingPercent > 300)
            #expect(lmkd.kills.count == 1)
        }
    }

    @Test("swap low under the low watermark (LOW_MEM_AND_SWAP, min_score_adj 201): free swap counts at most the available memory (swap_compression_ratio 1)")
    func lowMemoryAndSwap() async throws {
        let root = try TemporaryDirectory("mempressure-lmkd")
        defer { root.remove() }
        try writeText(Self.vmstat(), to: "\(root.path)/vmstat")
        // 500 MiB of the 1000 MiB of swap free: not low by itself (10% is 100 MiB); but with 70 MiB
        // of memory available, lmkd counts 70 MiB of it (zram takes its space from memory).
        try writeText("MemTotal: 16777216 kB\nSwapTotal: 1024000 kB\nSwapFree: 512000 kB\n", to: "\(root.path)/meminfo")
        let device = Self.device(root, outside: 630, apps: [
            Self.app("Foreground", pid: 101, .active, mib: 150, adj: 0),
            Self.app("BackgroundLow", pid: 102, .backgroundRunning, mib: 150, adj: 300),
        ])
        await device.setSwapBytes(1000 * Self.mib)
        try await withLmkd(device) { _, _, kills in
            device.yieldWake()
            let kill = try #require(await next(1, of: kills)?.first, "no kill")
            #expect(kill.app == "BackgroundLow")
            #expect(kill.reason == .lowMemAndSwap && kill.minScoreAdj == 201, "\(kill.reason), \(kill.minScoreAdj)")
            #expect(kill.detail == "low watermark is breached and swap is low (71680kB < 102400kB)")
            #expect(kill.swapFreeBytes == 70 * Self.mib && kill.swapTotalBytes == 1000 * Self.mib)
        }
    }

    @Test("a complete-stall event (NOT_RESPONDING, min_score_adj 0) takes even the foreground app, as lmkd does, with memory above every watermark")
    func completeStallTakesForeground() async throws {
        let root = try TemporaryDirectory("mempressure-lmkd")
        defer { root.remove() }
        try writeText(Self.vmstat(), to: "\(root.path)/vmstat")
        let device = Self.device(root, outside: 100, apps: [Self.app("Foreground", pid: 101, .active, mib: 100, adj: 0)])
        try await withLmkd(device) { _, _, kills in
            device.yieldWake(["psi (/proc/pressure/memory): full memory stall above 700000 µs in 1000 ms"], level: .critical)
            let kill = try #require(await next(1, of: kills)?.first, "no kill")
            #expect(kill.app == "Foreground" && kill.oomScoreAdj == 0)
            #expect(kill.reason == .notResponding && kill.minScoreAdj == 0)
            #expect(kill.detail == "device is not responding")
            #expect(kill.breachedWatermark == .none)
        }
    }

    // MARK: The watermarks

    @Test("by default the machine's zone watermarks (largest protection plus min/low/high of populated zones) as a share of MemTotal, applied to the budget")
    func machineZoneinfoWatermarks() async throws {
        let root = try TemporaryDirectory("mempressure-lmkd")
        defer { root.remove() }
        try writeText(Self.vmstat(), to: "\(root.path)/vmstat")
        // Populated zones: DMA (protection up to 100) and Normal; Movable is empty (not counted).
        // Summed: min 201, low 302, high 403 pages; MemTotal five times high: high is 20%.
        try writeText("""
            Node 0, zone      DMA
              per-node stats
                  nr_inactive_file 500
                  nr_active_file 499
              pages free     100
                    min      1
                    low      2
                    high     3
                    spanned  10
                    present  10
                    managed  10
                    protection: (0, 100, 100)
              pagesets
                cpu: 0
                          count: 0
                          high:  9999
            Node 0, zone   Normal
              pages free     5000
                    min      100
                    low      200
                    high     300
                    present  10000
                    managed  10000
                    protection: (0, 0, 0)
            Node 0, zone  Movable
              pages free     0
                    min      5000
                    low      5000
                    high     5000
                    present  0
                    managed  0
                    protection: (0, 0, 0)

            """, to: "\(root.path)/zoneinfo")
        let page = UInt64(sysconf(Int32(_SC_PAGESIZE)))
        let memTotal = 403 * page * 5
        try writeText("MemTotal: \(memTotal / 1024) kB\nSwapTotal: 0 kB\nSwapFree: 0 kB\n", to: "\(root.path)/meminfo")
        // 180 MiB free: under high (200 MiB), above low (~150 MiB).
        let device = Self.device(root, outside: 620, apps: [Self.app("SuspendedHigh", pid: 101, .suspended, mib: 200, adj: 900)])
        try await withLmkd(device, { $0.watermarks = .machineZoneinfo }) { _, looks, kills in
            device.yieldWake()
            let look = try #require(await next(1, of: looks) { $0.wakeup == .event }?.first, "no look")
            #expect(look.outcome == .noKill(freeBytes: 180 * Self.mib, watermark: .high, thrashingPercent: 0), "outcome \(look.outcome)")
            // 120 MiB free: under low.
            await device.setOutsideAppsBytes(680 * Self.mib)
            device.yieldWake()
            let kill = try #require(await next(1, of: kills)?.first, "no kill")
            #expect(kill.reason == .lowMem && kill.breachedWatermark == .low)
            let budget = Double(1000 * Self.mib)
            func near(_ bytes: UInt64, _ pages: Double) -> Bool {
                let expected = budget * pages * Double(page) / Double(memTotal)
                return abs(Double(bytes) - expected) <= Double(page)
            }
            #expect(near(kill.watermarks.minBytes, 201) && near(kill.watermarks.lowBytes, 302) && near(kill.watermarks.highBytes, 403), "\(kill.watermarks)")
        }
    }

    // MARK: Configuration

    @Test("the defaults are lmkd's (README, update_props), and attaching sets the monitor's PSI triggers to lmkd's")
    func defaultsAndAttach() {
        let c = LmkdConfiguration()
        #expect(c.killTimeoutMilliseconds == 100 && !c.killHeaviestTask)
        #expect(c.swapFreeLowPercentage == 10 && c.thrashingLimit == 100 && c.thrashingLimitDecay == 10 && c.thrashingLimitCritical == nil)
        #expect(c.psiPartialStallMilliseconds == 70 && c.psiCompleteStallMilliseconds == 700)
        #expect(c.swapUtilMax == 100 && c.filecacheMinKilobytes == 0 && c.stallLimitCritical == 100 && c.swapCompressionRatio == 1)
        #expect(c.lowmemMinOomScore == 701 && c.pressureAfterKillMinScore == 0)
        let low = LmkdConfiguration.lowRAMDevice
        #expect(low.thrashingLimit == 30 && low.thrashingLimitDecay == 50 && low.psiPartialStallMilliseconds == 200)

        var s = SupervisorConfiguration()
        s.oomScoreBands = nil
        let lmkd = LmkdEmulation()
        lmkd.attach(to: &s)
        #expect(s.policies.count == 1 && s.policies.first is LmkdEmulation)
        #expect(s.pressure?.psiWarningStallMicroseconds == 70_000)
        #expect(s.pressure?.psiCriticalStallMicroseconds == 700_000)
        #expect(s.pressure?.psiWindowMicroseconds == 1_000_000)
        #expect(s.oomScoreBands == OOMScoreBands(), "every app gets an oom_score_adj for it to read")
    }
}
