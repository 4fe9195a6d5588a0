import Glibc
import LinuxSystem
import PressureValues

/// A memory cgroup's working set against its limit (`MemoryStatusReader`: usage − inactive
/// file, as the kubelet counts it), read at every poll interval and judged by the one judgement
/// (`PressureConfiguration.judge`). The working set, not the raw usage: clean page cache in the
/// cgroup is reclaimed before its OOM killer is called, so it raises no pressure, and jetsam's
/// measure of what is free is the same figure.
final class CgroupUsage: PressureSource, @unchecked Sendable {
    static let sourceName = "cgroup usage against its limit"
    let name = CgroupUsage.sourceName
    private let reader: MemoryStatusReader
    private var level: PressureLevel = .normal
    private var detail = ""
    private var reportedFailure = false
    private var buffer = ReadBuffer(capacity: 16384)

    init(_ reader: MemoryStatusReader) {
        self.reader = reader
    }

    func update(revents: Int16, at time: Double, _ c: PressureConfiguration) -> String? {
        let status: MemoryStatus
        let reading: CgroupMemory.Reading?
        do {
            (status, reading) = try reader.read(&buffer)
        } catch {
            // The cgroup went away (or a file cannot be read): no reading, the level drops.
            level = .normal
            guard let memory = reader.memory, access(memory.usageFile, F_OK) != 0, !reportedFailure else { return nil }
            reportedFailure = true
            return "\(memory.usageFile) went away (the cgroup was removed)"
        }
        // No limit: no pressure against one.
        let limited = reading?.limitBytes.map { $0 > 0 } ?? false
        let judgement = c.judge(MemoryEvidence(status: limited ? status : nil), current: level)
        level = judgement.level
        detail = judgement.detail
        return nil
    }

    func level(at time: Double, _ c: PressureConfiguration) -> (PressureLevel, String) { (level, detail) }

    static func open(_ c: PressureConfiguration, cgroup: String, isV2: Bool) -> (sources: [any PressureSource], status: PressureSourceStatus) {
        let reader = MemoryStatusReader(cgroup: cgroup, procRoot: c.procRoot)
        guard let memory = reader.memory, memory.exists else {
            return ([], .init(name: sourceName, available: false, detail: "\(cgroup)'s memory.usage_in_bytes (or memory.current), limit or memory.stat missing"))
        }
        return ([CgroupUsage(reader)], .init(
            name: sourceName, available: true,
            detail: "working set (\(memory.usageFile) − \(memory.inactiveFileKey)) / \(memory.limitFile): warning at \(Int(c.usageWarningFraction * 100))%, critical at \(Int(c.usageCriticalFraction * 100))%"))
    }
}
