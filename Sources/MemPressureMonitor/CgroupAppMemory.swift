import MemPressureSystem

extension CgroupMemory {
    /// What an app whose processes are this cgroup holds, from the kernel's `memory.stat`: the
    /// charges of every process it started (children included) and of its page cache and
    /// tmpfs/shared memory, which a sum over its processes' smaps would miss.
    ///
    /// The footprint is the cgroup form of the one definition (VMTracker's
    /// `MemoryCounters.footprint`, Apple's `phys_footprint`: dirty memory the app alone holds,
    /// plus its swapped pages):
    ///
    ///     footprint = active_anon + inactive_anon + swap
    ///
    /// - The anonymous LRU lists hold every page that only swap can take back: anonymous memory
    ///   and shared memory/tmpfs files (an app's output written to a tmpfs is charged here).
    /// - Purgeable (MADV_FREE'd) pages are not charged: the kernel moves them to the inactive
    ///   file list when they are marked.
    /// - Clean page cache is not charged: it is on the file lists.
    /// - `swap` is v1's `swap` (with swap accounting) or v2's `memory.swap.current`; without
    ///   either, 0.
    ///
    /// v1 keys are the `total_` ones (the cgroup and its descendants); v2's count descendants.
    public struct AppReading: Sendable, Hashable {
        public var footprintBytes: UInt64
        /// On the LRU lists: anonymous, file, unevictable (what is resident in RAM).
        public var residentBytes: UInt64
        /// Anonymous LRU plus dirty page cache.
        public var dirtyBytes: UInt64
        public var swappedBytes: UInt64
        /// The cgroup's whole charge (`memory.usage_in_bytes`, `memory.current`): page cache and
        /// kernel memory included.
        public var usageBytes: UInt64
    }

    /// Reads `memory.stat` (and the usage, and v2's swap) through `buffer`. A missing anonymous
    /// or file LRU key, or a value that is not a number, is an error; missing swap or dirty keys
    /// count as 0.
    public func readApp(_ buffer: inout ReadBuffer) throws(ReadError) -> AppReading {
        func load(_ path: String) throws(ReadError) {
            do { try ProcFS.readFile(path, into: &buffer) } catch { throw .unreadable(error) }
        }
        try load(usageFile)
        guard let usage = buffer.withBytes({ ByteScanner.singleNumber($0) }) else { throw .malformed(file: usageFile, reason: "not a number") }
        try load(statFile)
        let prefix = isV2 ? "" : "total_"
        let keys = ["active_anon", "inactive_anon", "active_file", "inactive_file", "unevictable", isV2 ? "file_dirty" : "dirty", "swap"].map { prefix + $0 }
        let found = buffer.withBytes { Self.values(of: keys, in: $0) }
        var values = [UInt64](repeating: 0, count: keys.count)
        for (i, key) in keys.enumerated() {
            switch found[i] {
            case .none:
                guard i >= 5 else { throw .malformed(file: statFile, reason: "no \(key)") }  // dirty, swap: optional
            case .some(.none):
                throw .malformed(file: statFile, reason: "\(key) is not a number")
            case .some(.some(let v)):
                values[i] = v
            }
        }
        var swap = values[6]
        if isV2 {
            do {
                try ProcFS.readFile("\(directory)/memory.swap.current", into: &buffer)
                swap = buffer.withBytes { ByteScanner.singleNumber($0) } ?? 0
            } catch {
                swap = 0  // no swap controller: nothing is counted as swapped
            }
        }
        let anon = values[0].saturatingAdd(values[1])
        return AppReading(
            footprintBytes: anon.saturatingAdd(swap),
            residentBytes: anon.saturatingAdd(values[2]).saturatingAdd(values[3]).saturatingAdd(values[4]),
            dirtyBytes: anon.saturatingAdd(values[5]), swappedBytes: swap, usageBytes: usage)
    }
}
