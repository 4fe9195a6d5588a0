import Glibc
import LinuxSystem
import Pressure

/// How much memory the device has and how much of it is free, measured the way the kernel will
/// judge it: what jetsam must keep free so that the kernel's OOM killer never has to act.
///
/// - A device with a budget (a memory cgroup): `used` is the cgroup's working set
///   (`Pressure.CgroupMemory`, the figure the pressure monitor's usage source reads too), as the
///   kubelet's eviction manager and cAdvisor define it — `usage − inactive_file` (v1
///   `memory.usage_in_bytes` and `total_inactive_file` of `memory.stat`; v2 `memory.current`
///   and `inactive_file`). Inactive file pages (clean page cache, and MADV_FREE'd pages, which
///   the kernel keeps on the inactive file list) are reclaimed before the OOM killer is called,
///   so they count as free. `available = limit − used`.
/// - The whole machine: `MemAvailable` of /proc/meminfo against `MemTotal`.
public struct MemoryStatus: Sendable, Hashable, Codable {
    public var budgetBytes: UInt64
    public var usedBytes: UInt64
    public var availableBytes: UInt64
    /// Where the figures come from.
    public var source: String

    public init(budgetBytes: UInt64, usedBytes: UInt64, availableBytes: UInt64, source: String) {
        self.budgetBytes = budgetBytes
        self.usedBytes = usedBytes
        self.availableBytes = availableBytes
        self.source = source
    }
}

/// Why memory could not be measured (a killer then decides nothing: never on partial data): a
/// file that cannot be read, or one that does not say what it should.
public typealias MemoryStatusError = CgroupMemory.ReadError

/// Reads `MemoryStatus` for a memory cgroup or for the machine.
public struct MemoryStatusReader: Sendable {
    /// The memory cgroup directory (v1 `.../memory/NAME`, v2 `.../NAME`), nil for the machine.
    public let cgroup: String?
    public let procRoot: String
    /// The cgroup's files (v1 or v2, found once).
    private let memory: CgroupMemory?

    public init(cgroup: String?, procRoot: String = "/proc") {
        self.cgroup = cgroup
        self.procRoot = procRoot
        memory = cgroup.map { CgroupMemory(directory: $0) }
    }

    public func read() throws(MemoryStatusError) -> MemoryStatus {
        guard let cgroup else {
            let info = try meminfo()
            guard let total = info.total, let available = info.available else {
                throw .malformed(file: "\(procRoot)/meminfo", reason: "no MemTotal or MemAvailable")
            }
            return MemoryStatus(
                budgetBytes: total, usedBytes: total &- min(total, available), availableBytes: min(total, available),
                source: "MemAvailable of /proc/meminfo")
        }
        guard let memory else { throw .malformed(file: cgroup, reason: "not a memory cgroup") }
        var buffer = ReadBuffer(capacity: 16384)
        let r = try memory.read(&buffer)
        // No limit: the machine's memory is the budget.
        var limit = UInt64(1) << 60
        if let l = r.limitBytes {
            limit = l
        } else if let total = try meminfo().total {
            limit = total
        }
        let used = r.workingSetBytes
        return MemoryStatus(
            budgetBytes: limit, usedBytes: used, availableBytes: limit &- min(limit, used),
            source: "working set of \(cgroup) (usage − \(memory.inactiveFileKey))")
    }

    private func bytes(_ path: String) throws(MemoryStatusError) -> [UInt8] {
        do {
            return try ProcFS.readBytes(path)
        } catch {
            throw .unreadable(error)
        }
    }

    private func meminfo() throws(MemoryStatusError) -> (total: UInt64?, available: UInt64?) {
        let text = try bytes("\(procRoot)/meminfo")
        let info = text.withUnsafeBytes { MemInfo.parse($0) }
        return (info.totalBytes, info.availableBytes)
    }
}

/// Whether the machine has swap (freeze-dry writes to it).
public enum Swap {
    /// SwapTotal of /proc/meminfo, in bytes (0: no swap), or why it could not be read.
    public static func totalBytes(procRoot: String = "/proc") -> Result<UInt64, SystemCallError> {
        do {
            let text = try ProcFS.readBytes("\(procRoot)/meminfo")
            return .success(text.withUnsafeBytes { MemInfo.parse($0) }.swapTotalBytes ?? 0)
        } catch {
            return .failure(error)
        }
    }
}
