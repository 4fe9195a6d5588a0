import MemPressureLifecycle
import FoundationEssentials
import Glibc
import MemPressureJetsam
import MemPressureLifecycleProtocol
import MemPressureSystem
import MemPressureMonitor
import MemPressureValues
import Testing
import MemPressureTestSupport
import MemPressureWorkloadProtocol

/// Whether this machine lets the tests give a device a memory budget (root and a memory
/// cgroup controller); the killer's tests need one.
let canBudget = Supervisor.canBudget()
let workloadPath = buildDirectory + "/mempressure-workload"

/// A small model app holding `dirtyMB` of plain dirty memory beside a little of everything.
func model(_ dir: TemporaryDirectory, _ name: String, dirtyMB: Int, _ extra: [String] = []) -> AppSpec {
    AppSpec(name: name, command: [
        workloadPath, "--data-dir", "\(dir.path)/\(name)", "--state-mb", "1", "--image-cache-mb", "2", "--image-kb", "256",
        "--backing-mb", "1", "--assets-mb", "1", "--decode-cost", "16", "--dirty-mb", "\(dirtyMB)",
    ] + extra)
}

/// A supervisor with a device budget and jetsam attached, woken by the pressure monitor (with
/// `pressure`, or the default configuration).
func supervisor(budgetMB: Int, _ jetsam: JetsamConfiguration, callbackTimeout: Double? = nil, pressure: PressureConfiguration? = nil) throws -> (Supervisor, JetsamKiller) {
    let killer = JetsamKiller(configuration: jetsam)
    var c = SupervisorConfiguration()
    c.pressure = pressure
    if let callbackTimeout { c.callbackTimeout = callbackTimeout }
    // A busy machine (the suite beside two CPU-bound processes) can start a debug build of the
    // model app more slowly than the defaults allow.
    c.connectTimeout = 60
    c.launchTimeout = 120
    c.executableDirectory = buildDirectory
    c.budgetBytes = budgetMB << 20
    c.backgroundTaskLimit = 600
    c.expirationWarning = 5
    c.sampleInterval = 0.5
    killer.attach(to: &c)
    return (try Supervisor(configuration: c), killer)
}

/// Foreground, then background: suspended, or (with a long background task and no wait)
/// running in the background.
func park(_ s: Supervisor, _ name: String, running: Bool = false) async throws {
    try await s.activate(name)
    try await s.background(name, waitForSuspension: !running)
    try await s.waitForState(name, running ? .backgroundRunning : .suspended, timeout: 20)
}

@Suite("jetsam on real processes", .serialized, .enabled(if: canBudget, "needs root and a cgroup memory controller to give the apps a device budget"))
struct KillerTests {
    @Test("kills go in the ios order: suspended high-memory, largest first, then background-running high-memory, then suspended low-memory; the foreground and protected apps survive; a relaunched victim has its state")
    func bandOrder() async throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        var j = JetsamConfiguration(policy: .ios)
        j.highMemoryBytes = 32 << 20
        j.withinBand = .largestFirst
        j.protected = ["P"]
        j.targetAvailableShare = 0.6
        // Without holding the kernel's OOM killer: jetsam must act before it would.
        j.holdKernelOOMKiller = false
        j.reportDirectory = "\(dir.path)/episodes"
        let (s, killer) = try supervisor(budgetMB: 400, j)
        try await withCleanup({ await s.shutdown() }) {
            for spec in [
                model(dir, "S1", dirtyMB: 60), model(dir, "S2", dirtyMB: 50), model(dir, "B1", dirtyMB: 40, ["--background-task", "600"]),
                model(dir, "S3", dirtyMB: 20), model(dir, "B2", dirtyMB: 16, ["--background-task", "600"]), model(dir, "P", dirtyMB: 60),
                model(dir, "F", dirtyMB: 10),
            ] { try await s.register(spec) }
            // S2 is used before S1: S1 is the larger and the more recently used of the two
            // suspended high-memory apps, so that ios (largest first) and a least-recently-used
            // order (xnu, lmkd, lru: S2 first) tell themselves apart.
            try await park(s, "S2")
            try await s.activate("S1")
            let savedState = try await WorkloadRequest.state.send { try await s.command("S1", $0) }
            try await s.background("S1")
            for name in ["S3", "P"] { try await park(s, name) }
            for name in ["B1", "B2"] { try await park(s, name, running: true) }
            try await s.activate("F")
            let oomBefore = try #require(await s.kernelOOMKills())
            let episodes = killer.episodeUpdates()
            // Real pressure: the foreground app allocates.
            _ = try await WorkloadRequest.allocate(bytes: 48 << 20).send { try await s.command("F", $0) }
            let episode = try #require(await first(of: episodes, within: 60), "no episode within 60 s")
            let log = await s.log

            let victims = log.filter { $0.kind == .jetsam }.compactMap(\.app)
            let order = ["S1", "S2", "B1", "S3", "B2"]
            // About 340 MiB in use and 60% of 400 MiB to be free again: the three high-memory
            // apps give back about 170 MiB, not enough, so the suspended low-memory one goes too
            // (the fifth, B2, only if the foreground app's growth calls for it).
            #expect(victims.count >= 4, "\(victims)")
            #expect(Array(order.prefix(victims.count)) == victims, "killed \(victims), expected a prefix of \(order)")
            #expect(try await s.state(of: "F") == .active, "the foreground app survives")
            #expect(try await s.state(of: "P") == .suspended, "the protected app survives")
            #expect(await s.kernelOOMKills() == oomBefore, "the kernel's OOM killer never fired")
            #expect(episode.kernelOOMKillsBefore == episode.kernelOOMKillsAfter)

            // Warnings first, to running apps only, before any kill.
            let firstKill = try #require(log.firstIndex { $0.kind == .jetsam })
            let warned = log.enumerated().filter { $0.element.payload == .warning(.sent) }
            #expect(Set(warned.map { $0.element.app }) == ["F", "B1", "B2"])
            #expect(warned.allSatisfy { $0.offset < firstKill })
            #expect(log.contains { $0.payload == .warning(.notSent(.suspended)) && $0.app == "S1" })

            // The report: each kill with what it gave back, explained; exits are not crashes.
            #expect(episode.victims.map(\.name) == victims)
            for v in episode.victims {
                #expect(v.reason == .vmPageShortage)
                #expect(v.reclaimedBytes >= v.footprintBytes / 10 * 8, "\(v.name) gave back \(v.reclaimedBytes) of \(v.footprintBytes)")
                #expect(v.explanation.contains("band"), "\(v.explanation)")
                #expect(v.memoryReleased, "process_mrelease freed \(v.name)'s memory")
                #expect(log.contains { $0.app == v.name && $0.payload == .exit(.signaled(SIGKILL), killReason: .vmPageShortage) })
                #expect(!log.contains { $0.app == v.name && $0.kind == .crash })
            }
            #expect(episode.memoryAfter.map { $0.availableBytes >= episode.targetAvailableBytes } == true)
            #expect(!episode.decisions.isEmpty)
            // The timeline: warnings, then each kill at its SIGKILL and its exit, in time order.
            let kinds = episode.timeline.map(\.kind)
            #expect(kinds.filter { $0 == .kill }.count == victims.count && kinds.filter { $0 == .exit }.count == victims.count, "\(kinds)")
            #expect(try #require(kinds.firstIndex(of: .warning)) < (kinds.firstIndex(of: .kill) ?? 0))
            let killTimes = episode.timeline.filter { $0.kind == .kill }.map(\.t)
            let exitTimes = episode.timeline.filter { $0.kind == .exit }.map(\.t)
            #expect(zip(killTimes, exitTimes).allSatisfy { $0 <= $1 } && killTimes == killTimes.sorted())
            // On disk as well, the same report.
            let file = "\(dir.path)/episodes/episode-\(episode.number).json"
            let onDisk = try JSONDecoder().decode(JetsamEpisode.self, from: Data(try ProcFS.readBytes(file)))
            #expect(onDisk == episode)
            // Without swap, freeze-dry says once that it is off.
            if case .success(0) = Swap.totalBytes() {
                #expect(log.filter { $0.payload == .policy(.note(.noSwap)) }.count == 1)
            }

            // Relaunched, the first victim has the state it saved when it went to the background.
            try await s.launch("S1")
            let restored = try await WorkloadRequest.state.send { try await s.command("S1", $0) }
            #expect(restored.checksum == savedState.checksum, "before: \(savedState); after: \(restored)")
            #expect(restored.restoredFromDisk, "\(restored)")
        }
    }

    /// Nil: the monitor's default poll interval. An hour: nothing reaches jetsam within the test
    /// but the kernel's events.
    @Test("when the warned apps free enough, nobody is killed; the episode opens on the kernel's usage threshold event, not a timer", arguments: [nil, 3600.0])
    func warningsSuffice(pollInterval: Double?) async throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        var j = JetsamConfiguration(policy: .ios)
        j.targetAvailableShare = 0.25  // the scenario is sized for a quarter freed (the default before Reports/switching.md)
        j.warningGraceSeconds = 2
        j.holdKernelOOMKiller = false
        var pressure = PressureConfiguration()
        if let pollInterval { pressure.pollInterval = pollInterval }
        let (s, killer) = try supervisor(budgetMB: 256, j, pressure: pressure)
        try await withCleanup({ await s.shutdown() }) {
            try await s.register(model(dir, "S", dirtyMB: 40))
            try await s.register(model(dir, "F", dirtyMB: 60, ["--warning-frees", "1"]))
            try await park(s, "S")
            try await s.activate("F")
            let episodes = killer.episodeUpdates()
            // About 86% of the budget in the working set: past warning (80%), short of critical (95%).
            _ = try await WorkloadRequest.allocate(bytes: 110 << 20).send { try await s.command("F", $0) }
            let episode = try #require(await first(of: episodes, within: 60), "no episode within 60 s")
            let log = await s.log
            #expect(episode.outcome == .sufficed(.warnings), "\(episode.outcome)")
            #expect(episode.victims.isEmpty)
            #expect(!log.contains { $0.kind == .jetsam })
            #expect(log.contains { $0.payload == .warning(.sent) && $0.app == "F" })
            #expect(log.contains { $0.payload == .warning(.notSent(.suspended)) && $0.app == "S" })
            #expect(!log.contains { $0.app == "S" && $0.payload == .callback(.didReceiveMemoryWarning) })
            #expect(try await s.state(of: "S") == .suspended)
            #expect(await s.kernelOOMKills() == 0)
            // The usage threshold (or, had the device reclaimed on the way, the kernel's
            // vmpressure) woke the monitor, and the monitor jetsam; it said how it is woken.
            guard case .pressure(let source) = episode.trigger.source else {
                Issue.record("not opened by a pressure source: \(episode.trigger)")
                return
            }
            #expect(source.hasPrefix("cgroup ") && episode.trigger.level == .warning, "\(episode.trigger)")
            if pollInterval != nil { #expect(episode.trigger.wakeup == .event, "\(episode.trigger)") }
            let woken = log.compactMap { if case .policy(.note(.wokenBy(let events, _, _))) = $0.payload { events } else { nil } }
            #expect(woken.count == 1 && woken.first?.contains("cgroup usage against its limit") == true, "\(woken)")
        }
    }

    @Test("an app over its limit for its state is killed with per-process-limit; over a soft limit it is only warned")
    func perProcessLimits() async throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        var j = JetsamConfiguration(policy: .ios)
        j.targetAvailableShare = 0.25  // the scenario is sized for a quarter freed (the default before Reports/switching.md)
        j.limits = [
            "Hard": .init(activeBytes: 512 << 20, inactiveBytes: 16 << 20),
            "Soft": .init(activeBytes: 16 << 20, soft: true),
        ]
        j.holdKernelOOMKiller = false
        j.reportDirectory = "\(dir.path)/episodes"
        let (s, killer) = try supervisor(budgetMB: 512, j)
        try await withCleanup({ await s.shutdown() }) {
            try await s.register(model(dir, "Hard", dirtyMB: 30))
            try await s.register(model(dir, "Soft", dirtyMB: 30))
            let events = await s.logStream()
            let episodes = killer.episodeUpdates()
            try await s.activate("Soft")
            let soft = await first(of: events, within: 30) {
                if case .policy(.softLimitWarning(let l)) = $0.payload { $0.app == "Soft" && l.limit == .active && l.footprintBytes > l.limitBytes } else { false }
            }
            #expect(soft != nil, "the soft limit warns")
            try await s.activate("Hard")  // within its active limit
            try await s.background("Hard")  // over its inactive limit once suspended
            let killed = await first(of: events, within: 30) { $0.kind == .jetsam && $0.app == "Hard" }
            guard case .policy(.kill(let kill)) = killed?.payload else {
                Issue.record("no kill of Hard: \(String(describing: killed))")
                return
            }
            #expect(kill.reason == .perProcessLimit)
            #expect(kill.rank == 1 && kill.policy == "ios" && kill.footprintBytes > 16 << 20 && !kill.explanation.isEmpty)
            try await s.waitForState("Hard", .notRunning, timeout: 10)
            // Its episode, kept and written like any other.
            let episode = try #require(await first(of: episodes, within: 30), "the limit kill's episode")
            #expect(episode.victims.map(\.reason) == [.perProcessLimit] && episode.kernelOOMKillsBefore != nil)
            #expect(episode.victims.map(\.band) == [.overLimit] && episode.outcome == .overLimit(.inactive) && episode.trigger.source == .perProcessLimit)
            #expect(episode.timeline.map(\.kind) == [.kill, .exit])
            let onDisk = try JSONDecoder().decode(JetsamEpisode.self, from: Data(try ProcFS.readBytes("\(dir.path)/episodes/episode-\(episode.number).json")))
            #expect(onDisk == episode)
            #expect(try await s.state(of: "Soft").isRunning, "a soft limit kills nobody")
            #expect(await s.kernelOOMKills() == 0)
        }
    }

    @Test("a kill names the run it was decided for: another PID, or an app not running, is refused and nothing is signalled")
    func staleTargets() async throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let (s, _) = try supervisor(budgetMB: 256, JetsamConfiguration())
        try await withCleanup({ await s.shutdown() }) {
            try await s.register(model(dir, "A", dirtyMB: 1))
            try await park(s, "A")
            let pid = try #require(try await s.pid(of: "A"))
            await #expect(throws: SupervisorError.staleTarget(app: "A", expectedPID: pid + 1, currentPID: pid)) {
                try await s.kill("A", pid: pid + 1, reason: .vmPageShortage)
            }
            #expect(try await s.state(of: "A") == .suspended, "untouched")
            try await s.terminate("A")
            await #expect(throws: SupervisorError.staleTarget(app: "A", expectedPID: pid, currentPID: nil)) {
                try await s.kill("A", pid: pid, reason: .vmPageShortage)
            }
            await #expect(throws: SupervisorError.noSuchApp("B")) { try await s.kill("B", pid: 1, reason: .vmPageShortage) }
            #expect(await s.kernelOOMKills() == 0)
        }
    }

    @Test("an allocation that jumps past the budget waits at the limit for jetsam's choice: the kernel's OOM killer is held and kills nobody, the foreground app lives")
    func kernelKillerHeld() async throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        var j = JetsamConfiguration(policy: .ios)
        j.targetAvailableShare = 0.25  // the scenario is sized for a quarter freed (the default before Reports/switching.md)
        j.warningGraceSeconds = 0
        let (s, killer) = try supervisor(budgetMB: 160, j)
        try await withCleanup({ await s.shutdown() }) {
            try await s.register(model(dir, "S1", dirtyMB: 50))
            try await s.register(model(dir, "S2", dirtyMB: 40))
            try await s.register(model(dir, "F", dirtyMB: 8))
            for name in ["S1", "S2"] { try await park(s, name) }
            try await s.activate("F")
            let oomBefore = try #require(await s.kernelOOMKills())
            let episodes = killer.episodeUpdates()
            // One allocation far past what is free, faster than any poll: it reaches the limit.
            _ = try await WorkloadRequest.allocate(bytes: 96 << 20).send { try await s.command("F", $0) }
            let episode = try #require(await first(of: episodes, within: 60), "no episode within 60 s")
            let cgroup = try #require(s.deviceMemoryCgroup)
            let control = String(decoding: try ProcFS.readBytes("\(cgroup)/memory.oom_control"), as: UTF8.self)
            #expect(control.contains("oom_kill_disable 1"), "held while jetsam is attached: \(control)")
            #expect(try await s.state(of: "F") == .active, "the foreground app got its memory and lives")
            #expect(await s.kernelOOMKills() == oomBefore, "the kernel's OOM killer never fired")
            #expect(!episode.victims.isEmpty)
            #expect(episode.victims.allSatisfy { $0.name != "F" })
            let log = await s.log
            #expect(log.contains { $0.payload == .policy(.note(.kernelOOMKillerHeld(cgroup: cgroup))) })
            #expect(!log.contains { $0.kind == .crash }, "\(log.filter { $0.kind == .crash })")
        }
    }

    @Test("an app inside didEnterBackground (saving its state) is not killed: jetsam takes the next in line, and the saver's state is saved")
    func saverProtected() async throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let gate = "\(dir.path)/gate"
        #expect(mkfifo(gate, 0o600) == 0)
        var j = JetsamConfiguration(policy: .ios)
        j.targetAvailableShare = 0.25  // the scenario is sized for a quarter freed (the default before Reports/switching.md)
        j.highMemoryBytes = 48 << 20
        j.warningGraceSeconds = 0
        // The callback may last a minute (the default, 5 s, would end B's protection early).
        let (s, killer) = try supervisor(budgetMB: 200, j, callbackTimeout: 60)
        try await withCleanup({ await s.shutdown() }) {
            try await s.register(model(dir, "B", dirtyMB: 70, ["--background-gate", gate]))
            try await s.register(model(dir, "S", dirtyMB: 30))
            try await s.register(model(dir, "F", dirtyMB: 8))
            try await park(s, "S")
            try await s.launch("F")
            try await s.activate("B")
            // B goes to the background and stops inside didEnterBackground, before its save.
            let backgrounding = Task { try await s.background("B") }
            try await s.waitForState("B", .backgroundRunning, timeout: 20)
            #expect(await s.view(of: "B")?.callbacksInProgress.contains(.didEnterBackground) == true)
            try await s.activate("F")
            let episodes = killer.episodeUpdates()
            _ = try await WorkloadRequest.allocate(bytes: 50 << 20).send { try await s.command("F", $0) }
            let episode = try #require(await first(of: episodes, within: 60), "no episode within 60 s")
            // Without the protection, B (background-running, high memory) goes before S
            // (suspended, low memory) in the ios order.
            #expect(episode.victims.map(\.name) == ["S"], "\(episode.victims.map(\.name)): \(episode.outcome)")
            #expect(episode.apps.contains { $0.name == "B" && $0.isProtected })
            // The gate opens: B saves and is suspended. (Non-blocking: if B were gone, no reader
            // would hold the FIFO open, and the test fails instead of waiting.)
            let fd = open(gate, O_WRONLY | O_NONBLOCK | O_CLOEXEC)
            try #require(fd >= 0, "B is not at its gate any more (errno \(errno))")
            var byte: UInt8 = 1
            #expect(write(fd, &byte, 1) == 1)
            close(fd)
            try await backgrounding.value
            #expect(try await s.state(of: "B") == .suspended)
            #expect(ProcFS.isFile("\(dir.path)/B/state.bin"), "B's state was saved")
            #expect(await s.kernelOOMKills() == 0)
        }
    }

    static let freezerRoot = "/sys/fs/cgroup/freezer"

    @Test(
        "a victim that does not die: jetsam waits its cooldown, says so, does not kill it twice nor count it as a candidate, and decides on",
        .enabled(if: ProcFS.isFile("\(freezerRoot)/cgroup.procs"), "needs the cgroup v1 freezer (to hold a killed app frozen)"))
    func victimThatDoesNotDie() async throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        var j = JetsamConfiguration(policy: .ios)
        j.warningGraceSeconds = 0
        j.cooldownSeconds = 1
        j.holdKernelOOMKiller = false
        // 60% to be free again: more than V alone gives back, so the killer decides again after
        // it, with V still dying.
        j.targetAvailableShare = 0.6
        let (s, killer) = try supervisor(budgetMB: 200, j)
        // A freezer cgroup of the test's own holds V frozen: a SIGKILL stays pending on a frozen
        // task until it is thawed, as on a task stuck in the kernel.
        let group = "\(Self.freezerRoot)/mempressure-test-\(getpid())-stuck"
        try ProcFS.makeDirectory(group)
        defer {
            _ = writeTextReportingFailure("THAWED", to: "\(group)/freezer.state")
            if rmdir(group) != 0 { Issue.record("cannot remove \(group): errno \(errno)") }
        }
        try await withCleanup({ await s.shutdown() }) {
            try await s.register(model(dir, "V", dirtyMB: 70))
            try await s.register(model(dir, "W", dirtyMB: 40))
            try await s.register(model(dir, "F", dirtyMB: 8))
            try await park(s, "W")
            try await park(s, "V")
            let pid = try #require(try await s.pid(of: "V"))
            try ProcFS.writeFileInPlace("\(group)/cgroup.procs", Array("\(pid)".utf8))
            try ProcFS.writeFileInPlace("\(group)/freezer.state", Array("FROZEN".utf8))
            try await s.activate("F")
            let episodes = killer.episodeUpdates()
            // About 85% of the budget in the working set.
            _ = try await WorkloadRequest.allocate(bytes: 36 << 20).send { try await s.command("F", $0) }
            let episode = try #require(await first(of: episodes, within: 60), "no episode within 60 s")
            let victim = try #require(episode.victims.first, "\(episode.outcome)")
            #expect(victim.name == "V" && !victim.exited)
            // V (the largest) first; then, V still dying, W: V never killed twice.
            #expect(episode.victims.map(\.name) == ["V", "W"], "\(episode.victims.map(\.name)): \(episode.outcome)")
            #expect(episode.decisions.count >= 2)
            // One note for V — it is still exiting — and no other (a kill tried again and failed
            // would be one more).
            #expect(episode.timeline.filter { $0.kind == .note && $0.app == "V" }.count == 1, "\(episode.timeline)")
            #expect(!episode.timeline.contains { $0.kind == .exit && $0.app == "V" })
            let log = await s.log
            #expect(log.contains {
                if case .policy(.kill(let k)) = $0.payload { $0.app == "V" && k.stillExitingAfterSeconds == 1 } else { false }
            })
            // Every decision after the kill left V out (it is being taken down).
            for d in episode.decisions.dropFirst() { #expect(!d.input.apps.contains { $0.name == "V" }) }
            #expect(try await s.state(of: "F") == .active, "the foreground app lives")
            // Thawed, V dies at last.
            try ProcFS.writeFileInPlace("\(group)/freezer.state", Array("THAWED".utf8))
            try await s.waitForState("V", .notRunning, timeout: 20)
            #expect(await s.kernelOOMKills() == 0)
        }
    }
}
