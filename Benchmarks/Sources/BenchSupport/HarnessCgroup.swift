// A memory cgroup of the benchmark's own for the program it measures, removed when done; with
// the freezer when asked for, so that every process of the program can be stopped at once.
//
// - cgroup v1 (this project's machines): ROOT/memory/NAME (memory.limit_in_bytes,
//   memory.usage_in_bytes) and, with the freezer, ROOT/freezer/NAME (freezer.state).
// - cgroup v2: one group ROOT/NAME (memory.high to squeeze: lowering memory.max below the usage
//   would call the OOM killer; memory.current; cgroup.freeze and cgroup.events).

import Glibc
import LinuxSystem
import Synchronization
import SystemPackage

public final class HarnessCgroup: Sendable {
    public static let root = "/sys/fs/cgroup"
    /// The memory group (v1) or the one group (v2).
    public let path: String
    /// The v1 freezer group, when there is one.
    public let freezerPath: String?
    public let isV2: Bool
    public let usesFreezer: Bool
    /// Whose cgroup it is, in messages ("redis").
    public let owner: String
    public let tool: String
    private let removed = Atomic<Bool>(false)

    /// Why there can be none on this machine, or nil.
    public static func unavailableReason(freezer: Bool = false) -> String? {
        if getuid() != 0 { return "not running as root (a memory cgroup and swapon need root)" }
        if ProcFS.isFile("\(root)/memory/cgroup.procs") {
            if freezer && !ProcFS.isFile("\(root)/freezer/cgroup.procs") { return "no cgroup v1 freezer at \(root)/freezer" }
            return nil
        }
        if isUnifiedWithMemory() { return nil }
        return "no cgroup v1 memory controller at \(root)/memory"
    }

    /// cgroup v2 at the root, with the memory controller.
    static func isUnifiedWithMemory() -> Bool {
        do {
            let controllers = String(decoding: try ProcFS.readBytes("\(root)/cgroup.controllers"), as: UTF8.self)
            return controllers.split(whereSeparator: { $0 == " " || $0 == "\n" }).contains("memory")
        } catch {
            return false
        }
    }

    /// Makes the group (both groups, v1 with the freezer).
    public init(name: String, owner: String, tool: String, freezer: Bool = false) throws {
        self.owner = owner
        self.tool = tool
        usesFreezer = freezer
        isV2 = !ProcFS.isFile("\(Self.root)/memory/cgroup.procs")
        if isV2 {
            path = "\(Self.root)/\(name)"
            freezerPath = nil
            // The root must hand the memory controller down (it usually does already).
            do {
                try ProcFS.writeFileInPlace("\(Self.root)/cgroup.subtree_control", Array("+memory".utf8))
            } catch {
                // Checked below: without it the group has no memory files.
            }
            guard mkdir(path, 0o755) == 0 else { throw SystemCallError("mkdir", errno: Errno(rawValue: errno), subject: path) }
            guard ProcFS.isFile("\(path)/memory.current") else {
                rmdir(path)
                throw BenchError("\(path) has no memory controller (\(Self.root)/cgroup.subtree_control lacks memory)")
            }
        } else {
            path = "\(Self.root)/memory/\(name)"
            guard mkdir(path, 0o755) == 0 else { throw SystemCallError("mkdir", errno: Errno(rawValue: errno), subject: path) }
            if freezer {
                let f = "\(Self.root)/freezer/\(name)"
                guard mkdir(f, 0o755) == 0 else {
                    let e = errno
                    rmdir(path)
                    throw SystemCallError("mkdir", errno: Errno(rawValue: e), subject: f)
                }
                freezerPath = f
            } else {
                freezerPath = nil
            }
        }
    }

    /// The `cgroup.procs` of the memory group (the one group on v2).
    public var procsFile: String { "\(path)/cgroup.procs" }

    /// Every `cgroup.procs` a process joins to be in all of this cgroup's groups.
    public var procsFiles: [String] { [procsFile] + (freezerPath.map { ["\($0)/cgroup.procs"] } ?? []) }

    public func usageBytes() throws -> UInt64 {
        let file = isV2 ? "\(path)/memory.current" : "\(path)/memory.usage_in_bytes"
        let bytes = try ProcFS.readBytes(file)
        guard let n = ByteScanner.singleNumber(bytes) else { throw BenchError("\(file): not a number") }
        return n
    }

    private var limitFile: String { isV2 ? "\(path)/memory.high" : "\(path)/memory.limit_in_bytes" }

    /// Sets the limit (v1 memory.limit_in_bytes: the kernel reclaims down to it first, or fails
    /// with EBUSY; v2 memory.high: the kernel reclaims what it can and the write succeeds).
    public func setLimit(_ bytes: UInt64) throws(SystemCallError) {
        try ProcFS.writeFileInPlace(limitFile, Array("\(bytes)".utf8))
    }

    public func removeLimit() throws(SystemCallError) {
        try ProcFS.writeFileInPlace(limitFile, Array((isV2 ? "max" : "-1").utf8))
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
                    guard error.errno == .resourceBusy else { throw error }
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

    private var freezeFile: String { isV2 ? "\(path)/cgroup.freeze" : "\(freezerPath ?? path)/freezer.state" }

    /// Freezes every process of the group and waits (up to 10 s) until the kernel says the
    /// group is frozen.
    public func freeze() throws {
        try ProcFS.writeFileInPlace(freezeFile, Array((isV2 ? "1" : "FROZEN").utf8))
        let deadline = monotonicSeconds() + 10
        while try !isFrozen() {
            guard monotonicSeconds() < deadline else { throw BenchError("\(owner)'s cgroup did not freeze within 10 s") }
            pause(0.0002)
        }
    }

    /// Thaws the group (its processes run again from this write on).
    public func thaw() throws(SystemCallError) {
        try ProcFS.writeFileInPlace(freezeFile, Array((isV2 ? "0" : "THAWED").utf8))
    }

    /// Whether the group has finished freezing (v1 FROZEN, v2 "frozen 1").
    public func isFrozen() throws -> Bool {
        let file = isV2 ? "\(path)/cgroup.events" : freezeFile
        let text = String(decoding: try ProcFS.readBytes(file), as: UTF8.self)
        return isV2 ? text.split(separator: "\n").contains("frozen 1") : text.hasPrefix("FROZEN")
    }

    // MARK: Its processes

    /// The PIDs in the group now.
    public func members() throws -> [Int32] {
        let text = String(decoding: try ProcFS.readBytes(procsFile), as: UTF8.self)
        return text.split(separator: "\n").compactMap { Int32($0) }
    }

    /// Whether `pid` is in the group now (its memory cgroup, by /proc/PID/cgroup).
    public func holds(_ pid: Int32) -> Bool {
        do {
            guard let inside = try cgroupOf(pid) else { return false }
            return inside != "/" && path.hasSuffix(inside)
        } catch {
            return false  // gone
        }
    }

    /// Sends `sig` to every process in the group, each through a pidfd opened first and its
    /// membership checked after (so a PID reused by a process outside the group is never hit:
    /// a signal that reaches the pidfd's process proves it was alive, so it was the member
    /// checked). Returns the PIDs signalled.
    @discardableResult
    public func signalMembers(_ sig: Int32) throws -> [Int32] {
        var signalled: [Int32] = []
        for pid in try members() {
            let handle: ProcessHandle
            do {
                handle = try ProcessHandle(pid: pid)
            } catch {
                continue  // exited since the list was read
            }
            guard holds(pid) else { continue }
            do {
                try handle.signal(sig)
                signalled.append(pid)
            } catch {
                // ESRCH: it exited after the check.
            }
        }
        return signalled
    }

    /// SIGKILL to every process of the group (then thawed: a v1-frozen process dies only once
    /// it runs), until none is left or `timeout` seconds have passed. Returns whether the group
    /// is empty. Safe from any thread.
    @discardableResult
    public func killAll(timeout: Double = 5) -> Bool {
        let deadline = monotonicSeconds() + timeout
        while true {
            do {
                let left = try members()
                if left.isEmpty { return true }
                try signalMembers(SIGKILL)
                if usesFreezer || isV2 {
                    do {
                        try thaw()
                    } catch {
                        // The group is going away: nothing frozen is left in it.
                    }
                }
            } catch {
                return !ProcFS.isDirectory(path)  // the group is gone, or unreadable
            }
            guard monotonicSeconds() < deadline else { return false }
            pause(0.005)
        }
    }

    /// rmdir, once its processes are gone (the kernel uncharges a dead task's memory
    /// asynchronously: retried for up to 5 s). Idempotent.
    public func remove() {
        guard !removed.exchange(true, ordering: .acquiringAndReleasing) else { return }
        for group in [freezerPath, path].compactMap({ $0 }) {
            let deadline = monotonicSeconds() + 5
            while rmdir(group) != 0 {
                if errno == ENOENT { break }
                guard errno == EBUSY, monotonicSeconds() < deadline else {
                    log(tool, "could not remove \(group): \(String(cString: strerror(errno)))")
                    break
                }
                pause(0.02)
            }
        }
    }
}
