import Dispatch
import Glibc
import MemPressureSystem
import Synchronization
import MemPressureVMTracker

/// Processes left out of a scrape, by why.
struct SkipCounts {
    var exited = 0
    var unreadable = 0

    mutating func add(_ error: ProcError) {
        switch error {
        case .noSuchProcess, .processExited, .zombie: exited += 1
        case .kernelThread: break
        default: unreadable += 1
        }
    }
}

/// What each cgroup path says (unit, pod, container), parsed once per path in a scrape.
struct Identities {
    private var byPath: [String: CgroupIdentity] = [:]

    mutating func identity(_ path: String) -> CgroupIdentity {
        if let known = byPath[path] { return known }
        let identity = CgroupIdentity(path: path)
        byPath[path] = identity
        return identity
    }

    /// Adds the `unit`, `pod` and `container` labels the path names.
    mutating func addLabels(of path: String, to labels: inout LabelSet) {
        let identity = identity(path)
        if let unit = identity.unit { labels.add("unit", bytes: unit.utf8) }
        if let pod = identity.pod { labels.add("pod", bytes: pod.utf8) }
        if let container = identity.container { labels.add("container", bytes: container.utf8) }
    }
}

/// One series of the per-app families: the apps of the grouping that share its labels (without
/// the `pid` label, the same program in the same cgroup is one series however often it restarts).
private struct AppSeries {
    var labels: LabelSet
    /// What `--region-types-for` patterns are matched against.
    var name: String
    var pids: [Int32] = []
    var totals = MemoryCounters()
    var processes: [(ProcessIdentity, ProcessCounts)] = []
}

extension Collector {
    func writeApps(_ writer: inout ExpositionWriter, skipped: inout SkipCounts, ledger: inout CounterLedger) throws(CollectionError) {
        let snapshotter = Snapshotter(proc: ProcFS(root: options.procRoot), cgroupRoot: options.cgroupRoot)
        let machine: MachineSnapshot
        do {
            machine = try snapshotter.machine(options: SnapshotOptions(detail: .rollup, cgroup: true), workers: options.workers)
        } catch {
            throw CollectionError("cannot list the processes in \(options.procRoot): \(error)")
        }
        for error in machine.skipped { skipped.add(error) }
        let processes = machine.processes  // ascending by PID
        func processIndex(_ pid: Int32) -> Int {
            var low = 0, high = processes.count
            while low < high {
                let mid = (low + high) / 2
                if processes[mid].pid < pid { low = mid + 1 } else { high = mid }
            }
            return low
        }
        let ios = Self.readIO(processes.map { ($0.pid, $0.stat.startTicks) }, proc: snapshotter.proc, workers: options.workers) + [nil]  // [count]: not found

        var identities = Identities()
        var series: [AppSeries] = []
        var indexByLabels: [[UInt8]: Int] = [:]
        for app in machine.apps(grouping: options.grouping) {
            let rootPID = app.rootPID ?? app.pids.first ?? 0
            let rootIndex = processIndex(rootPID)
            let root = rootIndex < processes.count && processes[rootIndex].pid == rootPID ? processes[rootIndex] : nil
            var labels = LabelSet()
            if options.grouping == .cgroup {
                labels.add("app", bytes: app.name.utf8)  // named from its cgroup path, as `top` names it
            } else {
                labels.add("app", bytes: root?.stat.name.bytes ?? Array(app.name.utf8))
            }
            if options.pidLabel { labels.add("pid", Int64(rootPID)) }
            if let path = options.grouping == .cgroup ? app.cgroup?.path ?? root?.cgroup : root?.cgroup {
                labels.add("cgroup", bytes: path.utf8)
                identities.addLabels(of: path, to: &labels)
            }
            let i: Int
            if let known = indexByLabels[labels.bytes] {
                i = known
            } else {
                i = series.count
                indexByLabels[labels.bytes] = i
                series.append(AppSeries(labels: labels, name: options.grouping == .cgroup ? app.key : (root?.name ?? app.name)))
            }
            series[i].totals += app.totals
            series[i].pids += app.pids
            for pid in app.pids {
                let index = processIndex(pid)
                guard index < processes.count, processes[index].pid == pid else { continue }
                let stat = processes[index].stat
                // io nil: it needs ptrace access, or the process exited since the snapshot (its
                // memory is in this scrape, its I/O is not): the app's I/O is what can be read.
                let counts = ProcessCounts(
                    userTicks: stat.userTicks, systemTicks: stat.systemTicks, minorFaults: stat.minorFaults, majorFaults: stat.majorFaults, io: ios[index])
                series[i].processes.append((ProcessIdentity(pid: pid, startTicks: stat.startTicks), counts))
            }
        }
        // Sorted by labels: the order of the series does not depend on footprints changing.
        series.sort { $0.labels.bytes.lexicographicallyPrecedes($1.labels.bytes) }
        let counters = ledger.update(series.map { ($0.labels.bytes, $0.processes) }, now: monotonicSeconds())

        typealias Quantity = (name: String, help: String, value: @Sendable (MemoryCounters) -> UInt64)
        let quantities: [Quantity] = [
            ("mempressure_app_footprint_bytes", "What the app is charged, as jetsam charges it: dirty memory it alone holds plus its swapped pages (MemoryCounters.footprint), in bytes.", { $0.footprint }),
            ("mempressure_app_dirty_bytes", "Dirty memory (Private_Dirty + Shared_Dirty), in bytes.", { $0.dirty }),
            ("mempressure_app_clean_bytes", "Clean memory the kernel can drop and read back from its file (Private_Clean + Shared_Clean), in bytes.", { $0.clean }),
            ("mempressure_app_purgeable_bytes", "Purgeable memory (LazyFree: freed with MADV_FREE, reclaimable without writing), in bytes.", { $0.purgeable }),
            ("mempressure_app_swapped_bytes", "Memory swapped out (Swap), in bytes.", { $0.swapped }),
            ("mempressure_app_resident_bytes", "Resident memory (Rss), in bytes.", { $0.resident }),
            ("mempressure_app_pss_bytes", "Proportional set size (Pss: shared pages divided among their sharers), in bytes.", { $0.pss }),
            ("mempressure_app_uss_bytes", "Unique set size (Private_Clean + Private_Dirty + Private_Hugetlb), in bytes.", { $0.uss }),
        ]
        for q in quantities {
            writer.family(q.name, .gauge, help: q.help)
            for s in series { writer.sample(s.labels, q.value(s.totals)) }
        }
        writer.family("mempressure_app_processes", .gauge, help: "Processes in the app.")
        for s in series { writer.sample(s.labels, UInt64(s.pids.count)) }

        let ticks = Double(max(1, sysconf(Int32(_SC_CLK_TCK))))
        writer.family("mempressure_app_cpu_seconds", .counter, help: "CPU time of the app's processes (utime and stime of /proc/PID/stat), those that exited included as last seen, in seconds.")
        for (i, c) in counters.enumerated() {
            writer.sample(series[i].labels, "mode", "user", double: Double(c.userTicks) / ticks)
            writer.sample(series[i].labels, "mode", "system", double: Double(c.systemTicks) / ticks)
        }
        writer.family("mempressure_app_page_faults", .counter, help: "Page faults of the app's processes (minflt and majflt of /proc/PID/stat), those that exited included as last seen.")
        for (i, c) in counters.enumerated() {
            writer.sample(series[i].labels, "kind", "minor", c.minorFaults)
            writer.sample(series[i].labels, "kind", "major", c.majorFaults)
        }
        writer.family("mempressure_app_io_bytes", .counter, help: "Bytes the app's processes made the storage layer read and write (read_bytes and write_bytes of /proc/PID/io), those that exited included as last seen; only apps with a process whose io could be read.")
        for (i, c) in counters.enumerated() where c.ioReadable {
            writer.sample(series[i].labels, "direction", "read", c.readBytes)
            writer.sample(series[i].labels, "direction", "write", c.writeBytes)
        }

        if !options.regionTypePatterns.isEmpty {
            let opted = series.filter { s in options.regionTypePatterns.contains { fnmatch($0, s.name, 0) == 0 } }
            writeRegionTypes(&writer, opted.map { ($0.labels, $0.pids) }, snapshotter: snapshotter, skipped: &skipped)
        }
        writeCgroups(&writer, machine: machine, identities: &identities)
    }

    /// `/proc/PID/io` of each of `processes`, in their order (nil where it cannot be read), read by
    /// `workers` threads as the snapshot's files are. A process whose start time is not the
    /// snapshot's (it exited and its PID was reused in between) gets nil: the directory handle ties
    /// `stat` and `io` to one process, and `stat` says whether it is the one the snapshot saw.
    package static func readIO(_ processes: [(pid: Int32, startTicks: UInt64)], proc: ProcFS, workers: Int) -> [ProcessIO?] {
        let pids = processes
        let next = Atomic<Int>(0)
        let results = Mutex<[(Int, ProcessIO)]>([])
        let body: @Sendable (Int) -> Void = { _ in
            var buffer = ReadBuffer(capacity: 4096)
            var found: [(Int, ProcessIO)] = []
            while true {
                let i = next.wrappingAdd(1, ordering: .relaxed).oldValue
                guard i < pids.count else { break }
                let (pid, startTicks) = pids[i]
                do throws(ProcError) {
                    let dir = try proc.open(pid)
                    try dir.read("stat", into: &buffer)
                    let stat = try buffer.withBytes { (b) throws(ProcError) in try ProcessStat.parse(b, pid: pid) }
                    guard stat.startTicks == startTicks else { continue }  // another process now has this PID
                    try dir.read("io", into: &buffer)
                    found.append((i, buffer.withBytes { ProcessIO.parse($0) }))
                } catch {
                    continue  // permission denied (io needs ptrace access), exited, or unparsable: no I/O figures
                }
            }
            results.withLock { $0.append(contentsOf: found) }
        }
        let workers = max(1, min(workers, pids.count))
        if workers == 1 {
            body(0)
        } else {
            DispatchQueue.concurrentPerform(iterations: workers, execute: body)
        }
        var ios = [ProcessIO?](repeating: nil, count: pids.count)
        for (i, io) in results.withLock({ $0 }) { ios[i] = io }
        return ios
    }

    /// Per region type of the apps opted in: full smaps of their processes, summed by type.
    private func writeRegionTypes(_ writer: inout ExpositionWriter, _ apps: [(labels: LabelSet, pids: [Int32])], snapshotter: Snapshotter, skipped: inout SkipCounts) {
        writer.family("mempressure_app_region_type_bytes", .gauge, help: "Memory of an app opted in with --region-types-for, by region type (the VM Tracker types) and quantity, in bytes.")
        var buffer = ReadBuffer()
        let options = SnapshotOptions(detail: .regions)
        for app in apps {
            var byType: [String: MemoryCounters] = [:]
            for pid in app.pids {
                do throws(ProcError) {
                    let p = try snapshotter.process(pid, options: options, buffer: &buffer)
                    for r in p.regions { byType[r.type.name, default: MemoryCounters()] += r.counters }
                } catch {
                    skipped.add(error)
                }
            }
            for type in byType.keys.sorted() {
                guard let c = byType[type] else { continue }
                var labels = app.labels
                labels.add("region_type", type)
                writer.sample(labels, "quantity", "footprint", c.footprint)
                writer.sample(labels, "quantity", "dirty", c.dirty)
                writer.sample(labels, "quantity", "clean", c.clean)
                writer.sample(labels, "quantity", "purgeable", c.purgeable)
                writer.sample(labels, "quantity", "swapped", c.swapped)
                writer.sample(labels, "quantity", "resident", c.resident)
            }
        }
    }
}
