import MemPressureOneShot
import ArgumentParser
import FoundationEssentials
import MemPressureJetsam
import MemPressureSystem
import MemPressureMonitor
import MemPressureValues
import MemPressureVMTracker

extension JetsamPolicyName: ExpressibleByArgument {}

struct JetsamCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "jetsam",
        abstract: "Rank the machine's apps as jetsam would (killing nothing), render episode reports, replay them under other policies.",
        discussion: """
            The killer itself runs only under the supervisor (`mempressure supervise --jetsam`, or a \
            scenario's "jetsam" section), on the apps it launched. Policies: ios (the default: \
            suspended high-memory apps first, then background-running high-memory, suspended \
            low-memory, background-running low-memory, inactive, the foreground app last), xnu, \
            lmkd, largest, lru, cost.
            """,
        subcommands: [Rank.self, Report.self, Replay.self],
        defaultSubcommand: Rank.self
    )

    struct Rank: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "rank",
            abstract: "With --dry-run: the live machine's apps (as `top` groups them) in kill order, with explanations.",
            discussion: """
                A stopped process counts as suspended; --foreground PID names the foreground app; every \
                other app counts as running in the background. PID 1 and mempressure are protected. \
                --json prints {"formatVersion": 1, "policy", "apps": [{"rank", "pid", "name", "state", \
                "band", "footprintBytes", "purgeableBytes", "explanation"}]}, rank 1 first.
                """
        )

        @Flag(name: .customLong("dry-run"), help: "Rank without killing (required: jetsam kills only what a supervisor launched).") var dryRun = false
        @Option(help: "ios, xnu, lmkd, largest, lru or cost.") var policy: JetsamPolicyName = .ios
        @Option(name: .customLong("high-memory"), help: "What counts as high memory: bytes (k, m, g suffixes) or a share of the budget (12.5%).") var highMemory: String?
        @Option(name: .customLong("within-band"), help: "The order inside an ios band: largest (footprint, the default) or least-recent.") var withinBand: WithinBandChoice?
        @Option(help: "The PID of the foreground app.", completion: .custom(processCompletions)) var foreground: Int32?
        @Option(help: "Show only the first N.") var limit: Int?
        @Flag(help: "Print JSON.") var json = false
        @OptionGroup var source: SourceOptions

        func validate() throws {
            guard dryRun else {
                throw ValidationError("jetsam kills only apps a supervisor launched (`mempressure supervise --jetsam`); here, --dry-run ranks the machine's apps without killing any")
            }
            if let limit, limit <= 0 { throw ValidationError("--limit must be positive") }
            if let foreground, foreground <= 0 { throw ValidationError("--foreground takes a PID") }
        }

        func run() async throws {
            do {
                var p = JetsamPolicy(name: policy)
                if let highMemory { p.highMemory = try parseHighMemory(highMemory) }
                if let withinBand { p.withinBand = withinBand.order }
                let machine = try source.snapshotter.machine(options: .totalsOnly)
                if let foreground, !machine.processes.contains(where: { $0.pid == foreground }) {
                    throw CLIError("--foreground \(foreground): no such process (or not readable)")
                }
                let status = try MemoryStatusReader(cgroup: nil, procRoot: source.procRoot).read()
                let input = RankingInput(
                    apps: LiveMachine.snapshots(machine, foreground: foreground), budgetBytes: status.budgetBytes,
                    availableBytes: status.availableBytes, targetAvailableBytes: status.availableBytes, level: .critical)
                let ranking = try Ranker.rank(input, policy: p)
                let report = DryRunReport(ranking, budgetBytes: status.budgetBytes)
                output(json ? try encodeJSON(report) : report.renderText(limit: limit))
            } catch {
                throw fail(error)
            }
        }
    }

    struct Report: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "report",
            abstract: "Render episode reports as text.",
            discussion: "FILE is an episode report (JSON), an array of them, or a scenario log (`mempressure run --json`) with its episodes."
        )
        @Argument(help: "The file.", completion: .file(extensions: ["json"])) var file: String

        func run() async throws {
            do {
                let episodes = try JetsamEpisode.load(PathBytes.argument(file))
                output(episodes.map { $0.renderText() }.joined(separator: "\n"))
            } catch {
                throw fail(error)
            }
        }
    }

    struct Replay: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "replay",
            abstract: "Replay every recorded decision under other policies, side by side, with what each would have cost in relaunch time.",
            discussion: "Deterministic: the same file gives the same output in any process."
        )
        @Argument(help: "Episode reports, or a scenario log with episodes.", completion: .file(extensions: ["json"])) var file: String
        @Option(help: "A policy, or all.") var policy = "all"
        @Flag(help: "Print JSON.") var json = false

        func validate() throws {
            guard policy == "all" || JetsamPolicyName(rawValue: policy) != nil else {
                throw ValidationError("--policy takes all or one of \(JetsamPolicyName.allCases.map(\.rawValue).joined(separator: ", "))")
            }
        }

        func run() async throws {
            do {
                let episodes = try JetsamEpisode.load(PathBytes.argument(file))
                let names = policy == "all" ? JetsamPolicyName.allCases : [JetsamPolicyName(rawValue: policy)!]
                // Each episode under each policy's name, with the tunables it was recorded with.
                let report = try ReplayReport(episodes, policyNames: names)
                output(json ? try encodeJSON(report) : report.renderText())
            } catch {
                throw fail(error)
            }
        }
    }
}

/// `--within-band largest` or `--within-band least-recent`: the order inside an ios band.
enum WithinBandChoice: String, ExpressibleByArgument, CaseIterable {
    case largest
    case leastRecent = "least-recent"

    var order: WithinBandOrder {
        switch self {
        case .largest: .largestFirst
        case .leastRecent: .leastRecentFirst
        }
    }
}

/// `--high-memory 64m` (bytes) or `--high-memory 12.5%` (a share of the budget).
func parseHighMemory(_ text: String) throws -> HighMemoryThreshold {
    if text.hasSuffix("%") {
        guard let v = Double(text.dropLast()), v > 0, v <= 100 else { throw CLIError("--high-memory takes bytes or a percentage above 0 and at most 100, not '\(text)'") }
        return .shareOfBudget(v / 100)
    }
    return .bytes(UInt64(try parseBytes(text, flag: "--high-memory")))
}
