import MemPressureOneShot
import ArgumentParser
import FoundationEssentials
import Glibc
import MemPressureSystem
import MemPressureMonitor
import MemPressureValues
import MemPressureRegionTags
import MemPressureVMTracker

struct VM: AsyncParsableCommand, InstantCommand {
    static let configuration = CommandConfiguration(
        commandName: "vm",
        abstract: "The VM Tracker report of a process or app: a summary by region type, and with --regions every region.",
        discussion: """
            An app is a process and its descendants unless --only is given; --cgroup and --match \
            define one by cgroup or by name pattern. A supervised app's name (`vm Photos`) is every \
            process in the cgroup its supervisor made for it (/mempressure-PID-RANDOM/Photos), \
            whatever their parents: a helper that double-forked is still the app's. Rows are sorted \
            by dirty size unless --sort says otherwise. With --csv the summary is printed, or the \
            regions map with --regions.
            """
    )

    @OptionGroup var target: TargetOptions
    @OptionGroup var format: FormatOptions
    @OptionGroup var source: SourceOptions

    @Flag(name: .long, help: "Add the regions map (every region).")
    var regions = false

    @Option(name: .long, help: "Sort by: \(SortKey.allCases.map(\.rawValue).joined(separator: ", ")).")
    var sort: SortKey = .dirty

    @Flag(name: .customLong("full-paths"), help: "Show full paths in the summary.")
    var fullPaths = false

    @Flag(help: "With --regions: the call stack that created each region a MemoryPressure library registered.")
    var stacks = false

    @Option(name: .customLong("registry"), help: .hidden)
    var registry = RegionRegistry.defaultDirectory

    /// The request's checks, the ones `QuickCommandLine` makes too (its option groups' run twice).
    func validate() throws { try asValidation { () throws(OptionError) in try request.validate() } }

    func run() async throws { _ = try runInstantly() }

    func runInstantly() throws -> Bool {
        do {
            try request.run()
        } catch {
            throw ExitCode(error.status)
        }
        return true
    }

    var request: VMRequest {
        VMRequest(
            target: target.spec, json: format.json, csv: format.csv, procRoot: source.procRoot, cgroupRoot: source.cgroupRoot,
            regions: regions, sort: sort, fullPaths: fullPaths, stacks: stacks, registry: registry)
    }
}

struct Watch: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "watch",
        abstract: "A timeline of a process or app, one snapshot per interval, with state markers.",
        discussion: """
            Each row shows the app's totals; markers say which processes started, exited, were \
            stopped or continued, frozen or thawed since the previous row. --save DIR writes each \
            snapshot as a full `vm --json --regions` report, ready for `mempressure diff`.
            """
    )

    @OptionGroup var target: TargetOptions
    @OptionGroup var source: SourceOptions

    @Option(name: .long, help: "Seconds between snapshots.")
    var interval: Double = 1

    @Option(name: .long, help: "Stop after N snapshots (default: until the app exits).")
    var count: Int?

    @Flag(name: .long, help: "Print the timeline as one JSON document at the end (needs --count).")
    var json = false

    @Flag(name: .long, help: "Print each timeline entry as one line of JSON as it is taken.")
    var jsonl = false

    @Option(name: .long, help: "Write each snapshot as a VM report (with regions) into this directory (made 0700 if missing; one of another user, or that others may write in, is refused).", completion: .directory)
    var save: String?

    func validate() throws {
        try checkSeconds(interval, "--interval")
        if let count, count <= 0 { throw ValidationError("--count must be positive") }
        if json && count == nil { throw ValidationError("--json prints the timeline when it ends: give --count, or use --jsonl to stream") }
        if json && jsonl { throw ValidationError("--json and --jsonl are exclusive") }
    }

    func run() async throws {
        do {
            let snapshotter = source.snapshotter
            let definition = try target.definition(snapshotter)
            var watcher = Watcher(snapshotter: snapshotter, definition: definition)
            var timeline: Timeline?
            var taken = 0
            // Made 0700 when missing; one that is there must be this user's or root's and closed
            // to others (CheckedDirectory): the reports are written through its descriptor.
            var saveDirectory: CheckedDirectory?
            if let save { saveDirectory = try CheckedDirectory.open(save, creating: true) }
            if !json && !jsonl { output(TimelineEntry.header + "\n") }
            while count.map({ taken < $0 }) ?? true {
                let started = monotonicSeconds()
                guard let (snapshot, entry) = try watcher.step() else { break }
                taken += 1
                if timeline == nil {
                    let pid: Int32
                    if case .tree(let p) = definition { pid = p } else if case .process(let p) = definition { pid = p } else { pid = snapshot?.processes.first?.pid ?? 0 }
                    timeline = Timeline(pid: pid, name: snapshot?.name ?? "?", app: definition.description, intervalSeconds: interval)
                }
                timeline?.entries.append(entry)
                if jsonl {
                    output(try encodeJSONLine(entry))
                } else if !json {
                    output(entry.renderRow() + "\n")
                }
                if let saveDirectory, let snapshot {
                    let report = VMReport(snapshot, includeRegions: true, sort: .address)
                    try saveDirectory.replaceFile("\(zeroPadded(taken))-\(snapshot.capturedAt).json", with: Array(try encodeJSON(report).utf8))
                }
                if snapshot == nil { break }
                if let count, taken >= count { break }
                let remaining = interval - (monotonicSeconds() - started)
                if remaining > 0 { try await Task.sleep(for: Seconds.duration(remaining)) }
            }
            if json, let timeline { output(try encodeJSON(timeline)) }
        } catch {
            throw fail(error)
        }
    }
}

struct Diff: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "diff",
        abstract: "What changed between two VM reports (`mempressure vm --json [--regions]` or `watch --save`).",
        discussion: """
            Shows growth per region type and, when both reports have regions, region by region: a \
            region that grew or shrank is matched to itself, not reported as removed and added. \
            With --fail-on-growth BYTES (k, m or g suffixes), for CI: the report ends with a line \
            saying how much the footprint grew and by which region types (in JSON: growthCheck), \
            and the exit status is 0 when it grew by at most BYTES, 1 when it grew by more, 2 when \
            the reports could not be read or compared; 64 is a wrong command line, as for every \
            command. (Without --fail-on-growth an unreadable report exits 1, as other errors do.)
            """
    )

    @Argument(help: "The earlier report.", completion: .file(extensions: ["json"])) var before: String
    @Argument(help: "The later report.", completion: .file(extensions: ["json"])) var after: String
    @Flag(name: .long, help: "Print JSON.") var json = false
    @Option(name: .customLong("fail-on-growth"), help: "Exit 1 when the footprint grew by more than this many bytes (k, m, g).")
    var failOnGrowth: String?

    /// The exit status of --fail-on-growth when the footprint grew by more than allowed.
    static let grewStatus: Int32 = 1
    /// The exit status of --fail-on-growth when the reports could not be read or compared.
    static let errorStatus: Int32 = 2

    func validate() throws {
        if let failOnGrowth {
            do {
                _ = try parseBytes(failOnGrowth, flag: "--fail-on-growth")
            } catch {
                throw ValidationError("\(error)")
            }
        }
    }

    func run() async throws {
        var diff: ReportDiff
        do {
            let a = try readReport(before)
            let b = try readReport(after)
            diff = ReportDiff(from: a, to: b)
            if let failOnGrowth { diff.checkGrowth(limitBytes: UInt64(try parseBytes(failOnGrowth, flag: "--fail-on-growth"))) }
            output(json ? try encodeJSON(diff) : diff.renderText())
        } catch {
            let code = fail(error)
            throw failOnGrowth != nil && code.rawValue == 1 ? ExitCode(Self.errorStatus) : code
        }
        if diff.growthCheck?.exceeded == true { throw ExitCode(Self.grewStatus) }
    }

    func readReport(_ argument: String) throws -> VMReport {
        let path = PathBytes.argument(argument)  // its exact bytes: the name need not be UTF-8
        let data = try readFile(path, maxBytes: maximumReportBytes)
        do {
            let report = try JSONInput.decode(VMReport.self, from: data)
            guard report.formatVersion <= VMReport.currentFormatVersion else {
                throw CLIError("\(path): formatVersion \(report.formatVersion) is newer than this mempressure understands (\(VMReport.currentFormatVersion))")
            }
            return report
        } catch let error as DecodingError {
            throw CLIError("\(path): not a VM report (\(error.plainDescription))")
        }
    }
}

struct Check: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "check",
        abstract: "Check the smaps parser against the kernel's own smaps_rollup totals, process by process.",
        discussion: """
            For each process the sum over its regions must equal smaps_rollup. Processes whose \
            memory changed while they were checked are counted, not judged. Exits 1 on any mismatch, \
            and when a PID given on the command line could not be checked (no such process, \
            permission denied).
            """
    )

    @OptionGroup var source: SourceOptions
    @Argument(help: "PIDs to check (default: every process).", completion: .custom(processCompletions)) var pids: [Int32] = []

    func run() async throws {
        let result: RollupCheck
        do {
            result = try source.snapshotter.checkAgainstRollup(pids: pids.isEmpty ? nil : pids)
        } catch {
            throw fail(error)
        }
        var text = "checked \(result.checked) processes: \(result.agreed) agree with smaps_rollup, "
        text += "\(result.changed.count) changed while being read, \(Set(result.mismatches.map(\.pid)).count) disagree"
        text += ", \(result.skipped.count) skipped\n"
        for m in result.mismatches { text += "mismatch: \(m)\n" }
        for s in result.skipped where !pids.isEmpty { text += "skipped: \(s)\n" }
        output(text)
        if !result.mismatches.isEmpty || (!pids.isEmpty && !result.skipped.isEmpty) { throw ExitCode(1) }
    }
}

/// The user's name or UID given to `top --user`: a number as it is, or a name from the user
/// database (getpwnam_r).
func userID(_ text: String) throws -> UInt32 {
    if let uid = UInt32(text) { return uid }
    var size = 16 * 1024
    while true {
        var entry = passwd()
        var result: UnsafeMutablePointer<passwd>?
        var buffer = [CChar](repeating: 0, count: size)
        let status = getpwnam_r(text, &entry, &buffer, buffer.count, &result)
        if status == ERANGE && size < 1 << 20 {
            size *= 4
            continue
        }
        guard status == 0 else {
            throw CLIError("--user \(text): the user database could not be read (\(String(cString: strerror(status))))")
        }
        guard result != nil else { throw CLIError("--user \(text): no such user (give a user name or a numeric UID)") }
        return entry.pw_uid
    }
}

/// A check shared with the quick reading (`OptionError`), as ArgumentParser's usage error.
func asValidation(_ check: () throws(OptionError) -> Void) throws {
    do {
        try check()
    } catch {
        throw ValidationError(error.description)
    }
}

/// A flag's number of seconds, checked in `validate()` (finite, above 0, at most a day).
func checkSeconds(_ value: Double, _ flag: String) throws {
    do {
        try Seconds.check(value, flag)
    } catch {
        throw ValidationError(error.description)
    }
}

/// "007": a sequence number padded to three digits, so saved files sort by name.
func zeroPadded(_ value: Int) -> String {
    let digits = "\(value)"
    return String(repeating: "0", count: max(0, 3 - digits.count)) + digits
}

/// The most `diff` reads of a VM report: one with every region of a process at
/// vm.max_map_count (65 530) and their call stacks is well below.
let maximumReportBytes = 256 << 20

/// A whole file named on the command line, opened safely (`RegularFile`: a FIFO, device,
/// socket, directory or symbolic link is refused with one line naming it, never waited on).
func readFile(_ path: PathBytes, maxBytes: Int) throws(FileOpenError) -> Data {
    Data(try RegularFile.read(path, maxBytes: maxBytes))
}
