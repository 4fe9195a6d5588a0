import Glibc
import MemPressureSystem
import SystemPackage

extension Supervisor {
    /// Whether this machine lets a supervisor give the device a RAM budget: root, and a memory
    /// controller (cgroup v1) or the unified hierarchy (v2) at `cgroupRoot`.
    public static func canBudget(cgroupRoot: String = "/sys/fs/cgroup") -> Bool {
        getuid() == 0 && (CgroupDirectory.v1("memory", root: cgroupRoot) != nil || CgroupDirectory.v2(root: cgroupRoot) != nil)
    }

    /// Whether apps can be cgroups here: root, and a memory or freezer controller (v1) or the
    /// unified hierarchy (v2) at `cgroupRoot`.
    public static func canContainInCgroups(cgroupRoot: String = "/sys/fs/cgroup") -> Bool {
        getuid() == 0
            && (CgroupDirectory.v1("memory", root: cgroupRoot) != nil || CgroupDirectory.v1("freezer", root: cgroupRoot) != nil
                || CgroupDirectory.v2(root: cgroupRoot) != nil)
    }
}

/// How the processes of one app are held together, so that they are killed, suspended and
/// accounted together (`SupervisorConfiguration.containment`).
public enum AppContainment: String, Sendable, Hashable, Codable, CaseIterable {
    /// A cgroup per app where the machine allows it (root, and a cgroup v1 memory or freezer
    /// controller or cgroup v2), else the app's process group.
    case automatic
    /// A cgroup per app; the supervisor does not start without one.
    case cgroup
    /// The app's process group: every process the app starts stays in it unless it leaves it
    /// (setsid, setpgid), which a cgroup would not let it do. Signals to the group go while the
    /// app's main process is not yet reaped, which keeps the group's number from being reused.
    case processGroup = "process-group"
}

/// The cgroups of one supervisor: the device's, holding the RAM budget, and one per app below it
/// holding every process the app starts. Created by the supervisor and removed by it (or, if it
/// dies, by its guardian, or by the next supervisor on its runtime directory).
///
/// - cgroup v1 (this project's machines): `ROOT/memory/NAME` with `memory.limit_in_bytes` (no
///   limit without a budget) and `ROOT/memory/NAME/APP`; with the freezer, `ROOT/freezer/NAME`
///   and `ROOT/freezer/NAME/APP`.
/// - cgroup v2: `ROOT/NAME` with `memory.max` (the memory controller enabled for it), and
///   `ROOT/NAME/APP`, which is also what `cgroup.freeze` freezes.
final class DeviceCgroups: Sendable {
    let name: String
    let isV2: Bool
    /// The device's memory group (v1 memory hierarchy; v2 the one group), if any.
    let memory: CgroupDirectory?
    /// The v1 device freezer group, if the freezer is used; on v2 the app groups freeze.
    let freezer: CgroupDirectory?
    let usesFreezer: Bool
    let budgetBytes: Int?

    /// The groups to make, by name, before any is made (what a state file records).
    static func plan(root: String, name: String, freezer: Bool) -> [CgroupDirectory] {
        if let v2 = CgroupDirectory.v2(root: root) { return [v2.child(name)] }
        return [CgroupDirectory.v1("memory", root: root)?.child(name), freezer ? CgroupDirectory.v1("freezer", root: root)?.child(name) : nil]
            .compactMap { $0 }
    }

    init(root: String, name: String, budgetBytes: Int?, freezer: Bool) throws(CgroupError) {
        self.name = name
        self.budgetBytes = budgetBytes
        usesFreezer = freezer
        var made: [CgroupDirectory] = []
        do throws(CgroupError) {
            if let v2 = CgroupDirectory.v2(root: root) {
                isV2 = true
                let group = v2.child(name)
                // The root and the device hand the memory controller down. A refusal is not an
                // error here: without the controller the device has no memory.max, and writing
                // the budget below fails and says so.
                do { try v2.write("+memory", to: "cgroup.subtree_control") } catch { _ = error }
                try group.create()
                made.append(group)
                do { try group.write("+memory", to: "cgroup.subtree_control") } catch { _ = error }
                if let budgetBytes { try group.write("\(budgetBytes)", to: "memory.max") }
                memory = group
                self.freezer = nil
            } else {
                isV2 = false
                let memoryHierarchy = CgroupDirectory.v1("memory", root: root)
                if budgetBytes != nil, memoryHierarchy == nil {
                    throw CgroupError.noController("v1 memory controller", path: "\(root)/memory", consequence: "cannot give the device a RAM budget")
                }
                if let memoryHierarchy {
                    let group = memoryHierarchy.child(name)
                    try group.create()
                    made.append(group)
                    if let budgetBytes { try group.write("\(budgetBytes)", to: "memory.limit_in_bytes") }
                    memory = group
                } else {
                    memory = nil
                }
                if freezer {
                    guard let freezerHierarchy = CgroupDirectory.v1("freezer", root: root) else {
                        throw CgroupError.noController("v1 freezer", path: "\(root)/freezer", consequence: "suspend with SIGSTOP instead")
                    }
                    let group = freezerHierarchy.child(name)
                    try group.create()
                    made.append(group)
                    self.freezer = group
                } else {
                    self.freezer = nil
                }
                if memory == nil && self.freezer == nil {
                    throw CgroupError.noController("v1 memory or freezer controller", path: root, consequence: "apps cannot be cgroups")
                }
            }
        } catch {
            // Leave nothing behind: remove what was made before the step that failed (empty
            // groups, just made; the error that matters is the one thrown).
            for group in made.reversed() {
                do { try group.remove() } catch { _ = error }
            }
            throw error
        }
    }

    /// The device-level groups (what the guardian and the state file are told of).
    var deviceGroups: [CgroupDirectory] { [memory, freezer].compactMap { $0 } }

    /// The memory cgroup holding the budget (nil when there is no memory controller).
    var memoryGroup: String? { memory?.path }

    /// The cgroups of the app named `app` (not made yet: `AppCgroup.create()`).
    func app(_ app: String) -> AppCgroup {
        let memoryGroup = memory?.child(app)
        let freezerGroup = isV2 ? (usesFreezer ? memoryGroup : nil) : freezer?.child(app)
        return AppCgroup(memory: memoryGroup, freezer: freezerGroup)
    }

    /// How many times the kernel's memory-cgroup OOM killer has killed a process in the device
    /// cgroup (v1 `memory.oom_control`, v2 `memory.events`: `oom_kill N`); nil without one.
    /// On v2 the count is hierarchical (the kills in its app groups included); on v1 it counts
    /// only the kills of processes in the device group itself — a victim in an app's group is
    /// counted in that group's `memory.oom_control` — so the supervisor adds the app groups'
    /// (`Supervisor.kernelOOMKills()`).
    func kernelOOMKills() -> UInt64? {
        guard let memory else { return nil }
        return Self.oomKills(memory, isV2: isV2)
    }

    /// The `oom_kill` count of one memory group; nil when it cannot be read (gone).
    static func oomKills(_ group: CgroupDirectory, isV2: Bool) -> UInt64? {
        do {
            return ByteScanner.value(of: "oom_kill", inSpaceSeparatedLines: try group.read(isV2 ? "memory.events" : "memory.oom_control"))
        } catch {
            return nil  // the cgroup is gone
        }
    }

    /// Removes the device groups, and any app group left in them after ending what is still in
    /// it (an app group holds no process once its app has ended; one that does is reported).
    /// Returns what could not be removed, and why.
    func removeAll() -> [CgroupError] {
        var failures: [CgroupError] = []
        for device in deviceGroups {
            for leftover in device.children() {
                do {
                    try leftover.end(thawing: leftover, timeout: 5)
                    try leftover.remove()
                } catch {
                    failures.append(error)
                }
            }
            do { try device.remove() } catch { failures.append(error) }
        }
        return failures
    }
}

/// The cgroups of one app: its memory group (what it is charged, read for its footprint) and
/// its freezer group (suspension), both holding every process it starts.
struct AppCgroup: Sendable, Hashable {
    let memory: CgroupDirectory?
    /// The group frozen to suspend the app (v1 freezer hierarchy; v2 the memory group itself).
    let freezer: CgroupDirectory?

    /// The group whose `cgroup.procs` lists the app's processes.
    var members: CgroupDirectory { (memory ?? freezer)! }

    /// The groups mempressure-exec joins before it execs the app (distinct directories).
    var joinPaths: [String] {
        var paths: [String] = []
        for group in [memory, freezer].compactMap({ $0 }) where !paths.contains(group.path) { paths.append(group.path) }
        return paths
    }

    func create() throws(CgroupError) {
        var made: [CgroupDirectory] = []
        do throws(CgroupError) {
            for group in [memory, freezer].compactMap({ $0 }) where !made.contains(group) {
                if try group.create() { made.append(group) }
                // A group left by an earlier run (a supervisor that died) must hold nobody now.
                if try !group.processes().isEmpty { try group.end(thawing: freezer, timeout: 5) }
                if group == freezer { try group.thaw() }
            }
        } catch {
            for group in made.reversed() {
                do { try group.remove() } catch { _ = error }
            }
            throw error
        }
    }

    /// Removes the groups (empty once the app has ended); the failures.
    func remove() -> [CgroupError] {
        var failures: [CgroupError] = []
        var removed: [CgroupDirectory] = []
        for group in [memory, freezer].compactMap({ $0 }) where !removed.contains(group) {
            do { try group.remove() } catch { failures.append(error) }
            removed.append(group)
        }
        return failures
    }
}
