/// What a policy records in the supervisor's log: `SupervisorEvent.Payload.policy`.
///
/// The policies' vocabulary is typed here, beside `KillReason`, rather than in the modules that
/// decide (AppLifecycle cannot import Jetsam): one `.policy` case keeps the core's cases the
/// core's own — the supervisor never records one of these — while every record stays a value
/// that can be switched on, compared, and decoded back from a log by anyone who reads it (the
/// CLI, the metrics, the benchmarks), with no registry of record types and no string to parse.
/// A policy that says something new adds its case here.
public enum PolicyRecord: Sendable, Hashable {
    /// An app killed without notice (the exit that follows is logged too, with the reason).
    case kill(KillRecord)
    /// A suspended app's anonymous memory written out to swap.
    case freezeDry(FreezeDryRecord)
    /// An app over its soft limit: warned, not killed.
    case softLimitWarning(LimitRecord)
    /// What the policy does, or cannot do.
    case note(PolicyNote)
    /// What failed in the policy's own work.
    case failure(PolicyFailure)

    /// The log event kind it is recorded as.
    public var kind: SupervisorEventKind {
        switch self {
        case .kill: .jetsam
        case .freezeDry: .freeze
        case .softLimitWarning: .warning
        case .note: .note
        case .failure: .error
        }
    }
}

/// A kill by a policy, once what it gave back is known.
public struct KillRecord: Sendable, Hashable {
    public var reason: KillReason
    /// Its rank in the decision (1 for a per-app limit: the limit, not a ranking, chose it).
    public var rank: Int
    /// The ranking policy's name ("ios").
    public var policy: String
    public var footprintBytes: UInt64
    /// Available memory gained by the kill.
    public var reclaimedBytes: UInt64
    /// Why this app, in words.
    public var explanation: String
    /// Set when the victim had not exited within the cooldown (these seconds) after SIGKILL.
    public var stillExitingAfterSeconds: Double?

    public init(
        reason: KillReason, rank: Int, policy: String, footprintBytes: UInt64, reclaimedBytes: UInt64, explanation: String,
        stillExitingAfterSeconds: Double? = nil
    ) {
        self.reason = reason
        self.rank = rank
        self.policy = policy
        self.footprintBytes = footprintBytes
        self.reclaimedBytes = reclaimedBytes
        self.explanation = explanation
        self.stillExitingAfterSeconds = stillExitingAfterSeconds
    }
}

/// A freeze-dry: what a page-out wrote to swap, and the app's resident memory before and after.
public struct FreezeDryRecord: Sendable, Hashable {
    public var writtenBytes: UInt64
    /// Nil in logs written before they were recorded.
    public var residentBeforeBytes: UInt64?
    public var residentAfterBytes: UInt64?

    public init(writtenBytes: UInt64, residentBeforeBytes: UInt64?, residentAfterBytes: UInt64?) {
        self.writtenBytes = writtenBytes
        self.residentBeforeBytes = residentBeforeBytes
        self.residentAfterBytes = residentAfterBytes
    }
}

/// Which of an app's memory limits: the one of the foreground (active, inactive) or of the
/// background (running or suspended), as XNU's active and inactive limits.
public enum PerAppLimit: String, Sendable, Hashable, Codable, CaseIterable {
    case active
    case inactive
}

/// An app's footprint over one of its limits.
public struct LimitRecord: Sendable, Hashable {
    public var limit: PerAppLimit
    public var footprintBytes: UInt64
    public var limitBytes: UInt64

    public init(limit: PerAppLimit, footprintBytes: UInt64, limitBytes: UInt64) {
        self.limit = limit
        self.footprintBytes = footprintBytes
        self.limitBytes = limitBytes
    }
}

/// A reading jetsam's watch depends on.
public enum WatchedReading: String, Sendable, Hashable, Codable, CaseIterable {
    /// The device's memory (`SupervisedDevice.memoryStatus()`).
    case memory
    /// Whether a task waits at the device's limit (`SupervisedDevice.isUnderOOM()`).
    case underOOM
}

/// What jetsam says of what it does or cannot do.
public enum PolicyNote: Sendable, Hashable {
    /// How it is woken: the pressure sources whose kernel events wake it, those it can only
    /// poll, and the poll interval.
    case wokenBy(events: [String], polled: [String], pollInterval: Double)
    /// It holds the kernel's OOM killer of the device's memory cgroup.
    case kernelOOMKillerHeld(cgroup: String)
    /// It cannot hold it, and why (the kernel's killer stays in charge at the limit).
    case kernelOOMKillerNotHeld(KernelOOMHold.Unavailable)
    /// A reading that was failing works again (its failure as it was said).
    case readingWorksAgain(WatchedReading, failure: String)
    /// The machine has no swap: freeze-dry is off (suspended apps are killed instead).
    case noSwap
    /// The app is over its limit but could not be killed (it exited, changed state, or was
    /// already dying): the next reading decides again.
    case overLimitNotKilled(PerAppLimit, cause: String)
}

/// What failed in jetsam's own work.
public enum PolicyFailure: Sendable, Hashable {
    /// A reading of the watch failed: no decision is made on it until it works again.
    case readingFailed(WatchedReading, failure: String)
    /// The pressure stream ended (its monitor stopped): no more episodes are started.
    case pressureStreamEnded
    /// An episode's report could not be written to the report directory.
    case reportNotWritten(episode: Int, directory: String, cause: String)
}
