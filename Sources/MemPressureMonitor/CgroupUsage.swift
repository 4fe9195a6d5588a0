import Glibc
import MemPressureSystem
import MemPressureValues

/// A memory cgroup's working set against its limit (`MemoryStatusReader`: usage − inactive
/// file, as the kubelet counts it) and whether a task waits at the limit, judged by the one
/// judgement (`PressureConfiguration.judge`) at every reading. The working set, not the raw
/// usage: clean page cache in the cgroup is reclaimed before its OOM killer is called, so it
/// raises no pressure, and jetsam's measure of what is free is the same figure.
///
/// On cgroup v1 the kernel wakes the monitor where the judgement can change, and the cgroup is
/// read then:
/// - usage thresholds (`UsageThresholds`: eventfds on `memory.usage_in_bytes`, armed at the
///   judgement's lines shifted by the inactive file pages);
/// - reclaim in the cgroup (`memory.pressure_level` "low"): where the usage stays at the limit
///   while the working set grows, no threshold is crossed;
/// - a task at the limit (`memory.oom_control`): critical while it waits (`under_oom 1`).
/// It is also read at every poll interval: the kernel has no event for a task that stops
/// waiting, nor for page cache turning active without a charge or a reclaim. On cgroup v2 (no
/// thresholds, no `oom_control`) it is read at every poll interval only; PSI triggers on the
/// group's `memory.pressure` are a source of their own.
final class CgroupUsage: PressureSource, @unchecked Sendable {
    static let sourceName = "cgroup usage against its limit"
    let name = CgroupUsage.sourceName
    private let reader: MemoryStatusReader
    private var level: PressureLevel = .normal
    private var detail = ""
    private var reportedFailure = false
    /// What goes wrong now while the source goes on (a reading, arming thresholds), and what its
    /// status says of it.
    private var readFailure: String?
    private var armFailure: String?
    private var shownNote = ""
    private var buffer = ReadBuffer(capacity: 16384)
    /// v1's event sources (nil on v2, or where registration was refused: see `open`).
    private let thresholds: UsageThresholds?
    private let reclaimFD: CInt?
    private let oomFD: CInt?

    var wakeup: PressureWakeup { thresholds != nil || oomFD != nil ? .event : .poll }

    private init(_ reader: MemoryStatusReader, thresholds: UsageThresholds?, reclaimFD: CInt?, oomFD: CInt?) {
        self.reader = reader
        self.thresholds = thresholds
        self.reclaimFD = reclaimFD
        self.oomFD = oomFD
    }

    /// The descriptors, in this order: the armed thresholds, the armer's notification, reclaim,
    /// the OOM notification (those that exist).
    var pollDescriptors: [(fd: CInt, events: Int16)] {
        var fds: [CInt] = []
        if let thresholds { fds += [thresholds.armed.fd, thresholds.notify] }
        if let reclaimFD { fds.append(reclaimFD) }
        if let oomFD { fds.append(oomFD) }
        return fds.map { ($0, Int16(POLLIN)) }
    }

    func update(revents: [Int16], at time: Double, _ c: PressureConfiguration) -> SourceUpdate {
        var result = SourceUpdate()
        var i = 0
        func fired() -> Bool {
            defer { i += 1 }
            guard i < revents.count, revents[i] != 0 else { return false }
            if let failure = HeldEvent.pollFailure(revents[i]) { result.stopped = failure }
            return true
        }
        var kernel: [String] = []
        if let thresholds {
            if fired() {
                CgroupEventControl.drain(thresholds.armed.fd)
                kernel.append("usage threshold")
            }
            if fired() {
                armFailure = thresholds.takeArmed().map { "cannot arm the usage thresholds again (\($0)): until they are, the working set is read every poll interval" }
            }
        }
        if let reclaimFD, fired() {
            CgroupEventControl.drain(reclaimFD)
            kernel.append("reclaim (memory.pressure_level low)")
        }
        if let oomFD, fired() {
            CgroupEventControl.drain(oomFD)
            kernel.append("a task at the limit (memory.oom_control)")
        }
        if result.stopped == nil { read(c, kernel, &result) }
        let note = [readFailure, armFailure].compactMap { $0 }.joined(separator: "; ")
        if note != shownNote {
            shownNote = note
            result.note = note
        }
        return result
    }

    /// Reads the cgroup and judges it; the kernel's `events` are reported only with a reading.
    private func read(_ c: PressureConfiguration, _ events: [String], _ result: inout SourceUpdate) {
        let status: MemoryStatus
        let reading: CgroupMemory.Reading?
        do {
            (status, reading) = try reader.read(&buffer)
        } catch {
            // The cgroup went away (or a file cannot be read): no reading, the level drops. The
            // kernel signals every eventfd once as the cgroup goes: that is not pressure.
            level = .normal
            guard let memory = reader.memory, access(memory.usageFile, F_OK) != 0 else {
                readFailure = "cannot read the cgroup now (\(error)): it counts as normal until it can"
                return
            }
            if !reportedFailure {
                reportedFailure = true
                result.stopped = "\(memory.usageFile) went away (the cgroup was removed)"
            }
            return
        }
        readFailure = nil
        result.events = events
        // No limit: the working set is under no pressure against one.
        let limited = reading?.limitBytes.map { $0 > 0 } ?? false
        let judgement = c.judge(
            MemoryEvidence(status: limited ? status : nil, taskWaitsAtLimit: reading?.taskWaitsAtLimit ?? false), current: level)
        level = judgement.level
        detail = judgement.detail
        if let thresholds, let reading, let limit = reading.limitBytes, limited {
            thresholds.want(UsageThresholds.lines(limit: limit, inactiveFile: reading.inactiveFileBytes, c))
        }
    }

    func level(at time: Double, _ c: PressureConfiguration) -> (PressureLevel, String) { (level, detail) }

    func close() {
        thresholds?.close()
        if let reclaimFD { Glibc.close(reclaimFD) }
        if let oomFD { Glibc.close(oomFD) }
    }

    static func open(_ c: PressureConfiguration, cgroup: String, isV2: Bool) -> (sources: [any PressureSource], status: PressureSourceStatus) {
        let reader = MemoryStatusReader(cgroup: cgroup, procRoot: c.procRoot)
        guard let memory = reader.memory, memory.exists else {
            return ([], .init(name: sourceName, available: false, detail: "\(cgroup)'s memory.usage_in_bytes (or memory.current), limit or memory.stat missing"))
        }
        let judged = "working set (\(memory.usageFile) − \(memory.inactiveFileKey)) / \(memory.limitFile): warning at \(Int(c.usageWarningFraction * 100))%, critical at \(Int(c.usageCriticalFraction * 100))%; critical while a task waits at the limit"
        let every = "read every \(ByteFormat.fixed(c.pollInterval, 2)) s"
        if isV2 || !c.useCgroupEvents {
            let why = isV2 ? "cgroup v2 offers no usage thresholds (its PSI triggers are the psi source)" : "kernel events turned off by the configuration"
            return ([CgroupUsage(reader, thresholds: nil, reclaimFD: nil, oomFD: nil)], .init(
                name: sourceName, available: true, detail: "\(judged); \(every): \(why)", wakeup: .poll))
        }
        // v1: the first reading places the thresholds; each event source that cannot be
        // registered is said, and the others (and the poll) go on.
        var buffer = ReadBuffer(capacity: 16384)
        var refused: [String] = []
        var thresholds: UsageThresholds?
        do throws(MemoryStatusError) {
            let (_, reading) = try reader.read(&buffer)
            let lines = reading.flatMap { r in r.limitBytes.map { UsageThresholds.lines(limit: $0, inactiveFile: r.inactiveFileBytes, c) } } ?? []
            do {
                thresholds = try UsageThresholds(cgroup: cgroup, lines: lines)
            } catch {
                refused.append("usage thresholds (\(error))")
            }
        } catch {
            refused.append("usage thresholds (cannot read the cgroup: \(error))")
        }
        func register(_ file: String, _ argument: String, _ what: String) -> CInt? {
            do {
                return try CgroupEventControl.register(cgroup: cgroup, file: file, [argument])
            } catch {
                refused.append("\(what) (\(error))")
                return nil
            }
        }
        let reclaimFD = register("memory.pressure_level", "low", "reclaim")
        let oomFD = register("memory.oom_control", "", "memory.oom_control")
        let source = CgroupUsage(reader, thresholds: thresholds, reclaimFD: reclaimFD, oomFD: oomFD)
        var woken: [String] = []
        if thresholds != nil { woken.append("usage thresholds (eventfd, at the judgement's lines plus inactive file)") }
        if reclaimFD != nil { woken.append("reclaim (memory.pressure_level low)") }
        if oomFD != nil { woken.append("a task at the limit (memory.oom_control)") }
        var detail = "\(judged); woken by " + (woken.isEmpty ? "nothing" : woken.joined(separator: ", "))
        detail += ", and \(every) (no event for a task that stops waiting, or page cache turning active)"
        if !refused.isEmpty { detail += "; refused: " + refused.joined(separator: ", ") }
        return ([source], .init(name: sourceName, available: true, detail: detail, wakeup: source.wakeup))
    }
}
