// The recommendation: this run's resume-cost curve joined with survival under a budget
// (`SwitchCostModel`, what `mempressure recommend` prints), and the survival model checked
// against what switching-bench measured on real processes (Reports/switching.json).

import BenchSupport
import Foundation
import MemPressureCachePolicies
import MemPressureSystem

/// The survival model against switching-bench: the same traces, apps and budgets replayed, the
/// resume share the model predicts beside the one jetsam's default policy gave.
struct SurvivalCheck: Codable, Sendable {
    var swap: String
    var budgetApps: Double
    var runs: Int
    /// Measured (mean over seeds, 95% percentile bootstrap) and replayed (mean over the same seeds).
    var measured: MeanInterval
    var modelled: Double

    /// From switching-bench's JSON in `directory`; none if it is missing or unreadable.
    static func load(from directory: String) -> (checks: [SurvivalCheck], note: String?) {
        struct Switching: Decodable {
            struct Run: Decodable {
                var policy: String
                var swap: String
                var budgetApps: Double
                var budgetBytes: UInt64
                var seed: UInt64
                var trim: Int?
                var resumeShare: Double
            }
            struct TraceInfo: Decodable {
                var seed: UInt64
                var apps: [String]
                var alpha: Double?
                var sessions: Int?
                var switches: Int
                var model: String?
                var switchCounts: [Int]?
            }
            var runs: [Run]
            var traces: [TraceInfo]
            var footprints: [UInt64]
        }
        let path = "\(directory)/switching.json"
        guard let data = FileManager.default.contents(atPath: path) else { return ([], "no \(path): the survival model was not checked against switching-bench") }
        let s: Switching
        do {
            s = try JSONDecoder().decode(Switching.self, from: data)
        } catch {
            return ([], "\(path) unreadable (\(error)): the survival model was not checked")
        }
        var checks: [SurvivalCheck] = []
        // jetsam's defaults with no swap: the model has no freeze-dry (with swap every app
        // lived in those runs, and the model's swap options keep every app too).
        // Its apps at trim 0 (the model's footprints are theirs with nothing trimmed).
        let runs = s.runs.filter { $0.policy == "default" && $0.swap == "none" && ($0.trim ?? 0) == 0 }
        for k in Array(Set(runs.map(\.budgetApps))).sorted() {
            // Both figures over the same runs: those whose trace the generator gives again.
            var measured: [Double] = [], modelled: [Double] = []
            for r in runs.filter({ $0.budgetApps == k }).sorted(by: { $0.seed < $1.seed }) {
                guard let info = s.traces.first(where: { $0.seed == r.seed }), info.apps.count == s.footprints.count, (info.model ?? "day") == "day" else { continue }
                let trace = SwitchTraceGenerator.day(apps: info.apps, alpha: info.alpha ?? 1, sessions: info.sessions ?? 0, seed: info.seed, timeScale: 1)
                guard trace.switches.count == info.switches, info.switchCounts.map({ $0 == trace.switchCounts }) ?? true else { continue }
                measured.append(r.resumeShare)
                modelled.append(SwitchCostModel.replay(trace, activeBytes: s.footprints, backgroundBytes: s.footprints, budgetBytes: r.budgetBytes).resumeShare)
            }
            guard !modelled.isEmpty else { continue }
            checks.append(SurvivalCheck(swap: "none", budgetApps: k, runs: measured.count, measured: MeanInterval(measured), modelled: modelled.reduce(0, +) / Double(modelled.count)))
        }
        return (checks, checks.isEmpty ? "\(path) has no runs of jetsam's defaults without swap: the survival model was not checked" : nil)
    }
}

extension ResumeReport {
    /// The budgets of the recommendation table, as room for this many apps at their active
    /// footprint: the switching benchmark's 3 and 5, and around them.
    static let recommendationRooms: [Double] = [2, 3, 4, 5, 6, 8]

    func recommendationSection() -> String {
        let curve: SwitchCostModel.Curve
        do {
            curve = try JSONDecoder().decode(SwitchCostModel.Curve.self, from: JSONEncoder().encode(self))
        } catch {
            return "\n## Recommendation\n\nNot computed: this report does not read back as a curve (\(error)).\n"
        }
        let usage = SwitchCostModel.Usage()
        var md = "\n## Recommendation: which trim, restore and swap for a budget\n\n"
        md += "This curve joined with survival under a budget (`SwitchCostModel`; `mempressure recommend --curve Reports/resume-relaunch.json --room K` prints the same for any budget or a scenario's): "
        md += "\(usage.apps) apps shaped like the model app, used over \(usage.seeds.count) generated days (LSApp's statistics, `SwitchTraceGenerator.day`, \(usage.sessions) sessions, Zipf \(ByteFormat.fixed(usage.alpha, 1)), seeds \(usage.seeds.first ?? 0)–\(usage.seeds.last ?? 0)), replayed on a device of the budget that kills background apps as jetsam's ios policy does (high memory first, least recently used first) whenever they hold more than 95% of it. "
        md += "In the background an app holds its footprint with nothing taken, or after a freeze-dry what stays resident plus, for zram, the memory zram takes for its pages (measured per round); the swap file is taken as large enough. "
        md += "A switch that finds its app alive waits for a resume under that option, any other for the app's relaunch (eager or lazy: an option each; a lazy restore goes with a lazy relaunch), page cache warm (after a kill under real pressure it may be colder: the cold columns above say by how much); the wait is the mean over the days with a 95% bootstrap interval over the days and the rounds. "
        let zram = cycles.filter { $0.condition == .zram && $0.decodeCost == nil }
        let stored = zram.compactMap(\.zramStoredBytes).reduce(0, +), used = zram.compactMap(\.zramMemoryBytes).reduce(0, +)
        if stored > 0, used > 0 {
            md += "zram took \(ByteFormat.fixed(Double(used) / Double(stored) * 100, 0))% of what it stored over this run's zram rounds: the model app's memory is pseudo-random and lz4 barely compresses it, so zram saves it little RAM here; data that compresses would make the zram options cheaper than this table says. "
        }
        md += "Kept: apps alive in the background per switch. Best: the lowest mean; *tied* lists the options whose interval reaches the best's.\n\n"
        guard let active = curve.activeBytes, active > 0 else { return md + "No option: the curve has no resume with nothing taken.\n" }
        for untilFull in [false, true] {
            let (options, notes) = curve.options(untilFull: untilFull)
            guard !options.isEmpty else { continue }
            md += untilFull ? "\n**Until fully working** (every released thing rebuilt):\n\n" : "**Until ready** (the first screen, what the switching benchmark times):\n\n"
            md += "| room (budget) | best | wait ms [95%] | kept | resumes | tied | no trim, no swap (eager): wait ms [95%], kept |\n|---|---|---:|---:|---:|---:|---|\n"
            for room in Self.recommendationRooms {
                let budget = UInt64(room * Double(active))
                let ranked = SwitchCostModel.rank(options, usage: usage, budgetBytes: budget)
                guard let best = ranked.first else { continue }
                let tied = SwitchCostModel.tiedWithBest(ranked)
                let plain = ranked.first { $0.option.trim == (options.map(\.trim).min() ?? 0) && $0.option.swap == "none" && $0.option.restore == "eager" && $0.option.relaunch == "eager" }
                func w(_ e: SwitchCostModel.Estimate) -> String { "\(ByteFormat.fixed(e.mean, 1)) [\(ByteFormat.fixed(e.low, 1)), \(ByteFormat.fixed(e.high, 1))]" }
                let cells: [String] = [
                    "\(ByteFormat.fixed(room, 0)) apps (\(mib(budget)) MiB)",
                    "trim \(best.option.trim)%, \(best.option.restore) restore, \(best.option.relaunch) relaunch, \(best.option.swapText)",
                    w(best.wait), ByteFormat.fixed(best.meanKept, 1), "\(ByteFormat.fixed(best.resumeShare * 100, 0))%", "\(tied)",
                    plain.map { "\(w($0.wait)), \(ByteFormat.fixed($0.meanKept, 1))" } ?? "–",
                ]
                md += "| \(cells.joined(separator: " | ")) |\n"
            }
            if !untilFull { for n in notes { md += "\nNote: \(n).\n" } }
        }
        if let checks = survivalChecks, !checks.isEmpty {
            md += "\n**The survival model against the switching benchmark** (its traces, apps and budgets replayed; measured: jetsam's defaults on real processes, mean over seeds [95% bootstrap]):\n\n"
            md += "| budget | runs | resume share measured | modelled |\n|---|---:|---:|---:|\n"
            for c in checks {
                md += "| room for \(ByteFormat.fixed(c.budgetApps, c.budgetApps == c.budgetApps.rounded() ? 0 : 1)) apps, \(c.swap == "none" ? "no swap" : c.swap) | \(c.runs) | \(ByteFormat.fixed(c.measured.mean * 100, 1))% [\(ByteFormat.fixed(c.measured.low * 100, 1)), \(ByteFormat.fixed(c.measured.high * 100, 1))] | \(ByteFormat.fixed(c.modelled * 100, 1))% |\n"
            }
            let outside = checks.filter { $0.modelled < $0.measured.low || $0.modelled > $0.measured.high }
            if outside.isEmpty {
                md += "\nThe model falls inside the measured interval at every budget.\n"
            } else {
                for c in outside {
                    let room = ByteFormat.fixed(c.budgetApps, 1)
                    md += c.modelled > c.measured.high
                        ? "\nAt room for \(room) the model keeps more apps alive than jetsam did on real processes (allocations race jetsam there, and it frees below the line when it acts): read its survival there as optimistic, its recommendations as leaning towards resuming.\n"
                        : "\nAt room for \(room) the model keeps fewer apps alive than jetsam did on real processes: read its survival there as pessimistic, its recommendations as leaning towards relaunching.\n"
                }
            }
        } else if let note = survivalNote {
            md += "\n\(note).\n"
        }
        return md + "\n"
    }
}
