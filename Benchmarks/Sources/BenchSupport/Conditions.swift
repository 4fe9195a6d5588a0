// What the resume-against-relaunch harnesses of real programs (redis-bench, pg-bench) share: a
// condition and its rounds, the loop that runs them (stopping at the first data loss, which the
// report then names), the swap section's temporary swap file, the command line that regenerates
// a report, the options every such harness has, and the report's common sections.

import ArgumentParser
import Glibc
import MemPressureSystem

/// Data that did not survive: a key or row missing or wrong, a count or a digest off.
public struct DataLoss: Error, CustomStringConvertible {
    public var description: String
    public init(description: String) { self.description = description }
}

/// One condition (resume as is, resume after swap, relaunch warm or cold) and its rounds.
public struct BenchCondition<Round: Codable & Sendable>: Codable, Sendable {
    public enum Kind: String, Codable, Sendable { case resume, relaunch }
    public var name: String
    public var kind: Kind
    public var description: String
    /// Why it was not measured (this machine lacks what it needs), or nil.
    public var skipped: String?
    public var rounds: [Round] = []

    public init(name: String, kind: Kind, description: String) {
        self.name = name
        self.kind = kind
        self.description = description
    }

    public var measured: Bool { skipped == nil && !rounds.isEmpty }

    /// p50, p90, p99 of one figure over the rounds.
    public func percentiles(_ figure: (Round) -> Double) -> Percentiles { Percentiles(rounds.map(figure)) }
}

/// Runs the rounds of each condition with progress, stopping at the first data loss (which it
/// keeps, and logs: the report names it and the run fails after writing it); holds the swap
/// section's temporary swap file so that a cleanup removes it however the run ends.
public final class RoundRunner {
    public let tool: String
    public let rounds: Int
    public let progress: Progress
    /// The first data loss, if any.
    public private(set) var loss: String?
    /// The swap file while the swap section runs.
    public private(set) var swap: TemporarySwapFile?

    public init(tool: String, rounds: Int, progress: Progress) {
        self.tool = tool
        self.rounds = rounds
        self.progress = progress
    }

    /// Runs `body` unless data was lost already; a DataLoss it throws is kept, not thrown.
    public func guarded(_ body: () throws -> Void) throws {
        guard loss == nil else { return }
        do {
            try body()
        } catch let e as DataLoss {
            loss = e.description
            log(tool, "DATA LOST: \(e.description)")
        }
    }

    /// The rounds of `condition`, one `round()` each ("WHAT, round N of M").
    public func run<Round>(_ condition: inout BenchCondition<Round>, _ what: String, _ round: () throws -> Round) throws {
        try guarded {
            for n in 1...rounds {
                progress.doing("\(what), round \(n) of \(rounds)")
                condition.rounds.append(try round())
                progress.step()
            }
        }
    }

    /// The rounds of the swap section: a temporary swap file of `bytes` at `path` while they run
    /// (removed after), or, when it cannot be had or `unavailable` says why not, the condition
    /// skipped with the reason.
    public func runWithSwap<Round>(_ condition: inout BenchCondition<Round>, _ what: String, unavailable: String?, path: String, bytes: UInt64, _ round: () throws -> Round) throws {
        var reason = unavailable
        if reason == nil {
            do {
                swap = try TemporarySwapFile(path: path, bytes: bytes)
            } catch {
                reason = "no swap possible: \(error)"
            }
        }
        if let reason {
            condition.skipped = reason
            log(tool, "\(what): skipped, \(reason)")
            progress.step(rounds)
            return
        }
        log(tool, "swap: \(ByteFormat.human(swap!.bytes)) at \(swap!.path) (removed after this section)")
        try run(&condition, what, round)
        removeSwap()
    }

    /// Turns the swap file off and deletes it. Idempotent.
    public func removeSwap() {
        swap?.remove()
        swap = nil
    }

    /// The rounds of two relaunch conditions, page cache warm and cold, interleaved (the order
    /// alternating from round to round); `round(cold)` runs one.
    public func interleave<Round>(warm: inout BenchCondition<Round>, cold: inout BenchCondition<Round>, _ what: String, _ round: (Bool) throws -> Round) throws {
        try guarded {
            for n in 1...rounds {
                for isCold in (n % 2 == 1 ? [false, true] : [true, false]) {
                    progress.doing("\(what) (\(isCold ? "cold" : "warm") page cache), round \(n) of \(rounds)")
                    let r = try round(isCold)
                    if isCold { cold.rounds.append(r) } else { warm.rounds.append(r) }
                    progress.step()
                }
            }
        }
    }
}

/// The options every resume-against-relaunch harness has.
public struct RoundsOptions: ParsableArguments {
    @Option(help: "Where the report goes.") public var output = "../Reports"
    @Option(help: "Rounds per condition (default 20; 5 with --quick).") public var rounds: Int?
    @Option(help: "Seed of the dataset.") public var seed: UInt64 = 20_110_606
    @Flag(help: "A smoke run: a small dataset, few rounds.") public var quick = false
    @Flag(name: .customLong("no-swap"), help: "Skip the resume after swap (it adds a swap file, which changes reclaim machine-wide while it is on).") public var noSwap = false
    @Flag(name: .customLong("render-only"), help: "Re-render the Markdown and the plot from the JSON in --output.") public var renderOnly = false

    public init() {}

    public func validate() throws {
        if let rounds, rounds < 1 { throw ValidationError("--rounds must be at least 1 (got \(rounds))") }
    }

    /// The rounds per condition asked for.
    public var roundsPerCondition: Int { rounds ?? (quick ? 5 : 20) }
}

/// The command that regenerates a report: this harness run from Benchmarks/ with the
/// arguments it was given (quoted where they hold a space or are empty).
public func regeneratingCommand(_ tool: String) -> String {
    var arguments = CommandLine.arguments.dropFirst().map { $0.contains(" ") || $0.isEmpty ? "'\($0)'" : $0 }.joined(separator: " ")
    if !arguments.isEmpty { arguments = " " + arguments }
    return "cd Benchmarks && swift run -c release \(tool)\(arguments)"
}

/// A measurement of a real program the harness starts itself: it runs, and cleans up after
/// itself however the run ended (what it started killed, its cgroups and files removed).
public protocol ProgramBench: SendableMetatype {
    associatedtype Report: RenderedReport & Sendable
    func run() throws -> Report
    func cleanup()
}

/// Makes the bench and runs it as a task that Ctrl-C, SIGTERM or SIGHUP cancels: the kill
/// switch is pulled at once (what was started is killed, so the measurement fails where it
/// stands) and the cleanup runs. Then writes the report, and fails if it records data lost.
public func runProgramBench<Bench: ProgramBench>(
    tool: String, output: String, named name: String, interrupted: String,
    dataLost: (Bench.Report) -> String?, _ make: @escaping @Sendable (KillSwitch) throws -> Bench
) async throws {
    let killSwitch = KillSwitch()
    let report: Bench.Report = try await interruptible({
        let bench = try make(killSwitch)
        defer { bench.cleanup() }
        return try await withTaskCancellationHandler {
            try bench.run()
        } onCancel: {
            killSwitch.pull()
        }
    }, interrupted: interrupted)
    try writeReport(report, to: output, named: name, tool: tool)
    if let loss = dataLost(report) {
        throw BenchError("DATA LOST: \(loss) (the report says where)")
    }
}

// MARK: The report's common sections

extension Array {
    /// The condition of that name.
    public func named<Round>(_ name: String) -> BenchCondition<Round>? where Element == BenchCondition<Round> {
        first { $0.name == name }
    }

    /// The rows of the table of every condition (a condition not measured says why in its
    /// rounds column, the `columns` cells after it empty), a blank line, and each condition's
    /// description.
    public func conditionRows<Round>(columns: Int, _ cells: (BenchCondition<Round>) -> [String]) -> String where Element == BenchCondition<Round> {
        var md = ""
        for c in self {
            guard c.measured else {
                md += "| \(c.name) | not measured: \(c.skipped ?? "no round finished") |" + String(repeating: " |", count: columns - 2) + "\n"
                continue
            }
            md += "| \(c.name) | \(c.rounds.count) | " + cells(c).joined(separator: " | ") + " |\n"
        }
        md += "\n"
        for c in self { md += "- **\(c.name)**: \(c.description).\n" }
        return md
    }

    /// "## Ratios, resume / RELAUNCH (p50)": each measured resume against each measured
    /// relaunch, measure by measure; empty without both.
    public func ratiosSection<Round>(relaunch: String, measures: [(String, (BenchCondition<Round>) -> Percentiles)]) -> String where Element == BenchCondition<Round> {
        let resumes = filter { $0.kind == .resume && $0.measured }
        let relaunches = filter { $0.kind == .relaunch && $0.measured }
        guard !resumes.isEmpty && !relaunches.isEmpty else { return "" }
        var md = "## Ratios, resume / \(relaunch) (p50)\n\n"
        md += "| resume | \(relaunch) | " + measures.map(\.0).joined(separator: " | ") + " |\n|---|---|" + String(repeating: "---:|", count: measures.count) + "\n"
        for a in resumes {
            for b in relaunches {
                func r(_ x: Percentiles, _ y: Percentiles) -> String { y.p50 > 0 ? ratioText(x.p50 / y.p50) : "–" }
                md += "| \(a.name) | \(b.name) | " + measures.map { r($0.1(a), $0.1(b)) }.joined(separator: " | ") + " |\n"
            }
        }
        return md + "\n"
    }

    /// Each condition's share of a file in the page cache (`percent` of each round), median
    /// (min–max): "NAME P% (MIN–MAX%); ...".
    public func residency<Round>(_ percent: (Round) -> Double?) -> String where Element == BenchCondition<Round> {
        map { c in
            let p = Percentiles(c.rounds.compactMap(percent))
            return "\(c.name) \(ByteFormat.fixed(p.p50, 1))% (\(ByteFormat.fixed(p.min, 1))–\(ByteFormat.fixed(p.max, 1))%)"
        }.joined(separator: "; ")
    }
}

extension BenchCondition {
    /// "## After its pages went to swap": why it was not measured, or `body` of its rounds.
    public func swapSection(_ body: ([Round]) -> String) -> String {
        var md = "## After its pages went to swap\n\n"
        if let reason = skipped {
            md += "Not measured: \(reason).\n\n"
        } else if !rounds.isEmpty {
            md += body(rounds)
        }
        return md
    }
}

/// The end of a report: the verdict on the data (after the sentence saying how it was
/// checked) and the notes, if any.
public func verdictAndNotes(dataIntact: Bool, dataLoss: String?, notes: [String]) -> String {
    var md = dataIntact ? "**Intact every time.**\n\n" : "**DATA LOST: \(dataLoss ?? "")**; the run stopped there and failed.\n\n"
    if !notes.isEmpty {
        md += "## Notes\n\n"
        for n in notes { md += "- \(n)\n" }
        md += "\n"
    }
    return md
}

/// The start of a report, under its title: the command that regenerates it, how long it took,
/// `make reports` re-rendering it from `json`, and whether it was a quick run.
public func regenerateLines(command: String, totalSeconds: Double, quick: Bool, json: String) -> String {
    var md = "Regenerate: `\(command)` (measures; \(ByteFormat.fixed(totalSeconds / 60, 1)) minutes this time; `make bench` runs it with the other harnesses) or `make reports` (re-renders this page and the plot from \(json)).\n"
    if quick { md += "**A quick run** (`--quick`: a small dataset and few rounds, a smoke test): not the figures to quote.\n" }
    return md
}
