import MemPressureOneShot
import ArgumentParser
import FoundationEssentials
import Glibc
import MemPressureSystem
import MemPressureMonitor
import MemPressureValues
import MemPressureRegionTags
import MemPressureVMTracker

struct Top: AsyncParsableCommand, InstantCommand {
    static let configuration = CommandConfiguration(
        commandName: "top",
        abstract: "Every app on the machine by footprint, with dirty, purgeable and swapped memory.",
        discussion: """
            Reads /proc/PID/smaps_rollup of every process (the kernel's totals, cheaper than full \
            smaps). A process that exits or cannot be read is skipped with a note. By default a \
            process joins its parent's app when it runs the same program (a server and its \
            workers), and every process in a supervised app's cgroup (/mempressure-PID-RANDOM/APP) \
            is that app, named APP, whatever its parent (a note under the table names them); \
            --group-by process shows every process, --group-by cgroup every cgroup. \
            Above the table: the machine's memory and swap (/proc/meminfo) and memory PSI \
            (/proc/pressure/memory). USS = Private_Clean + Private_Dirty + Private_Hugetlb; THP = \
            AnonHugePages + ShmemPmdMapped + FilePmdMapped; SwapPss, THP and Locked show as n/a \
            (absent in JSON, empty in CSV) where the kernel does not print them. With --interval \
            the table is redrawn in place on a terminal until q, SIGINT or SIGTERM (status 0), \
            and keys sort it at once (f footprint, d dirty, c clean, p purgeable, s swapped, r \
            resident, n name, i pid; < and > the column before or after; the last line lists \
            them), the sorted column kept in sight on a narrow terminal; otherwise successive tables are printed, each under its header (with --json or --csv \
            one document per line: JSON Lines).

            --group-by cgroup names each cgroup by what its path says: the systemd unit, the \
            Kubernetes pod UID and container ID, the Docker, Podman, containerd or CRI-O \
            container ID (IDs only: names need the kubelet's or the runtime's API), a supervised \
            app by its name (the Unit column says whose supervisor). Beside the \
            sum over its processes it shows the cgroup's own usage, limit and OOM kills. A \
            process's cgroup is its memory controller's on cgroup v1, including on a machine that \
            mounts both v1 and v2 (where the v1 memory controller holds the limits), and the \
            unified hierarchy's on v2.

            --format openmetrics prints the exporter's metrics once (as `mempressure export` \
            serves them), for node_exporter's textfile collector: write them to a file ending in \
            .prom in its --collector.textfile.directory, through a temporary file and a rename.
            """
    )

    @OptionGroup var format: FormatOptions
    @OptionGroup var source: SourceOptions

    @Option(name: .customLong("group-by"), help: "app, process or cgroup.")
    var grouping: AppGrouping = .app

    @Option(name: .long, help: "Sort by: \(TopSortKey.allCases.map(\.rawValue).joined(separator: ", ")) (sizes largest first, name and pid ascending).")
    var sort: TopSortKey = .footprint

    @Option(name: .long, help: "Show only the first N (in --sort order).")
    var limit: Int?

    @Option(name: .long, help: "Only apps whose name matches this shell pattern (fnmatch: *, ?, [...]).")
    var match: String?

    @Option(name: .long, help: "Only processes whose real UID is this user's (a user name or a UID).")
    var user: String?

    @Flag(name: .long, help: "Byte counts as exact integers in the text table (for sort and awk).")
    var bytes = false

    @Option(name: .long, help: "Refresh every S seconds: in place on a terminal, else one table (or JSON line) after another.")
    var interval: Double?

    @Option(name: .long, help: "With --interval: stop after N refreshes.")
    var count: Int?

    @Flag(name: .long, help: "Read full smaps of every process instead of smaps_rollup.")
    var full = false

    @Option(name: .customLong("format"), help: "openmetrics: print the exporter's metrics once (for node_exporter's textfile collector).")
    var outputFormat: TopFormat?

    func validate() throws {
        // The table's checks, the ones `QuickCommandLine` makes too; then those of the options
        // it never reads (--interval, --count, --format).
        try asValidation { () throws(OptionError) in try request.validate() }
        if let interval { try checkSeconds(interval, "--interval") }
        if let count {
            if count <= 0 { throw ValidationError("--count must be positive") }
            if interval == nil { throw ValidationError("--count counts the refreshes of --interval: give --interval too") }
        }
        if outputFormat != nil && (format.json || format.csv || interval != nil) { throw ValidationError("--format openmetrics prints the exposition once: not with --json, --csv or --interval") }
        // The exposition is every app, as a scrape of `mempressure export` gives it: the table's
        // filters and sizes have no meaning there, and silently ignoring them would mislead.
        if outputFormat != nil && (match != nil || user != nil || limit != nil || bytes || full) {
            throw ValidationError("--format openmetrics exposes every app, as `mempressure export` does: not with --match, --user, --limit, --bytes or --full")
        }
    }

    func run() async throws {
        if try runInstantly() { return }
        do {
            try await refresh(try snapshot(), every: interval ?? 1)
        } catch {
            throw fail(error)
        }
    }

    /// One table (or exposition) at once; false, having done nothing, with --interval.
    func runInstantly() throws -> Bool {
        if outputFormat == .openmetrics {
            do {
                try printExposition(grouping: grouping, source: source)
            } catch {
                throw fail(error)
            }
            return true
        }
        guard interval == nil else { return false }
        do {
            try request.run(users: userID)
        } catch {
            throw ExitCode(error.status)
        }
        return true
    }

    /// The table's options (all but --interval, --count and --format).
    var request: TopRequest {
        TopRequest(
            json: format.json, csv: format.csv, procRoot: source.procRoot, cgroupRoot: source.cgroupRoot, grouping: grouping,
            sort: sort, limit: limit, match: match, user: user, bytes: bytes, full: full)
    }

    func snapshot() throws -> TopSnapshot { try request.snapshot(users: userID) }

    /// The --interval loop. SIGINT and SIGTERM (through `Interrupts`) cancel it between two
    /// refreshes; it then restores the terminal and ends with status 0, as `supervise` does.
    /// Live on a terminal, keys act as in top(1) and htop: `q` quits, a sort key re-sorts at
    /// once (`LiveKeys`), and the last line says which keys there are.
    func refresh(_ snapshot: TopSnapshot, every interval: Double) async throws {
        let live = isatty(1) == 1 && !format.json && !format.csv
        let (json, csv, bytes, count) = (format.json, format.csv, self.bytes, self.count)
        let work = Task {
            let screen = live ? LiveScreen() : nil
            let keys = live ? LiveKeys() : nil
            defer {
                keys?.restore()
                screen?.restore()
            }
            var snapshot = snapshot
            var shown = 0
            refreshing: while !Task.isCancelled {
                let started = monotonicSeconds()
                let report = try snapshot.take()
                if json {
                    output(try encodeJSONLine(report))
                } else if csv {
                    output((shown > 0 ? "\n" : "") + report.renderCSV())
                } else if let screen {
                    screen.draw(report.renderText(exactBytes: bytes, width: screen.columns), footer: keys.map { $0.footer(sortedBy: snapshot.sort) })
                } else {
                    output((shown > 0 ? "\n" : "") + report.renderText(exactBytes: bytes))
                }
                shown += 1
                if let count, shown >= count { break }
                // Until the next refresh, keys are read every 100 ms (none without a terminal).
                while true {
                    let remaining = interval - (monotonicSeconds() - started)
                    if remaining <= 0 { break }
                    switch keys?.next() {
                    case .quit?: break refreshing
                    case .sort(let key)?:
                        snapshot.sort = key
                        continue refreshing
                    case nil: break
                    }
                    do {
                        try await Task.sleep(for: Seconds.duration(keys == nil ? remaining : min(remaining, 0.1)))
                    } catch {
                        guard error is CancellationError else { throw error }
                        break refreshing  // interrupted while waiting: the normal end of a live view
                    }
                }
            }
        }
        try await Interrupts.handling({ _ in work.cancel() }) { try await work.value }
    }
}

/// The keys of live `top`, read from its terminal (standard input, when it is one) without
/// echo or line buffering; `restore` gives the terminal its settings back. Ctrl-C still sends
/// SIGINT.
final class LiveKeys: @unchecked Sendable {
    enum Action: Equatable {
        case quit
        case sort(TopSortKey)
    }

    /// The sort keys: a letter for each common column, `<` and `>` for the column before and after.
    static let letters: [(Character, TopSortKey)] = [
        ("f", .footprint), ("d", .dirty), ("c", .clean), ("p", .purgeable), ("s", .swapped), ("r", .resident),
        ("n", .name), ("i", .pid),
    ]

    private var saved: termios?
    private var current: TopSortKey?

    init() {
        guard isatty(0) == 1 else { return }
        var settings = termios()
        guard tcgetattr(0, &settings) == 0 else { return }
        saved = settings
        settings.c_lflag &= ~tcflag_t(ICANON | ECHO)
        tcsetattr(0, TCSANOW, &settings)
    }

    func restore() {
        guard var settings = saved else { return }
        tcsetattr(0, TCSANOW, &settings)
        saved = nil
    }

    /// The last line of the screen: the keys, and the column sorted by.
    func footer(sortedBy sort: TopSortKey) -> String {
        current = sort
        guard saved != nil else { return "sorted by \(sort.rawValue)" }
        // What the table is sorted by first: a narrow terminal cuts the end of the line.
        return "sorted by \(sort.rawValue) | q quit  < > sort column  " + Self.letters.map { "\($0.0) \($0.1.rawValue)" }.joined(separator: "  ")
    }

    /// What the keys typed since the last call ask for (the last one that asks anything), or nil.
    func next() -> Action? {
        guard saved != nil else { return nil }
        var action: Action?
        var sort = current ?? .footprint
        while true {
            var fd = pollfd(fd: 0, events: Int16(POLLIN), revents: 0)
            guard poll(&fd, 1, 0) == 1, fd.revents & Int16(POLLIN) != 0 else { break }
            var byte: UInt8 = 0
            guard read(0, &byte, 1) == 1 else { break }
            let key = Character(Unicode.Scalar(byte))
            let all = TopSortKey.allCases
            switch key {
            case "q", "Q": return .quit
            case "<", ",":
                sort = all[(all.firstIndex(of: sort)! + all.count - 1) % all.count]
                action = .sort(sort)
            case ">", ".":
                sort = all[(all.firstIndex(of: sort)! + 1) % all.count]
                action = .sort(sort)
            default:
                if let match = Self.letters.first(where: { $0.0 == key }) {
                    sort = match.1
                    action = .sort(sort)
                }
            }
        }
        return action
    }
}

/// The terminal while `top --interval` redraws it: the alternate screen with the cursor
/// hidden, as top(1) and watch(1) use it; `restore` gives the user back their screen.
final class LiveScreen: Sendable {
    init() { Self.writeControl("\u{1b}[?1049h\u{1b}[?25l") }

    /// The terminal's width in columns (nil when it cannot be told).
    var columns: Int? {
        var size = winsize()
        guard ioctl(1, UInt(TIOCGWINSZ), &size) == 0, size.ws_col > 0 else { return nil }
        return Int(size.ws_col)
    }

    /// Draws `text` from the top left, clearing what the previous draw left, cut to the
    /// terminal's height (the last line then says how many were left out) and width (a line
    /// that wrapped would push the table down and scroll the screen); `footer`, if any, is
    /// always the last line.
    func draw(_ text: String, footer: String? = nil) {
        var lines = text.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        if lines.last?.isEmpty == true { lines.removeLast() }
        var size = winsize()
        let known = ioctl(1, UInt(TIOCGWINSZ), &size) == 0
        let rows = Int(size.ws_row) - (footer == nil ? 0 : 1)
        if known, rows > 1, lines.count > rows {
            let keep = rows - 1
            let hidden = lines.count - keep
            lines = Array(lines.prefix(keep)) + ["... \(hidden) more lines (a taller terminal, or --limit)"]
        }
        if let footer { lines.append(footer) }
        if known, size.ws_col > 0 {
            // Counted in scalars of the printable text, one column each (a wide character in a
            // process name may still wrap; the table is cut well short of that in practice).
            let columns = Int(size.ws_col)
            lines = lines.map { printableText($0, keepingLineBreaks: false) }.map { line in
                line.unicodeScalars.count > columns ? String(String.UnicodeScalarView(line.unicodeScalars.prefix(columns))) : line
            }
        }
        Self.writeControl("\u{1b}[H")
        for (i, line) in lines.enumerated() {
            output(line)
            Self.writeControl(i == lines.count - 1 ? "\u{1b}[K" : "\u{1b}[K\n")
        }
        Self.writeControl("\u{1b}[J")
    }

    func restore() { Self.writeControl("\u{1b}[?25h\u{1b}[?1049l") }

    /// Terminal control sequences, written as they are (`output` would make them printable).
    private static func writeControl(_ sequence: String) {
        var text = sequence
        text.withUTF8 { buf in
            do {
                try MemPressureSystem.writeAll(1, UnsafeRawBufferPointer(buf))
            } catch {
                // The terminal is gone: nothing left to draw on or restore.
            }
        }
    }
}

