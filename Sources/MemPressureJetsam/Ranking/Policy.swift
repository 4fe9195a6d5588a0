// The policies the ranker knows and their tunables. What each policy does, the peer it follows
// and why, is documented on `JetsamPolicyName`; the code of each lives in Policies.swift and
// CostPolicy.swift.

import MemPressureSystem

/// The ranking policies.
///
/// Every policy shares these rules (see `Ranker`): protected and `notRunning` apps are never
/// ranked; an app whose memory reading is older than `maxSampleAgeSeconds` is spared; the
/// foreground (active) app is ranked after every other app and is taken only at critical
/// pressure when all the others are not enough; ties end on footprint (larger first), then the
/// name's UTF-8 bytes, then the PID.
public enum JetsamPolicyName: String, Sendable, Hashable, Codable, CaseIterable {
    /// iOS (the default; the WWDC 2010 "System Memory" slide): bands in this order — suspended
    /// and high memory, background-running and high memory, suspended and low memory,
    /// background-running and low memory; then inactive; then the foreground app. Largest
    /// footprint first within a band. "High memory" is `footprint ≥ JetsamPolicy.highMemory`.
    /// Reasoning: a suspended app does nothing for the user right now, a big one gives back the
    /// most per kill, so one kill spares several small apps.
    case ios
    /// XNU's jetsam (kern_memorystatus): ascending priority band — idle (suspended,
    /// JETSAM_PRIORITY_IDLE 0), background (background-running, JETSAM_PRIORITY_BACKGROUND 3),
    /// foreground (inactive, then the active app, JETSAM_PRIORITY_FOREGROUND 10; newer kernels
    /// scale these by ten). Least recently used first within the idle and background bands
    /// (XNU kills the head of a band's list, the process that entered it longest ago; we use
    /// `lastUseSeconds`: since last active, or since launch for an app never active); only the
    /// foreground bands by size, largest first (XNU sorts that band by footprint).
    case xnu
    /// Android's lmkd: each state gets an `oom_score_adj`-like level — suspended = cached (900),
    /// background-running = service (500: it executes but is not visible, like a started
    /// service; iOS audio would be perceptible, but the lifecycle state does not say), inactive
    /// = visible (100), active = foreground (0). Levels are walked from the highest adj down.
    /// Above PERCEPTIBLE_APP_ADJ (200) lmkd takes the tail of the level's list, the least
    /// recently used (`lastUseSeconds`); at or below it, the heaviest, by resident size
    /// (lmkd reads RSS from /proc/PID/statm), to need as few victims as possible.
    case lmkd
    /// The kernel OOM killer's badness: the largest first whatever the state (the kernel does
    /// not know what is in the foreground), except that the foreground app still goes last, as
    /// in every policy here. The kernel's badness is rss + swap entries + page tables; a
    /// snapshot has `residentBytes` (Rss) and `footprintBytes` (private dirty + swap), so we use
    /// `max(residentBytes, footprintBytes)`: exact when nothing is swapped (the footprint is
    /// then inside the Rss), and a lower bound of rss + swap otherwise; page tables are ignored.
    case largest
    /// Least recently used first, whatever the size (`lastUseSeconds`: an app in the foreground —
    /// active, or inactive while it is launched or resumed — is in use now; an app never active
    /// was last used when it was launched; one with neither known goes first); the foreground
    /// app last. An app being launched or resumed is thus the most recently used: an LRU that
    /// counted it as never used would kill the app the user just asked for.
    case lru
    /// Ours, which no peer has: free the needed bytes at the least expected relaunch cost. The
    /// expected cost of killing an app is its relaunch time (measured, else the prior) times the
    /// probability that the user comes back to it within `reuseHorizonSeconds`. The victim set
    /// is the least-cost set that frees the needed bytes (exact search up to
    /// `exactSearchLimit` candidates, greedy by cost per byte beyond); inside the set the
    /// largest dies first; the foreground app is never in it before all others. See
    /// CostPolicy.swift for the model.
    case cost
}

/// The order of the apps inside one band of the `ios` policy.
public enum WithinBandOrder: String, Sendable, Hashable, Codable, CaseIterable {
    /// Largest footprint first (the WWDC 2010 slide's reasoning: one kill spares several small
    /// apps).
    case largestFirst
    /// Least recently used first, as XNU orders a band (the process that entered it longest
    /// ago dies first), the footprint breaking ties: the app the user is least likely to come
    /// back to, not the largest, pays.
    case leastRecentFirst
}

/// What "high memory" means for the `ios` policy: an app whose footprint is at least this is
/// in a high-memory band.
///
/// Encoded readably, as `{"bytes": 67108864}` or `{"shareOfBudget": 0.125}`.
public enum HighMemoryThreshold: Sendable, Hashable, Codable, CustomStringConvertible {
    /// A fixed number of bytes.
    case bytes(UInt64)
    /// A share of the budget, in (0, 1]: the threshold is `budgetBytes × share`, rounded down.
    case shareOfBudget(Double)

    /// The default: one eighth of the budget.
    ///
    /// Reasoning: the point of keeping suspended apps is to resume them instantly, and a device
    /// that keeps about eight apps resident (iOS-era phones kept a handful to a dozen) gives each
    /// a fair share of 1/8 of the budget. An app above its fair share is "high memory": killing
    /// it gives back more than one app's share, so it spares more of the others. A share, not a
    /// number of bytes, because the same rule must hold on a 64 MiB container and a 4 GiB
    /// handheld; at a 128 MiB budget it is 16 MiB, the line below which iOS 5 freeze-dries a
    /// suspended app instead of killing it.
    public static let `default` = HighMemoryThreshold.shareOfBudget(0.125)

    /// The threshold in bytes for a budget.
    public func bytes(budgetBytes: UInt64) -> UInt64 {
        switch self {
        case .bytes(let bytes):
            return bytes
        case .shareOfBudget(let share):
            // `validate()` keeps the share in (0, 1]; guard anyway, never trap on a conversion.
            guard share > 0 else { return 0 }
            guard share < 1 else { return budgetBytes }
            let product = Double(budgetBytes) * share
            // Converting truncates: the threshold is the product rounded down.
            return product >= 0x1p64 ? budgetBytes : min(budgetBytes, UInt64(product))
        }
    }

    public var description: String {
        switch self {
        case .bytes(let bytes): "\(Format.bytes(bytes))"
        case .shareOfBudget(let share): "\(Format.percent(share)) of the budget"
        }
    }

    private enum CodingKeys: String, CodingKey {
        case bytes
        case shareOfBudget
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        let bytes = try container.decodeIfPresent(UInt64.self, forKey: .bytes)
        let share = try container.decodeIfPresent(Double.self, forKey: .shareOfBudget)
        switch (bytes, share) {
        case (let bytes?, nil): self = .bytes(bytes)
        case (nil, let share?): self = .shareOfBudget(share)
        default:
            throw DecodingError.dataCorrupted(DecodingError.Context(
                codingPath: decoder.codingPath,
                debugDescription: "a high-memory threshold has exactly one of \"bytes\" or \"shareOfBudget\""
            ))
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        switch self {
        case .bytes(let bytes): try container.encode(bytes, forKey: .bytes)
        case .shareOfBudget(let share): try container.encode(share, forKey: .shareOfBudget)
        }
    }
}

/// A policy and its tunables. Every tunable has a documented default; decoding fills in the
/// defaults for tunables a document does not carry, so older reports and short scenario
/// sections still decode.
public struct JetsamPolicy: Sendable, Hashable, Codable {
    /// Which policy.
    public var name: JetsamPolicyName
    /// What "high memory" means for the `ios` bands. Default `HighMemoryThreshold.default`
    /// (1/8 of the budget); the other policies report it but do not rank by it.
    public var highMemory: HighMemoryThreshold
    /// The order inside each band of the `ios` policy. Default `.largestFirst`.
    public var withinBand: WithinBandOrder
    /// A memory reading older than this at decision time spares the app (every policy).
    /// Default 2 s: twice a 1 s refresh of the supervisor's app view, so one late refresh does
    /// not blind the killer, while an app growing at 100 MiB/s cannot have doubled unseen for
    /// long. The event-to-SIGKILL budget (5 ms) is far too short to re-read every app's smaps,
    /// so the killer decides on the cached view and this bound says how old it may be.
    public var maxSampleAgeSeconds: Double
    /// Cost policy: the horizon of "used again soon", and the smoothing time of the reuse-rate
    /// estimate. Default 300 s: a few minutes is how long a user's round of app switching lasts;
    /// a relaunch paid later than that is no longer felt as the price of this kill.
    public var reuseHorizonSeconds: Double
    /// Cost policy and replay: the relaunch time assumed when no app in the input has a measured
    /// one. When some have, the prior is their median instead. Default 1 s: a round cold-launch
    /// time for a small app (Apple asks for the first frame within about 400 ms; Android calls a
    /// cold start of 5 s or more excessive).
    public var defaultRelaunchSeconds: Double
    /// Cost policy: the smallest reuse probability any app gets, so that relaunch time still
    /// separates apps that were never active. Default 0.01.
    public var minimumReuseProbability: Double
    /// Cost policy: up to this many candidates the least-cost victim set is found exactly (meet
    /// in the middle: 2 × 2^(n/2) subsets, about 2,000 at 20); beyond it, greedily. In 0...24.
    /// Default 20.
    public var exactSearchLimit: Int

    public static let defaultMaxSampleAgeSeconds = 2.0
    public static let defaultWithinBand = WithinBandOrder.largestFirst
    public static let defaultReuseHorizonSeconds = 300.0
    public static let defaultDefaultRelaunchSeconds = 1.0
    public static let defaultMinimumReuseProbability = 0.01
    public static let defaultExactSearchLimit = 20
    /// The largest `exactSearchLimit` accepted: 2 × 4,096 subsets, still well under a millisecond.
    public static let maximumExactSearchLimit = 24

    /// The default policy: `ios` with the default tunables.
    public static let `default` = JetsamPolicy(name: .ios)

    public init(
        name: JetsamPolicyName,
        highMemory: HighMemoryThreshold = .default,
        withinBand: WithinBandOrder = JetsamPolicy.defaultWithinBand,
        maxSampleAgeSeconds: Double = JetsamPolicy.defaultMaxSampleAgeSeconds,
        reuseHorizonSeconds: Double = JetsamPolicy.defaultReuseHorizonSeconds,
        defaultRelaunchSeconds: Double = JetsamPolicy.defaultDefaultRelaunchSeconds,
        minimumReuseProbability: Double = JetsamPolicy.defaultMinimumReuseProbability,
        exactSearchLimit: Int = JetsamPolicy.defaultExactSearchLimit
    ) {
        self.name = name
        self.highMemory = highMemory
        self.withinBand = withinBand
        self.maxSampleAgeSeconds = maxSampleAgeSeconds
        self.reuseHorizonSeconds = reuseHorizonSeconds
        self.defaultRelaunchSeconds = defaultRelaunchSeconds
        self.minimumReuseProbability = minimumReuseProbability
        self.exactSearchLimit = exactSearchLimit
    }

    /// One policy per name, sharing the same tunables (all of them by default): what a replay
    /// compares.
    public static func all(
        _ names: [JetsamPolicyName] = JetsamPolicyName.allCases,
        tunedLike template: JetsamPolicy = .default
    ) -> [JetsamPolicy] {
        names.map { name in
            var policy = template
            policy.name = name
            return policy
        }
    }

    private enum CodingKeys: String, CodingKey {
        case name, highMemory, withinBand, maxSampleAgeSeconds, reuseHorizonSeconds, defaultRelaunchSeconds
        case minimumReuseProbability, exactSearchLimit
    }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        self.init(
            name: try c.decode(JetsamPolicyName.self, forKey: .name),
            highMemory: try c.decodeIfPresent(HighMemoryThreshold.self, forKey: .highMemory) ?? .default,
            withinBand: try c.decodeIfPresent(WithinBandOrder.self, forKey: .withinBand) ?? Self.defaultWithinBand,
            maxSampleAgeSeconds: try c.decodeIfPresent(Double.self, forKey: .maxSampleAgeSeconds)
                ?? Self.defaultMaxSampleAgeSeconds,
            reuseHorizonSeconds: try c.decodeIfPresent(Double.self, forKey: .reuseHorizonSeconds)
                ?? Self.defaultReuseHorizonSeconds,
            defaultRelaunchSeconds: try c.decodeIfPresent(Double.self, forKey: .defaultRelaunchSeconds)
                ?? Self.defaultDefaultRelaunchSeconds,
            minimumReuseProbability: try c.decodeIfPresent(Double.self, forKey: .minimumReuseProbability)
                ?? Self.defaultMinimumReuseProbability,
            exactSearchLimit: try c.decodeIfPresent(Int.self, forKey: .exactSearchLimit)
                ?? Self.defaultExactSearchLimit
        )
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(name, forKey: .name)
        try c.encode(highMemory, forKey: .highMemory)
        try c.encode(withinBand, forKey: .withinBand)
        try c.encode(maxSampleAgeSeconds, forKey: .maxSampleAgeSeconds)
        try c.encode(reuseHorizonSeconds, forKey: .reuseHorizonSeconds)
        try c.encode(defaultRelaunchSeconds, forKey: .defaultRelaunchSeconds)
        try c.encode(minimumReuseProbability, forKey: .minimumReuseProbability)
        try c.encode(exactSearchLimit, forKey: .exactSearchLimit)
    }

    /// Checks the tunables; the ranker calls it before every decision.
    public func validate() throws(RankingError) {
        if case .shareOfBudget(let share) = highMemory, !(share > 0 && share <= 1) {
            throw .invalidPolicy(field: "highMemory.shareOfBudget", reason: "\(share) is not in (0, 1]")
        }
        if !(maxSampleAgeSeconds >= 0 && maxSampleAgeSeconds.isFinite) {
            throw .invalidPolicy(field: "maxSampleAgeSeconds", reason: "\(maxSampleAgeSeconds) is not a finite number ≥ 0")
        }
        if !(reuseHorizonSeconds > 0 && reuseHorizonSeconds.isFinite) {
            throw .invalidPolicy(field: "reuseHorizonSeconds", reason: "\(reuseHorizonSeconds) is not a finite number > 0")
        }
        if !(defaultRelaunchSeconds >= 0 && defaultRelaunchSeconds <= Validation.maximumRelaunchSeconds) {
            throw .invalidPolicy(
                field: "defaultRelaunchSeconds",
                reason: "\(defaultRelaunchSeconds) is not in [0, \(Validation.maximumRelaunchSeconds)]"
            )
        }
        if !(minimumReuseProbability >= 0 && minimumReuseProbability <= 1) {
            throw .invalidPolicy(field: "minimumReuseProbability", reason: "\(minimumReuseProbability) is not in [0, 1]")
        }
        if !(0...Self.maximumExactSearchLimit).contains(exactSearchLimit) {
            throw .invalidPolicy(
                field: "exactSearchLimit",
                reason: "\(exactSearchLimit) is not in 0...\(Self.maximumExactSearchLimit)"
            )
        }
    }
}
