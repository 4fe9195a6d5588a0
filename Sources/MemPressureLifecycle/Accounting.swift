import Glibc
import MemPressureLifecycleProtocol
import MemPressureSystem
import MemPressureVMTracker

// MARK: Accounting per state, and footprint sampling

extension Supervisor {
    /// Moves the app to `state`: its usage so far is charged to the state it leaves, and a
    /// footprint sample marks the transition.
    func transition(_ a: AppRecord, to state: LifecycleState) {
        guard a.state != state else { return }
        account(a)
        a.chargedState = nil
        let from = a.state
        let time = monotonicSeconds()
        if from == .active { a.lastActiveAt = time }
        if state == .active {
            a.activations += 1
            a.lastActiveAt = time
        }
        a.state = state
        a.stateSince = time
        record(SupervisorEvent(t: now(), app: a.name, pid: a.pid, .state(from: from, to: state)))
        sample(a)
        applyOOMScore(a)
        checkWaiters(a.name)
    }

    /// Adds the usage since the last sample to the state the app is in (or to `chargedState`).
    func account(_ a: AppRecord) {
        guard a.state != .notRunning else { return }
        let nowTime = monotonicSeconds()
        let state = a.chargedState ?? a.state
        var acc = a.accounting[state] ?? StateAccounting()
        if let process = a.process, let sample = UsageSample.read(pid: process.pid), let last = a.lastSample {
            Self.add(&acc, from: last, to: sample)
            a.lastSample = sample
        } else {
            acc.seconds += nowTime - (a.lastSample?.time ?? nowTime)
            a.lastSample = a.lastSample.map { var s = $0; s.time = nowTime; return s }
        }
        a.accounting[state] = acc
    }

    static func add(_ acc: inout StateAccounting, from a: UsageSample, to b: UsageSample) {
        acc.seconds += max(0, b.time - a.time)
        acc.cpuSeconds += max(0, b.cpuSeconds - a.cpuSeconds)
        acc.minorFaults &+= b.minorFaults &- min(a.minorFaults, b.minorFaults)
        acc.majorFaults &+= b.majorFaults &- min(a.majorFaults, b.majorFaults)
        acc.ioReadBytes &+= b.ioReadBytes &- min(a.ioReadBytes, b.ioReadBytes)
        acc.ioWriteBytes &+= b.ioWriteBytes &- min(a.ioWriteBytes, b.ioWriteBytes)
    }

    /// Reads every running app's footprint. The reads (memory.stat and smaps_rollup: about half a
    /// millisecond per process, so 50 ms for 100 one-process apps) run on a thread of their own, not on the actor: a policy's
    /// `apps()` or `kill` never waits behind them. Each reading is applied only if the app is
    /// still the same run.
    func sampleAll() async {
        metrics.countStateSeconds(upTo: now())
        let targets: [SampleTarget] = order.compactMap { name in
            guard let a = records[name], let process = a.process else { return nil }
            return SampleTarget(name: name, generation: a.generation, process: process)
        }
        guard !targets.isEmpty else { return }
        let readings = await Self.blocking(timeout: 30) {
            targets.map { t -> (SampleTarget, AppMemory?, Double) in
                (t, AppMemory.read(t.process), monotonicSeconds())  // nil: exited or exiting
            }
        }
        for (t, counters, readAt) in readings ?? [] {
            guard let counters, let a = records[t.name], a.generation == t.generation, a.process === t.process else { continue }
            // A reading taken meanwhile at a transition or on request is newer: keep it.
            if let latest = a.latest, latest.at > readAt { continue }
            apply(counters, to: a, readAt: readAt)
        }
    }

    struct SampleTarget: Sendable {
        var name: String
        var generation: Int
        var process: AppProcess
    }

    /// Reads the app's memory now (`AppMemory`: all of its processes) into its timeline and its
    /// latest reading; nil once it has exited.
    @discardableResult
    func sample(_ a: AppRecord) -> FootprintSample? {
        guard let process = a.process, let m = AppMemory.read(process) else { return nil }  // nil: exited or exiting
        return apply(m, to: a, readAt: monotonicSeconds())
    }

    /// A reading of the app, taken at `readAt` (monotonic): its timeline, its latest, its
    /// lifetime maximum, the subscribers.
    @discardableResult
    private func apply(_ c: AppMemory, to a: AppRecord, readAt: Double) -> FootprintSample {
        let s = FootprintSample(
            t: now(), state: a.state, footprintBytes: c.footprint, residentBytes: c.resident, dirtyBytes: c.dirty,
            purgeableBytes: c.purgeable, swappedBytes: c.swapped)
        a.timeline.append(s)
        a.latest = (s, readAt)
        a.lifetimeMaxFootprint = max(a.lifetimeMaxFootprint, c.footprint)
        // A reading that moves the app across the high-memory line moves its band.
        if a.oomScore != nil { applyOOMScore(a) }
        if !sampleSubscribers.isEmpty {
            let v = view(a)
            sampleSubscribers.yield(v)
        }
        return s
    }

    /// Launch to first ready of a run: what relaunching the app costs.
    func noteLaunchToReady(_ a: AppRecord, seconds: Double) {
        a.launchToReady.append(seconds)
        metrics.timeToReady(a.name, seconds: seconds)
        if a.launchToReady.count > 16 { a.launchToReady.removeFirst() }
    }
}

/// CPU, faults and I/O of a process now.
struct UsageSample: Sendable {
    var time: Double
    var cpuSeconds: Double
    var minorFaults: UInt64
    var majorFaults: UInt64
    var ioReadBytes: UInt64
    var ioWriteBytes: UInt64

    static let ticksPerSecond = Double(sysconf(Int32(_SC_CLK_TCK)))

    /// Reads /proc/PID/stat and /proc/PID/io; nil once the process is gone.
    static func read(pid: Int32, procfs: ProcFS = ProcFS()) -> UsageSample? {
        var buffer = ReadBuffer(capacity: 4096)
        do {
            let dir = try procfs.open(pid)
            try dir.read("stat", into: &buffer)
            let stat = try buffer.withBytes { (b) throws(ProcError) in try ProcessStat.parse(b, pid: pid) }
            var read: UInt64 = 0, written: UInt64 = 0
            do {
                try dir.read("io", into: &buffer)
                let io = buffer.withBytes { ProcessIO.parse($0) }
                read = io.readBytes
                written = io.writeBytes
            } catch {
                // /proc/PID/io needs ptrace access: without it, I/O is counted as zero.
            }
            return UsageSample(
                time: monotonicSeconds(), cpuSeconds: Double(stat.userTicks + stat.systemTicks) / ticksPerSecond,
                minorFaults: stat.minorFaults, majorFaults: stat.majorFaults, ioReadBytes: read, ioWriteBytes: written)
        } catch {
            return nil
        }
    }
}
