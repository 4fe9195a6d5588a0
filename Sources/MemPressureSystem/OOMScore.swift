import Glibc

// The kernel's OOM killer's view of a process: `/proc/PID/oom_score_adj` (-1000 to 1000),
// added to its badness in thousandths of the memory the killer chooses within (the machine's,
// or the memory cgroup's limit). Android's lmkd, earlyoom and nohang read it too.

/// What setting the OOM score adjustment of a group of processes did.
public struct OOMScoreResult: Sendable, Hashable {
    /// Processes whose `oom_score_adj` was written.
    public var set = 0
    /// Listed processes that had exited, or were not the group's any more once opened (a PID
    /// reused meanwhile): not written.
    public var skipped = 0
    /// The first failure to write one (permission denied, say); nil when none failed.
    public var failure: ProcError?
    /// New processes still showed after the last listing (a group that keeps forking): those
    /// may carry their parent's old value.
    public var incomplete = false

    public init() {}

    /// Counts `other` in (the first failure stays).
    public mutating func add(_ other: OOMScoreResult) {
        set += other.set
        skipped += other.skipped
        if failure == nil { failure = other.failure }
        incomplete = incomplete || other.incomplete
    }
}

public enum OOMScore {
    /// The range the kernel accepts.
    public static let range: ClosedRange<Int32> = -1000...1000

    /// Sets `value` on each process of `pids` that `belongs` accepts, each opened as its
    /// `/proc/PID` directory first: the check and the write go through the same open directory,
    /// so a PID reused after the listing is checked as what it is now and never written to
    /// unless it is a member.
    public static func set(_ value: Int32, pids: [Int32], procfs: ProcFS = ProcFS(), belongs: (borrowing ProcessDirectory, inout ReadBuffer) -> Bool) -> OOMScoreResult {
        var result = OOMScoreResult()
        var buffer = ReadBuffer(capacity: 4096)
        let text = Array("\(min(max(value, range.lowerBound), range.upperBound))".utf8)
        for pid in pids {
            do {
                let dir = try procfs.open(pid)
                guard belongs(dir, &buffer) else {
                    result.skipped += 1
                    continue
                }
                try dir.write("oom_score_adj", text)
                result.set += 1
            } catch {
                switch error {
                case .noSuchProcess, .processExited, .zombie: result.skipped += 1
                default: if result.failure == nil { result.failure = error }
                }
            }
        }
        return result
    }

    /// The value the kernel holds for `pid` now (nil when it cannot be read).
    public static func read(pid: Int32, procfs: ProcFS = ProcFS()) -> Int32? {
        var buffer = ReadBuffer(capacity: 64)
        do {
            try procfs.open(pid).read("oom_score_adj", into: &buffer)
        } catch {
            return nil
        }
        return buffer.withBytes { b -> Int32? in
            let digits = b.prefix { $0 != 0x0a && $0 != 0x20 }
            return ByteScanner.signed(digits).flatMap { Int32(exactly: $0) }
        }
    }
}

extension CgroupDirectory {
    /// Sets the OOM score adjustment of every process in the group now: each listed PID opened
    /// as its `/proc/PID` directory and checked to be in this group (its `cgroup` file, read
    /// through that directory) before it is written. A process forked afterwards inherits its
    /// parent's value; one forked while the values were written (it copied its parent's old one)
    /// shows in the next listing: the group is listed again until no new process shows, at most
    /// `rounds` times.
    public func setOOMScoreAdjust(_ value: Int32, rounds: Int = 4, procfs: ProcFS = ProcFS()) throws(CgroupError) -> OOMScoreResult {
        let controller = self.controller
        let relativePath = self.relativePath
        var done: [Int32] = []
        var total = OOMScoreResult()
        for round in 0...max(1, rounds) {
            let fresh = try processes().filter { !done.contains($0) }
            if fresh.isEmpty { break }
            if round == max(1, rounds) {
                total.incomplete = true
                break
            }
            done += fresh
            let result = OOMScore.set(value, pids: fresh, procfs: procfs) { dir, buffer in
                do {
                    try dir.read("cgroup", into: &buffer)
                } catch {
                    return false
                }
                return buffer.withBytes { CgroupDirectory.relativePath(inProcCgroup: $0, controller: controller) } == relativePath
            }
            total.add(result)
        }
        return total
    }
}
