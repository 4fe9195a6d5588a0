import AppLifecycle
import FoundationEssentials
import Glibc
import Jetsam
import LifecycleProtocol
import LinuxSystem
import Testing
import TestSupport

/// A shell app whose child (python) holds `mb` MiB of dirty memory: the app's main process
/// holds almost nothing itself.
func helperHolding(_ mb: Int) -> [String] {
    let python = "import sys, time; b = b'\\x01' * (\(mb) << 20); sys.stdout.write('held\\n'); sys.stdout.flush(); time.sleep(100000)"
    return ["/bin/sh", "-c", "python3 -c \"$0\"; exit 0", python]
}

@Suite("jetsam kills an app, all of its processes", .serialized, .enabled(if: canBudget, "needs root and a cgroup memory controller to give the apps a device budget"))
struct AppGroupKillTests {
    @Test("an app whose helper holds 200 MiB is ranked by its 200 MiB; killing it gives the 200 MiB back and the foreground app survives; the episode says so")
    func helperMemoryCounts() async throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        var j = JetsamConfiguration(policy: .ios)
        j.highMemoryBytes = 64 << 20
        j.holdKernelOOMKiller = false
        j.warningGraceSeconds = 0.5
        let (s, killer) = try supervisor(budgetMB: 400, j)
        try await withCleanup({ await s.shutdown() }) {
            try await s.register(AppSpec(name: "H", command: helperHolding(200), client: false))
            try await s.register(model(dir, "F", dirtyMB: 10))
            try await s.activate("H")
            // Wait until H's helper holds its memory: H's footprint, read from its cgroup.
            let held = await within(30) { () async -> UInt64? in
                while !Task.isCancelled {
                    if let f = await s.refreshSample("H")?.latest?.footprintBytes, f >= 200 << 20 { return f }
                    do { try await Task.sleep(for: .milliseconds(20)) } catch { return nil }
                }
                return nil
            }
            #expect(held != nil, "H's footprint counts its helper's 200 MiB")
            let main = try #require(try await s.pid(of: "H"))
            let helperPID = try #require(try await s.processes(of: "H").first { $0 != main })
            let helper = try #require(WatchedProcess(helperPID))
            try await s.background("H")
            try await s.waitForState("H", .suspended, timeout: 20)
            try await s.activate("F")
            let episodes = killer.episodeUpdates()
            // About 85% of the budget: past warning; F's warning frees nothing.
            _ = try await s.command("F", "allocate \(110 << 20)")
            let episode = try #require(await first(of: episodes, within: 60), "no episode within 60 s")
            #expect(episode.victims.map(\.name) == ["H"], "\(episode.victims.map(\.name)): \(episode.outcome)")
            let victim = try #require(episode.victims.first)
            #expect(victim.footprintBytes >= 200 << 20, "ranked by \(victim.footprintBytes)")
            #expect(victim.reclaimedBytes >= 180 << 20, "gave back \(victim.reclaimedBytes)")
            #expect(await helper.waitForExit(timeout: 10), "the helper holding the memory died with the app")
            #expect(try await s.state(of: "F") == .active, "the foreground app survives")
            #expect(episode.memoryOutsideAppsBytes != nil)
            #expect(await s.kernelOOMKills() == 0)
            let log = await s.log
            #expect(log.contains { if case .othersEnded = $0.payload { $0.app == "H" } else { false } })
        }
    }
}
