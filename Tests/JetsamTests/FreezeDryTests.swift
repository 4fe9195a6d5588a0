import MemPressureLifecycle
import Glibc
import MemPressureJetsam
import MemPressureLifecycleProtocol
import MemPressureSystem
import Testing
import MemPressureTestSupport
import MemPressureWorkloadProtocol

/// Swap changes how the kernel reclaims for every process on the machine, and so what other
/// tests running beside this one would see (a dirty page reclaimed would be swapped instead of
/// staying): `make test` runs this suite alone, after the others, with MEMPRESSURE_SWAP_TESTS=1.
let swapTestsAlone = getenv("MEMPRESSURE_SWAP_TESTS").map { String(cString: $0) == "1" } ?? false

@Suite(
    "jetsam freeze-dry, with a temporary swap file", .serialized,
    .enabled(if: canBudget, "needs root and a cgroup memory controller"),
    .enabled(if: swapTestsAlone, "adds a swap file, which changes reclaim for every test running beside it: `make test` runs it alone (MEMPRESSURE_SWAP_TESTS=1)"))
struct FreezeDryTests {
    @Test("zram swap as Android uses it: set up on an unused /dev/zram0 (lz4), listed in /proc/swaps, a second set-up of the same device refused while in use, and reset to nothing after", .enabled(if: ProcFS.isDirectory("/sys/block/zram0"), "no zram device"))
    func zram() throws {
        func swaps() throws -> String { String(decoding: try ProcFS.readBytes("/proc/swaps"), as: UTF8.self) }
        func disksize() throws -> UInt64? { ByteScanner.singleNumber(try ProcFS.readBytes("/sys/block/zram0/disksize")) }
        try #require(try disksize() == 0, "zram0 is in use by someone else: the test does not touch it")
        let zram = try TemporaryZramSwap(index: 0, bytes: 64 << 20, compressor: "lz4")
        #expect(try swaps().contains("/dev/zram0 "))
        #expect(try disksize() == 64 << 20)
        #expect(String(decoding: try ProcFS.readBytes("/sys/block/zram0/comp_algorithm"), as: UTF8.self).contains("[lz4]"))
        #expect(throws: SystemCallError.self, "a device in use is refused, not reset") { _ = try TemporaryZramSwap(index: 0, bytes: 64 << 20) }
        #expect(try swaps().contains("/dev/zram0 "), "the refused set-up left it as it was")
        zram.remove()
        #expect(try !swaps().contains("/dev/zram0 "))
        #expect(try disksize() == 0)
    }

    @Test("small suspended apps are written to swap instead of being killed; they resume from it")
    func freezeDry() async throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let swap = try TemporarySwapFile(path: "/var/tmp/mempressure-test-swap-\(getpid())", bytes: 512 << 20)
        defer { swap.remove() }
        #expect(try Swap.totalBytes().get() >= 512 << 20 - 4096)
        var j = JetsamConfiguration(policy: .ios)
        j.targetAvailableShare = 0.45
        j.freezeDryBelowBytes = 16 << 20  // iOS 5's line: the small apps are frozen, Big is not
        let (s, killer) = try supervisor(budgetMB: 256, j)
        try await withCleanup({ await s.shutdown() }) {
            try await s.register(model(dir, "Small1", dirtyMB: 4))
            try await s.register(model(dir, "Small2", dirtyMB: 6))
            try await s.register(model(dir, "Big", dirtyMB: 60))
            try await s.register(model(dir, "F", dirtyMB: 10))
            for name in ["Small1", "Small2", "Big"] { try await park(s, name) }
            try await s.activate("F")
            let episodes = killer.episodeUpdates()
            // About 90% of the budget in the working set: past warning (80%), short of critical.
            _ = try await WorkloadRequest.allocate(bytes: 125 << 20).send { try await s.command("F", $0) }
            let episode = try #require(await first(of: episodes, within: 60), "no episode within 60 s")
            let log = await s.log
            let frozen = Set(episode.freezes.map(\.name))
            #expect(frozen == ["Small1", "Small2"], "\(episode.freezes)")
            for f in episode.freezes {
                #expect(f.bytes > 0, "\(f.name) wrote nothing to swap")
                #expect(f.residentAfter < f.residentBefore)
                #expect(log.contains { if case .policy(.freezeDry(let d)) = $0.payload { $0.app == f.name && d.writtenBytes > 0 } else { false } })
            }
            #expect(!episode.victims.contains { frozen.contains($0.name) }, "a freeze-dried app is not a kill candidate")
            #expect(try await s.state(of: "Small1") == .suspended)
            #expect(await s.kernelOOMKills() == 0)
            // It resumes: its pages come back from swap as it touches them.
            try await s.activate("Small1")
            try await s.waitForReady("Small1", count: 2, timeout: 30)
        }
    }
}
