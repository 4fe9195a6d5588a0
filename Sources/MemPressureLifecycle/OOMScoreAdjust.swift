import MemPressureLifecycleProtocol
import MemPressureSystem

// MARK: Each app's oom_score_adj from its state (`OOMScoreBands`)

extension Supervisor {
    /// The high-memory line the bands split by: `OOMScoreBands.highMemoryLine` of the device's
    /// budget, or of the machine's memory without one.
    func oomScoreHighMemoryLine(_ bands: OOMScoreBands) -> UInt64 {
        if let line = oomHighMemoryLine { return line }
        var budget = configuration.budgetBytes.map { UInt64($0) } ?? 0
        if budget == 0 {
            do {
                budget = try ProcFS.readBytes("/proc/meminfo").withUnsafeBytes { MemInfo.parse($0) }.totalBytes ?? 0
            } catch {
                budget = 0  // unknown: every app counts as low memory (the line is 0: see `score`)
            }
        }
        let line = bands.highMemoryLine(budgetBytes: budget)
        oomHighMemoryLine = line
        return line
    }

    /// Gives the app's processes the `oom_score_adj` of its state and footprint, if that is not
    /// what they were last given: at each transition and each footprint reading. A failure is
    /// logged once per run (the kernel's killer then sees the value the app inherited).
    func applyOOMScore(_ a: AppRecord) {
        guard let bands = configuration.oomScoreBands, let process = a.process else { return }
        let footprint = a.latest?.sample.footprintBytes
        guard let value = bands.score(for: a.state, footprintBytes: footprint, highMemoryLine: oomScoreHighMemoryLine(bands)) else { return }
        if let last = a.oomScore, last.generation == a.generation, last.value == value { return }
        // The main process first, by its PID (written before mempressure-exec has joined the
        // app's cgroup, the value goes with it into the group and across its exec), checked
        // through the directory opened to be this run's process by its start time: once reaped
        // (its run is ending while the rest of the app is ended), its PID may be another's.
        let startTicks = process.startTicks
        var result = OOMScore.set(value, pids: [process.pid]) { dir, buffer in
            guard let startTicks else { return false }
            do {
                try dir.read("stat", into: &buffer)
                return try buffer.withBytes { (b) throws(ProcError) in try ProcessStat.parse(b, pid: dir.pid) }.startTicks == startTicks
            } catch {
                return false
            }
        }
        switch process.members {
        case .cgroup(let group):
            do {
                result.add(try group.members.setOOMScoreAdjust(value))
            } catch {
                noteOOMScoreFailure(a, "\(error)")
                return
            }
        case .processGroup:
            let pgid = process.pid
            let others = OOMScore.set(value, pids: AppProcess.processes(inGroup: pgid)) { dir, buffer in
                do {
                    try dir.read("stat", into: &buffer)
                    let stat = try buffer.withBytes { (b) throws(ProcError) in try ProcessStat.parse(b, pid: dir.pid) }
                    return stat.processGroup == pgid
                } catch {
                    return false
                }
            }
            result.add(others)
        }
        if let failure = result.failure {
            noteOOMScoreFailure(a, "oom_score_adj \(value): \(failure)")
            return
        }
        if result.incomplete {
            noteOOMScoreFailure(a, "oom_score_adj \(value): the app kept forking while it was set; its newest processes may carry the old value")
        }
        guard result.set > 0 else { return }  // its run is ending: nothing of it was there to write
        a.oomScore = (a.generation, value)
    }

    private func noteOOMScoreFailure(_ a: AppRecord, _ cause: String) {
        guard a.oomScoreFailureLogged != a.generation else { return }
        a.oomScoreFailureLogged = a.generation
        record(.error(.oomScore(cause: cause)), a)
    }
}
