import Dispatch
import Glibc
import MemPressureLifecycleProtocol
import MemPressureSystem
import Synchronization

/// Every user process on the machine at one instant.
public struct MachineSnapshot: Sendable {
    public var capturedAt: Timestamp
    /// Readable user processes, ascending by PID.
    public var processes: [ProcessSnapshot]
    /// Processes that could not be read: vanished meanwhile, zombies, permission denied.
    public var skipped: [ProcError]
    /// Kernel threads seen (they have no user memory and are not reported).
    public var kernelThreads: Int

    public init(capturedAt: Timestamp, processes: [ProcessSnapshot], skipped: [ProcError], kernelThreads: Int) {
        self.capturedAt = capturedAt
        self.processes = processes
        self.skipped = skipped
        self.kernelThreads = kernelThreads
    }

    /// One line per kind of skip, for the notes under a whole-machine table.
    public var skipNotes: [String] {
        var vanished = 0, zombies = 0, denied: [Int32] = [], other: [String] = []
        for e in skipped {
            switch e {
            case .noSuchProcess, .processExited: vanished += 1
            case .zombie: zombies += 1
            case .permissionDenied(let pid, _): denied.append(pid)
            case .kernelThread: break
            default: other.append(e.description)
            }
        }
        var notes: [String] = []
        if vanished > 0 { notes.append("\(vanished) process(es) exited while the snapshot was taken and are not shown") }
        if zombies > 0 { notes.append("\(zombies) zombie(s) hold no memory and are not shown") }
        if !denied.isEmpty {
            // A loop, not joined(separator:): joined's first use looks up a conformance of
            // [String] at run time, 8% of a one-shot `mempressure top`.
            var list = ""
            for pid in denied.prefix(10) { list += list.isEmpty ? String(pid) : ", \(pid)" }
            notes.append("\(denied.count) process(es) not readable (permission denied): pids \(list)\(denied.count > 10 ? ", ..." : "")")
        }
        notes.append(contentsOf: other.map { "skipped: \($0)" })
        return notes
    }

    /// Groups processes into apps.
    public func apps(grouping: AppGrouping) -> [AppSummary] {
        var byPID: [Int32: ProcessSnapshot] = [:]
        for p in processes { byPID[p.pid] = p }
        var groups: [String: (root: Int32?, name: String, cgroup: CgroupIdentity?, pids: [Int32], totals: MemoryCounters)] = [:]
        var rootCache: [Int32: Int32] = [:]

        func appRoot(_ pid: Int32) -> Int32 {
            if let cached = rootCache[pid] { return cached }
            var chain: [Int32] = []
            var current = pid
            while true {
                chain.append(current)
                // A supervised app's process heads no tree outside its app.
                guard let me = byPID[current], let parent = byPID[me.stat.ppid], me.stat.ppid > 1,
                    parent.stat.name == me.stat.name, parent.supervisedApp == nil, chain.count < 4096
                else { break }
                if let cached = rootCache[parent.pid] {
                    current = cached
                    break
                }
                current = parent.pid
            }
            for p in chain { rootCache[p] = current }
            return current
        }

        for p in processes {
            let key: String
            let root: Int32?
            let name: String
            var cgroup: CgroupIdentity?
            switch grouping {
            case .process:
                key = "\(p.pid)"
                root = p.pid
                name = p.name
            case .app:
                if let app = p.supervisedApp {
                    // The app's cgroup holds all its processes, whatever their parents.
                    key = app.path
                    root = nil  // its main process, once all its processes are known
                    name = app.app
                    cgroup = CgroupIdentity(path: app.path)
                } else {
                    let r = appRoot(p.pid)
                    key = "\(r)"
                    root = r
                    name = byPID[r]?.name ?? p.name
                }
            case .cgroup:
                // The key is the path; the name is what the path says (unit, pod, container).
                key = p.cgroup ?? "?"
                root = nil
                if let path = p.cgroup {
                    let identity = CgroupIdentity(path: path)
                    cgroup = identity
                    name = identity.name
                } else {
                    name = "?"
                }
            }
            groups[key, default: (root, name, cgroup, [], MemoryCounters())].pids.append(p.pid)
            groups[key]!.totals += p.totals
        }
        return groups.map { key, g in
            let root = g.root ?? g.cgroup?.supervised?.mainPID(of: g.pids.compactMap { byPID[$0]?.stat })
            return AppSummary(key: key, rootPID: root, name: g.name, pids: g.pids.sorted(), totals: g.totals, cgroup: g.cgroup)
        }.sorted { ($0.totals.footprint, $1.key) > ($1.totals.footprint, $0.key) }
    }
}

/// How a whole-machine view forms apps.
public enum AppGrouping: String, Sendable, CaseIterable {
    /// Each process alone.
    case process
    /// A process with the descendants that run the same program (a server and its workers, a
    /// browser and its renderers); a child running another program heads an app of its own.
    /// (Grouping every descendant would make PID 1's app the whole machine.) A supervised app
    /// (its processes read with their cgroups) is every process in its cgroup, whatever their
    /// parents (`SupervisedAppCgroup`).
    case app
    /// The processes of each cgroup: the memory controller's hierarchy on cgroup v1 (also on a
    /// machine that mounts both, where v1's memory controller holds the limits), the unified
    /// hierarchy on v2. Each app is named by `CgroupIdentity`.
    case cgroup
}

/// One app's totals in a whole-machine view.
public struct AppSummary: Sendable, Hashable {
    public var key: String
    public var rootPID: Int32?
    public var name: String
    public var pids: [Int32]
    public var totals: MemoryCounters
    /// What the cgroup path says, when grouped by cgroup (nil for a process whose cgroup is
    /// unknown), or a supervised app's cgroup when grouped by app.
    public var cgroup: CgroupIdentity? = nil
}

extension Snapshotter {
    /// The default number of threads reading /proc for a whole-machine snapshot.
    public static var defaultWorkers: Int {
        max(1, min(8, Int(sysconf(Int32(_SC_NPROCESSORS_ONLN)))))
    }

    /// Processes a rollup-only snapshot gives each thread beyond the first: reading one
    /// process's `smaps_rollup` and `stat` costs tens of microseconds, starting a thread about as
    /// much as a few of them, so below this a second thread costs more CPU than it saves.
    public static var rollupProcessesPerWorker: Int { 256 }

    /// A snapshot of every user process. Processes are read by at most `workers` threads, each
    /// with its own buffer (a rollup-only snapshot by one more thread per
    /// `rollupProcessesPerWorker` processes: `mempressure top` on an ordinary machine reads on
    /// the calling thread alone); one process that vanishes or cannot be read is listed in
    /// `skipped` and never spoils the rest.
    public func machine(options: SnapshotOptions = .totalsOnly, workers: Int = Snapshotter.defaultWorkers) throws(ProcError) -> MachineSnapshot {
        let pids = try proc.pids()
        let capturedAt = Timestamp.now()
        let next = Atomic<Int>(0)
        let results = Mutex<(processes: [ProcessSnapshot], skipped: [ProcError], kernelThreads: Int)>(([], [], 0))
        let useful = options.detail == .rollup ? 1 + pids.count / Self.rollupProcessesPerWorker : pids.count
        let workerCount = max(1, min(workers, useful))
        let body: @Sendable (Int) -> Void = { _ in
            var buffer = ReadBuffer()
            var processes: [ProcessSnapshot] = []
            var skipped: [ProcError] = []
            var kernelThreads = 0
            while true {
                let i = next.wrappingAdd(1, ordering: .relaxed).oldValue
                guard i < pids.count else { break }
                do throws(ProcError) {
                    processes.append(try self.process(pids[i], options: options, buffer: &buffer))
                } catch .kernelThread {
                    kernelThreads += 1
                } catch {
                    skipped.append(error)
                }
            }
            results.withLock {
                $0.processes.append(contentsOf: processes)
                $0.skipped.append(contentsOf: skipped)
                $0.kernelThreads += kernelThreads
            }
        }
        if workerCount == 1 {
            body(0)
        } else {
            DispatchQueue.concurrentPerform(iterations: workerCount, execute: body)
        }
        return results.withLock { r in
            MachineSnapshot(
                capturedAt: capturedAt, processes: r.processes.sorted { $0.pid < $1.pid },
                skipped: r.skipped.sorted { ($0.pid ?? 0) < ($1.pid ?? 0) }, kernelThreads: r.kernelThreads)
        }
    }
}
