import MemPressureOneShot
import ArgumentParser
import Dispatch
import FoundationEssentials
import Glibc
import MemPressureLifecycleProtocol
import MemPressureSystem
import MemPressureVMTracker

struct Mempressure: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "mempressure",
        abstract: "Memory-pressure and resource-accounting profiler for Linux.",
        discussion: """
            Reports every memory region of a process or app as VM Tracker did: dirty, clean \
            (backing store), purgeable (MADV_FREE), swapped, mapped files and shared memory, read \
            from /proc. Byte counts in --json and --csv output are integers in bytes.
            """,
        version: mempressureVersion,
        subcommands: [VM.self, Top.self, Watch.self, Diff.self, Check.self, Cache.self, Load.self, Run.self, Supervise.self, Apps.self, AppCommand.self, JetsamCommand.self, Recommend.self, Demo.self, Export.self]
    )

    /// ArgumentParser's main with two manners it lacks: a mistyped subcommand gets "did you
    /// mean", and a negative number after an option is read as its value (so that
    /// `--interval -1` is told what is wrong with -1, not that a value is missing). A command
    /// that can answer at once (`InstantCommand`: `vm`, a single `top`, …) runs on the main
    /// thread without starting Swift's concurrency runtime, whose threads cost every one-shot
    /// command a fifth of its start-up; the others run as an async task.
    static func main() -> Never {
        let arguments = Array(CommandLine.arguments.dropFirst())
        // The one-shot commands' common command lines skip ArgumentParser's reflection, which
        // costs them two thirds of their start-up (`QuickCommandLine`); anything else, help and
        // every error included, is ArgumentParser's.
        if let quick = QuickCommandLine.parse(arguments, userNames: true) {
            do {
                try quick.run(users: userID)
                Glibc.exit(0)
            } catch {
                Glibc.exit(error.status)
            }
        }
        let command = parseOrExit(arguments)
        if let instant = command as? any InstantCommand {
            do {
                if try instant.runInstantly() { Glibc.exit(0) }
            } catch {
                exit(withError: error)
            }
        }
        let task = CommandToRun(command: command)
        Task.detached {
            await task.run()
            Glibc.exit(0)
        }
        dispatchMain()
    }

    /// The parsed command; on a parse error (or `--help`, `--version`) the process ends here.
    private static func parseOrExit(_ arguments: [String]) -> any ParsableCommand {
        do {
            return try parseAsRoot(arguments)
        } catch {
            let joined = CommandLineManners.joiningNegativeValues(arguments)
            if joined != arguments, let parsed = try? parseAsRoot(joined) {
                return parsed
            } else if joined != arguments, case .failure(let second) = Result(catching: { try parseAsRoot(joined) }) {
                exit(withError: CommandLineManners.suggesting(for: second, arguments: joined))
            } else {
                exit(withError: CommandLineManners.suggesting(for: error, arguments: arguments))
            }
        }
    }
}

/// A command that may answer without Swift's concurrency runtime: `runInstantly` does the whole
/// command on the calling thread and returns true, or returns false at once, having done nothing,
/// when this invocation needs the async `run` (a `top --interval`, say).
protocol InstantCommand: ParsableCommand {
    func runInstantly() throws -> Bool
}

/// A parsed command handed to the task that runs it (parsed on the main thread, run on the
/// concurrency runtime's; nothing else touches it).
private final class CommandToRun: @unchecked Sendable {
    var command: any ParsableCommand
    init(command: any ParsableCommand) { self.command = command }

    func run() async {
        do {
            if var asyncCommand = command as? any AsyncParsableCommand {
                try await asyncCommand.run()
            } else {
                try command.run()
            }
        } catch {
            Mempressure.exit(withError: error)
        }
    }
}

/// What the command line is told when it is wrong, beyond ArgumentParser's own messages.
enum CommandLineManners {
    /// `--interval -1` as `--interval=-1`: a long option followed by a negative number takes it as
    /// its value (ArgumentParser reads `-1` as an option, and says the value is missing).
    static func joiningNegativeValues(_ arguments: [String]) -> [String] {
        var out: [String] = []
        var i = 0
        while i < arguments.count {
            let a = arguments[i]
            if a == "--" {
                out += arguments[i...]
                break
            }
            if a.hasPrefix("--"), a.count > 2, !a.contains("="), i + 1 < arguments.count, isNegativeNumber(arguments[i + 1]) {
                out.append(a + "=" + arguments[i + 1])
                i += 2
                continue
            }
            out.append(a)
            i += 1
        }
        return out
    }

    static func isNegativeNumber(_ text: String) -> Bool {
        guard text.hasPrefix("-"), text.count > 1 else { return false }
        return Double(text.dropFirst()) != nil
    }

    /// The error, or for a word where a subcommand was expected that names none, a usage error
    /// naming the closest subcommands ("did you mean 'top'?").
    static func suggesting(for error: any Error, arguments: [String]) -> any Error {
        var command: any ParsableCommand.Type = Mempressure.self
        var path = ["mempressure"]
        for word in arguments {
            if word == "--" { break }
            if word.hasPrefix("-") { return error }
            let subcommands = command.configuration.subcommands
            guard !subcommands.isEmpty else { return error }
            if let next = subcommands.first(where: { $0._commandName == word }) {
                command = next
                path.append(word)
                continue
            }
            let names = subcommands.map { $0._commandName } + ["help"]
            let close = names.filter { distance($0, word) <= max(1, min(2, word.count / 3)) || ($0.hasPrefix(word) && word.count >= 2) }
            var message = "unknown subcommand '\(word)' of \(path.joined(separator: " "))"
            if !close.isEmpty { message += "; did you mean \(close.map { "'\($0)'" }.joined(separator: " or "))?" }
            message += "\nSee '\(path.joined(separator: " ")) --help' for its subcommands."
            return ValidationError(message)
        }
        return error
    }

    /// The edit distance between two words (insertions, deletions, substitutions, and two
    /// neighbours swapped), on their characters.
    static func distance(_ a: String, _ b: String) -> Int {
        let a = Array(a), b = Array(b)
        if a.isEmpty { return b.count }
        if b.isEmpty { return a.count }
        var d = [[Int]](repeating: [Int](repeating: 0, count: b.count + 1), count: a.count + 1)
        for i in 0...a.count { d[i][0] = i }
        for j in 0...b.count { d[0][j] = j }
        for i in 1...a.count {
            for j in 1...b.count {
                let cost = a[i - 1] == b[j - 1] ? 0 : 1
                d[i][j] = min(d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost)
                if i > 1, j > 1, a[i - 1] == b[j - 2], a[i - 2] == b[j - 1] { d[i][j] = min(d[i][j], d[i - 2][j - 2] + 1) }
            }
        }
        return d[a.count][b.count]
    }
}

/// Where to read /proc and cgroups from (hidden: for golden fixtures).
struct SourceOptions: ParsableArguments {
    @Option(name: .customLong("proc-root"), help: .hidden)
    var procRoot = "/proc"

    @Option(name: .customLong("cgroup-root"), help: .hidden)
    var cgroupRoot = "/sys/fs/cgroup"

    var snapshotter: Snapshotter {
        Snapshotter(proc: ProcFS(root: procRoot), cgroupRoot: cgroupRoot)
    }
}

/// Which process or app a command is about.
struct TargetOptions: ParsableArguments {
    @Argument(
        help: "A PID, a supervised app's name (every process in its cgroup), or a process name (its comm) that names one process or one process tree.",
        completion: .custom(processCompletions))
    var target: String?

    @Flag(name: .customLong("only"), help: "The process alone, without its descendants.")
    var processOnly = false

    @Option(name: .customLong("cgroup"), help: "An app made of every process in this cgroup and its sub-cgroups (path relative to the hierarchy, or absolute); a supervised app's cgroup takes its name.")
    var cgroup: String?

    @Option(name: .customLong("match"), help: "An app made of every process whose name matches this shell pattern.")
    var match: String?

    var spec: TargetSpec { TargetSpec(target: target, processOnly: processOnly, cgroup: cgroup, match: match) }

    func validate() throws { try asValidation { () throws(OptionError) in try spec.validate() } }

    func definition(_ snapshotter: Snapshotter) throws -> AppDefinition { try spec.definition(snapshotter) }
}

/// Output format flags shared by the reporting commands.
struct FormatOptions: ParsableArguments {
    @Flag(name: .long, help: "Print JSON (a stable, documented format with formatVersion).")
    var json = false

    @Flag(name: .long, help: "Print CSV.")
    var csv = false

    func validate() throws { try Self.check(json: json, csv: csv) }

    static func check(json: Bool, csv: Bool) throws {
        try asValidation { () throws(OptionError) in try checkFormat(json: json, csv: csv) }
    }
}

extension SortKey: ExpressibleByArgument {}
extension TopSortKey: ExpressibleByArgument {}
extension AppGrouping: ExpressibleByArgument {}

/// Prints a one-line error naming what went wrong and exits with status 1.
func fail(_ error: any Error) -> ExitCode {
    // An exit status chosen already (its message printed): passed on, not printed as
    // "ExitCode(rawValue: 1)".
    if let code = error as? ExitCode { return code }
    if let failure = error as? CommandFailed { return ExitCode(failure.status) }
    // An interrupted run: `interruptible` says so, once, in words (not "CancellationError()").
    if error is CancellationError { return ExitCode(130) }
    // The project's errors describe themselves; a decoder's error is put in JSON's words.
    writeStandardError("mempressure: \(plainDescription(of: error))\n")
    return ExitCode(1)
}

/// What the shell completes where a PID or process is expected: the PIDs of /proc, each once,
/// then the names (comm) of the processes this user may read, for `vm NAME` (a completion must
/// not fail: anything unreadable is left out).
@Sendable func processCompletions(_ words: [String], _ index: Int, _ prefix: String) -> [String] {
    guard let pids = try? ProcFS(root: "/proc").pids() else { return [] }
    var names = Set<String>()
    for pid in pids {
        guard var bytes = try? ProcFS.readBytes("/proc/\(pid)/comm") else { continue }
        if bytes.last == 0x0A { bytes.removeLast() }
        let name = String(decoding: bytes, as: UTF8.self)
        if !name.isEmpty, !name.contains(" ") { names.insert(name) }
    }
    return (pids.map(String.init) + names.sorted()).filter { $0.hasPrefix(prefix) }
}
