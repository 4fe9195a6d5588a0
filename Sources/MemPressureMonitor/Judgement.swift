import MemPressureSystem
import MemPressureValues

/// What is known about memory at one moment: what the one judgement of memory looks at.
public struct MemoryEvidence: Sendable, Hashable {
    /// The device's memory: a memory cgroup's working set against its limit, or the machine's
    /// MemAvailable against MemTotal (`MemoryStatusReader`); nil when not read.
    public var status: MemoryStatus?
    /// A task of the memory cgroup waits at its limit (cgroup v1 `under_oom 1`: with the
    /// kernel's OOM killer held, it waits in the kernel until memory is freed).
    public var taskWaitsAtLimit: Bool
    /// PSI as its file reads now (the 10 s averages); nil when not read.
    public var stall: PressureStall?

    public init(status: MemoryStatus? = nil, taskWaitsAtLimit: Bool = false, stall: PressureStall? = nil) {
        self.status = status
        self.taskWaitsAtLimit = taskWaitsAtLimit
        self.stall = stall
    }
}

/// What the judgement found: the level, and what decided it ("working set 61.2 MiB of 64.0 MiB
/// (95.6%)"; "" at normal).
public struct MemoryJudgement: Sendable, Hashable {
    public var level: PressureLevel
    public var detail: String
}

extension PressureConfiguration {
    /// The one judgement of how short memory is. The pressure monitor's memory sources judge
    /// each reading with it, jetsam its measurements (how short memory is decides between
    /// warnings first and killing at once, and whether the foreground app may be taken), the
    /// exporter what it publishes as `mempressure_pressure_level`. The level is the highest that
    /// any part of `evidence` gives:
    ///
    /// - a task waiting at the limit: critical — as short as memory gets, whatever the figures say;
    /// - a cgroup's working set: at `usageCriticalFraction` of its budget critical, at
    ///   `usageWarningFraction` warning;
    /// - the machine's MemAvailable: at or below `availableCriticalFraction` of MemTotal
    ///   critical, at or below `availableWarningFraction` warning;
    /// - PSI: the share of time stalled over the last 10 s (avg10, a percentage) against the
    ///   share the monitor's triggers fire at (stall threshold / window): "full" at or above the
    ///   critical share critical, "some" at or above the warning share warning. (The monitor
    ///   itself hears PSI through its triggers, which are the kernel's judgement, not this one.)
    ///
    /// `current` is the level the caller's last judgement gave: a figure leaves a level only
    /// `hysteresis` past its threshold. A caller that judges one reading alone passes `.normal`.
    public func judge(_ evidence: MemoryEvidence, current: PressureLevel = .normal) -> MemoryJudgement {
        var best = MemoryJudgement(level: .normal, detail: "")
        func consider(_ level: PressureLevel, _ detail: String) {
            if level > best.level { best = MemoryJudgement(level: level, detail: detail) }
        }
        if evidence.taskWaitsAtLimit {
            consider(.critical, "a task waits at the limit (under_oom)")
        }
        if let s = evidence.status, s.budgetBytes > 0 {
            // A cgroup: the working set's share, worse as it rises. The machine: MemAvailable's
            // share, worse as it falls.
            let (what, part, warning, critical, rising) =
                s.scope == .cgroup
                ? ("working set", s.usedBytes, usageWarningFraction, usageCriticalFraction, true)
                : ("MemAvailable", s.availableBytes, availableWarningFraction, availableCriticalFraction, false)
            let share = Double(part) / Double(s.budgetBytes)
            consider(
                thresholdLevel(share, current: current, warning: warning, critical: critical, rising: rising),
                "\(what) \(ByteFormat.human(part)) of \(ByteFormat.human(s.budgetBytes)) (\(ByteFormat.fixed(share * 100, 1))%)")
        }
        if let stall = evidence.stall {
            let window = Double(max(1, psiWindowMicroseconds))
            let criticalShare = Double(psiCriticalStallMicroseconds) / window * 100
            let warningShare = Double(psiWarningStallMicroseconds) / window * 100
            if let full = stall.full, full.avg10 >= criticalShare {
                consider(.critical, "PSI full avg10 \(ByteFormat.fixed(full.avg10, 2))% (critical from \(ByteFormat.fixed(criticalShare, 2))%)")
            } else if stall.some.avg10 >= warningShare {
                consider(.warning, "PSI some avg10 \(ByteFormat.fixed(stall.some.avg10, 2))% (warning from \(ByteFormat.fixed(warningShare, 2))%)")
            }
        }
        return best
    }

    /// The shares of a cgroup's budget at which the judgement of its working set can change —
    /// where warning and critical are entered, and where each is left (less `hysteresis`) — for
    /// the cgroup source, which asks the kernel to wake it there (`UsageThresholds`).
    var workingSetLines: [Double] {
        [usageWarningFraction - hysteresis, usageWarningFraction, usageCriticalFraction - hysteresis, usageCriticalFraction]
    }

    /// A level from a share with hysteresis. `rising`: higher shares are worse (usage);
    /// otherwise lower ones are (available memory).
    private func thresholdLevel(_ x: Double, current: PressureLevel, warning: Double, critical: Double, rising: Bool) -> PressureLevel {
        func above(_ threshold: Double, leaving: Bool) -> Bool {
            let t = leaving ? (rising ? threshold - hysteresis : threshold + hysteresis) : threshold
            return rising ? x >= t : x <= t
        }
        if above(critical, leaving: current == .critical) { return .critical }
        if above(warning, leaving: current >= .warning) { return .warning }
        return .normal
    }
}
