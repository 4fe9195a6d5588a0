import MemPressureLifecycleProtocol
import MemPressureValues
import MemPressureSystem

// Explanations: the point of the project. Every ranked app says why it is at its rank, factor
// by factor, and why it is ahead of the next one (the first key on which they differ); every
// decision says why it stops where it stops. The text is built from the same keys the sort used,
// so it cannot disagree with the order.

/// What explanations need beyond one candidate: its place in its band, the cost set's totals.
struct ExplainContext {
    var positionInBand: [Int]
    var bandCount: [Int]
    var costSetCount = 0
    var costSetBytes: UInt64 = 0
    var costSetMicros: UInt64 = 0
}

extension Prepared {
    func explainContext() -> ExplainContext {
        var position = [Int](repeating: 1, count: sorted.count)
        var count = [Int](repeating: 1, count: sorted.count)
        var start = 0
        while start < sorted.count {
            var end = start + 1
            while end < sorted.count, sorted[end].bandOrder == sorted[start].bandOrder { end += 1 }
            for i in start..<end {
                position[i] = i - start + 1
                count[i] = end - start
            }
            start = end
        }
        var context = ExplainContext(positionInBand: position, bandCount: count)
        for candidate in sorted where candidate.inCostSet {
            context.costSetCount += 1
            context.costSetBytes = context.costSetBytes.saturatingAdd(candidate.snapshot.footprintBytes)
            context.costSetMicros = context.costSetMicros.saturatingAdd(candidate.estimate.costMicros)
        }
        return context
    }

    /// The ranked app at `index` of `sorted`, with its factors and explanation.
    func rankedApp(at index: Int, context: ExplainContext) -> RankedApp {
        let candidate = sorted[index]
        let rank = index + 1
        var text = "rank \(rank) of \(sorted.count): band \(candidate.band) (\(bandDetail(candidate, context: context)))"
        let keys = Policies.keys(policy: policy, bandOrder: candidate.bandOrder)
        if context.bandCount[index] == 1 {
            text += "; alone in its band"
        } else {
            text += "; \(Format.ordinal(context.positionInBand[index])) of \(context.bandCount[index]) in its band (\(rule(keys[0])))"
        }
        if policy.name == .cost {
            text += "; expected relaunch cost \(costText(candidate))"
        }
        if index + 1 < sorted.count {
            let next = sorted[index + 1]
            text += "; ahead of \(next.snapshot.name) (rank \(rank + 1)): \(aheadReason(candidate, next, context: context))"
        } else {
            text += "; last: no candidate after it"
        }
        if candidate.snapshot.footprintBytes > input.budgetBytes {
            text += "; its footprint \(Format.bytes(candidate.snapshot.footprintBytes)) exceeds the whole budget \(Format.bytes(input.budgetBytes)): a relaunch cannot fit"
        }
        return RankedApp(
            rank: rank,
            snapshot: candidate.snapshot,
            band: candidate.band,
            bandOrder: candidate.bandOrder,
            factors: factors(candidate, keys: keys, context: context),
            explanation: text,
            expectedCostSeconds: candidate.estimate.costSeconds
        )
    }

    // MARK: Bands

    private var foregroundDetail: String {
        "the active app: after every other app, taken only at critical pressure when all the others are not enough"
    }

    private var highMemoryText: String { "high-memory \(Format.bytes(highMemoryBytes))" }

    /// Why the candidate is in its band.
    func bandDetail(_ c: Candidate, context: ExplainContext) -> String {
        let footprint = Format.bytes(c.snapshot.footprintBytes)
        let high = c.snapshot.footprintBytes >= highMemoryBytes
        if c.isForeground { return foregroundDetail }
        switch policy.name {
        case .ios:
            switch c.snapshot.state {
            case .suspended:
                return "suspended, footprint \(footprint) \(high ? "≥" : "<") \(highMemoryText)"
            case .backgroundRunning:
                return "running in the background, footprint \(footprint) \(high ? "≥" : "<") \(highMemoryText)"
            default:
                return "in the foreground but not receiving events (launching or interrupted): after every background app"
            }
        case .xnu:
            switch c.snapshot.state {
            case .suspended: return "suspended: JETSAM_PRIORITY_IDLE (0), the lowest band"
            case .backgroundRunning: return "running in the background: JETSAM_PRIORITY_BACKGROUND (3)"
            default: return "in the foreground, not receiving events: JETSAM_PRIORITY_FOREGROUND (10)"
            }
        case .lmkd:
            switch c.snapshot.state {
            case .suspended: return "suspended: cached, oom_score_adj 900; above 200 lmkd takes the least recently used"
            case .backgroundRunning: return "running in the background: service, oom_score_adj 500; above 200 lmkd takes the least recently used"
            default: return "in the foreground, not receiving events: visible, oom_score_adj 100; at or below 200 lmkd takes the heaviest"
            }
        case .largest:
            return "not the foreground app: ranked by badness alone, whatever its state (the kernel knows no foreground)"
        case .lru:
            return "not the foreground app: ranked by recency alone, whatever its size"
        case .cost:
            if c.inCostSet {
                if costMethod == .infeasible {
                    return "all \(costCandidateCount) candidates other than the foreground app together free only \(Format.bytes(context.costSetBytes)) < \(Format.bytes(needed)) needed, so all are taken, the largest first"
                }
                return "in the least-cost set that frees the \(Format.bytes(needed)) needed: \(context.costSetCount) \(context.costSetCount == 1 ? "app" : "apps"), \(Format.bytes(context.costSetBytes)), expected relaunch cost \(Format.seconds(Double(context.costSetMicros) / 1e6)) (\(costMethodText)); the largest dies first"
            }
            if needed == 0 {
                return "nothing is needed now: ordered by expected relaunch cost per byte freed"
            }
            return "not needed in the least-cost set: ordered by expected relaunch cost per byte freed"
        }
    }

    var costMethodText: String {
        switch costMethod {
        case .exact?: "exact search over \(costCandidateCount) candidates"
        case .greedy?: "greedy by cost per byte over \(costCandidateCount) candidates, more than the exact-search limit \(policy.exactSearchLimit), unnecessary victims dropped"
        case .infeasible?: "all \(costCandidateCount) candidates are not enough"
        case .nothingNeeded?, nil: "nothing needed"
        }
    }

    private func rule(_ key: OrderKey) -> String {
        switch key {
        case .footprint: "largest footprint first"
        case .badness: "largest badness first"
        case .resident: "heaviest resident size first"
        case .leastRecent: "least recently used first"
        case .costPerByte: "lowest expected cost per byte freed first"
        case .name: "name bytes first"
        case .pid: "lowest PID first"
        }
    }

    // MARK: Ahead of the next

    /// Why `a` is ranked just before `b`.
    func aheadReason(_ a: Candidate, _ b: Candidate, context: ExplainContext) -> String {
        guard let (decisiveKey, _) = Policies.decisive(a.view, b.view, policy: policy, names: names) else {
            return "the same app"
        }
        guard let key = decisiveKey else {
            return "band \(a.band) comes before \(b.snapshot.name)'s band \(b.band) (\(bandDetail(b, context: context)))"
        }
        var parts = ["same band"]
        let keys = Policies.keys(policy: policy, bandOrder: a.bandOrder)
        for index in 0..<keys.count {
            if keys[index] == key { break }
            parts.append(sameText(keys[index], a))
        }
        parts.append(differenceText(key, a, b))
        return parts.joined(separator: ", ")
    }

    private func sameText(_ key: OrderKey, _ c: Candidate) -> String {
        switch key {
        case .footprint: return "same footprint \(Format.bytes(c.snapshot.footprintBytes))"
        case .badness: return "same badness \(Format.bytes(c.badness))"
        case .resident: return "same resident size \(Format.bytes(c.snapshot.residentBytes))"
        case .leastRecent:
            guard let since = c.snapshot.lastUseSeconds else { return "both never active" }
            return LastUse(c.snapshot) == .active ? "both active \(Format.seconds(since)) ago" : "both used \(Format.seconds(since)) ago"
        case .costPerByte: return "same expected cost per byte"
        case .name: return "same name"
        case .pid: return "same PID"
        }
    }

    private func differenceText(_ key: OrderKey, _ a: Candidate, _ b: Candidate) -> String {
        switch key {
        case .footprint:
            let (x, y) = Format.bytesPair(a.snapshot.footprintBytes, b.snapshot.footprintBytes)
            return "larger footprint (\(x) > \(y))"
        case .badness:
            let (x, y) = Format.bytesPair(a.badness, b.badness)
            return "larger badness (\(x) > \(y))"
        case .resident:
            let (x, y) = Format.bytesPair(a.snapshot.residentBytes, b.snapshot.residentBytes)
            return "heavier (resident \(x) > \(y))"
        case .leastRecent:
            guard let x = a.snapshot.lastUseSeconds else {
                let y: String
                switch LastUse(b.snapshot) {
                case .active: y = "was active \(Format.seconds(b.snapshot.secondsSinceActive ?? 0)) ago"
                case .launched, .relaunched: y = "was launched \(Format.seconds(b.snapshot.secondsSinceLaunch ?? 0)) ago"
                case .foreground: y = "is in the foreground"
                case .never: y = "was never active either"
                }
                return "never active, while \(b.snapshot.name) \(y)"
            }
            let (sx, sy) = Format.secondsPair(x, b.snapshot.lastUseSeconds ?? 0)
            let (ka, kb) = (LastUse(a.snapshot), LastUse(b.snapshot))
            if ka == .active && kb == .active { return "less recently active (\(sx) ago vs \(sy) ago)" }
            return "less recently used (\(sx) ago vs \(sy) ago: \(ka.text) vs \(kb.text))"
        case .costPerByte:
            if b.snapshot.footprintBytes == 0 {
                return "\(b.snapshot.name) frees nothing"
            }
            return "cheaper per byte freed (expected cost \(Format.seconds(a.estimate.costSeconds)) for \(Format.bytes(a.snapshot.footprintBytes)) vs \(Format.seconds(b.estimate.costSeconds)) for \(Format.bytes(b.snapshot.footprintBytes)))"
        case .name:
            return "name sorts first by bytes (\(Format.quoted(a.snapshot.name)) < \(Format.quoted(b.snapshot.name)))"
        case .pid:
            return "lower PID (\(a.snapshot.pid) < \(b.snapshot.pid))"
        }
    }

    /// "in the foreground (inactive): in use now", "last active 30 s ago", "launched 4 s ago, never active".
    static func useText(_ s: JetsamAppSnapshot) -> String {
        switch LastUse(s) {
        case .foreground: "in the foreground (\(s.state.rawValue)): in use now"
        case .active: "last active \(Format.seconds(s.secondsSinceActive ?? 0)) ago"
        case .launched: "launched \(Format.seconds(s.secondsSinceLaunch ?? 0)) ago, never active"
        case .relaunched: "relaunched \(Format.seconds(s.secondsSinceLaunch ?? 0)) ago (last active \(Format.seconds(s.secondsSinceActive ?? 0)) ago, in an earlier run)"
        case .never: "never active"
        }
    }

    // MARK: Factors

    private func costText(_ c: Candidate) -> String {
        "\(Format.seconds(c.estimate.costSeconds)) = relaunch \(Format.seconds(c.estimate.relaunchSeconds))\(c.estimate.relaunchIsPrior ? " (the prior)" : "") × P(reuse within \(Format.seconds(policy.reuseHorizonSeconds))) \(Format.probability(c.estimate.probability))"
    }

    func factors(_ c: Candidate, keys: KeyList, context: ExplainContext) -> [Factor] {
        let s = c.snapshot
        var factors = [Factor(name: "band", value: c.band.rawValue, detail: bandDetail(c, context: context))]
        for index in 0..<keys.count {
            switch keys[index] {
            case .footprint:
                factors.append(Factor(
                    name: "footprint",
                    value: Format.bytes(s.footprintBytes),
                    detail: "what a kill gives back: the dirty memory it alone holds plus its swap"
                ))
            case .badness:
                factors.append(Factor(
                    name: "badness",
                    value: Format.bytes(c.badness),
                    detail: "max(resident \(Format.bytes(s.residentBytes)), footprint \(Format.bytes(s.footprintBytes))): the kernel's rss + swap, as near as a snapshot tells"
                ))
            case .resident:
                factors.append(Factor(
                    name: "resident",
                    value: Format.bytes(s.residentBytes),
                    detail: "lmkd's heaviest: the resident size"
                ))
            case .leastRecent:
                factors.append(Factor(
                    name: "since used",
                    value: s.lastUseSeconds.map { Format.seconds($0) } ?? "never",
                    detail: s.lastUseSeconds == nil
                        ? "never active and no launch time known: the least recently used"
                        : "\(Self.useText(s)); least recently used first in its band"
                ))
            case .costPerByte, .name, .pid:
                break
            }
        }
        switch policy.name {
        case .ios:
            let detail: String
            switch policy.highMemory {
            case .bytes: detail = "set in bytes; footprint at or above it is high memory"
            case .shareOfBudget(let share):
                detail = "\(Format.percent(share)) of the budget \(Format.bytes(input.budgetBytes)); footprint at or above it is high memory"
            }
            factors.append(Factor(name: "high-memory", value: Format.bytes(highMemoryBytes), detail: detail))
        case .xnu:
            let priority = switch s.state {
            case .suspended: ("0", "JETSAM_PRIORITY_IDLE")
            case .backgroundRunning: ("3", "JETSAM_PRIORITY_BACKGROUND")
            default: ("10", "JETSAM_PRIORITY_FOREGROUND")
            }
            factors.append(Factor(name: "priority", value: priority.0, detail: priority.1))
        case .lmkd:
            let adj = switch s.state {
            case .suspended: ("900", "cached")
            case .backgroundRunning: ("500", "service")
            case .inactive: ("100", "visible")
            default: ("0", "foreground")
            }
            factors.append(Factor(name: "oom_score_adj", value: adj.0, detail: adj.1))
        case .largest, .lru:
            break
        case .cost:
            let e = c.estimate
            factors.append(Factor(
                name: "relaunch",
                value: Format.seconds(e.relaunchSeconds),
                detail: e.relaunchIsPrior ? "no measurement: the prior, \(prior.source)" : "measured launch to ready"
            ))
            let reuseDetail: String
            if s.state == .inactive {
                // As CostPolicy reads it: in the foreground now, g = 0.
                reuseDetail = "in the foreground (inactive): in use now, g = 0; activations \(s.activations), horizon \(Format.seconds(policy.reuseHorizonSeconds)): rate (max(k, 1) + 1) / H, P = rate·H / (1 + rate·H)"
            } else if let since = s.secondsSinceActive {
                reuseDetail = "activations \(s.activations), active \(Format.seconds(since)) ago, horizon \(Format.seconds(policy.reuseHorizonSeconds)): rate (k + 1) / (g + H), P = rate·H / (1 + rate·H)\(e.probability == policy.minimumReuseProbability ? ", raised to the minimum" : "")"
            } else {
                reuseDetail = "never active since launch: the minimum \(Format.probability(policy.minimumReuseProbability))"
            }
            factors.append(Factor(name: "reuse probability", value: Format.probability(e.probability), detail: reuseDetail))
            factors.append(Factor(
                name: "expected cost",
                value: Format.seconds(e.costSeconds),
                detail: "relaunch × reuse probability"
            ))
        }
        if s.purgeableBytes > 0 {
            factors.append(Factor(
                name: "purgeable",
                value: Format.bytes(s.purgeableBytes),
                detail: "not counted: the kernel takes it without a kill"
            ))
        }
        factors += c.repairs
        if s.footprintBytes > input.budgetBytes {
            factors.append(Factor(
                name: "budget",
                value: "exceeded",
                detail: "footprint \(Format.bytes(s.footprintBytes)) > budget \(Format.bytes(input.budgetBytes)): a relaunch cannot fit"
            ))
        }
        return factors
    }

    // MARK: The decision

    func decisionExplanation(taken: Int, freed: UInt64, foregroundBlocked: Bool, costMicros: UInt64) -> String {
        let head = "policy \(policy.name.rawValue), pressure \(input.level)"
        guard needed > 0 else {
            return "\(head): available \(Format.bytes(input.availableBytes)) ≥ target \(Format.bytes(input.targetAvailableBytes)): nothing to kill" + sparedText
        }
        var parts = ["\(head): need \(Format.bytes(needed)) (target available \(Format.bytes(input.targetAvailableBytes)) − available \(Format.bytes(input.availableBytes)))"]
        let victims = sorted[0..<taken]
        // Victims are a prefix of `sorted`: victim i has rank i + 1.
        let labelled = victims.enumerated().map { index, candidate in
            (candidate, "\(candidate.snapshot.name) (rank \(index + 1), \(Format.bytes(candidate.snapshot.footprintBytes)))")
        }
        let others = labelled.filter { !$0.0.isForeground }
        let foreground = labelled.filter { $0.0.isForeground }
        let victimList = Format.list(others.map(\.1))
        if foreground.isEmpty {
            if sorted.isEmpty {
                parts.append("no candidate to kill")
            } else if taken == 0 {
                parts.append("no candidate other than the foreground app")
            } else if freed >= needed {
                parts.append("\(victimList) \(taken == 1 ? "frees" : "free") \(Format.bytes(freed)) ≥ \(Format.bytes(needed)) needed")
            } else {
                parts.append("all \(taken) candidates other than the foreground app (\(victimList)) free only \(Format.bytes(freed)) < \(Format.bytes(needed)) needed")
            }
        } else {
            let othersFreed = others.reduce(UInt64(0)) { $0.saturatingAdd($1.0.snapshot.footprintBytes) }
            parts.append(others.isEmpty
                ? "no candidate other than the foreground app"
                : "the others (\(victimList)) free only \(Format.bytes(othersFreed)) < \(Format.bytes(needed)) needed")
            let names = Format.list(foreground.map(\.1))
            parts.append("pressure is critical: the foreground app \(names) taken last; together \(Format.bytes(freed)) \(freed >= needed ? "≥" : "<") \(Format.bytes(needed)) needed")
        }
        if taken > 0 {
            let cost = Format.seconds(Double(costMicros) / 1e6)
            if policy.name == .cost, let method = costMethod, method == .exact || method == .greedy {
                parts.append("the least expected relaunch cost, \(cost) (\(costMethodText))")
            } else {
                parts.append("expected relaunch cost \(cost)")
            }
        }
        if freed >= needed {
            if taken < sorted.count {
                let next = sorted[taken]
                parts.append("\(next.snapshot.name) (rank \(taken + 1)) not needed")
            }
        } else if foregroundBlocked {
            let names = Format.list(sorted[taken...].filter(\.isForeground).map(\.snapshot.name))
            parts.append("the foreground app \(names) spared: pressure is \(input.level), not critical; not sufficient")
        } else {
            parts.append("nothing else to kill; not sufficient")
        }
        let purgeable = victims.reduce(UInt64(0)) { $0.saturatingAdd($1.snapshot.purgeableBytes) }
        if purgeable > 0 {
            parts.append("the victims' \(Format.bytes(purgeable)) purgeable not counted (the kernel takes it without a kill)")
        }
        return parts.joined(separator: "; ") + sparedText
    }

    private var sparedText: String {
        guard !spared.isEmpty else { return "" }
        let items = spared.map { "\($0.snapshot.name) (\(sparedLabel($0.reason)))" }
        return "; spared: " + Format.list(items)
    }

    private func sparedLabel(_ reason: SpareReason) -> String {
        switch reason {
        case .protected: "protected"
        case .notRunning: "not running"
        case .staleSample: "stale sample"
        case .invalid: "invalid reading"
        case .foregroundNotCritical: "foreground, not critical"
        }
    }
}
