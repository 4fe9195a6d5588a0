import MemPressureSystem

/// The kernel's running totals of one process that an app's counters add up: CPU ticks and page
/// faults (/proc/PID/stat), bytes through the storage layer (/proc/PID/io, when readable).
struct ProcessCounts: Sendable, Hashable {
    /// CPU time in user and system mode (utime, stime), in clock ticks.
    var userTicks: UInt64 = 0, systemTicks: UInt64 = 0
    /// Page faults served without and with reading storage (minflt, majflt).
    var minorFaults: UInt64 = 0, majorFaults: UInt64 = 0
    /// read_bytes and write_bytes of /proc/PID/io, and whether they were read (io needs ptrace
    /// access to the process).
    var readBytes: UInt64 = 0, writeBytes: UInt64 = 0, ioReadable = false

    init() {}

    init(userTicks: UInt64, systemTicks: UInt64, minorFaults: UInt64, majorFaults: UInt64, io: ProcessIO?) {
        self.userTicks = userTicks
        self.systemTicks = systemTicks
        self.minorFaults = minorFaults
        self.majorFaults = majorFaults
        if let io {
            readBytes = io.readBytes
            writeBytes = io.writeBytes
            ioReadable = true
        }
    }

    /// Adds `other`'s figures (wrapping, as the kernel's own counters do after 2^64).
    mutating func add(_ other: ProcessCounts) {
        userTicks &+= other.userTicks
        systemTicks &+= other.systemTicks
        minorFaults &+= other.minorFaults
        majorFaults &+= other.majorFaults
        readBytes &+= other.readBytes
        writeBytes &+= other.writeBytes
        ioReadable = ioReadable || other.ioReadable
    }

    /// These figures, never below `previous` (the same process at the scrape before): the kernel's
    /// totals only grow, but an io that could not be read this time must not count as zero.
    func atLeast(_ previous: ProcessCounts) -> ProcessCounts {
        var c = self
        c.userTicks = max(userTicks, previous.userTicks)
        c.systemTicks = max(systemTicks, previous.systemTicks)
        c.minorFaults = max(minorFaults, previous.minorFaults)
        c.majorFaults = max(majorFaults, previous.majorFaults)
        if previous.ioReadable {
            c.readBytes = ioReadable ? max(readBytes, previous.readBytes) : previous.readBytes
            c.writeBytes = ioReadable ? max(writeBytes, previous.writeBytes) : previous.writeBytes
            c.ioReadable = true
        }
        return c
    }
}

/// One process across scrapes: its PID and its start time (a PID reused by another process is
/// another process).
struct ProcessIdentity: Sendable, Hashable {
    var pid: Int32
    var startTicks: UInt64
}

/// What keeps an app's `_total` counters from going down when its processes exit.
///
/// An app's counter is the sum over its processes of the kernel's totals, and a process that
/// exits takes its totals with it: summed afresh at each scrape, the counter would drop, which
/// Prometheus reads as a reset (a false spike in `rate()`). As process-exporter does for its
/// groups, each series (an app's label set) keeps the last totals seen of each of its processes;
/// when one is no longer in the series (it exited, or now belongs to another app), those last
/// totals are carried into the series for good. A series' counter is what it carries plus its
/// live processes' totals, so it never decreases. What a process did after the last scrape that
/// saw it, or a process that came and went between two scrapes, is not counted: /proc holds
/// nothing of it (a cgroup's own accounting would; process-exporter has the same blind spot).
///
/// A process seen for the first time counts with all it did since it started. A series with no
/// process left is not exposed, but its carried totals are kept for `retention` seconds (and at
/// most `maximumAbsent` such series, the longest absent forgotten first), so that an app that
/// comes back within them goes on counting where it stopped.
struct CounterLedger: Sendable {
    private struct Series: Sendable {
        var carried = ProcessCounts()
        var live: [ProcessIdentity: ProcessCounts] = [:]
        /// When a scrape last held a process of it (monotonic seconds).
        var lastSeen: Double
    }

    private var series: [[UInt8]: Series] = [:]
    var retention: Double
    var maximumAbsent: Int

    init(retention: Double = 3600, maximumAbsent: Int = 10_000) {
        self.retention = retention
        self.maximumAbsent = maximumAbsent
    }

    /// The series remembered (present or absent): what the ledger holds in memory.
    var count: Int { series.count }

    /// The totals of one scrape: for each series (its key, the rendered labels) the processes in
    /// it now, with their figures; answers each series' counters, in the same order. Series of
    /// earlier scrapes that are not in this one carry all their processes' last totals.
    mutating func update(_ scrape: [(key: [UInt8], processes: [(ProcessIdentity, ProcessCounts)])], now: Double) -> [ProcessCounts] {
        var present = Set<[UInt8]>()
        present.reserveCapacity(scrape.count)
        var totals: [ProcessCounts] = []
        totals.reserveCapacity(scrape.count)
        for (key, processes) in scrape {
            present.insert(key)
            var s = series[key] ?? Series(lastSeen: now)
            var live: [ProcessIdentity: ProcessCounts] = [:]
            live.reserveCapacity(processes.count)
            for (id, counts) in processes {
                let value = s.live[id].map { counts.atLeast($0) } ?? counts
                // The same process twice in one series (it cannot be, but /proc is not ours):
                // its larger figures, once.
                live[id] = live[id].map { value.atLeast($0) } ?? value
            }
            for (id, last) in s.live where live[id] == nil { s.carried.add(last) }
            s.live = live
            s.lastSeen = now
            var total = s.carried
            for counts in live.values { total.add(counts) }
            totals.append(total)
            series[key] = s
        }
        var absent: [(key: [UInt8], lastSeen: Double)] = []
        for (key, var s) in series where !present.contains(key) {
            if !s.live.isEmpty {
                for last in s.live.values { s.carried.add(last) }
                s.live = [:]
                series[key] = s
            }
            if now - s.lastSeen > retention {
                series[key] = nil
            } else {
                absent.append((key, s.lastSeen))
            }
        }
        if absent.count > maximumAbsent {
            // The longest absent go first; among equals, the smallest key (never the Hasher's order).
            absent.sort { $0.lastSeen != $1.lastSeen ? $0.lastSeen < $1.lastSeen : $0.key.lexicographicallyPrecedes($1.key) }
            for a in absent.prefix(absent.count - maximumAbsent) { series[a.key] = nil }
        }
        return totals
    }
}
