import MemPressureValues

/// How the monitor's thread came to read what it reports: woken on a source's descriptor by a
/// kernel event (a cgroup threshold or OOM eventfd, a pressure_level notification, a PSI
/// trigger; or a cgroup's thresholds armed again after one), or because its poll interval ran
/// out (the only way to read a source the kernel offers no event for, such as MemAvailable or a
/// cgroup v2's usage).
public enum PressureWakeup: String, Sendable, Hashable, Codable, CustomStringConvertible {
    case event
    case poll

    public var description: String { rawValue }
}

/// A change of the merged level, with the source that caused it.
public struct PressureEvent: Sendable, Hashable, Codable {
    public var level: PressureLevel
    /// The source whose reading set the level ("psi", "cgroup-v1 pressure_level", ...).
    public var source: String
    /// What the source saw ("usage 61.2 MiB of 64.0 MiB (95.6%)").
    public var detail: String
    /// Monotonic seconds: when the monitor's thread woke to read it (poll(2) returned), so that
    /// the time from an allocation to what answers it can be measured from the kernel's event.
    public var time: Double
    /// What woke the thread: a kernel event or the poll interval. Nil in events recorded before
    /// it was said.
    public var wakeup: PressureWakeup?

    public init(level: PressureLevel, source: String, detail: String, time: Double, wakeup: PressureWakeup? = nil) {
        self.level = level
        self.source = source
        self.detail = detail
        self.time = time
        self.wakeup = wakeup
    }
}

/// One wake of the monitor's thread, whether the level changed or not: what a subscriber that
/// must look at memory whenever the kernel says something (jetsam) reacts to.
public struct PressureWake: Sendable, Hashable {
    /// Monotonic seconds: when poll(2) returned.
    public var time: Double
    public var wakeup: PressureWakeup
    /// What the kernel signalled, one entry per event ("cgroup usage against its limit: usage
    /// threshold", "...: a task at the limit (memory.oom_control)"); empty for a poll (and for a
    /// wake on a set of thresholds armed again).
    public var events: [String]
    /// The merged level after the sources read.
    public var level: PressureLevel

    public init(time: Double, wakeup: PressureWakeup, events: [String], level: PressureLevel) {
        self.time = time
        self.wakeup = wakeup
        self.events = events
        self.level = level
    }
}

/// Where pressure can be read, whether this machine offers it, how the monitor hears of it and
/// why not.
public struct PressureSourceStatus: Sendable, Hashable, Codable, CustomStringConvertible {
    public var name: String
    public var available: Bool
    public var detail: String
    /// How the monitor hears of it: woken by a kernel event, or reading it every poll interval.
    /// Nil for a source not in use.
    public var wakeup: PressureWakeup? = nil

    public init(name: String, available: Bool, detail: String, wakeup: PressureWakeup? = nil) {
        self.name = name
        self.available = available
        self.detail = detail
        self.wakeup = wakeup
    }

    public var description: String {
        let how = wakeup.map { $0 == .event ? ", woken by the kernel" : ", polled" } ?? ""
        return "\(name): \(available ? "in use" : "not available")\(how) (\(detail))"
    }
}

/// What the monitor watches and its thresholds.
public struct PressureConfiguration: Sendable {
    /// A memory cgroup to watch (a directory: v1 `.../memory/NAME` or v2 `.../NAME`); nil for
    /// the whole machine.
    public var cgroup: String?
    /// PSI triggers: stall microseconds within the window (1 s) that raise warning ("some": some
    /// task stalled) and critical ("full": all tasks stalled).
    public var psiWarningStallMicroseconds = 70_000
    public var psiCriticalStallMicroseconds = 100_000
    public var psiWindowMicroseconds = 1_000_000
    /// The working set's share of a cgroup's limit that raises warning and critical; the level
    /// drops again only below the threshold minus `hysteresis`.
    public var usageWarningFraction = 0.80
    public var usageCriticalFraction = 0.95
    /// MemAvailable below these shares of MemTotal raises warning and critical.
    public var availableWarningFraction = 0.15
    public var availableCriticalFraction = 0.05
    public var hysteresis = 0.05
    /// How long an event (a PSI trigger, a pressure_level notification) keeps its level.
    public var eventHoldSeconds = 2.0
    /// How often the sources the kernel offers no event for are read (MemAvailable, a cgroup
    /// v2's usage), and how often a cgroup v1's working set is read again besides its events.
    public var pollInterval = 0.25
    public var procRoot = "/proc"
    public var usePSI = true
    /// Whether a cgroup v1's working set is heard of through the kernel's events (usage
    /// thresholds, reclaim, a task at the limit). Off, it is read at every poll interval only, as
    /// on cgroup v2: the polled path, for comparing the two.
    public var useCgroupEvents = true

    public init(cgroup: String? = nil) {
        self.cgroup = cgroup
    }
}
