// Apps a supervisor launched: each is a cgroup of its own (`SupervisedAppCgroup`), and every
// process in it belongs to the app whatever its parent, so a helper that double-forked (and was
// reparented to init) is counted with the app that started it.

import MemPressureLifecycleProtocol
import MemPressureSystem

extension Snapshotter {
    /// The supervised app whose cgroup holds a process, from the text of `/proc/PID/cgroup`: the
    /// v1 memory hierarchy's path, else the freezer's (a supervisor without a memory budget
    /// suspends through the freezer alone), else v2's unified one. Nil when none is an app's.
    static func supervisedApp(fromProcCgroup bytes: UnsafeRawBufferPointer) -> SupervisedAppCgroup? {
        // Most processes are in no app: a text without a device group's prefix is none at once,
        // without splitting its paths into components.
        guard ByteScanner.contains(bytes, SupervisedAppCgroup.deviceGroupPrefix) else { return nil }
        for controller in ["memory", "freezer"] {
            if let path = cgroupPath(fromProcCgroup: bytes, controller: controller), let app = SupervisedAppCgroup(path: path) { return app }
        }
        return nil
    }

    /// The supervised app named `name` on this machine and its processes now (ascending), found
    /// from every process's `/proc/PID/cgroup`; nil when no process is in such an app's cgroup.
    /// Apps of that name under two supervisors (or in two device groups) are ambiguous: the
    /// error lists their cgroups, for `--cgroup`.
    public func supervisedApp(named name: String) throws -> (app: SupervisedAppCgroup, pids: [Int32])? {
        var found: [(app: SupervisedAppCgroup, pids: [Int32])] = []
        for (pid, app) in try supervisedApps() where app.app == name {
            if let i = found.firstIndex(where: { $0.app == app }) {
                found[i].pids.append(pid)
            } else {
                found.append((app, [pid]))
            }
        }
        guard found.count <= 1 else { throw LookupError.ambiguousSupervisedApp(name, cgroups: found.map(\.app.path).sorted()) }
        return found.first.map { ($0.app, $0.pids.sorted()) }
    }

    /// Every process in a supervised app's cgroup, with that app.
    func supervisedApps() throws(ProcError) -> [(pid: Int32, app: SupervisedAppCgroup)] {
        var buffer = ReadBuffer(capacity: 4096)
        var result: [(pid: Int32, app: SupervisedAppCgroup)] = []
        for pid in try proc.pids() {
            do {
                let dir = try proc.open(pid)
                try dir.read("cgroup", into: &buffer)
                if let app = buffer.withBytes({ Self.supervisedApp(fromProcCgroup: $0) }) { result.append((pid, app)) }
            } catch .noSuchProcess, .processExited {
                continue  // exited between the listing and the read: not part of this instant
            }
        }
        return result
    }

    /// The processes of the supervised app `name`, or `LookupError.noSupervisedApp`.
    func supervisedAppMembers(_ name: String) throws -> [Int32] {
        guard let found = try supervisedApp(named: name) else { throw LookupError.noSupervisedApp(name) }
        return found.pids
    }
}

extension SupervisedAppCgroup {
    /// The app's main process among `processes` (its members): the one its supervisor started
    /// (whose parent is the supervisor), else the lowest PID whose parent is not a member, else
    /// the lowest PID.
    func mainPID(of processes: [ProcessStat]) -> Int32? {
        if let started = processes.filter({ $0.ppid == supervisorPID }).map(\.pid).min() { return started }
        let members = Set(processes.map(\.pid))
        return processes.filter { !members.contains($0.ppid) }.map(\.pid).min() ?? processes.map(\.pid).min()
    }
}
