/// Every process on the machine with its parent, name and state, from `/proc/*/stat`.

import Glibc
import MemPressureLifecycleProtocol
import MemPressureSystem
public struct ProcessTable: Sendable {
    public var processes: [Int32: ProcessStat]

    public init(processes: [Int32: ProcessStat]) {
        self.processes = processes
    }

    public subscript(pid: Int32) -> ProcessStat? { processes[pid] }

    /// Direct children of `pid`, ascending.
    public func children(of pid: Int32) -> [Int32] {
        processes.values.filter { $0.ppid == pid && $0.pid != pid }.map(\.pid).sorted()
    }

    /// All descendants of `pid` (not including it), in breadth-first order.
    public func descendants(of pid: Int32) -> [Int32] {
        var byParent: [Int32: [Int32]] = [:]
        for p in processes.values where p.pid != p.ppid { byParent[p.ppid, default: []].append(p.pid) }
        var result: [Int32] = []
        var queue = (byParent[pid] ?? []).sorted()
        var seen: Set<Int32> = [pid]
        while !queue.isEmpty {
            let next = queue.removeFirst()
            guard seen.insert(next).inserted else { continue }
            result.append(next)
            queue.append(contentsOf: (byParent[next] ?? []).sorted())
        }
        return result
    }

    /// Whether `ancestor` is a (transitive) parent of `pid`.
    package func isDescendant(_ pid: Int32, of ancestor: Int32) -> Bool {
        var current = processes[pid]?.ppid
        var steps = 0
        while let p = current, p > 0, steps < 4096 {
            if p == ancestor { return true }
            current = processes[p]?.ppid
            steps += 1
        }
        return false
    }

    /// Finds the one process a user meant by `name`.
    ///
    /// A process matches when its name (`comm`) equals `name`; names longer than the kernel's
    /// 15-byte `comm` match on those first 15 bytes. When several processes match and all of
    /// them are one process and its descendants (a server and its workers), that first process
    /// is the answer; otherwise the name is ambiguous and the candidates are listed.
    public func lookup(name: String) throws(LookupError) -> Int32 {
        let wanted = Array(name.utf8)
        let comm = wanted.count > 15 ? Array(wanted.prefix(15)) : wanted
        let candidates = processes.values
            .filter { !$0.isKernelThread && $0.name.bytes == comm }
            .map(\.pid).sorted()
        guard !candidates.isEmpty else { throw .noProcessNamed(name) }
        if candidates.count == 1 { return candidates[0] }
        let set = Set(candidates)
        let roots = candidates.filter { pid in !candidates.contains { other in other != pid && set.contains(other) && isDescendant(pid, of: other) } }
        if roots.count == 1 { return roots[0] }
        throw .ambiguousName(name, candidates: candidates)
    }
}

/// What counts as one app.
public enum AppDefinition: Sendable, Hashable, Codable, CustomStringConvertible {
    /// One process alone.
    case process(Int32)
    /// A process and all its descendants (the default).
    case tree(Int32)
    /// Every process in a cgroup and its sub-cgroups.
    case cgroup(String)
    /// Every process whose name matches a shell pattern (fnmatch(3): `*`, `?`, `[...]`).
    case namePattern(String)
    /// Every process in the cgroup a supervisor made for the app of this name
    /// (`SupervisedAppCgroup`), whatever its parent.
    case supervisedApp(String)

    public var description: String {
        switch self {
        case .process(let pid): "process \(pid)"
        case .tree(let pid): "process \(pid) and its descendants"
        case .cgroup(let path): "cgroup \(path)"
        case .namePattern(let pattern): "processes named '\(pattern)'"
        case .supervisedApp(let name): "supervised app \(name)"
        }
    }
}

/// One app at one instant: its processes and what could not be read.
public struct AppSnapshot: Sendable {
    public var definition: AppDefinition
    /// The app's name: its root process's name, the supervised app's, or the cgroup or pattern.
    public var name: String
    /// The process the app was defined by, if any.
    public var rootPID: Int32?
    public var capturedAt: Timestamp
    public var processes: [ProcessSnapshot]
    /// Members that vanished or could not be read while the snapshot was taken.
    public var skipped: [ProcError]
    /// The supervised app these processes are, when the app is one (by name, or a cgroup that
    /// is one app's): every process read is in that app's cgroup.
    public var supervisedApp: SupervisedAppCgroup?

    public init(
        definition: AppDefinition, name: String, rootPID: Int32?, capturedAt: Timestamp, processes: [ProcessSnapshot], skipped: [ProcError],
        supervisedApp: SupervisedAppCgroup? = nil
    ) {
        self.definition = definition
        self.name = name
        self.rootPID = rootPID
        self.capturedAt = capturedAt
        self.processes = processes
        self.skipped = skipped
        self.supervisedApp = supervisedApp
    }

    /// The process that heads the app: the root process it was defined by, else a supervised
    /// app's main process (the one its supervisor started), else the lowest PID.
    public var mainPID: Int32? {
        rootPID ?? supervisedApp?.mainPID(of: processes.map(\.stat)) ?? processes.map(\.pid).min()
    }

    public var totals: MemoryCounters { MemoryCounters.sum(processes.lazy.map(\.totals)) }
}

extension Snapshotter {
    /// Reads the stat line of every process.
    public func processTable() throws(ProcError) -> ProcessTable {
        var buffer = ReadBuffer(capacity: 4096)
        var table: [Int32: ProcessStat] = [:]
        for pid in try proc.pids() {
            do {
                let dir = try proc.open(pid)
                try dir.read("stat", into: &buffer)
                let file = "\(dir.path)/stat"
                table[pid] = try buffer.withBytes { (b) throws(ProcError) in try ProcessStat.parse(b, pid: pid, file: file) }
            } catch .noSuchProcess, .processExited {
                continue  // exited between the listing and the read: not part of this instant
            }
        }
        return ProcessTable(processes: table)
    }

    /// A process's descendants read from the kernel's child lists (`/proc/PID/task/TID/children`,
    /// CONFIG_PROC_CHILDREN): only the tree's own processes are read, not every process's stat,
    /// which made `vm PID` read the whole machine to find a process with no children. In the
    /// order of `ProcessTable.descendants(of:)`: breadth first, each one's children by PID.
    /// Throws `noSuchProcess` when `pid` is gone; nil where the kernel keeps no child lists (or
    /// /proc is a fixture without them): then the process table is read instead. A child that
    /// exits meanwhile is left out, as a table read a moment later would leave it out.
    package func descendantsFromChildrenLists(of pid: Int32) throws(ProcError) -> [Int32]? {
        _ = try proc.open(pid)  // the root must exist (and be ours to read)
        var buffer = ReadBuffer(capacity: 4096)
        var result: [Int32] = []
        var seen: Set<Int32> = [pid]
        var queue = [pid]
        var next = 0
        while next < queue.count {
            let parent = queue[next]
            next += 1
            guard let children = childrenList(of: parent, buffer: &buffer) else {
                // No list for a process that has a task directory: the kernel has none.
                if parent == pid { return nil }
                continue
            }
            for child in children.sorted() where seen.insert(child).inserted {
                result.append(child)
                queue.append(child)
            }
        }
        return result
    }

    /// The children of every thread of `pid`; [] when it has exited, nil when its threads have
    /// no `children` file.
    private func childrenList(of pid: Int32, buffer: inout ReadBuffer) -> [Int32]? {
        let tasks = "\(proc.root)/\(pid)/task"
        let threads: [[UInt8]]
        do {
            threads = try ProcFS.listDirectory(tasks)
        } catch {
            return []  // exited (or unreadable): no children to add
        }
        var children: [Int32] = []
        var listed = false
        for thread in threads {
            do {
                try ProcFS.readFile("\(tasks)/\(String(decoding: thread, as: UTF8.self))/children", into: &buffer)
            } catch {
                continue  // this thread exited, or the kernel keeps no lists (decided below)
            }
            listed = true
            buffer.withBytes { b in
                for token in b.split(separator: 0x20) {
                    if let v = ByteScanner.unsigned(token), v > 0, v <= UInt64(Int32.max) { children.append(Int32(v)) }
                }
            }
        }
        return listed || threads.isEmpty ? children : nil
    }

    /// The PIDs that make up an app now.
    func members(of definition: AppDefinition, table: ProcessTable) throws -> [Int32] {
        switch definition {
        case .process(let pid):
            return [pid]
        case .tree(let pid):
            return [pid] + table.descendants(of: pid)
        case .cgroup(let path):
            return try cgroupMembers(path)
        case .namePattern(let pattern):
            return table.processes.values
                .filter { !$0.isKernelThread && fnmatch(pattern, $0.name.description, 0) == 0 }
                .map(\.pid).sorted()
        case .supervisedApp(let name):
            return try supervisedAppMembers(name)
        }
    }

    /// The directory of a cgroup given as an absolute path or relative to a hierarchy
    /// (`cgroupRoot/PATH` for v2, `cgroupRoot/memory/PATH` for v1's memory controller).
    func cgroupDirectory(_ path: String) throws(LookupError) -> String {
        if path.hasPrefix("/"), ProcFS.isFile("\(path)/cgroup.procs") { return path }
        let relative = path.hasPrefix("/") ? String(path.dropFirst()) : path
        for candidate in ["\(cgroupRoot)/\(relative)", "\(cgroupRoot)/memory/\(relative)", "\(cgroupRoot)/unified/\(relative)"]
        where ProcFS.isDirectory(candidate) && ProcFS.isFile("\(candidate)/cgroup.procs") {
            return candidate
        }
        throw .cgroupNotFound(path)
    }

    /// Every PID in a cgroup and its descendants.
    func cgroupMembers(_ path: String) throws -> [Int32] {
        let root = try cgroupDirectory(path)
        var pids: [Int32] = []
        var pending = [root]
        var buffer = ReadBuffer(capacity: 4096)
        while let dir = pending.popLast() {
            try ProcFS.readFile("\(dir)/cgroup.procs", into: &buffer)
            buffer.withBytes { b in
                for token in b.split(separator: 0x0a) {
                    if let v = ByteScanner.unsigned(token), v <= UInt64(Int32.max) { pids.append(Int32(v)) }
                }
            }
            for entry in try ProcFS.listDirectory(dir) {
                let child = "\(dir)/\(String(decoding: entry, as: UTF8.self))"
                if ProcFS.isDirectory(child) { pending.append(child) }
            }
        }
        return Array(Set(pids)).sorted()
    }

    /// A snapshot of an app.
    ///
    /// The root process of a `.process` or `.tree` app must be readable, or this throws its
    /// error; any other member that vanishes or cannot be read is listed in `skipped`. The
    /// processes of a `.cgroup` or `.supervisedApp` app are read with their cgroups: when they
    /// are all in one supervised app's cgroup, the snapshot says which (and takes its name).
    public func app(_ definition: AppDefinition, options: SnapshotOptions = .detailed) throws -> AppSnapshot {
        let rootPID: Int32?
        let pids: [Int32]
        var options = options
        switch definition {
        case .process(let pid):
            rootPID = pid
            pids = [pid]  // no need to read every process's stat
        case .tree(let pid):
            rootPID = pid
            if let tree = try descendantsFromChildrenLists(of: pid) {
                pids = [pid] + tree
            } else {
                let table = try processTable()
                guard table[pid] != nil else { throw ProcError.noSuchProcess(pid: pid) }
                pids = try members(of: definition, table: table)
            }
        case .cgroup(let path):
            rootPID = nil
            pids = try cgroupMembers(path)
            options.cgroup = true
        case .namePattern:
            rootPID = nil
            pids = try members(of: definition, table: try processTable())
        case .supervisedApp(let name):
            rootPID = nil
            pids = try supervisedAppMembers(name)
            options.cgroup = true
        }
        var processes: [ProcessSnapshot] = []
        var skipped: [ProcError] = []
        var buffer = ReadBuffer()
        let capturedAt = Timestamp.now()
        for pid in pids {
            do {
                processes.append(try process(pid, options: options, buffer: &buffer))
            } catch {
                if pid == rootPID { throw error }
                if case .kernelThread = error { continue }
                skipped.append(error)
            }
        }
        if processes.isEmpty, rootPID == nil {
            throw LookupError.emptyApp(definition.description)
        }
        // One supervised app: every process read is in its cgroup (a cgroup above several apps'
        // is none of them).
        var supervisedApp: SupervisedAppCgroup?
        if options.cgroup, let first = processes.first?.supervisedApp, processes.allSatisfy({ $0.supervisedApp == first }) {
            supervisedApp = first
        }
        let name: String
        switch definition {
        case .process(let pid), .tree(let pid):
            name = processes.first { $0.pid == pid }?.name ?? "\(pid)"
        case .cgroup(let path):
            name = supervisedApp?.app ?? path
        case .namePattern(let pattern):
            name = pattern
        case .supervisedApp(let app):
            name = app
        }
        return AppSnapshot(
            definition: definition, name: name, rootPID: rootPID, capturedAt: capturedAt, processes: processes, skipped: skipped,
            supervisedApp: supervisedApp)
    }
}
