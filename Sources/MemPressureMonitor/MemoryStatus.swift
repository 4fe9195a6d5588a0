import MemPressureSystem

/// How much memory the device has and how much of it is free, measured the way the kernel will
/// judge it: what jetsam must keep free so that the kernel's OOM killer never has to act, and
/// what the one judgement of memory (`PressureConfiguration.judge`) looks at.
///
/// - A device with a budget (a memory cgroup): `used` is the cgroup's working set
///   (`CgroupMemory`), as the kubelet's eviction manager and cAdvisor define it —
///   `usage − inactive_file` (v1 `memory.usage_in_bytes` and `total_inactive_file` of
///   `memory.stat`; v2 `memory.current` and `inactive_file`). Inactive file pages (clean page
///   cache, and MADV_FREE'd pages, which the kernel keeps on the inactive file list) are
///   reclaimed before the OOM killer is called, so they count as free. `available = limit − used`.
/// - The whole machine: `MemAvailable` of /proc/meminfo against `MemTotal`.
public struct MemoryStatus: Sendable, Hashable, Codable {
    public var budgetBytes: UInt64
    public var usedBytes: UInt64
    public var availableBytes: UInt64
    /// Where the figures come from.
    public var source: String
    /// Whose memory it is: a memory cgroup's budget, or the whole machine's. The judgement holds
    /// each against its own thresholds.
    public var scope: Scope

    public enum Scope: String, Sendable, Hashable, Codable {
        /// A memory cgroup's working set against its limit (or MemTotal when it has none).
        case cgroup
        /// The machine: MemAvailable against MemTotal.
        case machine
    }

    public init(budgetBytes: UInt64, usedBytes: UInt64, availableBytes: UInt64, source: String, scope: Scope = .cgroup) {
        self.budgetBytes = budgetBytes
        self.usedBytes = usedBytes
        self.availableBytes = availableBytes
        self.source = source
        self.scope = scope
    }

    private enum CodingKeys: String, CodingKey {
        case budgetBytes, usedBytes, availableBytes, source, scope
    }

    /// Reports written before `scope` existed (episodes of jetsam's format 1) have none: the
    /// machine's reading is the one whose source is MemAvailable, as `MemoryStatusReader` names it.
    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        budgetBytes = try c.decode(UInt64.self, forKey: .budgetBytes)
        usedBytes = try c.decode(UInt64.self, forKey: .usedBytes)
        availableBytes = try c.decode(UInt64.self, forKey: .availableBytes)
        source = try c.decode(String.self, forKey: .source)
        scope = try c.decodeIfPresent(Scope.self, forKey: .scope) ?? (source.hasPrefix("MemAvailable") ? .machine : .cgroup)
    }
}

/// Why memory could not be measured (a killer then decides nothing: never on partial data): a
/// file that cannot be read, or one that does not say what it should.
public typealias MemoryStatusError = CgroupMemory.ReadError

/// Reads `MemoryStatus` for a memory cgroup or for the machine: the device's memory reading,
/// the one the pressure monitor's cgroup source, jetsam and the exporter take.
public struct MemoryStatusReader: Sendable {
    /// The memory cgroup directory (v1 `.../memory/NAME`, v2 `.../NAME`), nil for the machine.
    public let cgroup: String?
    public let procRoot: String
    /// The cgroup's files (v1 or v2, found once).
    let memory: CgroupMemory?

    public init(cgroup: String?, procRoot: String = "/proc") {
        self.cgroup = cgroup
        self.procRoot = procRoot
        memory = cgroup.map { CgroupMemory(directory: $0) }
    }

    public func read() throws(MemoryStatusError) -> MemoryStatus {
        var buffer = ReadBuffer(capacity: 16384)
        return try read(&buffer).status
    }

    /// The status, and the cgroup's reading it comes from (nil for the machine), through `buffer`.
    package func read(_ buffer: inout ReadBuffer) throws(MemoryStatusError) -> (status: MemoryStatus, reading: CgroupMemory.Reading?) {
        guard let cgroup else {
            let info = try meminfo(&buffer)
            guard let total = info.total, let available = info.available else {
                throw .malformed(file: "\(procRoot)/meminfo", reason: "no MemTotal or MemAvailable")
            }
            let status = MemoryStatus(
                budgetBytes: total, usedBytes: total &- min(total, available), availableBytes: min(total, available),
                source: "MemAvailable of /proc/meminfo", scope: .machine)
            return (status, nil)
        }
        guard let memory else { throw .malformed(file: cgroup, reason: "not a memory cgroup") }
        let r = try memory.read(&buffer)
        // No limit: the machine's memory is the budget.
        var limit = UInt64(1) << 60
        if let l = r.limitBytes {
            limit = l
        } else if let total = try meminfo(&buffer).total {
            limit = total
        }
        let used = r.workingSetBytes
        let status = MemoryStatus(
            budgetBytes: limit, usedBytes: used, availableBytes: limit &- min(limit, used),
            source: "working set of \(cgroup) (usage − \(memory.inactiveFileKey))")
        return (status, r)
    }

    private func meminfo(_ buffer: inout ReadBuffer) throws(MemoryStatusError) -> (total: UInt64?, available: UInt64?) {
        do {
            try ProcFS.readFile("\(procRoot)/meminfo", into: &buffer)
        } catch {
            throw .unreadable(error)
        }
        let info = buffer.withBytes { MemInfo.parse($0) }
        return (info.totalBytes, info.availableBytes)
    }
}
