import MemPressureLifecycle
import MemPressureLifecycleProtocol
import MemPressureSystem
import MemPressureMonitor
import MemPressureValues

/// One pressure episode, in the spirit of XNU's JetsamEvent report: what memory looked like,
/// every app, and what the killer did about it — warnings, freeze-drys and kills on one
/// timeline — with every decision's input recorded so that `mempressure jetsam replay` can run
/// it again under any policy.
///
/// Format 2 (this version's) writes the outcome as an object (`Outcome`); format 1 wrote it in
/// words, and is read too (its outcome read back from them).
public struct JetsamEpisode: Sendable, Hashable {
    public static let currentFormatVersion = 2
    /// The formats this version reads.
    public static let readableFormatVersions = 1...2
    public var formatVersion = JetsamEpisode.currentFormatVersion
    /// Always "mempressure-jetsam-episode": tells this document from others.
    public var kind = "mempressure-jetsam-episode"
    /// Which episode of this killer (from 1).
    public var number: Int
    public var startedAt: Timestamp
    /// Seconds on the supervisor's log clock.
    public var start: Double
    public var end: Double?
    /// The pressure event that opened it.
    public var trigger: Trigger
    public var policy: JetsamPolicy
    /// The memory status when it opened, and when it closed.
    public var memoryBefore: MemoryStatus
    public var memoryAfter: MemoryStatus?
    /// What had to be free again.
    public var targetAvailableBytes: UInt64
    /// The app with the largest footprint when it opened.
    public var largestApp: String?
    /// The device's memory that belonged to no app when it opened (its cgroup's charge minus its
    /// apps' cgroups': page cache and tmpfs files of apps that ended, kernel memory); nil
    /// without a device cgroup, and in reports written before it was recorded.
    public var memoryOutsideAppsBytes: UInt64?
    /// Every app when it opened.
    public var apps: [App]
    /// Warnings, freeze-drys, kills and measurements, in order.
    public var timeline: [Entry]
    public var victims: [Victim]
    public var freezes: [Freeze]
    /// Every decision, in order: its input (the snapshots decided on, what replay runs) and
    /// whom the killer took on it (nil: no one; `note` says why).
    public var decisions: [DecisionRecord]
    /// The kernel's cgroup OOM kills in the device before and after (nil without a cgroup).
    public var kernelOOMKillsBefore: UInt64?
    public var kernelOOMKillsAfter: UInt64?
    /// How it ended: the warnings sufficed, recovered after 2 kills, nothing left to kill...
    public var outcome: Outcome

    public struct Trigger: Sendable, Hashable, Codable {
        public var level: PressureLevel
        /// What opened it: a pressure source that raised the level, a shortage the killer found
        /// when the pressure monitor woke it, a task waiting at the device's limit, an app over
        /// its limit.
        public var source: TriggerSource
        public var detail: String
        /// Seconds on the supervisor's log clock: when the pressure monitor's thread woke on it.
        public var t: Double
        /// What woke the monitor: a kernel event, or its poll interval (a source the kernel
        /// offers no event for; a per-app limit is checked at each periodic footprint reading).
        /// Nil in episodes recorded before it was said.
        public var wakeup: PressureWakeup? = nil
    }

    public struct App: Sendable, Hashable, Codable {
        public var name: String
        public var pid: Int32?
        public var state: LifecycleState
        public var footprintBytes: UInt64
        public var purgeableBytes: UInt64
        public var residentBytes: UInt64
        public var lifetimeMaxFootprintBytes: UInt64
        public var secondsInState: Double
        public var isProtected: Bool
    }

    public struct Entry: Sendable, Hashable, Codable {
        public var t: Double
        public var kind: EntryKind
        public var app: String?
        public var pid: Int32?
        public var bytes: UInt64?
        public var detail: String
    }

    public struct Victim: Sendable, Hashable, Codable {
        public var name: String
        public var pid: Int32
        public var state: LifecycleState
        public var reason: KillReason
        public var rank: Int
        /// Its band in the decision's ranking (`over-limit` for a per-app limit's victim).
        public var band: JetsamBand
        public var policy: JetsamPolicyName
        public var footprintBytes: UInt64
        public var purgeableBytes: UInt64
        /// From the pressure event that opened the episode to SIGKILL (a warning's grace
        /// period included).
        public var secondsFromEvent: Double
        /// From the latest pressure event before the decision (a critical event that cut the
        /// grace short, say) to SIGKILL: the killer's own decision latency.
        public var secondsFromLatestEvent: Double?
        /// What the kill gave back: the app's footprint read from its cgroup at the SIGKILL, once
        /// the victim had exited; without an app cgroup (or before it exited), available memory gained from the
        /// decision to its exit.
        public var reclaimedBytes: UInt64
        /// Whether process_mrelease freed its memory at once.
        public var memoryReleased: Bool
        /// Whether it exited within the cooldown.
        public var exited: Bool
        /// In hindsight: would available memory have been under the target at the end of the
        /// episode without this kill? Judged from the last kill back, so that kills the end
        /// could have done without together are not all called needed (`markNeeded`).
        public var needed: Bool
        public var explanation: String
    }

    public struct DecisionRecord: Sendable, Hashable, Codable {
        public var input: RankingInput
        public var victim: String?
        public var note: String?
    }

    /// In hindsight, from the last kill back: a kill whose bytes the end of the episode could
    /// have done without (together with the later kills found unneeded) was not needed. Sets
    /// `needed` of every `vm-pageshortage` victim from `memoryAfter` and the target (a
    /// per-process-limit kill is needed by its limit, whatever memory says).
    package mutating func markNeeded() {
        guard let after = memoryAfter else { return }
        var spare = after.availableBytes &- min(after.availableBytes, targetAvailableBytes)
        for i in victims.indices.reversed() where victims[i].reason == .vmPageShortage {
            if victims[i].reclaimedBytes <= spare {
                victims[i].needed = false
                spare -= victims[i].reclaimedBytes
            } else {
                victims[i].needed = true
            }
        }
    }

    public struct Freeze: Sendable, Hashable, Codable {
        public var name: String
        public var pid: Int32
        public var footprintBytes: UInt64
        /// Written out to swap.
        public var bytes: UInt64
        public var residentBefore: UInt64
        public var residentAfter: UInt64
    }
}

extension JetsamEpisode {
    /// What a timeline entry records.
    public enum EntryKind: String, Sendable, Hashable, Codable, CaseIterable {
        /// A memory warning that reached an app, or one that did not (suspended, or nothing reaches it).
        case warning
        /// A freeze-dry.
        case freeze
        /// A victim's SIGKILL, at its time.
        case kill
        /// A victim's exit, with what it gave back.
        case exit
        /// Memory measured.
        case measure
        /// Anything else the killer says: a victim still exiting after the cooldown, a kill that
        /// failed, a grace cut short, the kernel's OOM killer let act, how the episode ended.
        case note
    }

    /// What opened an episode (written as the source's name, or as "jetsam", "under-oom",
    /// "per-process-limit").
    public enum TriggerSource: Sendable, Hashable, Codable, CustomStringConvertible {
        /// A pressure source raised the level (its name: "cgroup usage against its limit").
        case pressure(String)
        /// The killer found memory short when the pressure monitor woke it.
        case jetsam
        /// A task waited at the device's limit (the kernel's OOM killer held: without the hold
        /// it would have killed).
        case underOOM
        /// An app went over its own limit.
        case perProcessLimit

        public var description: String {
            switch self {
            case .pressure(let source): source
            case .jetsam: "jetsam"
            case .underOOM: "under-oom"
            case .perProcessLimit: "per-process-limit"
            }
        }

        public init(_ word: String) {
            switch word {
            case "jetsam": self = .jetsam
            case "under-oom": self = .underOOM
            case "per-process-limit": self = .perProcessLimit
            default: self = .pressure(word)
            }
        }

        public init(from decoder: any Decoder) throws {
            self.init(try decoder.singleValueContainer().decode(String.self))
        }

        public func encode(to encoder: any Encoder) throws {
            var c = encoder.singleValueContainer()
            try c.encode(description)
        }
    }
}

extension JetsamEpisode: Codable {
    private enum Key: String, CodingKey {
        case formatVersion, kind, number, startedAt, start, end, trigger, policy, memoryBefore, memoryAfter, targetAvailableBytes
        case largestApp, memoryOutsideAppsBytes, apps, timeline, victims, freezes, decisions, kernelOOMKillsBefore, kernelOOMKillsAfter, outcome
    }

    /// Format 1's outcome is its words (read back by `Outcome(words:)`); format 2's an object.
    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: Key.self)
        formatVersion = try c.decode(Int.self, forKey: .formatVersion)
        kind = try c.decode(String.self, forKey: .kind)
        number = try c.decode(Int.self, forKey: .number)
        startedAt = try c.decode(Timestamp.self, forKey: .startedAt)
        start = try c.decode(Double.self, forKey: .start)
        end = try c.decodeIfPresent(Double.self, forKey: .end)
        trigger = try c.decode(Trigger.self, forKey: .trigger)
        policy = try c.decode(JetsamPolicy.self, forKey: .policy)
        memoryBefore = try c.decode(MemoryStatus.self, forKey: .memoryBefore)
        memoryAfter = try c.decodeIfPresent(MemoryStatus.self, forKey: .memoryAfter)
        targetAvailableBytes = try c.decode(UInt64.self, forKey: .targetAvailableBytes)
        largestApp = try c.decodeIfPresent(String.self, forKey: .largestApp)
        memoryOutsideAppsBytes = try c.decodeIfPresent(UInt64.self, forKey: .memoryOutsideAppsBytes)
        apps = try c.decode([App].self, forKey: .apps)
        timeline = try c.decode([Entry].self, forKey: .timeline)
        victims = try c.decode([Victim].self, forKey: .victims)
        freezes = try c.decode([Freeze].self, forKey: .freezes)
        decisions = try c.decode([DecisionRecord].self, forKey: .decisions)
        kernelOOMKillsBefore = try c.decodeIfPresent(UInt64.self, forKey: .kernelOOMKillsBefore)
        kernelOOMKillsAfter = try c.decodeIfPresent(UInt64.self, forKey: .kernelOOMKillsAfter)
        outcome = formatVersion < 2 ? Outcome(words: try c.decode(String.self, forKey: .outcome)) : try c.decode(Outcome.self, forKey: .outcome)
    }

    /// In the format it says it is (`formatVersion`): an episode read from a format-1 file is
    /// written back as one.
    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: Key.self)
        try c.encode(formatVersion, forKey: .formatVersion)
        try c.encode(kind, forKey: .kind)
        try c.encode(number, forKey: .number)
        try c.encode(startedAt, forKey: .startedAt)
        try c.encode(start, forKey: .start)
        try c.encodeIfPresent(end, forKey: .end)
        try c.encode(trigger, forKey: .trigger)
        try c.encode(policy, forKey: .policy)
        try c.encode(memoryBefore, forKey: .memoryBefore)
        try c.encodeIfPresent(memoryAfter, forKey: .memoryAfter)
        try c.encode(targetAvailableBytes, forKey: .targetAvailableBytes)
        try c.encodeIfPresent(largestApp, forKey: .largestApp)
        try c.encodeIfPresent(memoryOutsideAppsBytes, forKey: .memoryOutsideAppsBytes)
        try c.encode(apps, forKey: .apps)
        try c.encode(timeline, forKey: .timeline)
        try c.encode(victims, forKey: .victims)
        try c.encode(freezes, forKey: .freezes)
        try c.encode(decisions, forKey: .decisions)
        try c.encodeIfPresent(kernelOOMKillsBefore, forKey: .kernelOOMKillsBefore)
        try c.encodeIfPresent(kernelOOMKillsAfter, forKey: .kernelOOMKillsAfter)
        if formatVersion < 2 { try c.encode(outcome.description, forKey: .outcome) } else { try c.encode(outcome, forKey: .outcome) }
    }
}
