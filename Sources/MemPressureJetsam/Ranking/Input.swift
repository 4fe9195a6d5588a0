import MemPressureLifecycleProtocol
import MemPressureValues

// What a jetsam decision is made from. Everything the ranker reads is in `RankingInput`, so an
// episode report that records it can be replayed later under any policy with the same result.

/// One supervised app at the moment of the decision.
///
/// The memory figures use the project's single definitions (see the design brief): footprint is
/// what jetsam charges an app, like Apple's `phys_footprint` — the dirty memory the app alone
/// holds (Private_Dirty) plus its swapped pages (Swap); purgeable (LazyFree) and clean
/// file-backed pages are not charged, because the kernel can take them back without a kill.
public struct JetsamAppSnapshot: Sendable, Hashable, Codable {
    /// The supervisor's name for the app; unique within one input.
    public var name: String
    /// The app's process. Must be > 0 for every app that is not `notRunning`.
    public var pid: Int32
    /// Its lifecycle state as the supervisor knows it.
    public var state: LifecycleState
    /// Dirty memory it alone holds plus its swap: what a kill gives back.
    public var footprintBytes: UInt64
    /// `MADV_FREE` pages (LazyFree): the kernel can take them without a kill, so a kill is never
    /// credited with them.
    public var purgeableBytes: UInt64
    /// Resident set (Rss), clean file-backed and shared pages included.
    public var residentBytes: UInt64
    /// The largest footprint seen since launch. A value below `footprintBytes` is repaired to it.
    public var lifetimeMaxFootprintBytes: UInt64
    /// Seconds in the current state.
    public var secondsInState: Double
    /// Seconds since the app was last active; nil if it was never active since launch; 0 when
    /// it is active now.
    public var secondsSinceActive: Double?
    /// Seconds since its process was started; nil when not known (episodes recorded before this
    /// field). Recency for an app never active: launching it was its last use (see
    /// `lastUseSeconds`).
    public var secondsSinceLaunch: Double?
    /// Times it became active since the supervisor started (the cost policy's frequency).
    public var activations: Int
    /// A protected app is never ranked and never killed.
    public var isProtected: Bool
    /// Measured launch-to-ready time from the supervisor's history; nil until seen.
    public var relaunchSeconds: Double?
    /// How old the memory reading is at decision time. A reading older than the policy's
    /// `maxSampleAgeSeconds` spares the app: never kill on stale data.
    public var sampleAgeSeconds: Double

    public init(
        name: String,
        pid: Int32,
        state: LifecycleState,
        footprintBytes: UInt64,
        purgeableBytes: UInt64 = 0,
        residentBytes: UInt64 = 0,
        lifetimeMaxFootprintBytes: UInt64 = 0,
        secondsInState: Double = 0,
        secondsSinceActive: Double? = nil,
        secondsSinceLaunch: Double? = nil,
        activations: Int = 0,
        isProtected: Bool = false,
        relaunchSeconds: Double? = nil,
        sampleAgeSeconds: Double = 0
    ) {
        self.name = name
        self.pid = pid
        self.state = state
        self.footprintBytes = footprintBytes
        self.purgeableBytes = purgeableBytes
        self.residentBytes = residentBytes
        self.lifetimeMaxFootprintBytes = lifetimeMaxFootprintBytes
        self.secondsInState = secondsInState
        self.secondsSinceActive = secondsSinceActive
        self.secondsSinceLaunch = secondsSinceLaunch
        self.activations = activations
        self.isProtected = isProtected
        self.relaunchSeconds = relaunchSeconds
        self.sampleAgeSeconds = sampleAgeSeconds
    }
}

extension JetsamAppSnapshot {
    /// Seconds since the app was last used, what the least-recently-used orders read: 0 in the
    /// foreground (active, or inactive: being launched or resumed into the foreground, or on its
    /// way out of it — in use either way); else since it was last active or launched, whichever
    /// came later (starting an app is using it, as Android's LRU list counts a process start; an
    /// app relaunched in the background since it was last active was used then); nil when
    /// neither is known (never used: before everything).
    public var lastUseSeconds: Double? {
        switch LastUse(self) {
        case .foreground: 0
        case .active: secondsSinceActive
        case .launched, .relaunched: secondsSinceLaunch
        case .never: nil
        }
    }
}

/// Which of a snapshot's times is its last use (`lastUseSeconds`), as the explanations name it.
enum LastUse: Equatable {
    case foreground, active, launched, relaunched, never

    /// Which of the snapshot's times `lastUseSeconds` took.
    init(_ s: JetsamAppSnapshot) {
        if s.state == .active || s.state == .inactive {
            self = .foreground
        } else if let launch = s.secondsSinceLaunch, launch < (s.secondsSinceActive ?? .infinity) {
            self = s.secondsSinceActive == nil ? .launched : .relaunched
        } else {
            self = s.secondsSinceActive != nil ? .active : .never
        }
    }

    var text: String {
        switch self {
        case .foreground: "in the foreground"
        case .active: "last active"
        case .launched: "launched, never active"
        case .relaunched: "relaunched since last active"
        case .never: "never used"
        }
    }
}

/// Everything one decision depends on. Episode reports record it; a replay feeds it back.
public struct RankingInput: Sendable, Hashable, Codable {
    /// The version of this format; the ranker accepts `RankingInput.currentFormatVersion` only.
    public var formatVersion: Int
    /// The supervised apps, in any order: the ranking does not depend on it.
    public var apps: [JetsamAppSnapshot]
    /// The device budget: the memory cgroup's limit, or MemTotal for the whole machine.
    public var budgetBytes: UInt64
    /// What is free now under the budget.
    public var availableBytes: UInt64
    /// What must be free again after the kills.
    public var targetAvailableBytes: UInt64
    /// How short memory is at decision time (the killer gives its measured severity, by the
    /// one judgement of memory: critical when a task waits at the limit or the working set is at
    /// the critical share of the budget). The foreground app is taken only at `.critical`.
    /// Encoded "normal", "warning", "critical" (`PressureLevel`).
    public var level: PressureLevel

    /// The format this ranker reads and writes.
    public static let currentFormatVersion = 1

    public init(
        formatVersion: Int = RankingInput.currentFormatVersion,
        apps: [JetsamAppSnapshot],
        budgetBytes: UInt64,
        availableBytes: UInt64,
        targetAvailableBytes: UInt64,
        level: PressureLevel
    ) {
        self.formatVersion = formatVersion
        self.apps = apps
        self.budgetBytes = budgetBytes
        self.availableBytes = availableBytes
        self.targetAvailableBytes = targetAvailableBytes
        self.level = level
    }

    /// The bytes the kills must give back: `targetAvailableBytes − availableBytes`, or 0 when
    /// enough is already free.
    public var neededBytes: UInt64 {
        targetAvailableBytes > availableBytes ? targetAvailableBytes - availableBytes : 0
    }
}
