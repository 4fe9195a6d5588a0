import MemPressureSystem

/// How the jetsam killer decides: its policy and thresholds. The `jetsam` section of a scenario
/// decodes into this (every field optional, with the defaults below):
///
///     "jetsam": {"policy": "ios", "highMemoryBytes": 67108864, "withinBand": "leastRecentFirst",
///                "protected": ["Music"], "targetAvailableShare": 0.05, "warningGraceSeconds": 1, "cooldownSeconds": 2,
///                "freezeDryBelowBytes": 16777216, "holdKernelOOMKiller": true,
///                "limits": {"Maps": {"activeBytes": 268435456, "inactiveBytes": 67108864, "soft": false}}}
public struct JetsamConfiguration: Sendable, Hashable, Codable {
    public var policy: JetsamPolicyName = .ios
    /// "High memory" for the ios policy: bytes, or a share of the budget (`highMemoryShare`);
    /// `defaultHighMemoryShare` of the budget when neither is set.
    public var highMemoryBytes: UInt64?
    public var highMemoryShare: Double?
    /// The high-memory line when none is given: a quarter of the budget, the footprint of an
    /// app that takes what the budget gives each of four apps — above it, an app holds more
    /// than its share. (The ranker's own default, `HighMemoryThreshold.default`, stays an
    /// eighth.) Chosen with `withinBand` and `targetAvailableShare` from the switching
    /// evaluation (Reports/switching.md): see `withinBand`.
    public static let defaultHighMemoryShare = 0.25
    /// The order inside an `ios` band (`JetsamPolicy.withinBand`). Default `.leastRecentFirst`:
    /// over a day of app switching with room for 4 apps and no swap (10 seeds), killing the
    /// largest app of a band first took the apps used most (the large ones are among the most
    /// popular) and gave the worst switch times of every configuration tried (96 ms, 57% of
    /// switches resumes); least recently used first with a quarter of the budget as the
    /// high-memory line and 5% freed gave 80 ms and 65% resumes, against the lmkd emulation's
    /// 89 ms and 64% — with 3.3 apps cached against its 3.9 (where it falls short).
    public var withinBand: WithinBandOrder = .leastRecentFirst
    /// Apps never killed (nor frozen).
    public var protected: [String] = []
    /// How long warned apps have to free memory before it is measured again (seconds). Memory
    /// turning critically short (a task at the limit, or the working set at the usage source's
    /// critical share) ends the wait at once.
    public var warningGraceSeconds: Double = 1
    /// The share of the budget that must be free again once the episode is over. Default 0.05:
    /// free what keeps the device out of critical (95%), and keep every other app cached; what
    /// the next launch needs beyond it, the next episode frees as the launch grows. (0.25, the
    /// usage source's warning hysteresis, ended every episode where pressure ends, and killed
    /// an app more than it needed at nearly every episode: see `withinBand` for the figures.)
    public var targetAvailableShare: Double = 0.05
    /// How long to wait for a victim to exit (on its pidfd) before deciding again.
    public var cooldownSeconds: Double = 2
    /// Suspended apps whose footprint is under this are written out to swap (freeze-dry)
    /// instead of being killed, when the machine has swap. 0 turns it off; 16 MiB is what iOS 5
    /// did. Default: every suspended app (no bound) — chosen from Reports/switching.md: on zram
    /// swap (lz4) with room for 4 apps, freeze-drying every suspended app before a kill kept
    /// 9.9 apps cached against 4.0 with the 16 MiB bound and cut the mean switch time from 102
    /// to 61 ms (10 seeds), below the kernel's OOM killer with the apps' oom_score_adj (70 ms);
    /// without swap it changes nothing. A swap file on disk was not measured.
    public var freezeDryBelowBytes: UInt64 = .max
    /// Per-app limits, as XNU's active and inactive limits.
    public var limits: [String: AppLimit] = [:]
    /// Readings older than this are refreshed before a decision, and never decided on.
    public var maxSampleAgeSeconds: Double = JetsamPolicy.defaultMaxSampleAgeSeconds
    /// Where each episode's report is written (`episode-N.json`); nil keeps them in memory.
    public var reportDirectory: String?
    /// Hold the kernel's OOM killer of the device cgroup while jetsam is attached (cgroup v1
    /// `oom_kill_disable`; see `KernelOOMHold`): a task at the limit waits for jetsam's choice
    /// of victim instead of the kernel killing the largest task. Default true.
    public var holdKernelOOMKiller: Bool = true

    public init(policy: JetsamPolicyName = .ios) {
        self.policy = policy
    }

    /// A memory limit for one app: over `activeBytes` while in the foreground (active,
    /// inactive), over `inactiveBytes` in the background (running or suspended), the app is
    /// killed with the reason `per-process-limit` — or, when `soft`, only warned.
    public struct AppLimit: Sendable, Hashable, Codable {
        public var activeBytes: UInt64?
        public var inactiveBytes: UInt64?
        public var soft: Bool?

        public init(activeBytes: UInt64? = nil, inactiveBytes: UInt64? = nil, soft: Bool? = nil) {
            self.activeBytes = activeBytes
            self.inactiveBytes = inactiveBytes
            self.soft = soft
        }

        private enum CodingKeys: String, CodingKey, CaseIterable {
            case activeBytes, inactiveBytes, soft
        }

        public init(from decoder: any Decoder) throws {
            try UnknownKeys.refuse(in: decoder, known: CodingKeys.self, what: "a jetsam limit")
            let c = try decoder.container(keyedBy: CodingKeys.self)
            activeBytes = try c.decodeIfPresent(UInt64.self, forKey: .activeBytes)
            inactiveBytes = try c.decodeIfPresent(UInt64.self, forKey: .inactiveBytes)
            soft = try c.decodeIfPresent(Bool.self, forKey: .soft)
        }
    }

    /// The ranking policy these settings make.
    public var rankingPolicy: JetsamPolicy {
        var p = JetsamPolicy(name: policy)
        if let b = highMemoryBytes {
            p.highMemory = .bytes(b)
        } else {
            p.highMemory = .shareOfBudget(highMemoryShare ?? Self.defaultHighMemoryShare)
        }
        p.withinBand = withinBand
        p.maxSampleAgeSeconds = maxSampleAgeSeconds
        return p
    }

    /// Checks the ranges; says what is wrong.
    public func validate() throws(JetsamConfigurationError) {
        func check(_ ok: Bool, _ message: String) throws(JetsamConfigurationError) {
            if !ok { throw JetsamConfigurationError(message) }
        }
        try check(highMemoryBytes == nil || highMemoryShare == nil, "give highMemoryBytes or highMemoryShare, not both")
        if let s = highMemoryShare { try check(s > 0 && s <= 1, "highMemoryShare must be above 0 and at most 1") }
        try check(targetAvailableShare > 0 && targetAvailableShare < 1, "targetAvailableShare must be between 0 and 1")
        try check(warningGraceSeconds >= 0 && warningGraceSeconds <= 60, "warningGraceSeconds must be from 0 to 60")
        try check(cooldownSeconds > 0 && cooldownSeconds <= 60, "cooldownSeconds must be above 0 and at most 60")
        try check(maxSampleAgeSeconds > 0 && maxSampleAgeSeconds <= 3600, "maxSampleAgeSeconds must be above 0 and at most 3600")
        do {
            try rankingPolicy.validate()
        } catch {
            throw JetsamConfigurationError("\(error)")
        }
    }

    private enum Key: String, CodingKey, CaseIterable {
        case policy, highMemoryBytes, highMemoryShare, withinBand, protected, warningGraceSeconds, targetAvailableShare, cooldownSeconds
        case freezeDryBelowBytes, limits, maxSampleAgeSeconds, reportDirectory, holdKernelOOMKiller
    }

    public init(from decoder: any Decoder) throws {
        try UnknownKeys.refuse(in: decoder, known: Key.self, what: "the jetsam section")
        let c = try decoder.container(keyedBy: Key.self)
        let d = JetsamConfiguration()
        policy = try c.decodeIfPresent(JetsamPolicyName.self, forKey: .policy) ?? d.policy
        highMemoryBytes = try c.decodeIfPresent(UInt64.self, forKey: .highMemoryBytes)
        highMemoryShare = try c.decodeIfPresent(Double.self, forKey: .highMemoryShare)
        withinBand = try c.decodeIfPresent(WithinBandOrder.self, forKey: .withinBand) ?? d.withinBand
        protected = try c.decodeIfPresent([String].self, forKey: .protected) ?? d.protected
        warningGraceSeconds = try c.decodeIfPresent(Double.self, forKey: .warningGraceSeconds) ?? d.warningGraceSeconds
        targetAvailableShare = try c.decodeIfPresent(Double.self, forKey: .targetAvailableShare) ?? d.targetAvailableShare
        cooldownSeconds = try c.decodeIfPresent(Double.self, forKey: .cooldownSeconds) ?? d.cooldownSeconds
        freezeDryBelowBytes = try c.decodeIfPresent(UInt64.self, forKey: .freezeDryBelowBytes) ?? d.freezeDryBelowBytes
        limits = try c.decodeIfPresent([String: AppLimit].self, forKey: .limits) ?? d.limits
        maxSampleAgeSeconds = try c.decodeIfPresent(Double.self, forKey: .maxSampleAgeSeconds) ?? d.maxSampleAgeSeconds
        reportDirectory = try c.decodeIfPresent(String.self, forKey: .reportDirectory)
        holdKernelOOMKiller = try c.decodeIfPresent(Bool.self, forKey: .holdKernelOOMKiller) ?? d.holdKernelOOMKiller
    }
}

/// Why `JetsamConfiguration.validate()` refused a configuration: a value out of its range, or a
/// ranking policy that is not valid. The reason names the field.
public struct JetsamConfigurationError: Error, Sendable, Hashable, CustomStringConvertible {
    /// What is wrong, naming the field ("targetAvailableShare must be between 0 and 1").
    public var reason: String
    public init(_ reason: String) { self.reason = reason }
    public var description: String { "jetsam: \(reason)" }
}

