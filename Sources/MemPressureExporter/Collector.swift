import CoreMetrics
import Dispatch
import Glibc
import MemPressureSystem
import MemPressureMonitor
import MemPressureValues
import Prometheus
import Synchronization
import MemPressureVMTracker

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
    /// Whether the per-app series carry a `pid` label (the app's root process). Off by default:
    /// a label that changes with every restart makes new series each time (cardinality without
    /// bound); apps with the same labels then share one series, their figures summed.
    public var pidLabel = false
    /// How long an app with no process left keeps its counters' totals, in seconds, so that one
    /// that comes back goes on counting where it stopped (`CounterLedger`).
    public var counterRetention: Double = 3600
    /// What `mempressure_build_info` says.
    public var buildInfo = BuildInfo(version: "unknown")

    public init() {}
}

/// Why a scrape could not be answered (the server answers 500 with this text).
public struct CollectionError: Error, Sendable, CustomStringConvertible {
    public var description: String
    public init(_ description: String) { self.description = description }
}

/// Reads the machine at scrape time and writes the exposition: no background sampler; kept
/// between scrapes are only the size of the last response (to reserve the buffer once) and what
/// keeps the apps' counters from going down (`CounterLedger`: the last totals of their processes).
///
/// One scrape is: one `Snapshotter.machine` snapshot (smaps_rollup, stat and cgroup of every
/// process, read by its worker threads), grouped into apps; `/proc/PID/io` of each process;
/// full smaps of the processes of the apps opted in for region types; the memory cgroups of the
/// processes seen; /proc/meminfo and /proc/pressure/memory.
public final class Collector: Sendable {
    public let options: CollectorOptions
    private let registry: PrometheusCollectorRegistry?
    private let lastSize = Atomic<Int>(64 * 1024)
    /// Held for a whole scrape: scrapes are taken one at a time, so that the totals a scrape
    /// carries are never older than those of the scrape before it.
    private let ledger: Mutex<CounterLedger>
    private let scrapes: CoreMetrics.Counter
    private let failures: CoreMetrics.Counter

    /// A collector reading with `options`; the families of `registry` (the one the process
    /// bootstrapped swift-metrics with) are written into every response after its own.
    public init(options: CollectorOptions, registry: PrometheusCollectorRegistry? = nil) {
        self.options = options
        self.registry = registry
        ledger = Mutex(CounterLedger(retention: options.counterRetention))
        scrapes = Counter(label: "mempressure_exporter_scrapes_total")
        failures = Counter(label: "mempressure_exporter_scrape_failures_total")
    }

    /// The whole exposition of one scrape in `format`.
    public func scrape(format: ExpositionFormat) throws(CollectionError) -> [UInt8] {
        try ledger.withLock { (ledger) throws(CollectionError) -> [UInt8] in try scrape(format: format, ledger: &ledger) }
    }

    private func scrape(format: ExpositionFormat, ledger: inout CounterLedger) throws(CollectionError) -> [UInt8] {
        let started = monotonicSeconds()
        scrapes.increment()
        var writer = ExpositionWriter(format: format, reservingCapacity: lastSize.load(ordering: .relaxed))
        do throws(CollectionError) {
            var skipped = SkipCounts()
            try writeMachine(&writer)
            try writeApps(&writer, skipped: &skipped, ledger: &ledger)
            writer.family("mempressure_scrape_skipped_processes", .gauge, help: "Processes left out of this scrape: exited while being read, or unreadable (permission denied, malformed).")
            writer.sample(nil, "reason", "exited", UInt64(skipped.exited))
            writer.sample(nil, "reason", "unreadable", UInt64(skipped.unreadable))
            writer.family("mempressure_scrape_duration_seconds", .gauge, help: "How long this scrape took to read the machine, in seconds.")
            writer.sample(nil, double: monotonicSeconds() - started)
            SelfMetrics.write(&writer, buildInfo: options.buildInfo, procRoot: options.procRoot)
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

    // MARK: Cgroups

    /// The memory cgroups holding the processes seen: the kernel's own figures.
    func writeCgroups(_ writer: inout ExpositionWriter, machine: MachineSnapshot, identities: inout Identities) {
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
            identities.addLabels(of: path, to: &labels)
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
