import AppLifecycle
import LifecycleProtocol
import LinuxSystem
import Pressure
import PressureValues

/// One pressure episode, in the spirit of XNU's JetsamEvent report: what memory looked like,
/// every app, and what the killer did about it — warnings, freeze-drys and kills on one
/// timeline — with every decision's input recorded so that `mempressure jetsam replay` can run
/// it again under any policy.
public struct JetsamEpisode: Sendable, Hashable, Codable {
    public static let currentFormatVersion = 1
    /// The trigger source of an episode opened because a task waited at the device's limit.
    public static let underOOMSource = "under-oom"
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
    /// "warnings sufficed", "recovered after 2 kill(s)", "nothing left to kill: still short by ...".
    public var outcome: String

    public struct Trigger: Sendable, Hashable, Codable {
        public var level: PressureLevel
        /// The pressure source that raised the level; "jetsam" for a shortage the killer found
        /// when the pressure monitor woke it; "under-oom" when a task waited at the device's
        /// limit (the kernel's OOM killer held: without the hold it would have killed);
        /// "per-process-limit".
        public var source: String
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
        /// "warning", "freeze", "kill", "exit", "measure", "note".
        public var kind: String
        public var app: String?
        public var pid: Int32?
        public var bytes: UInt64?
        public var detail: String
    }

    public struct Victim: Sendable, Hashable, Codable {
        public var name: String
        public var pid: Int32
        public var state: LifecycleState
        /// `vm-pageshortage` or `per-process-limit`.
        public var reason: String
        public var rank: Int
        public var band: String
        public var policy: JetsamPolicyName
        public var footprintBytes: UInt64
        public var purgeableBytes: UInt64
        /// From the pressure event that opened the episode to SIGKILL (a warning's grace
        /// period included).
        public var secondsFromEvent: Double
        /// From the latest pressure event before the decision (a critical event that cut the
        /// grace short, say) to SIGKILL: the killer's own decision latency.
        public var secondsFromLatestEvent: Double?
        /// Available memory before the kill and once the victim had exited: what it gave back.
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
        for i in victims.indices.reversed() where victims[i].reason == KillReason.vmPageShortage.rawValue {
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
