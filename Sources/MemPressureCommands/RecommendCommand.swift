import MemPressureOneShot
import ArgumentParser
import FoundationEssentials
import Glibc
import MemPressureCachePolicies
import MemPressureScenarios
import MemPressureSystem
import MemPressureVMTracker

/// `mempressure recommend`: the trim level, restore mode and swap configuration with the lowest
/// expected wait per app switch, for a device budget and a usage pattern (`SwitchCostModel`).
struct Recommend: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "recommend",
        abstract: "The trim level, restore mode and swap with the lowest expected wait per app switch, for a budget and a usage pattern.",
        discussion: """
            Joins a resume-cost curve (resume-bench's Reports/resume-relaunch.json: what a resume \
            and a relaunch of the model app cost at each trim level, restore mode and swap \
            configuration, and what the app then holds in the background) with survival under the \
            budget: generated days of app switching (LSApp's statistics, SwitchTraceGenerator.day, \
            one per seed) are replayed against a device of that budget holding N apps of the \
            curve's shape, killing background apps as jetsam's ios policy does (high memory first, \
            least recently used first) whenever they hold more than 95% of it. Each switch that \
            finds its app alive waits for a resume, each other one for a relaunch; the wait per \
            switch is averaged over the days, with a 95% bootstrap interval over the days and \
            the curve's rounds. The budget comes from --budget, --room (that many apps' active \
            footprints) or a scenario's budgetBytes (whose app count is then the default for \
            --apps). The figures hold for apps shaped like the curve's model app: measure another \
            app's curve with resume-bench to ask about it.
            """)

    @Option(help: "The resume-cost curve (resume-bench's JSON).", completion: .file(extensions: ["json"])) var curve = "Reports/resume-relaunch.json"
    @Option(help: "The device's RAM budget in bytes (k, m, g suffixes).") var budget: String?
    @Option(help: "The budget as room for this many apps at their active footprint.") var room: Double?
    @Option(help: "A scenario whose budgetBytes is the budget and whose apps count the apps.", completion: .file(extensions: ["json"])) var scenario: String?
    @Option(help: "Apps in use (default: the scenario's, else 10).") var apps: Int?
    @Option(help: "Usage sessions per generated day.") var sessions = 20
    @Option(help: "Zipf exponent of the apps' popularity.") var alpha = 1.0
    @Option(help: "Generated days (seeds 1...N).") var seeds = 10
    @Option(help: "Rows printed (the best first).") var top = 12
    @Flag(name: .customLong("until-full"), help: "Count each switch until the app is fully working (everything rebuilt), not until it reports ready.") var untilFull = false
    @Flag(help: "Print JSON (every option).") var json = false

    func validate() throws {
        let budgets = [budget != nil, room != nil].filter { $0 }.count
        guard budgets <= 1 else { throw ValidationError("give --budget or --room, not both") }
        guard budgets == 1 || scenario != nil else { throw ValidationError("give the budget: --budget, --room, or --scenario with a budgetBytes") }
        if let room { guard room.isFinite, room > 0, room <= 10_000 else { throw ValidationError("--room takes a number of apps above 0 (at most 10000)") } }
        if let apps { guard (1...1000).contains(apps) else { throw ValidationError("--apps takes 1 to 1000") } }
        guard (1...10_000).contains(sessions) else { throw ValidationError("--sessions takes 1 to 10000") }
        guard alpha.isFinite, (0...10).contains(alpha) else { throw ValidationError("--alpha takes 0 to 10") }
        guard (1...1000).contains(seeds) else { throw ValidationError("--seeds takes 1 to 1000") }
        guard top >= 1 else { throw ValidationError("--top takes at least 1") }
        if let budget {
            do { guard try parseBytes(budget, flag: "--budget") > 0 else { throw ValidationError("--budget must be above 0") } } catch let e as ValidationError { throw e } catch { throw ValidationError("\(error)") }
        }
    }

    func run() async throws {
        do {
            let path = PathBytes.argument(curve)
            let data: Data
            do {
                data = try readFile(path, maxBytes: maximumReportBytes)
            } catch {
                throw CLIError("\(path): \(error) (make it with resume-bench: make bench, or pass --curve)")
            }
            let c: SwitchCostModel.Curve
            do {
                c = try JSONInput.decode(SwitchCostModel.Curve.self, from: data)
            } catch let error as DecodingError {
                throw CLIError("\(path): not a resume-bench curve (\(error.plainDescription))")
            }
            let (options, notes) = c.options(untilFull: untilFull)
            guard let active = c.activeBytes, active > 0, !options.isEmpty else {
                throw CLIError("\(path): the curve has no complete point (a resume with nothing taken and a relaunch at the same trim, with a footprint above 0)\(notes.isEmpty ? "" : ": " + notes.joined(separator: "; "))")
            }
            var count = apps ?? 10
            var budgetBytes: UInt64 = 0
            if let scenario {
                let s = try Scenario.load(scenario)
                if apps == nil { count = min(1000, max(1, s.apps.count)) }
                if budget == nil, room == nil {
                    guard let b = s.budgetBytes else { throw CLIError("\(scenario): no budgetBytes (give --budget or --room)") }
                    budgetBytes = UInt64(b)
                }
            }
            if let budget { budgetBytes = UInt64(try parseBytes(budget, flag: "--budget")) }
            if let room {
                // At most 10,000 apps of at most 1 TiB (Curve.maximumBytes): below 2^54, exact
                // enough in a Double and no trap in the conversion.
                let bytes = (room * Double(active)).rounded(.down)
                guard bytes >= 1 else { throw CLIError("--room \(room): less than a byte at \(active) bytes an app") }
                budgetBytes = UInt64(bytes)
            }
            guard budgetBytes > 0 else { throw CLIError("the budget is 0 bytes") }
            let usage = SwitchCostModel.Usage(apps: count, sessions: sessions, alpha: alpha, seeds: (1...seeds).map { UInt64($0) })
            let ranked = SwitchCostModel.rank(options, usage: usage, budgetBytes: budgetBytes)
            guard !ranked.isEmpty else { throw CLIError("no option could be ranked (the curve lacks resumes or relaunches where the replays need them)") }
            let result = Result(curve: curve, machine: c.machine, budgetBytes: budgetBytes, activeBytes: active, usage: usage, untilFull: untilFull, notes: notes, ranked: ranked)
            output(json ? try encodeJSON(result) : result.text(rows: top))
        } catch {
            throw fail(error)
        }
    }

    struct Result: Encodable {
        var curve: String
        var machine: String?
        var budgetBytes: UInt64
        /// The app's active footprint: the unit of the room.
        var activeBytes: UInt64
        var usage: SwitchCostModel.Usage
        var untilFull: Bool
        var notes: [String]
        var ranked: [SwitchCostModel.Ranked]

        func text(rows: Int) -> String {
            func mib(_ b: UInt64) -> String { ByteFormat.fixed(Double(b) / 1048576, 1) }
            let active = activeBytes
            var out = "A device of \(mib(budgetBytes)) MiB (room for \(ByteFormat.fixed(Double(budgetBytes) / Double(max(1, active)), 1)) apps of \(mib(active)) MiB active), "
            out += "\(usage.apps) apps in use over \(usage.seeds.count) generated days (LSApp statistics, \(usage.sessions) sessions, Zipf \(ByteFormat.fixed(usage.alpha, 1))); curve \(curve)\(machine.map { " (\($0))" } ?? ""). "
            out += untilFull ? "A switch lasts until the app is fully working" : "A switch lasts until the app reports ready (its first screen)"
            out += "; a relaunch is timed with the page cache warm (after a kill under pressure it may be colder: the curve's cold relaunches say by how much).\n\n"
            var table = TextTable([
                .init("rank"), .init("trim"), .init("restore", .left), .init("relaunch", .left), .init("swap", .left), .init("background MiB"), .init("kept"),
                .init("resumes"), .init("wait ms"), .init("95% interval"),
            ])
            for (i, r) in ranked.prefix(rows).enumerated() {
                table.append([
                    "\(i + 1)", "\(r.option.trim)%", r.option.restore, r.option.relaunch, r.option.swap, mib(r.option.backgroundBytes), ByteFormat.fixed(r.meanKept, 1),
                    "\(ByteFormat.fixed(r.resumeShare * 100, 0))%", ByteFormat.fixed(r.wait.mean, 1), "\(ByteFormat.fixed(r.wait.low, 1))–\(ByteFormat.fixed(r.wait.high, 1))",
                ])
            }
            out += table.render()
            if let best = ranked.first {
                let close = SwitchCostModel.tiedWithBest(ranked)
                out += "\nLowest expected wait: trim \(best.option.trim)%, \(best.option.restore) restore, \(best.option.relaunch) relaunch, \(best.option.swapText): \(ByteFormat.fixed(best.wait.mean, 1)) ms per switch (95% interval \(ByteFormat.fixed(best.wait.low, 1))–\(ByteFormat.fixed(best.wait.high, 1)))"
                out += close == 0 ? "; no other option's interval reaches it.\n" : "; \(close) other option\(close == 1 ? "'s" : "s'") interval\(close == 1 ? "" : "s") overlap it (not told apart by these days).\n"
            }
            for n in notes { out += "Note: \(n).\n" }
            return out
        }
    }
}
