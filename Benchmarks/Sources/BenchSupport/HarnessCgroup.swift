// A memory cgroup of the benchmark's own for the program it measures, removed when done; with
// the freezer when asked for, so that every process of the program can be stopped at once.
//
// - cgroup v1 (this project's machines): ROOT/memory/NAME (memory.limit_in_bytes,
//   memory.usage_in_bytes) and, with the freezer, ROOT/freezer/NAME (freezer.state).
// - cgroup v2: one group ROOT/NAME (memory.high to squeeze: lowering memory.max below the usage
//   would call the OOM killer; memory.current; cgroup.freeze and cgroup.events).

import Glibc
import MemPressureSystem
import Synchronization
import SystemPackage

public final class HarnessCgroup: Sendable {
    public static let root = "/sys/fs/cgroup"
    /// The memory group (v1) or the one group (v2).
    public let memory: CgroupDirectory
    /// The v1 freezer group, when there is one.
    public let freezer: CgroupDirectory?
    /// Whose cgroup it is, in messages ("redis").
    public let owner: String
    public let tool: String
    private let removed = Atomic<Bool>(false)

    public var path: String { memory.path }
    public var isV2: Bool { memory.isV2 }

    /// Why there can be none on this machine, or nil.
    public static func unavailableReason(freezer: Bool = false) -> String? {
        if getuid() != 0 { return "not running as root (a memory cgroup and swapon need root)" }
        if CgroupDirectory.v1("memory", root: root) != nil {
            if freezer && CgroupDirectory.v1("freezer", root: root) == nil { return "no cgroup v1 freezer at \(root)/freezer" }
            return nil
        }
        if isUnifiedWithMemory() { return nil }
        return "no cgroup v1 memory controller at \(root)/memory"
    }

    /// cgroup v2 at the root, with the memory controller.
    static func isUnifiedWithMemory() -> Bool {
        guard let v2 = CgroupDirectory.v2(root: root) else { return false }
        do {
            let controllers = String(decoding: try v2.read("cgroup.controllers"), as: UTF8.self)
            return controllers.split(whereSeparator: { $0 == " " || $0 == "\n" }).contains("memory")
        } catch {
            return false
        }
    }

    /// Makes the group (both groups, v1 with the freezer).
    public init(name: String, owner: String, tool: String, freezer: Bool = false) throws {
        self.owner = owner
        self.tool = tool
        if let v2 = CgroupDirectory.v2(root: Self.root) {
            // The root must hand the memory controller down (it usually does already).
            do {
                try v2.write("+memory", to: "cgroup.subtree_control")
            } catch {
                // Checked below: without it the group has no memory files.
            }
            memory = v2.child(name)
            try memory.create()
            guard ProcFS.isFile("\(memory.path)/memory.current") else {
                try memory.remove()
                throw BenchError("\(memory.path) has no memory controller (\(Self.root)/cgroup.subtree_control lacks memory)")
            }
            self.freezer = freezer ? memory : nil
        } else {
            guard let hierarchy = CgroupDirectory.v1("memory", root: Self.root) else { throw BenchError("no cgroup v1 memory controller at \(Self.root)/memory") }
            memory = hierarchy.child(name)
            try memory.create()
            if freezer {
                guard let f = CgroupDirectory.v1("freezer", root: Self.root)?.child(name) else {
                    try memory.remove()
                    throw BenchError("no cgroup v1 freezer at \(Self.root)/freezer")
                }
                do {
                    try f.create()
                } catch {
                    try memory.remove()
                    throw error
                }
                self.freezer = f
            } else {
                self.freezer = nil
            }
        }
    }

    /// The `cgroup.procs` of the memory group (the one group on v2).
    public var procsFile: String { "\(memory.path)/cgroup.procs" }

    /// Every `cgroup.procs` a process joins to be in all of this cgroup's groups.
    public var procsFiles: [String] {
        [procsFile] + (freezer.flatMap { $0 == memory ? nil : ["\($0.path)/cgroup.procs"] } ?? [])
    }

    public func usageBytes() throws -> UInt64 {
        let bytes = try memory.read(isV2 ? "memory.current" : "memory.usage_in_bytes")
        guard let n = ByteScanner.singleNumber(bytes) else { throw BenchError("\(memory.path): usage is not a number") }
        return n
    }

    private var limitFile: String { isV2 ? "memory.high" : "memory.limit_in_bytes" }

    /// Sets the limit (v1 memory.limit_in_bytes: the kernel reclaims down to it first, or fails
    /// with EBUSY; v2 memory.high: the kernel reclaims what it can and the write succeeds).
    public func setLimit(_ bytes: UInt64) throws(CgroupError) {
        try memory.write("\(bytes)", to: limitFile)
    }

    public func removeLimit() throws(CgroupError) {
        try memory.write(isV2 ? "max" : "-1", to: limitFile)
    }

    /// Squeezes the cgroup while its processes are stopped, as rising pressure would: the limit
    /// lowered in steps of a sixteenth of its usage, from its usage down to `floor`. The kernel
    /// reclaims at each step or (v1) answers EBUSY, which it does transiently while the pages
    /// it chose are still being written to swap: each step is tried up to 50 times, 10 ms
    /// apart. On v2 a step is reached when the usage is at most the limit afterwards. Returns
    /// the lowest limit reached (at least one step, or it throws).
    public func squeeze(floor: UInt64) throws -> UInt64 {
        let usage = try usageBytes()
        let step = max(UInt64(4 << 20), usage / 16)
        var limit = usage
        while limit > floor {
            let next = limit > floor + step ? limit - step : floor
            var reached = false
            for _ in 0..<50 {
                try Task.checkCancellation()
                do {
                    try setLimit(next)
                } catch {
                    guard case .write(_, _, .resourceBusy) = error else { throw error }
                    pause(0.01)
                    continue
                }
                if isV2, try usageBytes() > next {
                    pause(0.01)
                    continue
                }
                reached = true
                break
            }
            guard reached else { break }
            limit = next
        }
        guard limit < usage else {
            throw BenchError("the kernel could not reclaim anything from \(owner)'s cgroup (\(ByteFormat.human(usage)); EBUSY for 0.5 s): is swap on?")
        }
        return limit
    }

    // MARK: The freezer

    private var freezeGroup: CgroupDirectory { freezer ?? memory }

    /// Freezes every process of the group and waits (up to 10 s) until the kernel says the
    /// group is frozen.
    public func freeze() throws {
        try freezeGroup.freeze()
        let deadline = monotonicSeconds() + 10
        while !freezeGroup.isFrozen() {
            guard monotonicSeconds() < deadline else { throw BenchError("\(owner)'s cgroup did not freeze within 10 s") }
            pause(0.0002)
        }
    }

    /// Thaws the group (its processes run again from this write on).
    public func thaw() throws(CgroupError) {
        try freezeGroup.thaw()
    }

    // MARK: Its processes

    /// The PIDs in the group now.
    public func members() throws -> [Int32] { try memory.processes() }

    /// SIGKILL to every process of the group (each through a pidfd, checked to be in the group:
    /// `CgroupDirectory.end`), thawed (a v1-frozen process dies only once it runs), until none is
    /// left or `timeout` seconds have passed. Returns whether the group is empty. Safe from any
    /// thread.
    @discardableResult
    public func killAll(timeout: Double = 5) -> Bool {
        do {
            try memory.end(thawing: freezer, timeout: timeout)
            return true
        } catch {
            log(tool, "\(error)")
            return !memory.exists
        }
    }

    /// rmdir, once its processes are gone (the kernel uncharges a dead task's memory
    /// asynchronously: retried for up to 5 s). Idempotent.
    public func remove() {
        guard !removed.exchange(true, ordering: .acquiringAndReleasing) else { return }
        var groups = [memory]
        if let freezer, freezer != memory { groups.insert(freezer, at: 0) }
        for group in groups {
            let deadline = monotonicSeconds() + 5
            while true {
                do {
                    try group.remove()
                    break
                } catch {
                    guard case .remove(_, .resourceBusy) = error, monotonicSeconds() < deadline else {
                        log(tool, "\(error)")
                        break
                    }
                    pause(0.02)
                }
            }
        }
    }
}
