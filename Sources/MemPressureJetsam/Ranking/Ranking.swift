import MemPressureLifecycleProtocol

// What the ranker gives back: the order, the apps it spared and why, and the decision.

/// One factor of a ranking: what the ranker looked at, its value, and how it counted.
/// For example `("band", "suspended-high", "suspended, footprint 300.0 MiB ≥ high-memory 64.0 MiB")`.
public struct Factor: Sendable, Hashable, Codable {
    /// A short stable name ("band", "footprint", "since used", "expected cost", ...).
    public var name: String
    /// The value, formatted ("300.0 MiB", "0.63").
    public var value: String
    /// How it counted for this app.
    public var detail: String

    public init(name: String, value: String, detail: String) {
        self.name = name
        self.value = value
        self.detail = detail
    }
}

/// One app in the kill order.
public struct RankedApp: Sendable, Hashable, Codable {
    /// 1 dies first.
    public var rank: Int
    /// The snapshot as ranked: repairs applied (see `Validation`), noted in `factors`.
    public var snapshot: JetsamAppSnapshot
    /// The app's band under the policy (`JetsamBand`).
    public var band: JetsamBand
    /// The band's place in the policy's order (0 dies first).
    public var bandOrder: Int
    /// What the ranker looked at, in the order it compared them.
    public var factors: [Factor]
    /// Why the app is at this rank, and why it is ahead of the next one.
    public var explanation: String
    /// The cost model's expected relaunch cost of killing this app (relaunch time × probability
    /// of reuse within the horizon), computed under every policy so policies can be compared.
    public var expectedCostSeconds: Double

    public init(
        rank: Int,
        snapshot: JetsamAppSnapshot,
        band: JetsamBand,
        bandOrder: Int,
        factors: [Factor],
        explanation: String,
        expectedCostSeconds: Double
    ) {
        self.rank = rank
        self.snapshot = snapshot
        self.band = band
        self.bandOrder = bandOrder
        self.factors = factors
        self.explanation = explanation
        self.expectedCostSeconds = expectedCostSeconds
    }
}

/// A band of a policy's order (written as its short stable name): `ios` "suspended-high",
/// "background-high", "suspended-low", "background-low", "inactive", "foreground"; `xnu` "idle",
/// "background", "foreground-inactive", "foreground"; `lmkd` "cached", "service", "visible",
/// "foreground"; `largest` and `lru` "candidate", "foreground"; `cost` "least-cost-set",
/// "by-cost", "foreground". And "over-limit", an episode's victim of a per-app limit: no
/// ranking put it there.
public enum JetsamBand: String, Sendable, Hashable, Codable, CaseIterable, CustomStringConvertible {
    case suspendedHigh = "suspended-high"
    case backgroundHigh = "background-high"
    case suspendedLow = "suspended-low"
    case backgroundLow = "background-low"
    case inactive
    case foreground
    case idle
    case background
    case foregroundInactive = "foreground-inactive"
    case cached
    case service
    case visible
    case candidate
    case leastCostSet = "least-cost-set"
    case byCost = "by-cost"
    case overLimit = "over-limit"

    public var description: String { rawValue }
}

/// Why an app is not a candidate.
public enum SpareReason: String, Sendable, Hashable, Codable, CaseIterable {
    /// Marked protected: never ranked, never killed.
    case protected
    /// No process: nothing to kill.
    case notRunning
    /// The memory reading is older than the policy's `maxSampleAgeSeconds`.
    case staleSample
    /// A reading is broken (NaN or negative time, negative count, contradictory recency).
    case invalid
    /// The foreground app would have been needed, but pressure is not critical. Only in a
    /// `Decision`: the ranking itself always lists the foreground app last.
    case foregroundNotCritical
}

/// An app the ranker did not rank, or a decision did not take, and why.
public struct Spared: Sendable, Hashable, Codable {
    public var snapshot: JetsamAppSnapshot
    public var reason: SpareReason
    /// The snapshot field at fault, for `.invalid` (and "sampleAgeSeconds" for `.staleSample`).
    public var field: String?
    public var explanation: String

    public init(snapshot: JetsamAppSnapshot, reason: SpareReason, field: String? = nil, explanation: String) {
        self.snapshot = snapshot
        self.reason = reason
        self.field = field
        self.explanation = explanation
    }
}

/// The kill order under one policy, and the apps it spared.
public struct Ranking: Sendable, Hashable, Codable {
    public var policy: JetsamPolicy
    /// Candidates in kill order, rank 1 first; the foreground app last.
    public var order: [RankedApp]
    /// Apps not ranked, ordered by name bytes then PID.
    public var spared: [Spared]
    /// The high-memory threshold in bytes that the input's budget gives.
    public var highMemoryBytes: UInt64
    /// `targetAvailableBytes − availableBytes` (0 when enough is free). The cost policy's order
    /// depends on it: its least-cost set for these bytes comes first.
    public var neededBytes: UInt64
    /// The relaunch time assumed for apps without a measured one.
    public var relaunchPriorSeconds: Double
    /// Where the prior comes from ("median of 3 measured relaunch times", "policy default ...").
    public var relaunchPriorSource: String

    public init(
        policy: JetsamPolicy,
        order: [RankedApp],
        spared: [Spared],
        highMemoryBytes: UInt64,
        neededBytes: UInt64,
        relaunchPriorSeconds: Double,
        relaunchPriorSource: String
    ) {
        self.policy = policy
        self.order = order
        self.spared = spared
        self.highMemoryBytes = highMemoryBytes
        self.neededBytes = neededBytes
        self.relaunchPriorSeconds = relaunchPriorSeconds
        self.relaunchPriorSource = relaunchPriorSource
    }
}

/// Who to kill to bring available memory back to the target.
public struct Decision: Sendable, Hashable, Codable {
    public var policy: JetsamPolicyName
    /// In kill order.
    public var victims: [RankedApp]
    /// The victims' footprints summed. Purgeable bytes are not counted: the kernel can take
    /// them without a kill, so they are no reason to kill anyone.
    public var expectedFreedBytes: UInt64
    /// `targetAvailableBytes − availableBytes`, 0 when enough is already free.
    public var neededBytes: UInt64
    /// Whether the victims free at least `neededBytes`.
    public var sufficient: Bool
    /// Why these victims and why it stops where it stops.
    public var explanation: String
    /// The cost model's expected relaunch cost of the victims, computed the same way under every
    /// policy so that policies can be compared. Optional for documents that did not record it.
    public var expectedCostSeconds: Double?
    /// The ranking's spared apps, plus the foreground app when it would have been needed but
    /// pressure is not critical (`foregroundNotCritical`).
    public var spared: [Spared]

    public init(
        policy: JetsamPolicyName,
        victims: [RankedApp],
        expectedFreedBytes: UInt64,
        neededBytes: UInt64,
        sufficient: Bool,
        explanation: String,
        expectedCostSeconds: Double?,
        spared: [Spared]
    ) {
        self.policy = policy
        self.victims = victims
        self.expectedFreedBytes = expectedFreedBytes
        self.neededBytes = neededBytes
        self.sufficient = sufficient
        self.explanation = explanation
        self.expectedCostSeconds = expectedCostSeconds
        self.spared = spared
    }
}
