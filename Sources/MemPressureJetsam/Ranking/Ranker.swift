import MemPressureLifecycleProtocol
import MemPressureValues
import MemPressureSystem

/// The jetsam ranker: a pure, deterministic function of a `RankingInput` and a `JetsamPolicy`.
///
/// Pure and deterministic by construction: no I/O, no clock, no randomness, and no `Set`,
/// `Dictionary` or `Hasher` anywhere in this module — duplicates are found by sorting, every
/// order is a total order on the apps' own fields (ending on the unique name), costs are summed
/// in whole microseconds and explanations are formatted with integer arithmetic. The same input
/// gives the same ranking, decision and text in any process, on any machine, whatever the
/// order of `input.apps`. (A test scans this module's sources for hashed collections.)
///
/// The rules every policy shares:
/// - protected and `notRunning` apps are never ranked: they are in `Ranking.spared`;
/// - an app whose memory reading is older than `policy.maxSampleAgeSeconds` is spared: never
///   kill on stale data; an app with a broken reading is spared as `.invalid` (see
///   `Validation` for what is an error, what is spared and what is repaired);
/// - the foreground (active) app is ranked after every other app, and `decide` takes it only
///   when pressure is critical and all the others together are not enough;
/// - ties end on footprint (larger first), then name bytes, then PID.
public enum Ranker {
    /// Ranks the input's candidates under the policy: rank 1 dies first.
    public static func rank(_ input: RankingInput, policy: JetsamPolicy = .default) throws(RankingError) -> Ranking {
        let prepared = try Prepared(input, policy: policy)
        let context = prepared.explainContext()
        let order = prepared.sorted.indices.map { prepared.rankedApp(at: $0, context: context) }
        return Ranking(
            policy: policy,
            order: order,
            spared: prepared.spared,
            highMemoryBytes: prepared.highMemoryBytes,
            neededBytes: prepared.needed,
            relaunchPriorSeconds: prepared.prior.seconds,
            relaunchPriorSource: prepared.prior.source
        )
    }

    /// Who to kill to bring `availableBytes` back to `targetAvailableBytes`.
    ///
    /// The victims are the ranking's candidates in rank order until their footprints together
    /// reach `neededBytes` (the cost policy ranks its least-cost set first, so this is that
    /// set). Purgeable bytes are not counted as freed: the kernel takes them without a kill, so
    /// they can never be a reason to kill. The foreground app is taken only at critical pressure
    /// after all the others; otherwise, if it would have been needed, it is in `spared` as
    /// `foregroundNotCritical` and the decision is not sufficient. Nothing needed, no victims.
    public static func decide(_ input: RankingInput, policy: JetsamPolicy = .default) throws(RankingError) -> Decision {
        let prepared = try Prepared(input, policy: policy)
        let needed = prepared.needed
        var taken = 0
        var freed: UInt64 = 0
        var foregroundBlocked = false
        if needed > 0 {
            for candidate in prepared.sorted {
                if freed >= needed { break }
                if candidate.isForeground, input.level != .critical {
                    foregroundBlocked = true
                    break
                }
                taken += 1
                freed = freed.saturatingAdd(candidate.snapshot.footprintBytes)
            }
        }
        let context = prepared.explainContext()
        let victims = (0..<taken).map { prepared.rankedApp(at: $0, context: context) }
        var spared = prepared.spared
        if foregroundBlocked {
            let blocked = prepared.sorted[taken...].filter(\.isForeground).map { candidate in
                Spared(
                    snapshot: candidate.snapshot,
                    reason: .foregroundNotCritical,
                    explanation: "the foreground app \(candidate.snapshot.name) would have been needed (the others free only \(Format.bytes(freed)) < \(Format.bytes(needed)) needed), but pressure is \(input.level), not critical"
                )
            }
            spared = Prepared.sortedSpared(spared + blocked)
        }
        let cost = prepared.sorted[0..<taken].reduce(UInt64(0)) { $0.saturatingAdd($1.estimate.costMicros) }
        return Decision(
            policy: policy.name,
            victims: victims,
            expectedFreedBytes: freed,
            neededBytes: needed,
            sufficient: freed >= needed,
            explanation: prepared.decisionExplanation(taken: taken, freed: freed, foregroundBlocked: foregroundBlocked, costMicros: cost),
            expectedCostSeconds: Double(cost) / 1e6,
            spared: spared
        )
    }
}

/// The input checked, classified and sorted under one policy: what `rank` and `decide` share.
struct Prepared: Sendable {
    var input: RankingInput
    var policy: JetsamPolicy
    /// The candidates in kill order.
    var sorted: [Candidate]
    var spared: [Spared]
    var highMemoryBytes: UInt64
    var needed: UInt64
    var prior: (seconds: Double, source: String)
    /// The input's names as bytes, by input index.
    var names: NameTable
    /// Cost policy: how its set was found, over how many candidates, and what it costs.
    var costMethod: CostSearchMethod?
    var costCandidateCount = 0

    init(_ input: RankingInput, policy: JetsamPolicy) throws(RankingError) {
        names = NameTable(input.apps)
        try Validation.checkInput(input, policy: policy, names: names)
        self.input = input
        self.policy = policy
        highMemoryBytes = policy.highMemory.bytes(budgetBytes: input.budgetBytes)
        needed = input.neededBytes
        prior = Validation.relaunchPrior(input, policy: policy)

        var candidates: [Candidate] = []
        candidates.reserveCapacity(input.apps.count)
        var spared: [Spared] = []
        for (inputIndex, app) in input.apps.enumerated() {
            if app.state == .notRunning {
                spared.append(Spared(snapshot: app, reason: .notRunning, explanation: "not running: no process to kill"))
            } else if app.isProtected {
                spared.append(Spared(snapshot: app, reason: .protected, explanation: "protected: never ranked, never killed"))
            } else if let (field, reason) = Validation.brokenReading(app) {
                spared.append(Spared(
                    snapshot: app,
                    reason: .invalid,
                    field: field,
                    explanation: "invalid reading: \(field) \(reason); never ranked on partial data"
                ))
            } else if app.sampleAgeSeconds > policy.maxSampleAgeSeconds {
                spared.append(Spared(
                    snapshot: app,
                    reason: .staleSample,
                    field: "sampleAgeSeconds",
                    explanation: "no fresh memory reading: read \(Format.seconds(app.sampleAgeSeconds)) before the decision, more than the \(Format.seconds(policy.maxSampleAgeSeconds)) allowed; never kill on stale data"
                ))
            } else {
                let (repairedApp, repairs) = Validation.repaired(app)
                candidates.append(Candidate(
                    snapshot: repairedApp,
                    inputIndex: inputIndex,
                    repairs: repairs,
                    estimate: ReuseEstimate(repairedApp, priorSeconds: prior.seconds, policy: policy)
                ))
            }
        }
        self.spared = Self.sortedSpared(spared)

        if policy.name == .cost {
            // The search runs over the candidates other than the foreground app, in canonical
            // order (footprint descending, name bytes, PID) for its tie-break.
            let views = candidates.map(\.view)
            let names = names
            let others = views.indices.filter { !candidates[$0].isForeground }.sorted {
                Policies.canonicallyPrecedes(views[$0], views[$1], names: names)
            }
            let (members, method) = CostSearch.leastCostSet(
                others.map { candidates[$0].costItem },
                needed: needed,
                exactLimit: policy.exactSearchLimit
            )
            for member in members { candidates[others[member]].inCostSet = true }
            costMethod = method
            costCandidateCount = others.count
        }
        for index in candidates.indices {
            Policies.assignBand(&candidates[index], policy: policy.name, highMemoryBytes: highMemoryBytes)
        }
        // Sort indices, not the (large) candidates themselves, then gather once.
        let policy = policy
        let views = candidates.map(\.view)
        let names = names
        let order = views.indices.sorted { Policies.precedes(views[$0], views[$1], policy: policy, names: names) }
        sorted = order.map { candidates[$0] }
    }

    /// Spared apps by name bytes, then PID, then reason: independent of the input's order.
    static func sortedSpared(_ spared: [Spared]) -> [Spared] {
        spared.sorted { a, b in
            let names = compareNameBytes(a.snapshot.name, b.snapshot.name)
            if names != 0 { return names < 0 }
            if a.snapshot.pid != b.snapshot.pid { return a.snapshot.pid < b.snapshot.pid }
            return a.reason.rawValue.utf8.lexicographicallyPrecedes(b.reason.rawValue.utf8)
        }
    }
}
