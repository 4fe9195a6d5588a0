import Glibc
import LinuxSystem

/// A cgroup's memory usage against its limit (v1 memory.usage_in_bytes / memory.limit_in_bytes,
/// v2 memory.current / memory.max), read at every poll interval.
final class CgroupUsage: PressureSource, @unchecked Sendable {
    static let sourceName = "cgroup usage against its limit"
    let name = CgroupUsage.sourceName
    private let usageFile: String
    private let limitFile: String
    private var reading = PolledLevel()
    private var reportedFailure = false
    private var buffer = ReadBuffer(capacity: 4096)

    init(usageFile: String, limitFile: String) {
        self.usageFile = usageFile
        self.limitFile = limitFile
    }

    /// The number in a cgroup file ("max" for no limit); nil when it cannot be read.
    private func number(_ path: String) -> UInt64? {
        do {
            try ProcFS.readFile(path, into: &buffer)
        } catch {
            return nil  // the cgroup went away: no reading, the level decays
        }
        return buffer.withBytes { ByteScanner.singleNumber($0) }
    }

    func update(revents: Int16, at time: Double, _ c: PressureConfiguration) -> String? {
        guard let usage = number(usageFile), let limit = number(limitFile), limit > 0, limit < UInt64(1) << 62 else {
            reading.lost()
            guard access(usageFile, F_OK) != 0, !reportedFailure else { return nil }
            reportedFailure = true
            return "\(usageFile) went away (the cgroup was removed)"
        }
        reading.read("usage", usage, of: limit, warning: c.usageWarningFraction, critical: c.usageCriticalFraction, c, rising: true)
        return nil
    }

    func level(at time: Double, _ c: PressureConfiguration) -> (PressureLevel, String) { reading.current }

    static func open(_ c: PressureConfiguration, cgroup: String, isV2: Bool) -> (sources: [any PressureSource], status: PressureSourceStatus) {
        let usage = isV2 ? "\(cgroup)/memory.current" : "\(cgroup)/memory.usage_in_bytes"
        let limit = isV2 ? "\(cgroup)/memory.max" : "\(cgroup)/memory.limit_in_bytes"
        guard ProcFS.isFile(usage) && ProcFS.isFile(limit) else {
            return ([], .init(name: sourceName, available: false, detail: "\(usage) or \(limit) missing"))
        }
        return ([CgroupUsage(usageFile: usage, limitFile: limit)], .init(
            name: sourceName, available: true,
            detail: "\(usage) / \(limit): warning at \(Int(c.usageWarningFraction * 100))%, critical at \(Int(c.usageCriticalFraction * 100))%"))
    }
}
