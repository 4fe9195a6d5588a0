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
        if let quick = QuickCommandLine.parse(arguments) {
            do {
                try quick.run()
                Glibc.exit(0)
            } catch {
                exit(withError: error)
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

/// What `mempressure --version` prints: the one place the version is written.
let mempressureVersion = "0.12.0"

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

    func validate() throws { try spec.validate() }

    func definition(_ snapshotter: Snapshotter) throws -> AppDefinition { try spec.definition(snapshotter) }
}

/// Which process or app a command is about, however the command line was read
/// (`TargetOptions`, or `QuickCommandLine`).
struct TargetSpec: Equatable {
    var target: String?
    var processOnly = false
    var cgroup: String?
    var match: String?

    func validate() throws {
        let given = [target != nil, cgroup != nil, match != nil].filter { $0 }.count
        guard given == 1 else {
            throw ValidationError("name exactly one of: a PID or name, --cgroup PATH, --match PATTERN")
        }
        if processOnly && target == nil {
            throw ValidationError("--only applies to a PID or name")
        }
    }

    func definition(_ snapshotter: Snapshotter) throws -> AppDefinition {
        if let cgroup { return .cgroup(cgroup) }
        if let match { return .namePattern(match) }
        let text = target ?? ""
        let pid: Int32
        if let number = Int32(text), number > 0 {
            pid = number
        } else if !processOnly, ControlProtocol.isAppName(Substring(text)), try snapshotter.supervisedApp(named: text) != nil {
            // A supervised app's name: every process in its cgroup, before any process name.
            return .supervisedApp(text)
        } else {
            pid = try snapshotter.processTable().lookup(name: text)
        }
        return processOnly ? .process(pid) : .tree(pid)
    }
}

/// Output format flags shared by the reporting commands.
struct FormatOptions: ParsableArguments {
    @Flag(name: .long, help: "Print JSON (a stable, documented format with formatVersion).")
    var json = false

    @Flag(name: .long, help: "Print CSV.")
    var csv = false

    func validate() throws { try Self.check(json: json, csv: csv) }

    static func check(json: Bool, csv: Bool) throws {
        if json && csv { throw ValidationError("--json and --csv are exclusive") }
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
    // An interrupted run: `interruptible` says so, once, in words (not "CancellationError()").
    if error is CancellationError { return ExitCode(130) }
    // The project's errors describe themselves; a decoder's error is put in JSON's words.
    writeStandardError("mempressure: \(plainDescription(of: error))\n")
    return ExitCode(1)
}

func writeStandardError(_ text: String) {
    writeAll(2, text)
}

/// Writes to standard output directly, so that streamed rows appear at once even in a pipe.
func output(_ text: String) {
    writeAll(1, text)
}

/// Everything the CLI prints goes through here, and reaches the terminal without control
/// characters whatever their source (a name in a report file, a trace key, a process's comm):
/// see `printableText`. JSON output stays valid and means the same.
func writeAll(_ fd: CInt, _ text: String) {
    var text = printableText(text, keepingLineBreaks: true)
    text.withUTF8 { buf in
        do {
            try MemPressureSystem.writeAll(fd, UnsafeRawBufferPointer(buf))
        } catch {
            // Standard output or error is gone (a closed pipe): there is no one left to tell.
        }
    }
}

/// A report on standard output, as --json, --csv or the text table.
func printReport(_ report: some Encodable, json: Bool, csv: Bool, renderCSV: () -> String, renderText: () -> String) throws {
    if json {
        output(try encodeJSON(report))
    } else if csv {
        output(renderCSV())
    } else {
        output(renderText())
    }
}

func encodeJSON(_ value: some Encodable) throws -> String {
    let encoder = JSONEncoder()
    encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
    return String(decoding: try encoder.encode(value), as: UTF8.self) + "\n"
}

func encodeJSONLine(_ value: some Encodable) throws -> String {
    let encoder = JSONEncoder()
    encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
    return String(decoding: try encoder.encode(value), as: UTF8.self) + "\n"
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
