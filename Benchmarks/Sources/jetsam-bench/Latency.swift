import MemPressureLifecycle
import BenchSupport
import Glibc
import MemPressureJetsam
import MemPressureLifecycleProtocol
import MemPressureSystem
import MemPressureMonitor
import MemPressureWorkloadProtocol

/// The first element of `stream` that `accepts`, or nil after `timeout` seconds.
func first<Element: Sendable>(of stream: AsyncStream<Element>, within timeout: Double, where accepts: @escaping @Sendable (Element) -> Bool = { _ in true }) async -> Element? {
    await withTaskGroup(of: Element?.self) { group in
        group.addTask {
            for await e in stream where accepts(e) { return e }
            return nil
        }
        group.addTask {
            do { try await Task.sleep(for: .seconds(timeout)) } catch { return nil }
            return nil
        }
        let r = await group.next() ?? nil
        group.cancelAll()
        return r
    }
}

/// From the pressure event to SIGKILL, with `apps` supervised apps: one foreground app grows
/// to 97% of the budget, past critical; jetsam (ios) decides on the supervisor's cached readings and
/// kills. The warning's grace is set long, so that only memory turning critically short ends it: the time
/// measured is the killer's own, from that event to the first SIGKILL.
struct LatencyResult: Codable, Sendable {
    var apps: Int
    var rounds: Int
    /// Critical event to the first SIGKILL of each round.
    var eventToKill: Stats
    /// The ranker's `decide` on the recorded input of each first decision (replayed here).
    var decideOnRecordedInput: Stats
    var kernelOOMKills: UInt64
    /// The pressure monitor's poll interval. Jetsam is woken by the monitor: on cgroup v1 by the
    /// kernel's events; only what has none waits for this (before, jetsam read the device's usage
    /// on a 50 ms loop of its own, which this was).
    var pollIntervalSeconds: Double
    var notes: [String]
}

func decisionLatency(apps count: Int, rounds: Int, build: String, data: String) async throws -> LatencyResult {
    let budget = 2048 << 20
    var j = JetsamConfiguration(policy: .ios)
    j.warningGraceSeconds = 30
    let killer = JetsamKiller(configuration: j)
    var c = SupervisorConfiguration()
    c.executableDirectory = build
    c.budgetBytes = budget
    c.sampleInterval = 1
    killer.attach(to: &c)
    let s = try Supervisor(configuration: c)
    var notes: [String] = []
    var latencies: [Double] = []
    var decides: [Double] = []
    // Cancelled (Ctrl-C): every app is killed at once; the commands under way then fail, and the
    // catch below finishes the cleanup.
    return try await withTaskCancellationHandler {
    do {
        // count - 1 small model apps, suspended, holding 1 to 12 MiB of dirty memory each (their
        // launch returns once didFinishLaunching has run: the memory is there when they stop).
        for i in 1..<count {
            let name = String(format: "app%03d", i)
            try await s.register(AppSpec(name: name, command: [
                "\(build)/mempressure-workload", "--data-dir", "\(data)/\(name)", "--state-mb", "0", "--image-cache-mb", "0", "--backing-mb", "0",
                "--assets-mb", "0", "--dirty-mb", "\(1 + (i * 7) % 12)",
            ]))
            try await s.activate(name)
            try await s.background(name)
        }
        try await s.register(AppSpec(name: "Grower", command: ["\(build)/mempressure-workload", "--data-dir", "\(data)/Grower", "--state-mb", "1", "--image-cache-mb", "2", "--backing-mb", "1", "--assets-mb", "1", "--dirty-mb", "10"]))
        try await s.activate("Grower")
        let oomBefore = await s.kernelOOMKills() ?? 0
        for round in 0..<rounds {
            let used = try MemoryStatusReader(cgroup: s.deviceMemoryCgroup).read().usedBytes
            // Grow to 97% of the budget, at 300 MiB/s: past critical (95%), and the killer must
            // free about a fifth of the budget to be back at its target.
            let grow = budget * 97 / 100 - Int(used)
            let rate = 300 << 20
            let before = killer.episodes.count
            let updates = killer.episodeUpdates()
            let started = monotonicSeconds()
            try await WorkloadRequest.grow(bytesPerSecond: rate, totalBytes: grow).send { try await s.command("Grower", $0) }
            guard let episode = await first(of: updates, within: 60) else { throw BenchFailure("no episode in round \(round)") }
            if let first = episode.victims.first, let latency = first.secondsFromLatestEvent {
                latencies.append(latency)
                if let input = episode.decisions.first(where: { $0.victim != nil })?.input {
                    let t = monotonicSeconds()
                    _ = try Ranker.decide(input, policy: episode.policy)
                    decides.append(monotonicSeconds() - t)
                }
            } else {
                notes.append("round \(round): \(episode.outcome)")
            }
            // The growth runs its course (a timer: its length is the experiment), then back to
            // where it was: the grower lets go, every victim comes back (suspended).
            let left = started + Double(grow) / Double(rate) + 1 - monotonicSeconds()
            if left > 0 { try await Task.sleep(for: .seconds(left)) }
            guard try await s.state(of: "Grower") == .active else {
                let summary = killer.episodes[before...].map { "\($0.outcome): \($0.victims.map(\.name))" }
                let log = await s.log.filter { $0.app == "Grower" && ($0.kind == .exit || $0.kind == .crash || $0.kind == .jetsam) }
                throw BenchFailure("round \(round): the grower is not active any more: \(log.map { "\($0.kind.rawValue) \($0.detail ?? "")" }); episodes: \(summary)")
            }
            _ = try await WorkloadRequest.release(bytes: grow).send { try await s.command("Grower", $0) }
            for e in killer.episodes[before...] {
                for v in e.victims {
                    try await s.activate(v.name)
                    try await s.background(v.name)
                }
            }
        }
        let oom = (await s.kernelOOMKills() ?? 0) - oomBefore
        await s.shutdown()
        guard !latencies.isEmpty else { throw BenchFailure("no kill measured: \(notes)") }
        return LatencyResult(
            apps: count, rounds: latencies.count, eventToKill: Stats(latencies), decideOnRecordedInput: Stats(decides), kernelOOMKills: oom,
            pollIntervalSeconds: c.pressure?.pollInterval ?? PressureConfiguration().pollInterval, notes: notes)
    } catch {
        await s.shutdown()
        throw error
    }
    } onCancel: {
        Task { await s.abort() }
    }
}

/// How long after SIGKILL a victim's memory is back in its cgroup, with process_mrelease (the
/// killer frees the address space itself, at once) and without (the victim must run its exit).
struct MemoryBackResult: Codable, Sendable {
    var sizeMB: Int
    var withRelease: Stats
    var withoutRelease: Stats
    /// The process_mrelease call alone.
    var releaseCall: Stats
    /// The kernel's OOM kills in the cgroup over these rounds (must be 0: the victims die by our
    /// SIGKILL). Nil in reports written before it was counted.
    var kernelOOMKills: UInt64?
    /// Rounds in which process_mrelease found the victim's address space already gone (its exit
    /// was quicker; ESRCH). Nil in reports written before it was counted.
    var releaseFoundExited: Int?
}

func memoryBack(sizesMB: [Int], rounds: Int, build: String) throws -> [MemoryBackResult] {
    let cgroup = try BenchCgroup(name: "mempressure-bench-\(getpid())-mrelease", limitBytes: 4 << 30)
    defer { cgroup.remove() }
    func usage() throws -> UInt64 { ByteScanner.singleNumber(try ProcFS.readBytes("\(cgroup.path)/memory.usage_in_bytes")) ?? 0 }
    var out: [MemoryBackResult] = []
    for size in sizesMB {
        var with: [Double] = [], without: [Double] = [], call: [Double] = []
        var releaseFoundGone = 0
        let oomBefore = try cgroup.oomKills()
        for round in 0..<(2 * rounds) {
            try Task.checkCancellation()
            let release = round % 2 == 0
            let base = try usage()
            let child = try Child(["\(build)/mempressure-exec", "--cgroup", cgroup.path, "--", "\(build)/mempressure-hog", "--dirty", "\(size)m", "--wait", "stdin"])
            guard child.readLine(timeout: 60)?.hasPrefix("ready") == true else { throw BenchFailure("hog did not start") }
            let held = try usage()
            let back = held - (held - base) / 10 * 9  // 90% of what it added
            let t0 = monotonicSeconds()
            try child.handle.signal(SIGKILL)
            if release {
                let t = monotonicSeconds()
                do {
                    try child.handle.releaseMemory()
                    call.append(monotonicSeconds() - t)
                } catch {
                    // ESRCH: its exit was quicker, its address space already gone (the round
                    // still counts, timed to its memory back, as the killer's would be).
                    let code: Int32 = error.errno.rawValue
                    guard code == ESRCH else { throw error }
                    releaseFoundGone += 1
                }
            }
            while try usage() > back {
                guard monotonicSeconds() - t0 < 10 else { throw BenchFailure("memory not back 10 s after SIGKILL") }
                // A short pause between reads, so that the poll does not take the CPU the victim
                // needs to run its exit (2 CPUs here).
                var ts = timespec(tv_sec: 0, tv_nsec: 20_000)
                nanosleep(&ts, nil)
            }
            let elapsed = monotonicSeconds() - t0
            if release { with.append(elapsed) } else { without.append(elapsed) }
            var status: Int32 = 0
            _ = retryOnInterrupt { waitpid(child.pid, &status, 0) }
        }
        let oom = try cgroup.oomKills() - oomBefore
        guard oom == 0 else { throw BenchFailure("the kernel's OOM killer killed \(oom) time(s) in \(cgroup.path) while memory came back") }
        out.append(MemoryBackResult(
            sizeMB: size, withRelease: Stats(with), withoutRelease: Stats(without), releaseCall: Stats(call), kernelOOMKills: oom,
            releaseFoundExited: releaseFoundGone))
    }
    return out
}
