import CMemoryPressure
import Glibc
import SystemPackage

/// Why a cgroup could not be set up, used or removed.
public enum CgroupError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The controller is not mounted where it was looked for.
    case noController(String, path: String, consequence: String)
    case create(path: String, Errno)
    case write(text: String, path: String, Errno)
    case read(path: String, Errno)
    case remove(path: String, Errno)
    /// Processes were still in the cgroup when it was to be emptied.
    case notEmpty(path: String, processes: Int, seconds: Double)
    /// Ending its processes failed at a call (`kill` names it).
    case kill(path: String, call: String, Errno)

    public var description: String {
        switch self {
        case .noController(let name, let path, let consequence): "no cgroup \(name) at \(path): \(consequence)"
        case .create(let path, let e): "cannot create cgroup \(path): \(e.symbolicName) (\(e))"
        case .write(let text, let path, let e): "cannot write '\(text)' to \(path): \(e.symbolicName) (\(e))"
        case .read(let path, let e): "cannot read \(path): \(e.symbolicName) (\(e))"
        case .remove(let path, let e): "cannot remove cgroup \(path): \(e.symbolicName)"
        case .notEmpty(let path, let n, let seconds):
            "\(n) process(es) still in cgroup \(path) \(ByteFormat.fixed(seconds, 1)) s after SIGKILL"
        case .kill(let path, let call, let e): "ending the processes of cgroup \(path): \(call) failed: \(e.symbolicName) (\(e))"
        }
    }
}

/// One cgroup: a directory in one hierarchy — a cgroup v1 controller's (`memory`, `freezer`) or
/// the unified v2 one — named both by its path on disk and by its path inside the hierarchy (as
/// /proc/PID/cgroup shows it). The one type through which the project creates, writes, empties
/// and removes cgroups (the supervisor's device and app groups, the benchmarks' harness groups).
public struct CgroupDirectory: Sendable, Hashable, CustomStringConvertible {
    /// The hierarchy's mount point (`/sys/fs/cgroup/memory`, or `/sys/fs/cgroup` for v2).
    public let hierarchy: String
    /// The controller of a v1 hierarchy (`memory`, `freezer`); nil for v2.
    public let controller: String?
    /// The path inside the hierarchy, from "/" (`/mempressure-1-2/A`).
    public let relativePath: String

    public init(hierarchy: String, controller: String?, relativePath: String) {
        self.hierarchy = hierarchy
        self.controller = controller
        self.relativePath = relativePath.hasPrefix("/") ? relativePath : "/" + relativePath
    }

    /// The directory on disk.
    public var path: String { relativePath == "/" ? hierarchy : hierarchy + relativePath }
    public var isV2: Bool { controller == nil }
    public var description: String { path }

    /// The group `name` below this one.
    public func child(_ name: String) -> CgroupDirectory {
        CgroupDirectory(hierarchy: hierarchy, controller: controller, relativePath: relativePath == "/" ? "/" + name : relativePath + "/" + name)
    }

    /// The v1 hierarchy of `controller` under `root` (`ROOT/controller`), if it is mounted there.
    public static func v1(_ controller: String, root: String = "/sys/fs/cgroup") -> CgroupDirectory? {
        let hierarchy = "\(root)/\(controller)"
        guard ProcFS.isFile("\(hierarchy)/cgroup.procs"), !ProcFS.isFile("\(hierarchy)/cgroup.controllers") else { return nil }
        return CgroupDirectory(hierarchy: hierarchy, controller: controller, relativePath: "/")
    }

    /// The unified (v2) hierarchy at `root`, if that is what is mounted there.
    public static func v2(root: String = "/sys/fs/cgroup") -> CgroupDirectory? {
        guard ProcFS.isFile("\(root)/cgroup.controllers") else { return nil }
        return CgroupDirectory(hierarchy: root, controller: nil, relativePath: "/")
    }

    public var exists: Bool { ProcFS.isFile("\(path)/cgroup.procs") }

    /// Makes the group (mode 0755); true if it made it, false if it was there already.
    @discardableResult
    public func create() throws(CgroupError) -> Bool {
        if mkdir(path, 0o755) == 0 { return true }
        if errno == EEXIST, exists { return false }
        throw .create(path: path, Errno(rawValue: errno == EEXIST ? ENOTDIR : errno))
    }

    /// Removes the group (it must hold no process and no child group); a missing one is fine.
    public func remove() throws(CgroupError) {
        if rmdir(path) != 0 && errno != ENOENT { throw .remove(path: path, Errno(rawValue: errno)) }
    }

    /// Writes `text` to one of its control files (one write, no create, no truncate).
    public func write(_ text: String, to file: String) throws(CgroupError) {
        do {
            try ProcFS.writeFileInPlace("\(path)/\(file)", Array(text.utf8))
        } catch {
            throw .write(text: text, path: "\(path)/\(file)", error.errno)
        }
    }

    /// Reads one of its files.
    public func read(_ file: String) throws(CgroupError) -> [UInt8] {
        do {
            return try ProcFS.readBytes("\(path)/\(file)")
        } catch {
            throw .read(path: "\(path)/\(file)", error.errno)
        }
    }

    /// What a memory group is charged now, in bytes: `memory.usage_in_bytes` on v1,
    /// `memory.current` on v2 (its page cache and its children's included).
    public func memoryUsage() throws(CgroupError) -> UInt64 {
        let file = isV2 ? "memory.current" : "memory.usage_in_bytes"
        guard let value = ByteScanner.singleNumber(try read(file)) else { throw .read(path: "\(path)/\(file)", .invalidArgument) }
        return value
    }

    /// The processes in the group now (`cgroup.procs`; zombies are not listed).
    public func processes() throws(CgroupError) -> [Int32] {
        let bytes = try read("cgroup.procs")
        return bytes.split(separator: 0x0a).compactMap { ByteScanner.unsigned($0).flatMap { Int32(exactly: $0) } }
    }

    /// The groups directly below this one.
    public func children() -> [CgroupDirectory] {
        let names: [[UInt8]]
        do {
            names = try ProcFS.listDirectory(path)
        } catch {
            return []  // gone
        }
        return names.map { String(decoding: $0, as: UTF8.self) }.sorted().map(child).filter { ProcFS.isDirectory($0.path) }
    }

    /// What `killAll` did.
    public struct KillResult: Sendable, Hashable {
        /// Processes sent SIGKILL.
        public var signalled: Int
        /// Of those, whose memory process_mrelease freed at once.
        public var released: Int
        /// Processes still listed after the last round (0: none).
        public var remaining: Int
        /// Listed PIDs that were not the group's any more once opened (reused): not signalled.
        public var skipped: Int
    }

    /// SIGKILL to every process in the group (see `mp_cgroup_kill_all`): each PID opened as a
    /// pidfd and checked to be in this group before it is signalled, never by number alone;
    /// repeated while new processes show (a fork in flight), at most `rounds` times; on v2 the
    /// kernel's `cgroup.kill` first. A frozen group's processes die only once it is thawed.
    /// Processes in `notCounting` are signalled if listed, but not counted (one killed already).
    /// `sparing` is not signalled at all (with `rounds` 1: a process the caller signals itself
    /// afterwards).
    public func killAll(releaseMemory: Bool = false, rounds: Int = 8, notCounting: [Int32] = [], sparing: Int32? = nil) throws(CgroupError) -> KillResult {
        var seen = notCounting
        return try killAll(releaseMemory: releaseMemory, rounds: rounds, seen: &seen, sparing: sparing)
    }

    /// `killAll`, counting each process once over several calls: `seen` holds the PIDs signalled
    /// by earlier calls (each call remembers up to 4,096 more; beyond that processes are still
    /// signalled, but a second call may count them again).
    func killAll(releaseMemory: Bool, rounds: Int, seen: inout [Int32], sparing: Int32? = nil) throws(CgroupError) -> KillResult {
        var out = mp_cgroup_kill()
        out.spared = sparing ?? 0
        var buffer = seen + [Int32](repeating: 0, count: 4096)
        let rc = buffer.withUnsafeMutableBufferPointer { b in
            out.seen = b.baseAddress
            out.seen_count = Int32(seen.count)
            out.seen_capacity = Int32(b.count)
            return mp_cgroup_kill_all(path, controller ?? "", relativePath, releaseMemory ? 1 : 0, Int32(rounds), &out)
        }
        seen = Array(buffer.prefix(Int(out.seen_count)))
        let result = KillResult(signalled: Int(out.signalled), released: Int(out.released), remaining: Int(out.remaining), skipped: Int(out.skipped))
        if let call = out.failed_call {
            let e = Errno(rawValue: out.error)
            // A group removed meanwhile (by whoever emptied it) has nothing left to kill.
            if !(e == .noSuchFileOrDirectory && String(cString: call) == "read cgroup.procs") {
                throw .kill(path: path, call: String(cString: call), e)
            }
        }
        _ = rc
        return result
    }

    /// Sends `sig` once to every process in the group (SIGSTOP, SIGCONT: suspending every process
    /// of an app), each through a pidfd after checking it is in this group. Returns how many
    /// were signalled.
    @discardableResult
    public func signalAll(_ sig: Int32) throws(CgroupError) -> Int {
        var out = mp_cgroup_kill()
        _ = mp_cgroup_signal_all(path, controller ?? "", relativePath, sig, &out)
        if let call = out.failed_call { throw .kill(path: path, call: String(cString: call), Errno(rawValue: out.error)) }
        return Int(out.signalled)
    }

    /// Waits until the group holds no process; false after `timeout` seconds. A group that is
    /// gone is empty.
    public func waitUntilEmpty(timeout: Double) throws(CgroupError) -> Bool {
        let rc = mp_cgroup_wait_empty(path, Int32(max(0, min(timeout, 3600)) * 1000))
        if rc < 0 {
            if errno == ENOENT { return true }
            throw .read(path: "\(path)/cgroup.procs", Errno(rawValue: errno))
        }
        return rc == 0
    }

    /// Ends every process of the group and waits until it is empty: SIGKILL to all (through
    /// pidfds), a thaw of `freezer` (a frozen process dies only once thawed: the freezer group
    /// holding the same processes on v1, this group itself on v2), more rounds for what forked
    /// meanwhile, and the wait. Throws `.notEmpty` if processes are still there after `timeout`.
    @discardableResult
    public func end(thawing freezer: CgroupDirectory? = nil, timeout: Double = 10) throws(CgroupError) -> KillResult {
        var seen: [Int32] = []
        var result = try killAll(releaseMemory: false, rounds: 1, seen: &seen)
        if let freezer, freezer.exists, freezer.isFreezeRequested() { try freezer.thaw() }
        let more = try killAll(releaseMemory: false, rounds: 8, seen: &seen)
        result.signalled += more.signalled
        result.released += more.released
        result.skipped += more.skipped
        guard try waitUntilEmpty(timeout: timeout) else {
            throw .notEmpty(path: path, processes: try processes().count, seconds: timeout)
        }
        result.remaining = 0
        return result
    }

    // MARK: The freezer (v1 `freezer.state`, v2 `cgroup.freeze`)

    public func freeze() throws(CgroupError) {
        if isV2 { try write("1", to: "cgroup.freeze") } else { try write("FROZEN", to: "freezer.state") }
    }

    public func thaw() throws(CgroupError) {
        if isV2 { try write("0", to: "cgroup.freeze") } else { try write("THAWED", to: "freezer.state") }
    }

    /// Whether the group has finished freezing (v1 FROZEN, v2 "frozen 1" in cgroup.events).
    public func isFrozen() -> Bool {
        do {
            let text = String(decoding: try read(isV2 ? "cgroup.events" : "freezer.state"), as: UTF8.self)
            return isV2 ? text.contains("frozen 1") : text.hasPrefix("FROZEN")
        } catch {
            return false
        }
    }

    /// Whether the group is frozen or freezing (v1 `FROZEN`/`FREEZING`; v2 `cgroup.freeze` 1).
    public func isFreezeRequested() -> Bool {
        do {
            let text = String(decoding: try read(isV2 ? "cgroup.freeze" : "freezer.state"), as: UTF8.self)
            return isV2 ? text.hasPrefix("1") : (text.hasPrefix("FROZEN") || text.hasPrefix("FREEZING"))
        } catch {
            return false
        }
    }
}
