import CoreMetrics
import Dispatch
import Glibc
import LinuxSystem
import Pressure
import PressureValues
import Prometheus
import Synchronization
import VMTracker

/// What a scrape reads and how it groups processes.
public struct CollectorOptions: Sendable {
    /// How processes form apps (as `mempressure top --group-by`).
    public var grouping: AppGrouping = .app
    /// Shell patterns (fnmatch(3)) of app names whose memory is also published per region type
    /// (reading their full smaps: one series per app, region type and quantity, never per region).
    public var regionTypePatterns: [String] = []
    public var procRoot = "/proc"
    public var cgroupRoot = "/sys/fs/cgroup"
    /// Threads reading /proc (`Snapshotter.machine`).
    public var workers = Snapshotter.defaultWorkers
    /// The thresholds the pressure level of each source is judged by.
    public var pressure = PressureConfiguration()

    public init() {}
}

/// Why a scrape could not be answered (the server answers 500 with this text).
public struct CollectionError: Error, Sendable, CustomStringConvertible {
    public var description: String
    public init(_ description: String) { self.description = description }
}

/// Reads the machine at scrape time and writes the exposition: no background sampler, nothing
/// kept between scrapes but the size of the last response (to reserve the buffer once).
///
/// One scrape is: one `Snapshotter.machine` snapshot (smaps_rollup, stat and cgroup of every
/// process, read by its worker threads), grouped into apps; `/proc/PID/io` of each process;
/// full smaps of the processes of the apps opted in for region types; the memory cgroups of the
/// processes seen; /proc/meminfo and /proc/pressure/memory.
public final class Collector: Sendable {
    public let options: CollectorOptions
    private let registry: PrometheusCollectorRegistry?
    private let lastSize = Atomic<Int>(64 * 1024)
    private let scrapes: CoreMetrics.Counter
    private let failures: CoreMetrics.Counter

    /// A collector reading with `options`; the families of `registry` (the one the process
    /// bootstrapped swift-metrics with) are written into every response after its own.
    public init(options: CollectorOptions, registry: PrometheusCollectorRegistry? = nil) {
        self.options = options
        self.registry = registry
        scrapes = Counter(label: "mempressure_exporter_scrapes_total")
        failures = Counter(label: "mempressure_exporter_scrape_failures_total")
    }

    /// The whole exposition of one scrape in `format`.
    public func scrape(format: ExpositionFormat) throws(CollectionError) -> [UInt8] {
        let started = monotonicSeconds()
        scrapes.increment()
        var writer = ExpositionWriter(format: format, reservingCapacity: lastSize.load(ordering: .relaxed))
        do throws(CollectionError) {
            var skipped = SkipCounts()
            try writeMachine(&writer)
            try writeApps(&writer, skipped: &skipped)
            writer.family("mempressure_scrape_skipped_processes", .gauge, help: "Processes left out of this scrape: exited while being read, or unreadable (permission denied, malformed).")
            writer.sample(nil, "reason", "exited", UInt64(skipped.exited))
            writer.sample(nil, "reason", "unreadable", UInt64(skipped.unreadable))
            writer.family("mempressure_scrape_duration_seconds", .gauge, help: "How long this scrape took to read the machine, in seconds.")
            writer.sample(nil, double: monotonicSeconds() - started)
        } catch {
            failures.increment()
            throw error
        }
        if let registry { RegistryText.append(registry, to: &writer) }
        writer.finish()
        lastSize.store(writer.bytes.count + writer.bytes.count / 8, ordering: .relaxed)
        return writer.bytes
    }

    // MARK: Machine

    private func writeMachine(_ writer: inout ExpositionWriter) throws(CollectionError) {
        var buffer = ReadBuffer(capacity: 8192)
        // The device's memory reading, for the machine: MemAvailable against MemTotal.
        let status: MemoryStatus
        do {
            status = try MemoryStatusReader(cgroup: nil, procRoot: options.procRoot).read(&buffer).status
        } catch {
            throw CollectionError("cannot read the machine's memory: \(error)")
        }
        writer.family("mempressure_memory_total_bytes", .gauge, help: "The machine's memory (MemTotal of /proc/meminfo), in bytes.")
        writer.sample(nil, status.budgetBytes)
        writer.family("mempressure_memory_available_bytes", .gauge, help: "Memory available without swapping, as the kernel estimates it (MemAvailable of /proc/meminfo), in bytes.")
        writer.sample(nil, status.availableBytes)

        // Each source's level and the merged one, by the one judgement (one reading each: no
        // hysteresis).
        let c = options.pressure
        var levels: [(source: StaticString, level: PressureLevel)] = []
        var stall: PressureStall?
        let psiFile = "\(options.procRoot)/pressure/memory"
        if ProcFS.isFile(psiFile) {
            do {
                stall = try PressureStall.read(psiFile, buffer: &buffer)
            } catch .malformed {
                stall = nil  // no PSI figures in this scrape, rather than none at all
            } catch {
                throw CollectionError("cannot read \(psiFile): \(error)")
            }
        }
        if let stall {
            writer.family("mempressure_memory_pressure_stall_seconds", .counter, help: "Time tasks stalled on memory (PSI, /proc/pressure/memory total): some = at least one task, full = all non-idle tasks, in seconds.")
            writer.sample(nil, "kind", "some", double: Double(stall.some.totalMicroseconds) / 1e6)
            if let full = stall.full { writer.sample(nil, "kind", "full", double: Double(full.totalMicroseconds) / 1e6) }
            levels.append(("psi", c.judge(MemoryEvidence(stall: stall)).level))
        }
        levels.append(("memavailable", c.judge(MemoryEvidence(status: status)).level))
        levels.append(("merged", c.judge(MemoryEvidence(status: status, stall: stall)).level))

        writer.family("mempressure_pressure_level", .gauge, help: "The memory pressure level each source reads now, as a state set: 1 for the level the source is at, 0 for the others; source merged is the highest.")
        for (source, level) in levels {
            for candidate in PressureLevel.allCases {
                var labels = LabelSet()
                labels.add("source", source.description)
                writer.sample(labels, "level", candidate.staticName, candidate == level ? 1 : 0)
            }
        }
    }

    // MARK: Apps

    private struct SkipCounts {
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

    /// The sums over an app's processes that the rollup does not hold.
    private struct Activity {
        var userTicks: UInt64 = 0
        var systemTicks: UInt64 = 0
        var minorFaults: UInt64 = 0
        var majorFaults: UInt64 = 0
        var readBytes: UInt64 = 0
        var writeBytes: UInt64 = 0
        var ioReadable = false
    }

    private func writeApps(_ writer: inout ExpositionWriter, skipped: inout SkipCounts) throws(CollectionError) {
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
        func process(_ pid: Int32) -> ProcessSnapshot? {
            let i = processIndex(pid)
            return i < processes.count && processes[i].pid == pid ? processes[i] : nil
        }
        let ios = Self.readIO(processes.map { ($0.pid, $0.stat.startTicks) }, proc: snapshotter.proc, workers: options.workers) + [nil]  // [count]: not found
        // Sorted by key: the order of the series does not depend on footprints changing.
        let apps = machine.apps(grouping: options.grouping).sorted { $0.key < $1.key }

        var identities = Identities()
        var labels: [LabelSet] = []
        var activity: [Activity] = []
        labels.reserveCapacity(apps.count)
        activity.reserveCapacity(apps.count)
        var regionApps: [(labels: LabelSet, pids: [Int32])] = []
        for app in apps {
            let rootPID = app.rootPID ?? app.pids.first ?? 0
            let root = process(rootPID)
            var set = LabelSet()
            if options.grouping == .cgroup {
                set.add("app", bytes: app.name.utf8)  // named from its cgroup path, as `top` names it
            } else {
                set.add("app", bytes: root?.stat.name.bytes ?? Array(app.name.utf8))
            }
            set.add("pid", Int64(rootPID))
            if let path = options.grouping == .cgroup ? app.cgroup?.path ?? root?.cgroup : root?.cgroup {
                set.add("cgroup", bytes: path.utf8)
                let identity = identities.identity(path)
                if let unit = identity.unit { set.add("unit", bytes: unit.utf8) }
                if let pod = identity.pod { set.add("pod", bytes: pod.utf8) }
                if let container = identity.container { set.add("container", bytes: container.utf8) }
            }
            labels.append(set)
            var a = Activity()
            for pid in app.pids {
                guard let p = process(pid) else { continue }
                a.userTicks &+= p.stat.userTicks
                a.systemTicks &+= p.stat.systemTicks
                a.minorFaults &+= p.stat.minorFaults
                a.majorFaults &+= p.stat.majorFaults
                // nil: io needs ptrace access, or the process exited since the snapshot (its
                // memory is in this scrape, its I/O is not): the app's I/O is what can be read.
                if let io = ios[processIndex(pid)] {
                    a.readBytes &+= io.readBytes
                    a.writeBytes &+= io.writeBytes
                    a.ioReadable = true
                }
            }
            activity.append(a)
            if !options.regionTypePatterns.isEmpty {
                let name = options.grouping == .cgroup ? app.key : (root?.name ?? app.name)
                if options.regionTypePatterns.contains(where: { fnmatch($0, name, 0) == 0 }) {
                    regionApps.append((set, app.pids))
                }
            }
        }

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
            for (i, app) in apps.enumerated() { writer.sample(labels[i], q.value(app.totals)) }
        }
        writer.family("mempressure_app_processes", .gauge, help: "Processes in the app.")
        for (i, app) in apps.enumerated() { writer.sample(labels[i], UInt64(app.pids.count)) }

        let ticks = Double(max(1, sysconf(Int32(_SC_CLK_TCK))))
        writer.family("mempressure_app_cpu_seconds", .counter, help: "CPU time of the app's processes now (utime and stime of /proc/PID/stat; it drops when a process exits), in seconds.")
        for (i, a) in activity.enumerated() {
            writer.sample(labels[i], "mode", "user", double: Double(a.userTicks) / ticks)
            writer.sample(labels[i], "mode", "system", double: Double(a.systemTicks) / ticks)
        }
        writer.family("mempressure_app_page_faults", .counter, help: "Page faults of the app's processes now (minflt and majflt of /proc/PID/stat).")
        for (i, a) in activity.enumerated() {
            writer.sample(labels[i], "kind", "minor", a.minorFaults)
            writer.sample(labels[i], "kind", "major", a.majorFaults)
        }
        writer.family("mempressure_app_io_bytes", .counter, help: "Bytes the app's processes made the storage layer read and write (read_bytes and write_bytes of /proc/PID/io; only apps with a process whose io can be read).")
        for (i, a) in activity.enumerated() where a.ioReadable {
            writer.sample(labels[i], "direction", "read", a.readBytes)
            writer.sample(labels[i], "direction", "write", a.writeBytes)
        }

        if !options.regionTypePatterns.isEmpty {
            writeRegionTypes(&writer, regionApps, snapshotter: snapshotter, skipped: &skipped)
        }
        writeCgroups(&writer, machine: machine, identities: &identities)
    }

    /// What each cgroup path says (unit, pod, container), parsed once per path in a scrape.
    private struct Identities {
        private var byPath: [String: CgroupIdentity] = [:]

        mutating func identity(_ path: String) -> CgroupIdentity {
            if let known = byPath[path] { return known }
            let identity = CgroupIdentity(path: path)
            byPath[path] = identity
            return identity
        }
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

    // MARK: Cgroups

    /// The memory cgroups holding the processes seen: the kernel's own figures.
    private func writeCgroups(_ writer: inout ExpositionWriter, machine: MachineSnapshot, identities: inout Identities) {
        var paths = Set<String>()
        for p in machine.processes { if let c = p.cgroup { paths.insert(c) } }
        var buffer = ReadBuffer(capacity: 16384)
        var readings: [(labels: LabelSet, reading: CgroupMemory.Reading)] = []
        for path in paths.sorted() {
            // v1's memory hierarchy, or v2's unified one (nil for v2's root, which has no files).
            guard let memory = CgroupMemory.locate(path: path, cgroupRoot: options.cgroupRoot) else { continue }
            let reading: CgroupMemory.Reading
            do {
                reading = try memory.read(&buffer)
            } catch {
                continue  // removed since the snapshot: no figures for it in this scrape
            }
            var labels = LabelSet()
            labels.add("cgroup", bytes: path.utf8)
            let identity = identities.identity(path)
            if let unit = identity.unit { labels.add("unit", bytes: unit.utf8) }
            if let pod = identity.pod { labels.add("pod", bytes: pod.utf8) }
            if let container = identity.container { labels.add("container", bytes: container.utf8) }
            readings.append((labels, reading))
        }
        writer.family("mempressure_cgroup_memory_usage_bytes", .gauge, help: "What the memory cgroup is charged, page cache included (memory.current, or v1 memory.usage_in_bytes), in bytes.")
        for r in readings { writer.sample(r.labels, r.reading.usageBytes) }
        writer.family("mempressure_cgroup_memory_limit_bytes", .gauge, help: "The memory cgroup's limit (memory.max, or v1 memory.limit_in_bytes); absent when unlimited, in bytes.")
        for r in readings { if let limit = r.reading.limitBytes { writer.sample(r.labels, limit) } }
        writer.family("mempressure_cgroup_memory_working_set_bytes", .gauge, help: "The memory cgroup's working set (usage minus inactive file pages, as the kubelet counts it), in bytes.")
        for r in readings { writer.sample(r.labels, r.reading.workingSetBytes) }
        writer.family("mempressure_cgroup_oom_kills", .counter, help: "Processes the kernel's OOM killer killed in the memory cgroup (oom_kill of memory.events, or v1 memory.oom_control).")
        for r in readings { if let kills = r.reading.oomKills { writer.sample(r.labels, kills) } }
        writer.family("mempressure_cgroup_memory_stat_bytes", .gauge, help: "The memory cgroup's memory.stat by kind: anon (anonymous), file (page cache), shmem (shared memory and tmpfs), in bytes.")
        for r in readings {
            if let v = r.reading.anonBytes { writer.sample(r.labels, "kind", "anon", v) }
            if let v = r.reading.fileBytes { writer.sample(r.labels, "kind", "file", v) }
            if let v = r.reading.shmemBytes { writer.sample(r.labels, "kind", "shmem", v) }
        }
    }
}

extension PressureLevel {
    fileprivate var staticName: StaticString {
        switch self {
        case .normal: "normal"
        case .warning: "warning"
        case .critical: "critical"
        }
    }
}
