import MemPressureLifecycleProtocol
import MemPressureSystem

/// What the ranker checks before it ranks, and what it does with each kind of fault.
///
/// Errors (the input is refused, see `RankingError`): a format version other than 1; a policy
/// tunable out of range; `budgetBytes` 0; `availableBytes` or `targetAvailableBytes` above
/// `budgetBytes`; an empty name; a PID ≤ 0 for an app that is not `notRunning`; two apps with
/// the same name (by UTF-8 bytes); two apps that are not `notRunning` with the same PID.
///
/// Spared with `.invalid` (that app is not ranked, the others are): a `sampleAgeSeconds`,
/// `secondsInState`, `secondsSinceActive` or `secondsSinceLaunch` that is NaN, infinite or negative; `activations`
/// below 0; a `relaunchSeconds` that is NaN, negative or above one day; `activations` above 0
/// with no `secondsSinceActive` for an app that is not in the foreground (its recency is unknown, and
/// recency orders several policies: never rank on partial data).
///
/// Repaired (the repair is listed in the ranked app's factors as "repaired"):
/// - `lifetimeMaxFootprintBytes` below `footprintBytes`: raised to the footprint (the maximum
///   is sampled less often than the footprint);
/// - an `active` app whose `secondsSinceActive` is not 0: set to 0 (the state is the newer
///   fact; the timer was read before the switch);
/// - `activations` 0 for an app that has a `secondsSinceActive`: raised to 1 (it was active at
///   least once).
///
/// Not checked: `purgeableBytes` and `residentBytes` against the footprint (swap puts the
/// footprint above the resident size legitimately; purgeable is only reported); `notRunning`
/// apps' readings (they are never candidates).
enum Validation {
    /// A relaunch time above this (one day) is not a launch measurement.
    static let maximumRelaunchSeconds = 86_400.0

    /// The input-level and identity checks that refuse an input.
    static func checkInput(_ input: RankingInput, policy: JetsamPolicy, names: NameTable) throws(RankingError) {
        guard input.formatVersion == RankingInput.currentFormatVersion else {
            throw .unsupportedFormatVersion(input.formatVersion)
        }
        try policy.validate()
        guard input.budgetBytes > 0 else {
            throw .invalidInput(field: "budgetBytes", reason: "is 0")
        }
        guard input.availableBytes <= input.budgetBytes else {
            throw .invalidInput(
                field: "availableBytes",
                reason: "\(input.availableBytes) exceeds budgetBytes \(input.budgetBytes)"
            )
        }
        guard input.targetAvailableBytes <= input.budgetBytes else {
            throw .invalidInput(
                field: "targetAvailableBytes",
                reason: "\(input.targetAvailableBytes) exceeds budgetBytes \(input.budgetBytes): no kill can reach it"
            )
        }
        for app in input.apps {
            guard !app.name.isEmpty else {
                throw .invalidField(app: app.name, field: "name", reason: "is empty (PID \(app.pid))")
            }
            if app.state != .notRunning, app.pid <= 0 {
                throw .invalidField(
                    app: app.name,
                    field: "pid",
                    reason: "is \(app.pid), but a \(app.state.rawValue) app has a process"
                )
            }
        }
        // Duplicates by sorting, not hashing: no Set or Dictionary decides anything here.
        let byName = input.apps.indices.sorted { names.compare($0, $1) < 0 }
        for (a, b) in zip(byName, byName.dropFirst()) where names.compare(a, b) == 0 {
            throw .duplicateName(input.apps[a].name)
        }
        let pids = input.apps.filter { $0.state != .notRunning }.map(\.pid).sorted()
        for (a, b) in zip(pids, pids.dropFirst()) where a == b {
            throw .duplicatePID(a)
        }
    }

    /// The first broken reading of a candidate app, as (field, reason); nil when all are sound.
    static func brokenReading(_ app: JetsamAppSnapshot) -> (field: String, reason: String)? {
        func badSeconds(_ value: Double) -> Bool { !(value.isFinite && value >= 0) }
        if badSeconds(app.sampleAgeSeconds) {
            return ("sampleAgeSeconds", "is \(app.sampleAgeSeconds), not a finite number ≥ 0")
        }
        if badSeconds(app.secondsInState) {
            return ("secondsInState", "is \(app.secondsInState), not a finite number ≥ 0")
        }
        if let since = app.secondsSinceActive, badSeconds(since) {
            return ("secondsSinceActive", "is \(since), not a finite number ≥ 0")
        }
        if let since = app.secondsSinceLaunch, badSeconds(since) {
            return ("secondsSinceLaunch", "is \(since), not a finite number ≥ 0")
        }
        if app.activations < 0 {
            return ("activations", "is \(app.activations), below 0")
        }
        if let relaunch = app.relaunchSeconds, !(relaunch >= 0 && relaunch <= maximumRelaunchSeconds) {
            return ("relaunchSeconds", "is \(relaunch), not in [0, \(Int(maximumRelaunchSeconds))] s")
        }
        if app.activations > 0, app.secondsSinceActive == nil, app.state != .active, app.state != .inactive {
            return ("secondsSinceActive", "is missing although activations is \(app.activations): recency unknown")
        }
        return nil
    }

    /// Applies the documented repairs; returns the repaired snapshot and a factor per repair.
    static func repaired(_ app: JetsamAppSnapshot) -> (JetsamAppSnapshot, [Factor]) {
        var app = app
        var notes: [Factor] = []
        if app.lifetimeMaxFootprintBytes < app.footprintBytes {
            notes.append(Factor(
                name: "repaired",
                value: "lifetimeMaxFootprintBytes",
                detail: "was \(Format.bytes(app.lifetimeMaxFootprintBytes)), below the footprint \(Format.bytes(app.footprintBytes)); raised to the footprint"
            ))
            app.lifetimeMaxFootprintBytes = app.footprintBytes
        }
        if app.state == .active, app.secondsSinceActive != 0 {
            let was = app.secondsSinceActive.map { Format.seconds($0) } ?? "missing"
            notes.append(Factor(
                name: "repaired",
                value: "secondsSinceActive",
                detail: "was \(was) for the active app; set to 0 (the state is the newer fact)"
            ))
            app.secondsSinceActive = 0
        }
        if app.secondsSinceActive != nil, app.activations == 0 {
            notes.append(Factor(
                name: "repaired",
                value: "activations",
                detail: "was 0 although the app has been active; raised to 1"
            ))
            app.activations = 1
        }
        return (app, notes)
    }

    /// The median of `values` (nil when empty): the middle one, or the mean of the middle two.
    static func median(_ values: [Double]) -> Double? {
        guard !values.isEmpty else { return nil }
        let s = values.sorted()
        let middle = s.count / 2
        return s.count % 2 == 1 ? s[middle] : (s[middle - 1] + s[middle]) / 2
    }

    /// The relaunch prior: the median of the measured relaunch times in the input (any app whose
    /// value is sound, running or not: each is a measurement of this machine), else the policy's
    /// default.
    static func relaunchPrior(_ input: RankingInput, policy: JetsamPolicy) -> (seconds: Double, source: String) {
        let known = input.apps.compactMap(\.relaunchSeconds)
            .filter { $0 >= 0 && $0 <= maximumRelaunchSeconds }
            .sorted()
        guard !known.isEmpty else {
            return (policy.defaultRelaunchSeconds, "policy default (no app has a measured relaunch time)")
        }
        let median = Self.median(known) ?? policy.defaultRelaunchSeconds
        let noun = known.count == 1 ? "the one measured relaunch time" : "median of \(known.count) measured relaunch times"
        return (median, noun)
    }
}
