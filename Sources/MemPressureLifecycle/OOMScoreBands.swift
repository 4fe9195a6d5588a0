import MemPressureLifecycleProtocol
import MemPressureSystem

/// The `oom_score_adj` the supervisor gives every process of an app from its state, so that any
/// killer that reads it — the kernel's OOM killer (the device cgroup's at its limit, the
/// machine's otherwise), Android's lmkd, earlyoom, nohang — follows the same bands as jetsam:
/// the defence in depth when jetsam falls behind, and the knowledge a fair rival gets.
///
/// The table, in one place, like Android's ProcessList (foreground 0, visible 100, perceptible
/// 200, service 500, cached 900–999): the foreground app lowest, then the visible one, then the
/// iOS kill order read backwards — background-running low-memory, suspended low-memory,
/// background-running high-memory, suspended high-memory — each band 200 apart. The kernel adds
/// the value in thousandths of the memory it chooses within to a process's resident and swapped
/// pages, so bands 200 apart keep the order unless an app outweighs another of the next band by
/// a fifth of the budget. "High memory" is the same line as jetsam's (`highMemoryBytes`, or a
/// share of the budget, a quarter by default as jetsam's killer has it; an attached jetsam sets
/// its own).
///
/// An app's processes are written at each change of state and whenever a footprint reading moves
/// it across the high-memory line; a process it forks later inherits its parent's value.
public struct OOMScoreBands: Sendable, Hashable {
    public var active: Int32 = 0
    public var inactive: Int32 = 100
    public var backgroundRunningLowMemory: Int32 = 300
    public var suspendedLowMemory: Int32 = 500
    public var backgroundRunningHighMemory: Int32 = 700
    public var suspendedHighMemory: Int32 = 900
    /// The high-memory line in bytes; nil: `highMemoryShare` of the budget.
    public var highMemoryBytes: UInt64?
    /// The high-memory line as a share of the device's budget (its cgroup limit, or the
    /// machine's memory without one), when `highMemoryBytes` is nil.
    public var highMemoryShare: Double = 0.25

    public init() {}

    /// The line in bytes for a budget.
    public func highMemoryLine(budgetBytes: UInt64) -> UInt64 {
        if let highMemoryBytes { return highMemoryBytes }
        let share = min(1, max(0, highMemoryShare))
        let product = Double(budgetBytes) * share
        return product >= 0x1p64 ? budgetBytes : UInt64(product)
    }

    /// The value for an app in `state` with `footprintBytes` (nil: not read yet, counted as low
    /// memory); nil for an app that is not running.
    public func score(for state: LifecycleState, footprintBytes: UInt64?, highMemoryLine: UInt64) -> Int32? {
        let high = (footprintBytes ?? 0) >= highMemoryLine && highMemoryLine > 0
        switch state {
        case .notRunning: return nil
        case .active: return active
        case .inactive: return inactive
        case .backgroundRunning: return high ? backgroundRunningHighMemory : backgroundRunningLowMemory
        case .suspended: return high ? suspendedHighMemory : suspendedLowMemory
        }
    }

    /// Checks that every value is one the kernel accepts and that the bands keep the order.
    public func validate() throws(ConfigurationError) {
        let values = [active, inactive, backgroundRunningLowMemory, suspendedLowMemory, backgroundRunningHighMemory, suspendedHighMemory]
        guard values.allSatisfy({ (-1000...1000).contains($0) }) else {
            throw .oomScoreBands("every value must be from -1000 to 1000")
        }
        guard values == values.sorted() else {
            throw .oomScoreBands("the bands must not decrease from active to suspendedHighMemory")
        }
        guard highMemoryShare > 0, highMemoryShare <= 1 else {
            throw .oomScoreBands("highMemoryShare must be above 0 and at most 1")
        }
    }
}

extension OOMScoreBands: Codable {
    private enum Key: String, CodingKey, CaseIterable {
        case active, inactive, backgroundRunningLowMemory, suspendedLowMemory, backgroundRunningHighMemory, suspendedHighMemory
        case highMemoryBytes, highMemoryShare
    }

    /// Every key optional (the default stands for a missing one); an unknown key is refused.
    public init(from decoder: any Decoder) throws {
        try UnknownKeys.refuse(in: decoder, known: Key.self, what: "the OOM score bands")
        let c = try decoder.container(keyedBy: Key.self)
        self.init()
        active = try c.decodeIfPresent(Int32.self, forKey: .active) ?? active
        inactive = try c.decodeIfPresent(Int32.self, forKey: .inactive) ?? inactive
        backgroundRunningLowMemory = try c.decodeIfPresent(Int32.self, forKey: .backgroundRunningLowMemory) ?? backgroundRunningLowMemory
        suspendedLowMemory = try c.decodeIfPresent(Int32.self, forKey: .suspendedLowMemory) ?? suspendedLowMemory
        backgroundRunningHighMemory = try c.decodeIfPresent(Int32.self, forKey: .backgroundRunningHighMemory) ?? backgroundRunningHighMemory
        suspendedHighMemory = try c.decodeIfPresent(Int32.self, forKey: .suspendedHighMemory) ?? suspendedHighMemory
        highMemoryBytes = try c.decodeIfPresent(UInt64.self, forKey: .highMemoryBytes)
        highMemoryShare = try c.decodeIfPresent(Double.self, forKey: .highMemoryShare) ?? highMemoryShare
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: Key.self)
        try c.encode(active, forKey: .active)
        try c.encode(inactive, forKey: .inactive)
        try c.encode(backgroundRunningLowMemory, forKey: .backgroundRunningLowMemory)
        try c.encode(suspendedLowMemory, forKey: .suspendedLowMemory)
        try c.encode(backgroundRunningHighMemory, forKey: .backgroundRunningHighMemory)
        try c.encode(suspendedHighMemory, forKey: .suspendedHighMemory)
        try c.encodeIfPresent(highMemoryBytes, forKey: .highMemoryBytes)
        try c.encode(highMemoryShare, forKey: .highMemoryShare)
    }
}
