import MemPressureSystem
import SystemPackage

/// A memory cgroup's charge, limit and working set, as the kernel keeps them (v1
/// `memory.usage_in_bytes`, `memory.limit_in_bytes`, `total_inactive_file` of `memory.stat`; v2
/// `memory.current`, `memory.max`, `inactive_file`), with its OOM kills and what its memory is
/// (anonymous, file, shared memory).
///
/// The working set is `usage − inactive_file`, as the kubelet's eviction manager and cAdvisor
/// define it: inactive file pages (clean page cache, and MADV_FREE'd pages, which the kernel
/// keeps on the inactive file list) are reclaimed before the cgroup's OOM killer is called, so
/// they do not bring it closer. The usage source of the pressure monitor and jetsam's measure of
/// what is available both read it here, so that their "critical" is the same.
public struct CgroupMemory: Sendable {
    public let directory: String
    let isV2: Bool
    public let usageFile: String
    public let limitFile: String
    let statFile: String
    /// The key of inactive file pages in `memory.stat` (v1 counts the subtree in `total_`).
    public let inactiveFileKey: String
    /// Where the kernel counts the cgroup's OOM kills: v2 `memory.events`, v1
    /// `memory.oom_control` (its `oom_kill` line exists from Linux 4.13).
    let oomFile: String
    /// The `memory.stat` keys of anonymous, file and shared memory: v2 `anon`, `file`, `shmem`;
    /// v1 `rss`, `cache`, `shmem`.
    let anonKey: String, fileKey: String, shmemKey: String

    public init(directory: String) {
        self.directory = directory
        isV2 = ProcFS.isFile("\(directory)/memory.current")
        usageFile = isV2 ? "\(directory)/memory.current" : "\(directory)/memory.usage_in_bytes"
        limitFile = isV2 ? "\(directory)/memory.max" : "\(directory)/memory.limit_in_bytes"
        statFile = "\(directory)/memory.stat"
        inactiveFileKey = isV2 ? "inactive_file" : "total_inactive_file"
        oomFile = isV2 ? "\(directory)/memory.events" : "\(directory)/memory.oom_control"
        anonKey = isV2 ? "anon" : "rss"
        fileKey = isV2 ? "file" : "cache"
        shmemKey = "shmem"
    }

    /// The memory cgroup of a path as `/proc/PID/cgroup` gives it (relative to its hierarchy),
    /// below `cgroupRoot`: the v1 memory controller's hierarchy (`<root>/memory<path>`) first,
    /// else v2's unified one mounted at the root (`<root><path>`, a v2-only machine) or at
    /// `<root>/unified` (a hybrid machine whose memory controller is on v2). Nil when none has
    /// the memory files, as v2's root cgroup has not, or for a path outside this cgroup
    /// namespace ("/../..").
    public static func locate(path: String, cgroupRoot: String) -> CgroupMemory? {
        guard path.hasPrefix("/"), !path.split(separator: "/").contains("..") else { return nil }
        let relative = path == "/" ? "" : path
        let v1 = "\(cgroupRoot)/memory\(relative)"
        if ProcFS.isFile("\(v1)/memory.usage_in_bytes") { return CgroupMemory(directory: v1) }
        for v2 in ["\(cgroupRoot)\(relative)", "\(cgroupRoot)/unified\(relative)"] where ProcFS.isFile("\(v2)/memory.current") {
            return CgroupMemory(directory: v2)
        }
        return nil
    }

    /// Whether the files are there (the directory is a memory cgroup).
    public var exists: Bool { ProcFS.isFile(usageFile) && ProcFS.isFile(limitFile) && ProcFS.isFile(statFile) }

    /// One reading of the cgroup's files.
    ///
    /// `anonBytes`, `fileBytes` and `shmemBytes` come from `memory.stat`. On v2 they are `anon`,
    /// `file` (page cache, tmpfs and shared memory included) and `shmem`, and count the cgroup
    /// with its descendants, as every v2 statistic does. On v1 they are the cgroup's own `rss`,
    /// `cache` and `shmem`, not the `total_` keys: the pages charged to the processes in this
    /// cgroup itself, which is what an app made of those processes holds (for a leaf cgroup,
    /// where processes live, the two are the same). `rss` already includes transparent huge
    /// pages (`rss_huge` is the part of it that is huge; adding it would count those twice,
    /// checked on Linux 6.18: 64 MiB of THP showed in both), and `cache` includes `shmem`, as
    /// v2's `file` does. `usageBytes` counts descendants on both.
    public struct Reading: Sendable, Hashable {
        /// What the cgroup is charged (page cache included).
        public var usageBytes: UInt64
        /// Its limit; nil for none ("max", or v1's page-counter maximum).
        public var limitBytes: UInt64?
        public var inactiveFileBytes: UInt64
        /// Processes the kernel's OOM killer killed in this cgroup (v2 `memory.events`, with
        /// descendants unless mounted with `memory_localevents`; v1 `memory.oom_control`); nil
        /// where the kernel does not count them (v1 before Linux 4.13).
        public var oomKills: UInt64?
        /// Anonymous memory (v2 `anon`, v1 `rss`); nil when `memory.stat` has no such key.
        public var anonBytes: UInt64?
        /// Page cache, shared memory included (v2 `file`, v1 `cache`); nil when absent.
        public var fileBytes: UInt64?
        /// Shared memory and tmpfs (`shmem`); nil when absent.
        public var shmemBytes: UInt64?
        /// Whether a task of the cgroup waits at its limit (v1 `under_oom` of
        /// `memory.oom_control`: with `oom_kill_disable 1` it waits in the kernel until memory is
        /// freed); nil where the kernel does not say (v2).
        public var taskWaitsAtLimit: Bool?
        /// `usage − inactive_file`.
        public var workingSetBytes: UInt64 { usageBytes &- min(usageBytes, inactiveFileBytes) }

        public init(
            usageBytes: UInt64, limitBytes: UInt64?, inactiveFileBytes: UInt64, oomKills: UInt64? = nil,
            anonBytes: UInt64? = nil, fileBytes: UInt64? = nil, shmemBytes: UInt64? = nil
        ) {
            self.usageBytes = usageBytes
            self.limitBytes = limitBytes
            self.inactiveFileBytes = inactiveFileBytes
            self.oomKills = oomKills
            self.anonBytes = anonBytes
            self.fileBytes = fileBytes
            self.shmemBytes = shmemBytes
        }
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

    /// Reads the usage, limit, `memory.stat` and OOM files through `buffer`. A missing OOM file
    /// or a missing `oom_kill`, `under_oom`, `anon`/`rss`, `file`/`cache` or `shmem` key gives nil; a value
    /// that is not a number, or a missing usage, limit, stat file or inactive-file key, is an error.
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
        let stat = buffer.withBytes { Self.values(of: [inactiveFileKey, anonKey, fileKey, shmemKey], in: $0) }
        guard case .some(let inactiveValue) = stat[0] else { throw .malformed(file: statFile, reason: "no \(inactiveFileKey)") }
        guard let inactive = inactiveValue else { throw .malformed(file: statFile, reason: "\(inactiveFileKey) is not a number") }
        var reading = Reading(usageBytes: usage, limitBytes: limit, inactiveFileBytes: inactive)
        for (i, key) in [(1, anonKey), (2, fileKey), (3, shmemKey)] {
            guard case .some(let value) = stat[i] else { continue }  // no such key: nil
            guard let value else { throw .malformed(file: statFile, reason: "\(key) is not a number") }
            switch i {
            case 1: reading.anonBytes = value
            case 2: reading.fileBytes = value
            default: reading.shmemBytes = value
            }
        }
        do {
            try ProcFS.readFile(oomFile, into: &buffer)
        } catch {
            guard error.errno == .noSuchFileOrDirectory else { throw .unreadable(error) }
            return reading  // no OOM file: not counted
        }
        let oom = buffer.withBytes { Self.values(of: ["oom_kill", "under_oom"], in: $0) }
        if case .some(let value) = oom[0] {
            guard let value else { throw .malformed(file: oomFile, reason: "oom_kill is not a number") }
            reading.oomKills = value
        }
        if case .some(let value) = oom[1] {
            guard let value else { throw .malformed(file: oomFile, reason: "under_oom is not a number") }
            reading.taskWaitsAtLimit = value != 0
        }
        return reading
    }

    /// The values of `keys` in "key value" lines (`memory.stat`, `memory.events`,
    /// `memory.oom_control`), in the order of `keys`: nil where no line has the key, `.some(nil)`
    /// where its value is not a decimal number.
    static func values(of keys: [String], in bytes: UnsafeRawBufferPointer) -> [UInt64??] {
        let wanted = keys.map { Array($0.utf8) }
        var found = [UInt64??](repeating: nil, count: keys.count)
        var rest = bytes[...]
        while !rest.isEmpty {
            let end = rest.firstIndex(of: 0x0a) ?? rest.endIndex
            var words = ByteScanner.fields(rest[rest.startIndex..<end])
            if let first = words.next(), let i = wanted.firstIndex(where: { first.elementsEqual($0) }), found[i] == nil {
                let second = words.next()
                found[i] = .some(second.flatMap { ByteScanner.unsigned($0) })
            }
            rest = end == rest.endIndex ? rest[end...] : rest[rest.index(after: end)...]
        }
        return found
    }
}
