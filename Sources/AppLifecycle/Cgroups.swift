import Glibc
import SystemPackage
import LinuxSystem

extension Supervisor {
    /// Whether this machine lets a supervisor give the device a RAM budget: root, and a memory
    /// controller (cgroup v1) or the unified hierarchy (v2) at `cgroupRoot`.
    public static func canBudget(cgroupRoot: String = "/sys/fs/cgroup") -> Bool {
        getuid() == 0 && (ProcFS.isFile("\(cgroupRoot)/memory/cgroup.procs") || ProcFS.isFile("\(cgroupRoot)/cgroup.controllers"))
    }
}

/// The cgroups of one supervisor: the "device" memory cgroup with the RAM budget, and one
/// cgroup per app for the freezer. Created by the supervisor and removed by it.
///
/// - cgroup v1 (this machine): `ROOT/memory/NAME` with `memory.limit_in_bytes`, and
///   `ROOT/freezer/NAME/APP` with `freezer.state`.
/// - cgroup v2: `ROOT/NAME` with `memory.max` (the memory controller enabled for it), and
///   `ROOT/NAME/APP` with `cgroup.freeze`.
final class DeviceCgroups: @unchecked Sendable {
    let root: String
    let name: String
    let isV2: Bool
    /// The memory cgroup holding the budget (nil without a budget).
    let memoryGroup: String?
    let budgetBytes: Int?
    let usesFreezer: Bool
    private var created: [String] = []

    init(root: String, name: String, budgetBytes: Int?, freezer: Bool) throws(CgroupError) {
        self.root = root
        self.name = name
        self.budgetBytes = budgetBytes
        usesFreezer = freezer
        let isV2 = ProcFS.isFile("\(root)/cgroup.controllers")
        self.isV2 = isV2
        var made: [String] = []
        do {
            memoryGroup = try Self.setUp(root: root, name: name, isV2: isV2, budgetBytes: budgetBytes, freezer: freezer, made: &made)
        } catch {
            // Leave nothing behind: remove what was made before the step that failed.
            _ = Self.remove(made)
            throw error
        }
        created = made
    }

    /// Creates the groups; returns the memory group; `made` lists what was created, in order.
    private static func setUp(root: String, name: String, isV2: Bool, budgetBytes: Int?, freezer: Bool, made: inout [String]) throws(CgroupError) -> String? {
        guard budgetBytes != nil || freezer else { return nil }
        if isV2 {
            let group = "\(root)/\(name)"
            try makeDirectory(group)
            made.append(group)
            guard let budgetBytes else { return nil }
            try write("+memory", to: "\(root)/cgroup.subtree_control", optional: true)
            try write("+memory", to: "\(group)/cgroup.subtree_control", optional: true)
            try write("\(budgetBytes)", to: "\(group)/memory.max")
            return group
        }
        var memoryGroup: String?
        if let budgetBytes {
            let base = "\(root)/memory"
            guard ProcFS.isFile("\(base)/cgroup.procs") else {
                throw .noController("memory controller", path: base, consequence: "cannot give the device a RAM budget")
            }
            let group = "\(base)/\(name)"
            try makeDirectory(group)
            made.append(group)
            try write("\(budgetBytes)", to: "\(group)/memory.limit_in_bytes")
            memoryGroup = group
        }
        if freezer {
            let base = "\(root)/freezer"
            guard ProcFS.isFile("\(base)/cgroup.procs") else {
                throw .noController("freezer", path: base, consequence: "suspend with SIGSTOP instead")
            }
            let group = "\(base)/\(name)"
            try makeDirectory(group)
            made.append(group)
        }
        return memoryGroup
    }

    /// The cgroups an app of this name joins at launch (created now).
    func groups(forApp app: String) throws(CgroupError) -> [String] {
        var out: [String] = []
        if isV2 {
            let leaf = "\(root)/\(name)/\(app)"
            try Self.makeDirectory(leaf)
            out.append(leaf)
        } else {
            if let memoryGroup { out.append(memoryGroup) }
            if usesFreezer {
                let leaf = "\(root)/freezer/\(name)/\(app)"
                try Self.makeDirectory(leaf)
                out.append(leaf)
            }
        }
        return out
    }

    private func freezerGroup(_ app: String) -> String {
        isV2 ? "\(root)/\(name)/\(app)" : "\(root)/freezer/\(name)/\(app)"
    }

    func freeze(_ app: String) throws(CgroupError) {
        if isV2 {
            try Self.write("1", to: "\(freezerGroup(app))/cgroup.freeze")
        } else {
            try Self.write("FROZEN", to: "\(freezerGroup(app))/freezer.state")
        }
    }

    func thaw(_ app: String) throws(CgroupError) {
        if isV2 {
            try Self.write("0", to: "\(freezerGroup(app))/cgroup.freeze")
        } else {
            try Self.write("THAWED", to: "\(freezerGroup(app))/freezer.state")
        }
    }

    /// Whether the app's cgroup has finished freezing (v1 FROZEN, v2 "frozen 1").
    func isFrozen(_ app: String) -> Bool {
        let file = isV2 ? "\(freezerGroup(app))/cgroup.events" : "\(freezerGroup(app))/freezer.state"
        do {
            let text = String(decoding: try ProcFS.readBytes(file), as: UTF8.self)
            return isV2 ? text.contains("frozen 1") : text.hasPrefix("FROZEN")
        } catch {
            return false
        }
    }

    /// How many times the kernel's memory-cgroup OOM killer has killed a process in the device
    /// cgroup (v1 `memory.oom_control`, v2 `memory.events`: `oom_kill N`); nil without one.
    func kernelOOMKills() -> UInt64? {
        guard let memoryGroup else { return nil }
        let file = isV2 ? "\(memoryGroup)/memory.events" : "\(memoryGroup)/memory.oom_control"
        do {
            return ByteScanner.value(of: "oom_kill", inSpaceSeparatedLines: try ProcFS.readBytes(file))
        } catch {
            return nil  // the cgroup is gone
        }
    }

    /// Removes an app's own cgroup (after its process is gone); returns why it could not.
    @discardableResult
    func removeApp(_ app: String) -> CgroupError? {
        guard isV2 || usesFreezer else { return nil }
        return Self.remove([freezerGroup(app)]).first
    }

    /// Removes everything this supervisor created; returns what could not be removed, and why
    /// (a group still holding a process: one an app forked and left behind, which the supervisor
    /// did not launch and so does not signal).
    @discardableResult
    func removeAll() -> [CgroupError] {
        let failures = Self.remove(created.reversed().flatMap { group -> [String] in
            let entries: [[UInt8]]
            do {
                entries = try ProcFS.listDirectory(group)
            } catch {
                entries = []  // already gone
            }
            let children = entries.map { "\(group)/\(String(decoding: $0, as: UTF8.self))" }.filter { ProcFS.isDirectory($0) }
            return children + [group]
        })
        created.removeAll()
        return failures
    }

    /// rmdir each path (a missing one is fine); the failures, described.
    static func remove(_ groups: [String]) -> [CgroupError] {
        var failures: [CgroupError] = []
        for group in groups where rmdir(group) != 0 && errno != ENOENT {
            failures.append(.remove(path: group, Errno(rawValue: errno)))
        }
        return failures
    }

    static func makeDirectory(_ path: String) throws(CgroupError) {
        if mkdir(path, 0o755) != 0 && errno != EEXIST {
            throw .create(path: path, Errno(rawValue: errno))
        }
    }

    static func write(_ text: String, to path: String, optional: Bool = false) throws(CgroupError) {
        do {
            try ProcFS.writeFileInPlace(path, Array(text.utf8))
        } catch {
            if optional { return }
            throw .write(text: text, path: path, error.errno)
        }
    }
}
