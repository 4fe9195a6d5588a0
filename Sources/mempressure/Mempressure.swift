import ArgumentParser
import FoundationEssentials
import Glibc
import LifecycleProtocol
import LinuxSystem
import VMTracker

@main
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
        subcommands: [VM.self, Top.self, Watch.self, Diff.self, Check.self, Cache.self, Load.self, Run.self, Supervise.self, Apps.self, AppCommand.self, JetsamCommand.self, Demo.self, Export.self]
    )

    /// ArgumentParser's main, after `Interrupts.install()`.
    static func main() async {
        Interrupts.install()
        await main(nil)
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
    @Argument(help: "A PID, a supervised app's name (every process in its cgroup), or a process name (its comm) that names one process or one process tree.")
    var target: String?

    @Flag(name: .customLong("only"), help: "The process alone, without its descendants.")
    var processOnly = false

    @Option(name: .customLong("cgroup"), help: "An app made of every process in this cgroup and its sub-cgroups (path relative to the hierarchy, or absolute); a supervised app's cgroup takes its name.")
    var cgroup: String?

    @Option(name: .customLong("match"), help: "An app made of every process whose name matches this shell pattern.")
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

    func validate() throws {
        if json && csv { throw ValidationError("--json and --csv are exclusive") }
    }
}

extension SortKey: ExpressibleByArgument {}
extension TopSortKey: ExpressibleByArgument {}
extension AppGrouping: ExpressibleByArgument {}

/// Prints a one-line error naming what went wrong and exits with status 1.
func fail(_ error: any Error) -> ExitCode {
    // An interrupted run: `interruptible` says so, once, in words (not "CancellationError()").
    if error is CancellationError { return ExitCode(130) }
    let message: String
    switch error {
    case let e as ProcError: message = e.description
    case let e as LookupError: message = e.description
    case let e as SystemCallError: message = e.description
    case let e as any CustomStringConvertible: message = e.description
    default: message = "\(error)"
    }
    writeStandardError("mempressure: \(message)\n")
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
            try LinuxSystem.writeAll(fd, UnsafeRawBufferPointer(buf))
        } catch {
            // Standard output or error is gone (a closed pipe): there is no one left to tell.
        }
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
