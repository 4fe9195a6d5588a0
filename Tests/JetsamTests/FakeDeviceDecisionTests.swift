import MemPressureLifecycle
import MemPressureJetsam
import MemPressureLifecycleProtocol
import MemPressureSystem
import MemPressureMonitor
import MemPressureValues
import SystemPackage
import Testing
import MemPressureTestSupport

/// Jetsam's decisions on TestSupport's `FakeDevice`: apps in memory, no root, no cgroups, no
/// processes, so they run on any host. The mechanism (real kills of real cgroups, real memory
/// given back) is tested on real processes in the other suites.
@Suite("jetsam's decisions, on a fake device")
struct FakeDeviceDecisionTests {
    static let mib: UInt64 = 1 << 20
    /// How long a test waits for what the killer does: far longer than it takes, for a machine
    /// so busy that the suite's tasks wait minutes for a CPU (nothing here is timed).
    static let wait: Double = 180

    /// A killer on `device`, run until `body` is done; `body` gets its episodes from the start.
    func withKiller(
        _ device: FakeDevice, _ configure: (inout JetsamConfiguration) -> Void = { _ in },
        _ body: (JetsamKiller, AsyncStream<JetsamEpisode>) async throws -> Void
    ) async throws {
        var c = JetsamConfiguration()
        c.highMemoryBytes = 100 * Self.mib
        c.warningGraceSeconds = 0
        c.freezeDryBelowBytes = 0
        c.holdKernelOOMKiller = false
        // The scenarios are sized for a quarter of the budget freed (the default before
        // Reports/switching.md chose 5%).
        c.targetAvailableShare = 0.25
        configure(&c)
        let killer = JetsamKiller(configuration: c)
        let episodes = killer.episodeUpdates()
        let log = device.eventUpdates()
        let run = Task { await killer.run(device) }
        try await withCleanup({
            run.cancel()
            device.finish()
            await run.value
        }) {
            // It says what wakes it once it listens to the device: from then on, nothing the
            // test yields is lost.
            let listening = await first(of: log, within: Self.wait) { if case .policy(.note(.wokenBy)) = $0.payload { true } else { false } }
            try #require(listening != nil, "the killer did not start")
            try await body(killer, episodes)
        }
    }

    /// The four background apps of iOS's order (high memory: over 100 MiB) and a foreground app
    /// larger than any, on a budget of 1000 MiB of which `outside` lies outside the apps.
    static func iosDevice(outside: UInt64 = 100) -> FakeDevice {
        FakeDevice(budgetBytes: 1000 * mib, outsideAppsBytes: outside * mib, apps: [
            .init("Foreground", pid: 101, state: .active, footprintBytes: 300 * mib),
            .init("BackgroundLow", pid: 102, state: .backgroundRunning, footprintBytes: 50 * mib),
            .init("SuspendedLow", pid: 103, state: .suspended, footprintBytes: 50 * mib),
            .init("BackgroundHigh", pid: 104, state: .backgroundRunning, footprintBytes: 200 * mib),
            .init("SuspendedHigh", pid: 105, state: .suspended, footprintBytes: 200 * mib),
        ])
    }

    static func killed(_ actions: [FakeDevice.Action]) -> [String] {
        actions.compactMap { if case .killed(let name, _, _) = $0 { name } else { nil } }
    }

    @Test("victims in iOS's order: suspended high-memory, background high, suspended low, background low; the foreground app never before them, and not at all while pressure is not critical")
    func victimOrderByBand() async throws {
        // 900 of 1000 MiB used (warning, not critical); the target, 700 MiB free, is more than
        // every background app together gives back.
        let device = Self.iosDevice()
        try await withKiller(device, { $0.targetAvailableShare = 0.7 }) { _, episodes in
            device.yieldPressure(.warning)
            let episode = try #require(await first(of: episodes, within: Self.wait), "no episode")
            #expect(episode.victims.map(\.name) == ["SuspendedHigh", "BackgroundHigh", "SuspendedLow", "BackgroundLow"])
            #expect(episode.victims.map(\.band) == [.suspendedHigh, .backgroundHigh, .suspendedLow, .backgroundLow])
            #expect(Self.killed(await device.actions) == ["SuspendedHigh", "BackgroundHigh", "SuspendedLow", "BackgroundLow"])
            #expect(await device.app("Foreground")?.running == true, "the foreground app is not taken below critical")
            guard case .nothingLeftToKill(let short, _) = episode.outcome else {
                Issue.record("outcome \(episode.outcome)")
                return
            }
            #expect(short == 100 * Self.mib, "600 MiB free of the 700 MiB target")
        }
    }

    @Test("the episode's report in types: trigger, victims' reason, band, state and policy, the timeline's kinds, the outcome")
    func episodeReportFields() async throws {
        // 900 of 1000 MiB used; the target (250 MiB free) is met by the first victim.
        let device = Self.iosDevice()
        try await withKiller(device) { _, episodes in
            device.yieldPressure(.warning, detail: "usage 90%")
            let episode = try #require(await first(of: episodes, within: Self.wait), "no episode")
            #expect(episode.kind == "mempressure-jetsam-episode")
            #expect(episode.trigger.level == .warning)
            #expect(episode.trigger.source == .pressure("fake"))
            #expect(episode.trigger.detail == "usage 90%")
            #expect(episode.trigger.wakeup == .event)
            #expect(episode.outcome == .recovered(kills: 1))
            let victim = try #require(episode.victims.first)
            #expect(episode.victims.count == 1)
            #expect(victim.name == "SuspendedHigh" && victim.pid == 105 && victim.state == .suspended)
            #expect(victim.reason == .vmPageShortage)
            #expect(victim.band == .suspendedHigh)
            #expect(victim.policy == .ios)
            #expect(victim.footprintBytes == 200 * Self.mib)
            #expect(victim.reclaimedBytes == 200 * Self.mib)
            #expect(victim.exited && victim.memoryReleased)
            #expect(episode.memoryBefore.availableBytes == 100 * Self.mib)
            #expect(episode.memoryAfter?.availableBytes == 300 * Self.mib)
            #expect(episode.targetAvailableBytes == 250 * Self.mib)
            #expect(episode.largestApp == "Foreground")
            #expect(episode.memoryOutsideAppsBytes == 100 * Self.mib)
            let kinds = episode.timeline.map(\.kind)
            #expect(kinds.first == .measure)
            #expect(kinds.contains(.warning))
            #expect(kinds.contains(.kill) && kinds.contains(.exit))
            // The kill is in the device's log too, typed.
            let kills = await device.events.compactMap { e -> KillRecord? in
                if case .policy(.kill(let k)) = e.payload, e.app == "SuspendedHigh" { k } else { nil }
            }
            #expect(kills.map(\.reason) == [.vmPageShortage])
            #expect(kills.first?.rank == victim.rank)
        }
    }

    @Test("warnings before kills: the running apps are warned (the suspended ones are not) before the first kill")
    func warnBeforeKill() async throws {
        let device = Self.iosDevice()
        try await withKiller(device) { _, episodes in
            device.yieldPressure(.warning)
            let episode = try #require(await first(of: episodes, within: Self.wait), "no episode")
            let actions = await device.actions
            let firstWarning = try #require(actions.firstIndex { if case .warned = $0 { true } else { false } }, "\(actions)")
            let firstKill = try #require(actions.firstIndex { if case .killed = $0 { true } else { false } }, "\(actions)")
            #expect(firstWarning < firstKill)
            guard case .warned(let names) = actions[firstWarning] else { return }
            #expect(Set(names) == ["Foreground", "BackgroundLow", "BackgroundHigh"])
            let warned = episode.timeline.filter { $0.kind == .warning }
            #expect(Set(warned.filter { $0.detail == "memory warning sent" }.compactMap(\.app)) == ["Foreground", "BackgroundLow", "BackgroundHigh"])
            #expect(Set(warned.filter { $0.detail == "not sent: suspended" }.compactMap(\.app)) == ["SuspendedLow", "SuspendedHigh"])
            let kinds = episode.timeline.map(\.kind)
            #expect(try #require(kinds.firstIndex(of: .warning)) < (try #require(kinds.firstIndex(of: .kill))))
        }
    }

    @Test("critically short: no warnings, the first victim killed at once")
    func criticalKillsAtOnce() async throws {
        // 960 of 1000 MiB used: past the critical share (95%).
        let device = Self.iosDevice(outside: 160)
        try await withKiller(device, { $0.warningGraceSeconds = 3600 }) { _, episodes in
            device.yieldPressure(.critical)
            let episode = try #require(await first(of: episodes, within: Self.wait), "no episode")
            #expect(!(await device.actions).contains { if case .warned = $0 { true } else { false } })
            #expect(episode.victims.first?.name == "SuspendedHigh")
            #expect(!episode.timeline.contains { $0.kind == .warning })
        }
    }

    @Test("an app that frees memory when warned saves everyone: the warnings suffice, nobody is killed")
    func warningsSuffice() async throws {
        let device = Self.iosDevice()
        await device.change("Foreground") { $0.freesOnWarning = 200 * Self.mib }
        try await withKiller(device) { _, episodes in
            device.yieldPressure(.warning)
            let episode = try #require(await first(of: episodes, within: Self.wait), "no episode")
            #expect(episode.outcome == .sufficed(.warnings))
            #expect(episode.victims.isEmpty)
            #expect(Self.killed(await device.actions).isEmpty)
            #expect(episode.memoryAfter?.availableBytes == 300 * Self.mib)
        }
    }

    @Test("the grace after the warnings: memory turning critical while it runs ends it, and the kills begin")
    func criticalEndsTheGrace() async throws {
        let device = Self.iosDevice()
        // A grace far longer than the test waits: only its end on critical lets the episode close.
        try await withKiller(device, { $0.warningGraceSeconds = 3600 }) { _, episodes in
            let actions = device.actionUpdates()
            let reads = device.memoryReads()
            device.yieldPressure(.warning)
            let warned = await first(of: actions, within: Self.wait) { if case .warned = $0 { true } else { false } }
            #expect(warned != nil, "no warning")
            // The reading the grace starts on (the grace is skipped when memory is already
            // critical): after it, the grace runs.
            let graceReading = await first(of: reads, within: Self.wait) { $0.warned }
            #expect(graceReading != nil, "memory not read after the warnings")
            // Nothing killed while the grace runs: the warned apps have time to free memory.
            #expect(Self.killed(await device.actions).isEmpty)
            await device.setOutsideAppsBytes(160 * Self.mib)  // 960 of 1000 MiB: critical
            device.yieldPressure(.critical)
            let episode = try #require(await first(of: episodes, within: Self.wait), "the grace did not end on critical")
            #expect(episode.timeline.contains { $0.kind == .note && $0.detail.hasPrefix("critical, the grace ends") })
            #expect(episode.victims.first?.name == "SuspendedHigh")
        }
    }

    @Test("a victim that does not exit after SIGKILL: said so (not exited), and the next victim is taken")
    func victimDoesNotExit() async throws {
        let device = Self.iosDevice()
        await device.change("SuspendedHigh") { $0.exitsOnKill = false }
        try await withKiller(device) { _, episodes in
            device.yieldPressure(.warning)
            let episode = try #require(await first(of: episodes, within: Self.wait), "no episode")
            #expect(episode.victims.map(\.name) == ["SuspendedHigh", "BackgroundHigh"])
            #expect(episode.victims.map(\.exited) == [false, true])
            #expect(episode.victims.first?.reclaimedBytes == 0)
            #expect(episode.outcome == .recovered(kills: 2))
            let kill = await device.events.compactMap { e -> KillRecord? in
                if case .policy(.kill(let k)) = e.payload, e.app == "SuspendedHigh" { k } else { nil }
            }.first
            #expect(kill?.stillExitingAfterSeconds != nil, "the log says it was still exiting")
        }
    }

    @Test("a kill that keeps failing stops the episode and reports it, instead of trying for ever")
    func killThatFails() async throws {
        let device = Self.iosDevice()
        await device.change("SuspendedHigh") { $0.killFails = .system(SystemCallError("pidfd_send_signal", errno: .notPermitted)) }
        try await withKiller(device) { _, episodes in
            device.yieldPressure(.warning)
            let episode = try #require(await first(of: episodes, within: Self.wait), "no episode")
            guard case .failedKills(let count, let app, let error) = episode.outcome else {
                Issue.record("outcome \(episode.outcome)")
                return
            }
            #expect(count > 1 && app == "SuspendedHigh" && error.contains("pidfd_send_signal"), "\(count) \(app) \(error)")
            #expect(episode.victims.isEmpty)
            #expect(episode.timeline.contains { $0.kind == .note && $0.app == "SuspendedHigh" && $0.detail.hasPrefix("not killed") })
            #expect(Self.killed(await device.actions).isEmpty)
        }
    }

    @Test("per-app limits: over its background limit an app is killed (per-process-limit); under it, or with a soft limit, it is not")
    func perAppLimits() async throws {
        // Plenty free: no shortage, only the limits act.
        let device = FakeDevice(budgetBytes: 1000 * Self.mib, apps: [
            .init("Maps", pid: 201, state: .backgroundRunning, footprintBytes: 150 * Self.mib),
            .init("Music", pid: 202, state: .backgroundRunning, footprintBytes: 150 * Self.mib),
            .init("Mail", pid: 203, state: .backgroundRunning, footprintBytes: 50 * Self.mib),
        ])
        let limit = JetsamConfiguration.AppLimit(activeBytes: 400 * Self.mib, inactiveBytes: 100 * Self.mib)
        try await withKiller(device, {
            $0.limits = ["Maps": limit, "Mail": limit, "Music": .init(inactiveBytes: 100 * Self.mib, soft: true)]
        }) { _, episodes in
            let events = device.eventUpdates()
            await device.yieldSample("Mail")
            await device.yieldSample("Music")
            let soft = await first(of: events, within: Self.wait) { if case .policy(.softLimitWarning) = $0.payload { true } else { false } }
            #expect(soft?.app == "Music")
            await device.yieldSample("Maps")
            let episode = try #require(await first(of: episodes, within: Self.wait), "no episode")
            #expect(episode.outcome == .overLimit(.inactive))
            #expect(episode.trigger.source == .perProcessLimit)
            #expect(episode.victims.map(\.name) == ["Maps"])
            #expect(episode.victims.first?.reason == .perProcessLimit)
            #expect(episode.victims.first?.band == .overLimit)
            #expect(Self.killed(await device.actions) == ["Maps"])
            let warned = await device.actions.compactMap { if case .warned(let names) = $0 { names } else { nil } }
            #expect(warned == [["Music"]], "the soft limit warns its app only")
            #expect(await device.app("Mail")?.running == true)
            #expect(await device.app("Music")?.running == true)
        }
    }
}
