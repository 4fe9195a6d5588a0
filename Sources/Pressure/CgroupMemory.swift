import LinuxSystem

/// A memory cgroup's charge, limit and working set, as the kernel keeps them (v1
/// `memory.usage_in_bytes`, `memory.limit_in_bytes`, `total_inactive_file` of `memory.stat`; v2
/// `memory.current`, `memory.max`, `inactive_file`).
///
/// The working set is `usage − inactive_file`, as the kubelet's eviction manager and cAdvisor
/// define it: inactive file pages (clean page cache, and MADV_FREE'd pages, which the kernel
/// keeps on the inactive file list) are reclaimed before the cgroup's OOM killer is called, so
/// they do not bring it closer. The usage source of the pressure monitor and jetsam's measure of
/// what is available both read it here, so that their "critical" is the same.
public struct CgroupMemory: Sendable {
    public let directory: String
    public let isV2: Bool
    public let usageFile: String
    public let limitFile: String
    public let statFile: String
    /// The key of inactive file pages in `memory.stat` (v1 counts the subtree in `total_`).
    public let inactiveFileKey: String

    public init(directory: String) {
        self.directory = directory
        isV2 = ProcFS.isFile("\(directory)/memory.current")
        usageFile = isV2 ? "\(directory)/memory.current" : "\(directory)/memory.usage_in_bytes"
        limitFile = isV2 ? "\(directory)/memory.max" : "\(directory)/memory.limit_in_bytes"
        statFile = "\(directory)/memory.stat"
        inactiveFileKey = isV2 ? "inactive_file" : "total_inactive_file"
    }

    /// Whether the files are there (the directory is a memory cgroup).
    public var exists: Bool { ProcFS.isFile(usageFile) && ProcFS.isFile(limitFile) && ProcFS.isFile(statFile) }

    public struct Reading: Sendable, Hashable {
        /// What the cgroup is charged (page cache included).
        public var usageBytes: UInt64
        /// Its limit; nil for none ("max", or v1's page-counter maximum).
        public var limitBytes: UInt64?
        public var inactiveFileBytes: UInt64
        /// `usage − inactive_file`.
        public var workingSetBytes: UInt64 { usageBytes &- min(usageBytes, inactiveFileBytes) }
    }

    public enum ReadError: Error, Sendable, Hashable, CustomStringConvertible {
        case unreadable(SystemCallError)
        case malformed(file: String, reason: String)

        public var description: String {
            switch self {
            case .unreadable(let e): "\(e)"
            case .malformed(let file, let reason): "\(file): \(reason)"
            }
        }
    }

    /// Reads the three files through `buffer`.
    public func read(_ buffer: inout ReadBuffer) throws(ReadError) -> Reading {
        func load(_ path: String) throws(ReadError) {
            do { try ProcFS.readFile(path, into: &buffer) } catch { throw .unreadable(error) }
        }
        try load(usageFile)
        guard let usage = buffer.withBytes({ ByteScanner.singleNumber($0) }) else { throw .malformed(file: usageFile, reason: "not a number") }
        try load(limitFile)
        // "max" (v2) or v1's page-counter maximum: no limit. Anything else must be a number.
        let isMax = buffer.withBytes { Array($0.prefix(3)) == Array("max".utf8) }
        var limit: UInt64?
        if !isMax {
            guard let value = buffer.withBytes({ ByteScanner.singleNumber($0) }) else { throw .malformed(file: limitFile, reason: "neither a number nor max") }
            limit = value >= UInt64(1) << 60 ? nil : value
        }
        try load(statFile)
        guard let inactive = buffer.withBytes({ ByteScanner.value(of: inactiveFileKey, inSpaceSeparatedLines: $0) }) else {
            throw .malformed(file: statFile, reason: "no \(inactiveFileKey)")
        }
        return Reading(usageBytes: usage, limitBytes: limit, inactiveFileBytes: inactive)
    }
}
