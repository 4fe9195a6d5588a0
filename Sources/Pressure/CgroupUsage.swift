import Glibc
import LinuxSystem

/// A memory cgroup's working set against its limit (`CgroupMemory`: usage − inactive file, as
/// the kubelet counts it), read at every poll interval. The working set, not the raw usage:
/// clean page cache in the cgroup is reclaimed before its OOM killer is called, so it raises no
/// pressure, and jetsam's measure of what is free (`MemoryStatus`) is the same figure.
final class CgroupUsage: PressureSource, @unchecked Sendable {
    static let sourceName = "cgroup usage against its limit"
    let name = CgroupUsage.sourceName
    private let memory: CgroupMemory
    private var reading = PolledLevel()
    private var reportedFailure = false
    private var buffer = ReadBuffer(capacity: 16384)

    init(_ memory: CgroupMemory) {
        self.memory = memory
    }

    func update(revents: Int16, at time: Double, _ c: PressureConfiguration) -> String? {
        let r: CgroupMemory.Reading
        do {
            r = try memory.read(&buffer)
        } catch {
            // The cgroup went away (or a file cannot be read): no reading, the level decays.
            reading.lost()
            guard access(memory.usageFile, F_OK) != 0, !reportedFailure else { return nil }
            reportedFailure = true
            return "\(memory.usageFile) went away (the cgroup was removed)"
        }
        guard let limit = r.limitBytes, limit > 0 else {
            reading.lost()  // no limit: no pressure against one
            return nil
        }
        reading.read("working set", r.workingSetBytes, of: limit, warning: c.usageWarningFraction, critical: c.usageCriticalFraction, c, rising: true)
        return nil
    }

    func level(at time: Double, _ c: PressureConfiguration) -> (PressureLevel, String) { reading.current }

    static func open(_ c: PressureConfiguration, cgroup: String, isV2: Bool) -> (sources: [any PressureSource], status: PressureSourceStatus) {
        let memory = CgroupMemory(directory: cgroup)
        guard memory.exists else {
            return ([], .init(name: sourceName, available: false, detail: "\(memory.usageFile), \(memory.limitFile) or \(memory.statFile) missing"))
        }
        return ([CgroupUsage(memory)], .init(
            name: sourceName, available: true,
            detail: "working set (\(memory.usageFile) − \(memory.inactiveFileKey)) / \(memory.limitFile): warning at \(Int(c.usageWarningFraction * 100))%, critical at \(Int(c.usageCriticalFraction * 100))%"))
    }
}
