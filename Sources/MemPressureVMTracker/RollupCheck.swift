/// Checks the parser against the kernel: for each process, the sum of its regions in
/// `/proc/PID/smaps` must equal the kernel's own `/proc/PID/smaps_rollup`.
///
/// smaps is read twice, before and after the rollup. A process whose two smaps reads differ was
/// changing while it was checked; it is counted as such and not judged. `Pss`, `Pss_Dirty`,
/// `SwapPss` and `Locked` are accumulated by the kernel in fixed point and truncated to whole kB
/// per region in smaps but only once in the rollup, so for those the rollup may exceed the sum
/// by less than 1 kB per region.

import MemPressureSystem
public struct RollupCheck: Sendable {
    public struct Mismatch: Sendable, Hashable, CustomStringConvertible {
        public var pid: Int32
        public var name: String
        public var field: String
        public var sumOfRegions: UInt64
        public var rollup: UInt64

        public var description: String {
            "pid \(pid) (\(name)): \(field): regions sum to \(sumOfRegions) bytes, smaps_rollup says \(rollup)"
        }
    }

    public var checked = 0
    public var agreed = 0
    /// Processes whose memory changed between the reads (not judged).
    public var changed: [Int32] = []
    public var mismatches: [Mismatch] = []
    /// Processes that could not be read (exited, zombies, permission denied); kernel threads are not counted.
    public var skipped: [ProcError] = []

    public init() {}
}

extension Snapshotter {
    /// Runs `RollupCheck` over `pids` (default: every process).
    public func checkAgainstRollup(pids: [Int32]? = nil) throws(ProcError) -> RollupCheck {
        var result = RollupCheck()
        var buffer = ReadBuffer()
        let all: [Int32]
        if let pids { all = pids } else { all = try proc.pids() }
        for pid in all {
            do throws(ProcError) {
                let dir = try proc.open(pid)
                let file = "\(dir.path)/smaps"
                try dir.read("stat", into: &buffer)
                let stat = try buffer.withBytes { (b) throws(ProcError) in try ProcessStat.parse(b, pid: pid, file: "\(dir.path)/stat") }
                if stat.isKernelThread { continue }
                if stat.isZombie { throw .zombie(pid: pid) }
                try dir.read("smaps", into: &buffer)
                let first = try buffer.withBytes { (b) throws(ProcError) in try SmapsParser.parse(b, pid: pid, file: file) }
                try dir.read("smaps_rollup", into: &buffer)
                if buffer.count == 0 { throw .processExited(pid: pid, file: "\(dir.path)/smaps_rollup") }
                let rollup = try buffer.withBytes { (b) throws(ProcError) in try SmapsParser.parseRollup(b, pid: pid, file: "\(dir.path)/smaps_rollup") }
                try dir.read("smaps", into: &buffer)
                let second = try buffer.withBytes { (b) throws(ProcError) in try SmapsParser.parse(b, pid: pid, file: file) }
                result.checked += 1
                let sum = MemoryCounters.sum(of: first)
                if first.count != second.count || sum != MemoryCounters.sum(of: second) || first.isEmpty {
                    if !first.isEmpty || !second.isEmpty { result.changed.append(pid) } else { result.agreed += 1 }
                    continue
                }
                let found = Self.compare(sum: sum, rollup: rollup, regionCount: first.count)
                if found.isEmpty {
                    result.agreed += 1
                } else {
                    result.mismatches += found.map {
                        RollupCheck.Mismatch(pid: pid, name: stat.name.description, field: $0.0, sumOfRegions: $0.1, rollup: $0.2)
                    }
                }
            } catch {
                if case .kernelThread = error { continue }
                result.skipped.append(error)
            }
        }
        return result
    }

    static func compare(sum: MemoryCounters, rollup: MemoryCounters, regionCount: Int) -> [(String, UInt64, UInt64)] {
        var out: [(String, UInt64, UInt64)] = []
        func exact(_ name: String, _ a: UInt64, _ b: UInt64) {
            if a != b { out.append((name, a, b)) }
        }
        // Fixed-point fields: the rollup is the exact sum, the regions are each truncated.
        func truncated(_ name: String, _ a: UInt64, _ b: UInt64) {
            if !(a <= b && b - a < UInt64(regionCount) * 1024) { out.append((name, a, b)) }
        }
        exact("Rss", sum.rss, rollup.rss)
        truncated("Pss", sum.pss, rollup.pss)
        truncated("Pss_Dirty", sum.pssDirty, rollup.pssDirty)
        exact("Shared_Clean", sum.sharedClean, rollup.sharedClean)
        exact("Shared_Dirty", sum.sharedDirty, rollup.sharedDirty)
        exact("Private_Clean", sum.privateClean, rollup.privateClean)
        exact("Private_Dirty", sum.privateDirty, rollup.privateDirty)
        exact("Referenced", sum.referenced, rollup.referenced)
        exact("Anonymous", sum.anonymous, rollup.anonymous)
        exact("KSM", sum.ksm, rollup.ksm)
        exact("LazyFree", sum.lazyFree, rollup.lazyFree)
        exact("AnonHugePages", sum.anonHugePages, rollup.anonHugePages)
        exact("ShmemPmdMapped", sum.shmemPmdMapped, rollup.shmemPmdMapped)
        exact("FilePmdMapped", sum.filePmdMapped, rollup.filePmdMapped)
        exact("Shared_Hugetlb", sum.sharedHugetlb, rollup.sharedHugetlb)
        exact("Private_Hugetlb", sum.privateHugetlb, rollup.privateHugetlb)
        exact("Swap", sum.swap, rollup.swap)
        truncated("SwapPss", sum.swapPss, rollup.swapPss)
        truncated("Locked", sum.locked, rollup.locked)
        return out
    }
}
