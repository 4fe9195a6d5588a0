// jetsam's own decision: once the rounds are done, each program is launched again under a
// supervisor with jetsam attached, sent to the background (frozen), and the model app in the
// foreground allocates until the device's working set crosses jetsam's critical line. Jetsam, not
// the benchmark, chooses whom to kill; the program must be its victim (the only suspended app),
// then it is relaunched and its whole dataset checked.

import BenchSupport
import Foundation
import Glibc
import MemPressureJetsam
import MemPressureLifecycle
import MemPressureLifecycleProtocol
import MemPressureMonitor
import MemPressureSystem
import MemPressureWorkloadProtocol

/// What jetsam did to the program, and its relaunch after.
struct JetsamProof: Codable, Sendable {
    /// The device's budget, and the bytes the foreground app allocated to cross the line.
    var budgetBytes: UInt64
    var allocatedBytes: UInt64
    /// Every app jetsam killed while the phase ran (every episode), in order; the reason and
    /// band of the program's kill.
    var victims: [String]
    var reason: String
    var band: String
    /// The program's footprint as jetsam charged it.
    var footprintBytes: UInt64
    /// The device's working set (usage less inactive file pages, what jetsam compares with
    /// its line) before the allocation, at its end (nil if unread: the kill came first) and
    /// after the kill, as shares of the budget.
    var workingSetBefore: Double
    var workingSetAfterKill: Double
    /// From the latest pressure event before the kill to the kill (nil if jetsam had none).
    var secondsFromLatestEvent: Double?
    /// The relaunch after: ready (the probe), working (the data checked), from the activation.
    var relaunchReadyMs: Double
    var relaunchWorkingMs: Double
}

extension ProgramRun {
    /// Runs the jetsam phase for this program (its data is on disk from the rounds) on a device
    /// of `budget` bytes.
    func jetsamPhase(budget: UInt64) async throws -> JetsamProof {
        var j = JetsamConfiguration(policy: .ios)
        // Not held: a kernel OOM kill would show as the program dying without jetsam's entry.
        j.holdKernelOOMKiller = false
        // A kill, not a freeze-dry: there is no swap here, and none may make jetsam write the
        // program out instead.
        j.freezeDryBelowBytes = 0
        let killer = JetsamKiller(configuration: j)
        var c = SupervisorConfiguration()
        c.executableDirectory = build
        c.budgetBytes = Int(budget)
        c.suspendMethod = .freezer
        c.sampleInterval = 0.5
        c.launchTimeout = 300
        c.callbackTimeout = 30
        c.terminateGrace = 120
        killer.attach(to: &c)
        let s = try Supervisor(configuration: c)
        let run = self
        return try await supervising(s) { try await run.jetsamEpisode(s: $0, killer: killer, budget: budget) }
    }

    private func jetsamEpisode(s: Supervisor, killer: JetsamKiller, budget: UInt64) async throws -> JetsamProof {
        guard let device = s.deviceMemoryCgroup else { throw BenchError("the supervisor made no memory cgroup") }
        let name = program.name
        let progress = Progress(RealProgram.tool, total: 1)
        progress.doing("\(name): killed by jetsam's own decision")
        try await s.register(program.spec)
        try program.markActivation()
        try await s.activate(name)
        try checkWorking()
        try await s.background(name)
        guard try await s.state(of: name) == .suspended else {
            throw BenchError("\(name) is not suspended after background (\(try await s.state(of: name)))")
        }
        // The working set, as jetsam reads it (usage less inactive file pages).
        let reader = MemoryStatusReader(cgroup: device)
        func workingSet() throws -> UInt64 { try reader.read().usedBytes }
        // What the program holds: the device holds nothing else yet.
        let held = try workingSet()
        // The foreground app: the model app, small, that frees nothing on a warning.
        let hog = "foreground"
        let workload = "\(build)/mempressure-workload"
        try await s.register(AppSpec(name: hog, command: [
            workload, "--data-dir", "\(scratch)/foreground", "--state-mb", "1", "--image-cache-mb", "1", "--backing-mb", "1", "--assets-mb", "1", "--ignore-warnings",
        ]))
        try await s.activate(hog)
        // Past the critical line (95% of the budget) by half of what the program holds: its
        // death alone brings the device back under the line, so jetsam need take nobody else.
        let line = budget / 100 * 95
        let target = line + held / 2
        let before = try workingSet()
        guard held >= 8 << 20, target < budget, before < target, (target - before) / 4096 > 0 else {
            throw BenchError("\(name) holds \(held) bytes and the device \(before) of \(budget): no room to cross jetsam's line without reaching the limit")
        }
        let allocate = (target - before) / 4096 * 4096
        _ = try await WorkloadRequest.allocate(bytes: Int(allocate)).send { try await s.command(hog, $0) }
        // The real event: the program gone (jetsam's kill, or anything else: the log says which).
        try await s.waitForState(name, .notRunning, timeout: 120)
        // Its episode is recorded once its kills are done (at most a minute more).
        var episode: JetsamEpisode?
        let deadline = monotonicSeconds() + 60
        while episode == nil, monotonicSeconds() < deadline {
            episode = killer.episodes.last { $0.victims.contains { $0.name == name } }
            if episode == nil { try await Task.sleep(for: .milliseconds(10)) }
        }
        guard let episode, let victim = episode.victims.first(where: { $0.name == name }) else {
            let log = await s.log
            let exits = log.filter { $0.app == name && ($0.kind == .exit || $0.kind == .jetsam) }.map { "\($0)" }
            throw BenchError("\(name) ended without jetsam choosing it: \(exits.joined(separator: "; "))")
        }
        let afterKill = try workingSet()
        // The foreground app must have lived: jetsam was to take the program alone.
        guard try await s.state(of: hog) == .active else {
            throw BenchError("jetsam took the foreground app too (victims: \(killer.episodes.flatMap(\.victims).map(\.name)))")
        }
        try await s.terminate(hog)
        try program.markActivation()
        let t0 = await s.now()
        try await s.activate(name)
        let ready = await s.now()
        try checkWorking()
        let working = await s.now()
        try await s.terminate(name)
        progress.step()
        return JetsamProof(
            budgetBytes: budget, allocatedBytes: allocate, victims: killer.episodes.flatMap(\.victims).map(\.name), reason: "\(victim.reason)", band: "\(victim.band)",
            footprintBytes: victim.footprintBytes, workingSetBefore: Double(before) / Double(budget), workingSetAfterKill: Double(afterKill) / Double(budget),
            secondsFromLatestEvent: victim.secondsFromLatestEvent, relaunchReadyMs: (ready - t0) * 1000, relaunchWorkingMs: (working - t0) * 1000)
    }
}
