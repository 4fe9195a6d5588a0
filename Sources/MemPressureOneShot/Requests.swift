import Glibc
import MemPressureLifecycleProtocol
import MemPressureMonitor
import MemPressureRegionTags
import MemPressureSystem
import MemPressureValues
import MemPressureVMTracker

/// One `top` table, from its options however the command line was read (`Top`, or
/// `QuickCommandLine`); the defaults are `Top`'s.
package struct TopRequest: Equatable {
    package var json = false
    package var csv = false
    package var procRoot = "/proc"
    package var cgroupRoot = "/sys/fs/cgroup"
    package var grouping: AppGrouping = .app
    package var sort: TopSortKey = .footprint
    package var limit: Int?
    package var match: String?
    package var user: String?
    package var bytes = false
    package var full = false

    package init(
        json: Bool = false, csv: Bool = false, procRoot: String = "/proc", cgroupRoot: String = "/sys/fs/cgroup", grouping: AppGrouping = .app,
        sort: TopSortKey = .footprint, limit: Int? = nil, match: String? = nil, user: String? = nil, bytes: Bool = false, full: Bool = false
    ) {
        self.json = json
        self.csv = csv
        self.procRoot = procRoot
        self.cgroupRoot = cgroupRoot
        self.grouping = grouping
        self.sort = sort
        self.limit = limit
        self.match = match
        self.user = user
        self.bytes = bytes
        self.full = full
    }

    /// Every check of these options, whichever way they were read: `Top.validate` starts with
    /// this.
    package func validate() throws(OptionError) {
        try checkFormat(json: json, csv: csv)
        if let limit, limit <= 0 { throw OptionError("--limit must be positive") }
        if bytes && (json || csv) { throw OptionError("--bytes is for the text table: --json and --csv always print bytes") }
    }

    /// The refresh these options ask for; `users` gives `--user`'s UID (a number as it is; the
    /// command line also looks names up in the user database, which the one-shot program,
    /// static and without the C library's name services, leaves to it).
    package func snapshot(users: (String) throws -> UInt32 = numericUserID) throws -> TopSnapshot {
        let uid = try user.map(users)
        return TopSnapshot(
            snapshotter: Snapshotter(proc: ProcFS(root: procRoot), cgroupRoot: cgroupRoot), procRoot: procRoot, cgroupRoot: cgroupRoot,
            options: SnapshotOptions(detail: full ? .regions : .rollup, status: uid != nil, cgroup: grouping != .process),
            grouping: grouping, limit: limit, sort: sort, filter: TopFilter(namePattern: match, uid: uid))
    }

    package func run(users: (String) throws -> UInt32 = numericUserID) throws(CommandFailed) {
        do {
            let report = try snapshot(users: users).take()
            try printReport(report, json: json, csv: csv, renderCSV: report.renderCSV) { report.renderText(exactBytes: bytes) }
        } catch {
            throw failed(error)
        }
    }
}

/// `--user` given as a number; anything else is an error here (`userID` in the command line
/// also reads names).
package func numericUserID(_ text: String) throws -> UInt32 {
    guard let uid = UInt32(text) else { throw CLIError("--user \(text): give a numeric UID") }
    return uid
}

/// What one refresh of `top` reads and how it forms the report.
package struct TopSnapshot: Sendable {
    package var snapshotter: Snapshotter
    package var procRoot: String
    package var cgroupRoot: String
    package var options: SnapshotOptions
    package var grouping: AppGrouping
    package var limit: Int?
    package var sort: TopSortKey
    package var filter: TopFilter

    package func take() throws -> TopReport {
        let machine = try snapshotter.machine(options: options)
        var report = TopReport(
            machine, grouping: grouping, limit: limit, sort: sort, filter: filter, memory: MachineMemory.read(procRoot: procRoot))
        if grouping == .cgroup {
            report.readCgroupMemory(cgroupRoot: cgroupRoot)
        } else {
            report.readUnreadable(machine.skipped, procRoot: procRoot, filter: filter, limit: limit ?? 20)
        }
        return report
    }
}

extension TopReport {
    /// For the processes whose memory maps were denied, what their /proc/PID/status shows every
    /// user (those the filters pass, the `limit` largest by resident size; a note counts the rest).
    mutating func readUnreadable(_ skipped: [ProcError], procRoot: String, filter: TopFilter, limit: Int) {
        var found: [UnreadableProcess] = []
        for case .permissionDenied(let pid, _) in skipped {
            guard let bytes = try? ProcFS.readBytes("\(procRoot)/\(pid)/status"),
                let status = try? bytes.withUnsafeBytes({ (b) throws(ProcError) in try ProcessStatus.parse(b, pid: pid) })
            else { continue }  // exited meanwhile, or not even status: nothing to show
            if let uid = filter.uid, status.uid != uid { continue }
            if filter.namePattern != nil, !filter.matches(name: status.name) { continue }
            found.append(UnreadableProcess(pid: pid, status: status))
        }
        guard !found.isEmpty else { return }
        found.sort { ($0.residentBytes ?? 0, $1.pid) > ($1.residentBytes ?? 0, $0.pid) }
        if found.count > limit {
            notes.append("showing the \(limit) largest of \(found.count) processes not readable by this user")
            found.removeLast(found.count - limit)
        }
        unreadable = found
    }
}

/// What `vm` does, from its options however the command line was read (`VM`, or
/// `QuickCommandLine`); the defaults are `VM`'s.
package struct VMRequest: Equatable {
    package var target = TargetSpec()
    package var json = false
    package var csv = false
    package var procRoot = "/proc"
    package var cgroupRoot = "/sys/fs/cgroup"
    package var regions = false
    package var sort: SortKey = .dirty
    package var fullPaths = false
    package var stacks = false
    package var registry = RegionRegistry.defaultDirectory

    package init(
        target: TargetSpec = TargetSpec(), json: Bool = false, csv: Bool = false, procRoot: String = "/proc", cgroupRoot: String = "/sys/fs/cgroup",
        regions: Bool = false, sort: SortKey = .dirty, fullPaths: Bool = false, stacks: Bool = false, registry: String = RegionRegistry.defaultDirectory
    ) {
        self.target = target
        self.json = json
        self.csv = csv
        self.procRoot = procRoot
        self.cgroupRoot = cgroupRoot
        self.regions = regions
        self.sort = sort
        self.fullPaths = fullPaths
        self.stacks = stacks
        self.registry = registry
    }

    /// Every check of `vm`'s options, whichever way they were read: `VM.validate` is this.
    package func validate() throws(OptionError) {
        try target.validate()
        try checkFormat(json: json, csv: csv)
        if stacks && !regions { throw OptionError("--stacks shows stacks in the regions map: add --regions") }
    }

    package func run() throws(CommandFailed) {
        do {
            let snapshotter = Snapshotter(proc: ProcFS(root: procRoot), cgroupRoot: cgroupRoot)
            var options = SnapshotOptions.detailed
            options.tagSource = RegionRegistry(directory: registry)
            let app = try snapshotter.app(try target.definition(snapshotter), options: options)
            let report = VMReport(app, includeRegions: regions, sort: sort, includeStacks: stacks)
            try printReport(report, json: json, csv: csv, renderCSV: report.renderCSV) { report.renderText(fullPaths: fullPaths) }
        } catch {
            throw failed(error)
        }
    }
}

/// Which process or app a command is about, however the command line was read
/// (`TargetOptions`, or `QuickCommandLine`).
package struct TargetSpec: Equatable {
    package var target: String?
    package var processOnly = false
    package var cgroup: String?
    package var match: String?

    package init(target: String? = nil, processOnly: Bool = false, cgroup: String? = nil, match: String? = nil) {
        self.target = target
        self.processOnly = processOnly
        self.cgroup = cgroup
        self.match = match
    }

    package func validate() throws(OptionError) {
        let given = [target != nil, cgroup != nil, match != nil].filter { $0 }.count
        guard given == 1 else {
            throw OptionError("name exactly one of: a PID or name, --cgroup PATH, --match PATTERN")
        }
        if processOnly && target == nil {
            throw OptionError("--only applies to a PID or name")
        }
    }

    package func definition(_ snapshotter: Snapshotter) throws -> AppDefinition {
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
