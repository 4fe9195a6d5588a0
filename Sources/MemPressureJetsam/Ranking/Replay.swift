// Replay: one recorded input decided under several policies, side by side, with what each
// decision would have cost in relaunch time. Deterministic like the ranker: the same input gives
// the same value, and so the same JSON with sorted keys, in any process.

import MemPressureValues
import MemPressureSystem

/// What each policy would have killed for one recorded `RankingInput`, and what it would have
/// cost.
public struct JetsamReplay: Sendable, Hashable, Codable {
    /// The version of this format (1).
    public var formatVersion: Int
    /// The bytes the input asked for (`targetAvailableBytes − availableBytes`).
    public var neededBytes: UInt64
    /// The input's pressure level: it decides whether the foreground app may be taken.
    public var level: PressureLevel
    /// One outcome per policy, in the order the policies were given.
    public var outcomes: [Outcome]

    public static let currentFormatVersion = 1

    /// One policy's decision and its cost.
    public struct Outcome: Sendable, Hashable, Codable {
        public var policy: JetsamPolicy
        public var decision: Decision
        /// The victims' names in kill order.
        public var victimNames: [String]
        /// The victims' relaunch times summed, each measured or else the prior: what the kills
        /// cost if every victim is launched again.
        public var relaunchSecondsTotal: Double
        /// The relaunch time assumed for victims without a measured one.
        public var relaunchPriorSeconds: Double
        /// Where the prior comes from.
        public var relaunchPriorSource: String
        /// Victims whose relaunch time is the prior, not a measurement.
        public var victimsWithoutMeasuredRelaunch: [String]
        /// The cost model's expected cost: each victim's relaunch time times its probability of
        /// reuse within the horizon (see CostPolicy.swift), summed.
        public var expectedCostSeconds: Double
        /// How the total was reached, e.g. "Mail 1.20 s + Maps 1.00 s (prior) = 2.20 s; prior:
        /// median of 3 measured relaunch times".
        public var costExplanation: String

        public init(
            policy: JetsamPolicy,
            decision: Decision,
            victimNames: [String],
            relaunchSecondsTotal: Double,
            relaunchPriorSeconds: Double,
            relaunchPriorSource: String,
            victimsWithoutMeasuredRelaunch: [String],
            expectedCostSeconds: Double,
            costExplanation: String
        ) {
            self.policy = policy
            self.decision = decision
            self.victimNames = victimNames
            self.relaunchSecondsTotal = relaunchSecondsTotal
            self.relaunchPriorSeconds = relaunchPriorSeconds
            self.relaunchPriorSource = relaunchPriorSource
            self.victimsWithoutMeasuredRelaunch = victimsWithoutMeasuredRelaunch
            self.expectedCostSeconds = expectedCostSeconds
            self.costExplanation = costExplanation
        }
    }

    /// Decides `input` under each policy (by default every policy with the default tunables).
    /// Throws the first error met, in policy order: the input is the same for all, so a bad
    /// input fails under the first policy, a bad tunable under its own policy.
    public init(_ input: RankingInput, policies: [JetsamPolicy] = JetsamPolicy.all()) throws(RankingError) {
        formatVersion = Self.currentFormatVersion
        neededBytes = input.neededBytes
        level = input.level
        var outcomes: [Outcome] = []
        outcomes.reserveCapacity(policies.count)
        for policy in policies {
            let decision = try Ranker.decide(input, policy: policy)
            let prior = Validation.relaunchPrior(input, policy: policy)
            var total = 0.0
            var terms: [String] = []
            var unmeasured: [String] = []
            for victim in decision.victims {
                let seconds = victim.snapshot.relaunchSeconds ?? prior.seconds
                total += seconds
                if victim.snapshot.relaunchSeconds == nil {
                    unmeasured.append(victim.snapshot.name)
                    terms.append("\(victim.snapshot.name) \(Format.seconds(seconds)) (prior)")
                } else {
                    terms.append("\(victim.snapshot.name) \(Format.seconds(seconds))")
                }
            }
            var text = terms.isEmpty
                ? "no victims: nothing to relaunch"
                : (terms.count > 8
                    ? terms.prefix(8).joined(separator: " + ") + " + \(terms.count - 8) more = \(Format.seconds(total))"
                    : terms.joined(separator: " + ") + " = \(Format.seconds(total))")
            if !unmeasured.isEmpty {
                text += "; \(unmeasured.count) without a measured relaunch time, assumed \(Format.seconds(prior.seconds)) (\(prior.source))"
            }
            let expected = decision.expectedCostSeconds ?? 0
            text += "; expected cost \(Format.seconds(expected)) (relaunch × probability of reuse within \(Format.seconds(policy.reuseHorizonSeconds)))"
            outcomes.append(Outcome(
                policy: policy,
                decision: decision,
                victimNames: decision.victims.map(\.snapshot.name),
                relaunchSecondsTotal: total,
                relaunchPriorSeconds: prior.seconds,
                relaunchPriorSource: prior.source,
                victimsWithoutMeasuredRelaunch: unmeasured,
                expectedCostSeconds: expected,
                costExplanation: text
            ))
        }
        self.outcomes = outcomes
    }

    /// The outcomes side by side as a plain-text table, one row per policy.
    public func table() -> String {
        let header = ["policy", "victims", "freed", "needed", "enough", "relaunch", "expected cost"]
        var rows = [header]
        for outcome in outcomes {
            let d = outcome.decision
            let names = outcome.victimNames.isEmpty ? "-" : Format.list(outcome.victimNames, limit: 6)
            rows.append([
                outcome.policy.name.rawValue,
                names,
                Format.bytes(d.expectedFreedBytes),
                Format.bytes(d.neededBytes),
                d.sufficient ? "yes" : "no",
                Format.seconds(outcome.relaunchSecondsTotal) + (outcome.victimsWithoutMeasuredRelaunch.isEmpty ? "" : "*"),
                Format.seconds(outcome.expectedCostSeconds),
            ])
        }
        var widths = [Int](repeating: 0, count: header.count)
        for row in rows {
            for (column, cell) in row.enumerated() { widths[column] = max(widths[column], cell.count) }
        }
        var lines = rows.map { row in
            row.enumerated().map { column, cell in
                column == row.count - 1 ? cell : cell + String(repeating: " ", count: widths[column] - cell.count)
            }.joined(separator: "  ")
        }
        if outcomes.contains(where: { !$0.victimsWithoutMeasuredRelaunch.isEmpty }) {
            lines.append("* includes victims without a measured relaunch time, counted at the prior")
        }
        return lines.joined(separator: "\n") + "\n"
    }
}
