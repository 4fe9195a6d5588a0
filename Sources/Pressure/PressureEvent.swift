import PressureValues

/// A change of the merged level, with the source that caused it.
public struct PressureEvent: Sendable, Hashable, Codable {
    public var level: PressureLevel
    /// The source whose reading set the level ("psi", "cgroup-v1 pressure_level", ...).
    public var source: String
    /// What the source saw ("usage 61.2 MiB of 64.0 MiB (95.6%)").
    public var detail: String
    /// Monotonic seconds.
    public var time: Double

    public init(level: PressureLevel, source: String, detail: String, time: Double) {
        self.level = level
        self.source = source
        self.detail = detail
        self.time = time
    }
}

/// Where pressure can be read, whether this machine offers it, and why not.
public struct PressureSourceStatus: Sendable, Hashable, Codable, CustomStringConvertible {
    public var name: String
    public var available: Bool
    public var detail: String
    public var description: String { "\(name): \(available ? "in use" : "not available") (\(detail))" }
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
    /// How often usage and MemAvailable are read.
    public var pollInterval = 0.25
    public var procRoot = "/proc"
    public var usePSI = true

    public init(cgroup: String? = nil) {
        self.cgroup = cgroup
    }
}
