import MemPressureLifecycle
import FoundationEssentials
import Glibc
import MemPressureJetsam
import MemPressureLifecycleProtocol
import MemPressureSystem
import MemPressureMonitor
import Testing
import MemPressureTestSupport

/// A shell app that double-forks a helper (python) holding `mb` MiB of dirty memory, then
/// becomes a sleep that ignores SIGTERM: the helper is outside the app's process tree (its
/// parent is gone), and the app's main process holds almost nothing itself.
func helperHolding(_ mb: Int) -> [String] {
    let python = "import sys, time; b = b'\\x01' * (\(mb) << 20); sys.stdout.write('held\\n'); sys.stdout.flush(); time.sleep(100000)"
    return ["/bin/sh", "-c", "trap '' TERM; (python3 -c \"$0\" &); exec sleep 31994", python]
}

@Suite("jetsam kills an app, all of its processes", .serialized, .enabled(if: canBudget, "needs root and a cgroup memory controller to give the apps a device budget"))
struct AppGroupKillTests {
    @Test("an app whose helper holds 200 MiB is ranked by its 200 MiB; killing it gives the 200 MiB back and the foreground app survives; the episode says so")
    func helperMemoryCounts() async throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        var j = JetsamConfiguration(policy: .ios)
        j.targetAvailableShare = 0.25  // the scenario is sized for a quarter freed (the default before Reports/switching.md)
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
            let groups = try await s.cgroups(of: "H")
            #expect(!groups.isEmpty, "H runs in cgroups of its own")
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
            // What the episode says H gave back is its footprint read from its cgroup at the SIGKILL
            // (F, still allocating on a busy machine, once hid it in the device's figures); that it
            // did come back is read from the device's cgroup below.
            #expect(victim.reclaimedBytes >= 180 << 20, "gave back \(victim.reclaimedBytes)")
            #expect(await helper.waitForExit(timeout: 10), "the helper holding the memory died with the app")
            #expect(try await s.state(of: "F") == .active, "the foreground app survives")
            #expect(episode.memoryOutsideAppsBytes != nil)
            #expect(await s.kernelOOMKills() == 0)
            // The episode is reported once H's main process has exited; the supervisor logs the end
            // of H's run (its other processes ended with it) as H becomes not running.
            try await s.waitForState("H", .notRunning, timeout: 60)
            for g in groups { #expect(!ProcFS.isDirectory(g), "H's cgroup \(g) is removed") }
            // The memory comes back as the helper's address space is torn down, which can end after
            // it left its cgroup (a reader of its /proc files may hold it a moment): wait for the
            // device to hold F (10 + 110 MiB) and what it holds besides, far below the budget less
            // H's 200 MiB.
            let back = await within(30) { () async -> MemoryStatus? in
                while !Task.isCancelled {
                    let now: MemoryStatus
                    do {
                        now = try s.memoryStatus()
                    } catch {
                        Issue.record("the device's memory could not be read: \(error)")
                        return nil
                    }
                    if now.usedBytes <= 220 << 20 { return now }
                    do { try await Task.sleep(for: .milliseconds(20)) } catch { return nil }
                }
                return nil
            }
            let after = try s.memoryStatus()
            #expect(back != nil, "the device holds \(after.usedBytes) bytes 30 s after H is gone: its helper's 200 MiB did not come back")
            print("H ranked by \(victim.footprintBytes) bytes; the episode counts \(victim.reclaimedBytes) given back; the device holds \(after.usedBytes) of \(after.budgetBytes) once H is gone")
            let log = await s.log
            // H is suspended by SIGSTOP: its main process's exit would orphan its process group, and
            // the kernel would send SIGHUP to the stopped helper, which then ended uncounted in about
            // half the runs beside two busy CPUs; the kill signals the helper first.
            #expect(log.contains { if case .othersEnded = $0.payload { $0.app == "H" } else { false } }, "H's log: \(log.filter { $0.app == "H" })")
        }
    }
}
