// Text and CSV layouts of the reports. The JSON layouts are the Codable types themselves.

import MemPressureLifecycleProtocol
import MemPressureSystem
import MemPressureValues

extension VMReport {
    /// The VM Tracker summary (and, with regions, the regions map) as text.
    public func renderText(fullPaths: Bool = false) -> String {
        var out = "\(name) [\(pid)]  \(scope == "app" ? "app of \(processes.count) processes" : "process")"
        if let s = supervisedApp { out += ", supervised: cgroup \(s.path) of supervisor \(s.supervisorPID)" }
        out += "\n"
        out += "footprint \(ByteFormat.human(totals.footprintBytes))   dirty \(ByteFormat.human(totals.dirtyBytes))"
        out += "   clean \(ByteFormat.human(totals.cleanBytes))   purgeable \(ByteFormat.human(totals.purgeableBytes))"
        out += "   swapped \(ByteFormat.human(totals.swappedBytes))   resident \(ByteFormat.human(totals.residentBytes))"
        out += "   virtual \(ByteFormat.human(totals.virtualBytes))\n"
        out += "uss \(ByteFormat.human(orUnknown: totals.ussBytes))   swapPss \(ByteFormat.human(orUnknown: totals.swapPssBytes))"
        out += "   thp \(ByteFormat.human(orUnknown: totals.thpBytes))   locked \(ByteFormat.human(orUnknown: totals.lockedBytes))\n\n"

        var table = TextTable([
            .init("% of Res."), .init("Type", .left), .init("# Regs"), .init("Path", .left), .init("Resident"),
            .init("Virtual Size"), .init("Res. %"), .init("Protections", .left), .init("% All Dirty"),
            .init("Dirty Size"), .init("Swapped"), .init("Purgeable"), .init("Footprint"), .init("USS"), .init("SwapPss"),
            .init("THP"), .init("Locked"),
        ])
        // Saturating: a report read back from JSON may claim any counts.
        let regionTotal = types.reduce(0) { sum, row in
            let (total, overflow) = sum.addingReportingOverflow(row.regionCount)
            return overflow ? (row.regionCount > 0 ? Int.max : Int.min) : total
        }
        table.append([
            ByteFormat.percent(totals.residentBytes, of: totals.residentBytes), "*All*", "\(regionTotal)", "< multiple >",
            ByteFormat.human(totals.residentBytes), ByteFormat.human(totals.virtualBytes),
            ByteFormat.percent(totals.residentBytes, of: totals.virtualBytes), "", ByteFormat.percent(totals.dirtyBytes, of: totals.dirtyBytes),
            ByteFormat.human(totals.dirtyBytes), ByteFormat.human(totals.swappedBytes), ByteFormat.human(totals.purgeableBytes),
            ByteFormat.human(totals.footprintBytes), ByteFormat.human(orUnknown: totals.ussBytes),
            ByteFormat.human(orUnknown: totals.swapPssBytes), ByteFormat.human(orUnknown: totals.thpBytes),
            ByteFormat.human(orUnknown: totals.lockedBytes),
        ])
        for t in types {
            let path = t.path.map { fullPaths ? $0 : Self.shortPath($0) } ?? (t.regionCount > 1 && t.type != "anonymous" ? "< multiple >" : "")
            table.append([
                ByteFormat.percent(t.residentBytes, of: totals.residentBytes), t.type, "\(t.regionCount)", path,
                ByteFormat.human(t.residentBytes), ByteFormat.human(t.virtualBytes),
                ByteFormat.percent(t.residentBytes, of: t.virtualBytes), t.protections ?? "< multiple >",
                ByteFormat.percent(t.dirtyBytes, of: totals.dirtyBytes), ByteFormat.human(t.dirtyBytes),
                ByteFormat.human(t.swappedBytes), ByteFormat.human(t.purgeableBytes), ByteFormat.human(t.footprintBytes),
                ByteFormat.human(orUnknown: t.ussBytes), ByteFormat.human(orUnknown: t.swapPssBytes),
                ByteFormat.human(orUnknown: t.thpBytes), ByteFormat.human(orUnknown: t.lockedBytes),
            ])
        }
        out += table.render()

        if processes.count > 1 {
            out += "\nProcesses\n"
            var p = TextTable([
                .init("PID"), .init("PPID"), .init("Name", .left), .init("State", .left), .init("Footprint"),
                .init("Dirty"), .init("Purgeable"), .init("Swapped"), .init("Resident"), .init("USS"),
            ])
            for row in processes {
                p.append([
                    "\(row.pid)", "\(row.ppid)", row.name, row.state, ByteFormat.human(row.totals.footprintBytes),
                    ByteFormat.human(row.totals.dirtyBytes), ByteFormat.human(row.totals.purgeableBytes),
                    ByteFormat.human(row.totals.swappedBytes), ByteFormat.human(row.totals.residentBytes),
                    ByteFormat.human(orUnknown: row.totals.ussBytes),
                ])
            }
            out += p.render()
        }

        if let regions {
            out += "\nRegions\n"
            let multi = processes.count > 1
            var columns: [TextTable.Column] = []
            if multi { columns.append(.init("PID")) }
            columns += [
                .init("Address Range", .left), .init("Type", .left), .init("Prot", .left), .init("Resident"),
                .init("Virtual"), .init("Dirty"), .init("Clean"), .init("Swapped"), .init("Purgeable"), .init("Path", .left),
            ]
            var r = TextTable(columns)
            for row in regions {
                var cells: [String] = multi ? ["\(row.pid)"] : []
                cells += [
                    "\(row.start)-\(row.end)", row.type, row.permissions, ByteFormat.human(row.residentBytes),
                    ByteFormat.human(row.virtualBytes), ByteFormat.human(row.dirtyBytes), ByteFormat.human(row.cleanBytes),
                    ByteFormat.human(row.swappedBytes), ByteFormat.human(row.purgeableBytes), row.path,
                ]
                r.append(cells)
            }
            out += r.render()
            let stacks = regions.filter { $0.stack != nil }
            if !stacks.isEmpty {
                out += "\nCall stacks of registered regions\n"
                for row in stacks {
                    out += "\(row.start)-\(row.end)  \(row.type)\n"
                    for frame in row.stack ?? [] { out += "    \(frame)\n" }
                }
            }
        }
        if !notes.isEmpty {
            out += "\n" + notes.map { "note: \($0)\n" }.joined()
        }
        return out
    }

    /// CSV: the type summary, or the regions map when the report carries regions.
    public func renderCSV() -> String {
        if let regions {
            var out = CSV.line([
                "pid", "start", "end", "permissions", "offset", "type", "path", "virtualBytes", "residentBytes", "pssBytes",
                "dirtyBytes", "cleanBytes", "purgeableBytes", "swappedBytes", "footprintBytes",
            ])
            for r in regions {
                out += CSV.line([
                    "\(r.pid)", r.start, r.end, r.permissions, "\(r.offset)", r.type, r.path, "\(r.virtualBytes)",
                    "\(r.residentBytes)", "\(r.pssBytes)", "\(r.dirtyBytes)", "\(r.cleanBytes)", "\(r.purgeableBytes)",
                    "\(r.swappedBytes)", "\(r.footprintBytes)",
                ])
            }
            return out
        }
        var out = CSV.line([
            "type", "regionCount", "path", "protections", "virtualBytes", "residentBytes", "pssBytes", "dirtyBytes",
            "cleanBytes", "purgeableBytes", "swappedBytes", "footprintBytes", "ussBytes", "swapPssBytes", "thpBytes", "lockedBytes",
        ])
        func optional(_ value: UInt64?) -> String { value.map { "\($0)" } ?? "" }
        for t in types {
            out += CSV.line([
                t.type, "\(t.regionCount)", t.path ?? "", t.protections ?? "", "\(t.virtualBytes)", "\(t.residentBytes)",
                "\(t.pssBytes)", "\(t.dirtyBytes)", "\(t.cleanBytes)", "\(t.purgeableBytes)", "\(t.swappedBytes)",
                "\(t.footprintBytes)", optional(t.ussBytes), optional(t.swapPssBytes), optional(t.thpBytes), optional(t.lockedBytes),
            ])
        }
        return out
    }

    /// The last path component, keeping bracketed kernel names whole.
    static func shortPath(_ path: String) -> String {
        guard path.hasPrefix("/"), let slash = path.lastIndex(of: "/") else { return path }
        return String(path[path.index(after: slash)...])
    }
}

/// The whole-machine view (`mempressure top --json`).
public struct TopReport: Codable, Sendable, Hashable {
    public static let currentFormatVersion = 1
    public var formatVersion = Self.currentFormatVersion
    public var capturedAt: Timestamp
    public var grouping: String
    /// The column the apps are sorted by (`TopSortKey`); absent in reports written before it.
    public var sortedBy: String?
    /// The filters the apps passed (`--match`, `--user`); absent when none was given.
    public var filter: TopFilter?
    /// The machine's memory and PSI (the header of the text table).
    public var machine: MachineMemory?
    public var apps: [App]
    /// The sum over every app that passed the filters (all processes without filters), not
    /// only over the `--limit` shown.
    public var totals: Totals
    public var notes: [String]
    /// Processes whose memory maps this user may not read, with what /proc/PID/status shows
    /// every user: resident and swapped sizes, but no footprint, dirty or PSS (those need smaps).
    /// Absent when there are none, with `--group-by cgroup`, or in reports written before it.
    public var unreadable: [UnreadableProcess]?

    /// A process of another user, as its world-readable /proc/PID/status shows it.
    public struct UnreadableProcess: Codable, Sendable, Hashable {
        public var pid: Int32
        public var name: String
        public var uid: UInt32?
        public var residentBytes: UInt64?
        public var residentAnonBytes: UInt64?
        public var residentFileBytes: UInt64?
        public var residentShmemBytes: UInt64?
        public var swapBytes: UInt64?

        public init(pid: Int32, status: ProcessStatus) {
            self.pid = pid
            name = status.name
            uid = status.uid
            residentBytes = status.residentBytes
            residentAnonBytes = status.residentAnonBytes
            residentFileBytes = status.residentFileBytes
            residentShmemBytes = status.residentShmemBytes
            swapBytes = status.swapBytes
        }
    }

    public struct App: Codable, Sendable, Hashable {
        public var pid: Int32?
        public var name: String
        public var key: String
        public var processCount: Int
        public var pids: [Int32]
        public var totals: Totals
        /// With `--group-by cgroup`: what the cgroup path says (unit, pod, container, runtime).
        public var cgroup: CgroupIdentity? = nil
        /// With `--group-by cgroup`: the cgroup's own figures, as the kernel keeps them, beside
        /// the sum over its processes in `totals`; nil where the cgroup has no memory files (v2's
        /// root) or they could not be read (then a note says why).
        public var cgroupMemory: CgroupFigures? = nil
    }

    /// A memory cgroup's own figures (`Pressure.CgroupMemory.Reading`): what it is charged
    /// (descendants and page cache included), its limit, the kernel's OOM kills in it and its
    /// anonymous, file and shared memory from `memory.stat`. Nil fields are what the kernel
    /// does not say (no limit, an old kernel, a missing key), never a zero.
    public struct CgroupFigures: Codable, Sendable, Hashable {
        /// The cgroup's directory the figures were read from.
        public var directory: String
        public var usageBytes: UInt64
        public var limitBytes: UInt64?
        public var oomKills: UInt64?
        public var anonBytes: UInt64?
        public var fileBytes: UInt64?
        public var shmemBytes: UInt64?

        public init(
            directory: String, usageBytes: UInt64, limitBytes: UInt64?, oomKills: UInt64?, anonBytes: UInt64?, fileBytes: UInt64?,
            shmemBytes: UInt64?
        ) {
            self.directory = directory
            self.usageBytes = usageBytes
            self.limitBytes = limitBytes
            self.oomKills = oomKills
            self.anonBytes = anonBytes
            self.fileBytes = fileBytes
            self.shmemBytes = shmemBytes
        }
    }

    /// The apps of `machine`: processes of `filter.uid` only, grouped, the apps whose name
    /// matches `filter.namePattern`, in `sort` order, the first `limit` of them.
    public init(
        _ machine: MachineSnapshot, grouping: AppGrouping, limit: Int? = nil, sort: TopSortKey = .footprint,
        filter: TopFilter = TopFilter(), memory: MachineMemory? = nil
    ) {
        capturedAt = machine.capturedAt
        self.grouping = grouping.rawValue
        sortedBy = sort.rawValue
        self.filter = filter.isEmpty ? nil : filter
        self.machine = memory
        var source = machine
        if let uid = filter.uid {
            source.processes = machine.processes.filter { $0.status?.uid == uid }
        }
        let summaries = source.apps(grouping: grouping).filter { filter.matches(name: $0.name) }
        let all = sort.sorted(summaries.map {
            App(pid: $0.rootPID, name: $0.name, key: $0.key, processCount: $0.pids.count, pids: $0.pids, totals: Totals($0.totals), cgroup: $0.cgroup)
        })
        apps = Array(all.prefix(limit ?? all.count))
        totals = Totals(MemoryCounters.sum(summaries.lazy.map(\.totals)))
        notes = machine.skipNotes
        if let limit, all.count > limit {
            notes.insert("showing the first \(limit) of \(all.count) apps by \(sort.rawValue)", at: 0)
        }
        if all.isEmpty && !filter.isEmpty {
            notes.insert("no app matches \(filter.description)", at: 0)
        }
    }

    /// The text table under its header; `exactBytes` prints byte counts as integers (for sort
    /// and awk) instead of human units. A quantity the kernel does not report shows as "n/a".
    ///
    /// With `width` (a terminal's columns), a sorted column that would end beyond it moves to
    /// just after Procs, so that what the table is sorted by stays in sight.
    public func renderText(exactBytes: Bool = false, width: Int? = nil) -> String {
        func bytes(_ value: UInt64?) -> String {
            guard let value else { return "n/a" }
            return exactBytes ? "\(value)" : ByteFormat.human(value)
        }
        var out = machine.map { Self.renderHeader($0, at: capturedAt, exactBytes: exactBytes) + "\n" } ?? ""
        if grouping == "cgroup" { return out + renderCgroupText(bytes) }
        var table = TextTable([
            .init("PID"), .init("App", .left),
            .init("Procs"), .init("Footprint"), .init("Dirty"), .init("Clean"), .init("Purgeable"), .init("Swapped"),
            .init("Resident"), .init("PSS"), .init("USS"), .init("SwapPss"), .init("THP"), .init("Locked"),
        ])
        for app in apps {
            let t = app.totals
            table.append([
                app.pid.map(String.init) ?? "-", app.name,
                "\(app.processCount)", bytes(t.footprintBytes), bytes(t.dirtyBytes), bytes(t.cleanBytes),
                bytes(t.purgeableBytes), bytes(t.swappedBytes), bytes(t.residentBytes), bytes(t.pssBytes),
                bytes(t.ussBytes), bytes(t.swapPssBytes), bytes(t.thpBytes), bytes(t.lockedBytes),
            ])
        }
        if let width, let sorted = Self.columnTitle(sortedBy), let index = table.columns.firstIndex(where: { $0.title == sorted }),
            index > 3, table.columnEnds()[index] > width
        {
            table.moveColumn(from: index, to: 3)
        }
        out += table.render()
        out += "total footprint \(bytes(totals.footprintBytes)), dirty \(bytes(totals.dirtyBytes)), "
        out += "purgeable \(bytes(totals.purgeableBytes)), swapped \(bytes(totals.swappedBytes)), "
        out += "PSS \(bytes(totals.pssBytes)), USS \(bytes(totals.ussBytes))\n"
        if let note = Self.supervisedNote(apps) { out += "note: \(note)\n" }
        if let unreadable, !unreadable.isEmpty { out += renderUnreadable(unreadable, bytes) }
        for n in notes { out += "note: \(n)\n" }
        return out
    }

    /// The processes this user may not read, by resident size: what /proc/PID/status shows.
    func renderUnreadable(_ processes: [UnreadableProcess], _ bytes: (UInt64?) -> String) -> String {
        var table = TextTable([
            .init("PID"), .init("Name", .left), .init("UID"), .init("Resident"), .init("Anon"), .init("File"), .init("Shmem"), .init("Swapped"),
        ])
        for p in processes {
            table.append([
                "\(p.pid)", p.name, p.uid.map(String.init) ?? "-", bytes(p.residentBytes), bytes(p.residentAnonBytes),
                bytes(p.residentFileBytes), bytes(p.residentShmemBytes), bytes(p.swapBytes),
            ])
        }
        return "\nNot readable by this user (memory maps denied; from /proc/PID/status, which every user may read: no footprint, dirty or PSS):\n"
            + table.render()
    }

    /// The title of the column a `TopSortKey` sorts by (nil for none).
    static func columnTitle(_ sortKey: String?) -> String? {
        switch sortKey {
        case "pid": "PID"
        case "name": "App"
        case "processes": "Procs"
        case "footprint": "Footprint"
        case "dirty": "Dirty"
        case "clean": "Clean"
        case "purgeable": "Purgeable"
        case "swapped": "Swapped"
        case "resident": "Resident"
        case "pss": "PSS"
        case "uss": "USS"
        case "swappss": "SwapPss"
        case "thp": "THP"
        case "locked": "Locked"
        default: nil
        }
    }

    /// The note under the `--group-by app` table naming the supervised apps among those shown
    /// (the table has no column for it); nil when there are none.
    static func supervisedNote(_ apps: [App]) -> String? {
        let supervised = apps.compactMap { a in a.cgroup?.supervised.map { "\(a.name) (supervisor \($0.supervisorPID))" } }
        guard !supervised.isEmpty else { return nil }
        return "supervised apps (each is every process in its cgroup, whatever its parent): \(supervised.joined(separator: ", "))"
    }

    /// The table of `--group-by cgroup`: each cgroup's name and unit, the sum over its processes,
    /// then the cgroup's own usage, limit and OOM kills, and its path last (the longest column).
    func renderCgroupText(_ bytes: (UInt64?) -> String) -> String {
        var table = TextTable([
            .init("App", .left), .init("Unit", .left), .init("Procs"), .init("Footprint"), .init("Dirty"), .init("Clean"), .init("Purgeable"),
            .init("Swapped"), .init("Resident"), .init("PSS"), .init("USS"), .init("Usage"), .init("Limit"), .init("OOM kills"), .init("Cgroup", .left),
        ])
        for app in apps {
            let own = app.cgroupMemory
            table.append([
                app.name, app.cgroup?.unitColumn ?? "-", "\(app.processCount)", bytes(app.totals.footprintBytes),
                bytes(app.totals.dirtyBytes), bytes(app.totals.cleanBytes), bytes(app.totals.purgeableBytes),
                bytes(app.totals.swappedBytes), bytes(app.totals.residentBytes), bytes(app.totals.pssBytes), bytes(app.totals.ussBytes),
                own.map { bytes($0.usageBytes) } ?? "-", own.map { $0.limitBytes.map { bytes($0) } ?? "none" } ?? "-",
                own?.oomKills.map(String.init) ?? "-", app.key,
            ])
        }
        var out = table.render()
        out += "total footprint \(bytes(totals.footprintBytes)), dirty \(bytes(totals.dirtyBytes)), "
        out += "purgeable \(bytes(totals.purgeableBytes)), swapped \(bytes(totals.swappedBytes)), "
        out += "PSS \(bytes(totals.pssBytes)), USS \(bytes(totals.ussBytes))\n"
        for n in notes { out += "note: \(n)\n" }
        return out
    }

    /// The lines above the table: the time, the machine's memory and swap, and PSI.
    static func renderHeader(_ m: MachineMemory, at time: Timestamp, exactBytes: Bool) -> String {
        func bytes(_ value: UInt64?) -> String {
            guard let value else { return "n/a" }
            return exactBytes ? "\(value)" : ByteFormat.human(value)
        }
        var out = "\(time)  memory: total \(bytes(m.memTotalBytes)), available \(bytes(m.memAvailableBytes))"
        out += "  swap: total \(bytes(m.swapTotalBytes)), free \(bytes(m.swapFreeBytes))\n"
        if let psi = m.psi {
            out += "PSI memory: some avg10 \(ByteFormat.fixed(psi.some.avg10, 2))%"
            if let full = psi.full { out += ", full avg10 \(ByteFormat.fixed(full.avg10, 2))%" }
            out += "; stalled some \(ByteFormat.fixed(Double(psi.some.totalMicroseconds) / 1e6, 3)) s"
            if let full = psi.full { out += ", full \(ByteFormat.fixed(Double(full.totalMicroseconds) / 1e6, 3)) s" }
            out += " in total\n"
        }
        for n in m.notes { out += "\(n)\n" }
        return out
    }

    public func renderCSV() -> String {
        // Grouped by cgroup, the cgroup's fields follow (empty where unknown).
        let cgroupColumns = grouping == "cgroup"
        func optional(_ value: UInt64?) -> String { value.map { "\($0)" } ?? "" }
        var out = CSV.line([
            "pid", "name", "key", "processCount", "footprintBytes", "dirtyBytes", "purgeableBytes", "swappedBytes",
            "residentBytes", "pssBytes", "cleanBytes", "virtualBytes", "ussBytes", "swapPssBytes", "thpBytes", "lockedBytes",
        ] + (cgroupColumns ? Self.cgroupCSVColumns : []))
        for a in apps {
            out += CSV.line([
                a.pid.map(String.init) ?? "", a.name, a.key, "\(a.processCount)", "\(a.totals.footprintBytes)",
                "\(a.totals.dirtyBytes)", "\(a.totals.purgeableBytes)", "\(a.totals.swappedBytes)", "\(a.totals.residentBytes)",
                "\(a.totals.pssBytes)", "\(a.totals.cleanBytes)", "\(a.totals.virtualBytes)", optional(a.totals.ussBytes),
                optional(a.totals.swapPssBytes), optional(a.totals.thpBytes), optional(a.totals.lockedBytes),
            ] + (cgroupColumns ? a.cgroupCSVFields : []))
        }
        return out
    }

    static let cgroupCSVColumns = [
        "unit", "pod", "container", "runtime", "cgroupUsageBytes", "cgroupLimitBytes", "cgroupOomKills", "cgroupAnonBytes",
        "cgroupFileBytes", "cgroupShmemBytes", "supervisedApp", "supervisorPid",
    ]
}

extension CgroupIdentity {
    /// The unit with a container ID in it shortened as the name shows it
    /// (`cri-containerd-5b0c4a1e9f7d….scope`): for text tables.
    var shortUnit: String? {
        guard let unit, let container, container.utf8.count > 12 else { return unit }
        return unit.replacing(container, with: container.prefix(12) + "…", maxReplacements: 1)
    }

    /// The Unit column of the `--group-by cgroup` table: a supervised app says whose, anything
    /// else its unit.
    var unitColumn: String? {
        supervised.map { "supervised by \($0.supervisorPID)" } ?? shortUnit
    }
}

extension TopReport.App {
    /// The values of `TopReport.cgroupCSVColumns`.
    var cgroupCSVFields: [String] {
        let own = cgroupMemory
        func number(_ n: UInt64?) -> String { n.map(String.init) ?? "" }
        return [
            cgroup?.unit ?? "", cgroup?.pod ?? "", cgroup?.container ?? "", cgroup?.runtime ?? "", number(own?.usageBytes),
            number(own?.limitBytes), number(own?.oomKills), number(own?.anonBytes), number(own?.fileBytes), number(own?.shmemBytes),
            cgroup?.supervised?.app ?? "", cgroup?.supervised.map { String($0.supervisorPID) } ?? "",
        ]
    }
}

extension ReportDiff {
    public func renderText() -> String {
        var out = "\(before.name) [\(before.pid)] \(before.capturedAt) -> \(after.name) [\(after.pid)] \(after.capturedAt)"
        out += " (\(ByteFormat.fixed(elapsedSeconds, 1)) s)\n"
        out += "footprint \(ByteFormat.signed(totals.footprintBytes))   dirty \(ByteFormat.signed(totals.dirtyBytes))"
        out += "   clean \(ByteFormat.signed(totals.cleanBytes))   purgeable \(ByteFormat.signed(totals.purgeableBytes))"
        out += "   swapped \(ByteFormat.signed(totals.swappedBytes))   resident \(ByteFormat.signed(totals.residentBytes))"
        out += "   virtual \(ByteFormat.signed(totals.virtualBytes))\n\n"
        if types.isEmpty {
            out += "no change by type\n"
        } else {
            var t = TextTable([
                .init("Type", .left), .init("# Regs"), .init("Footprint"), .init("Dirty"), .init("Clean"), .init("Purgeable"),
                .init("Swapped"), .init("Resident"), .init("Virtual"),
            ])
            for row in types {
                let regs = row.regionCountBefore == row.regionCountAfter ? "\(row.regionCountAfter)" : "\(row.regionCountBefore)->\(row.regionCountAfter)"
                t.append([
                    row.type, regs, ByteFormat.signed(row.delta.footprintBytes), ByteFormat.signed(row.delta.dirtyBytes),
                    ByteFormat.signed(row.delta.cleanBytes), ByteFormat.signed(row.delta.purgeableBytes),
                    ByteFormat.signed(row.delta.swappedBytes), ByteFormat.signed(row.delta.residentBytes),
                    ByteFormat.signed(row.delta.virtualBytes),
                ])
            }
            out += t.render()
        }
        if let regions {
            out += "\nRegions (\(regions.count) changed)\n"
            if !regions.isEmpty {
                var r = TextTable([
                    .init("Change", .left), .init("PID"), .init("Type", .left), .init("Before", .left), .init("After", .left),
                    .init("Footprint"), .init("Dirty"), .init("Resident"), .init("Virtual"), .init("Path", .left),
                ])
                for c in regions {
                    r.append([
                        c.change.rawValue, "\(c.pid)", c.type, c.before ?? "-", c.after ?? "-", ByteFormat.signed(c.delta.footprintBytes),
                        ByteFormat.signed(c.delta.dirtyBytes), ByteFormat.signed(c.delta.residentBytes),
                        ByteFormat.signed(c.delta.virtualBytes), c.path,
                    ])
                }
                out += r.render()
            }
        }
        for n in notes { out += "note: \(n)\n" }
        if let check = growthCheck { out += check.renderLine() + "\n" }
        return out
    }
}

extension ReportDiff.GrowthCheck {
    /// "footprint grew by 12.00 MiB (12582912 bytes), more than the 10.00 MiB allowed: heap
    /// +8.00 MiB, anonymous +4.00 MiB", or that it stayed within the limit.
    func renderLine() -> String {
        let limit = "\(ByteFormat.human(limitBytes)) (\(limitBytes) bytes)"
        var line: String
        if footprintGrowthBytes > 0 {
            line = "footprint grew by \(ByteFormat.human(UInt64(footprintGrowthBytes))) (\(footprintGrowthBytes) bytes), "
            line += exceeded ? "more than the \(limit) allowed" : "within the \(limit) allowed"
        } else {
            line = "footprint did not grow (\(ByteFormat.signed(footprintGrowthBytes))), within the \(limit) allowed"
        }
        if !grownTypes.isEmpty {
            line += ": " + grownTypes.map { "\($0.type) \(ByteFormat.signed($0.footprintBytes))" }.joined(separator: ", ")
        }
        return line
    }
}

extension TimelineEntry {
    /// The header of `renderRow`'s fixed-width columns.
    public static let header = pad("TIME", 9) + pad("FOOTPRINT", 13) + pad("DIRTY", 13) + pad("CLEAN", 13)
        + pad("PURGEABLE", 13) + pad("SWAPPED", 13) + pad("RESIDENT", 13) + pad("PROCS", 6) + "  EVENTS"

    /// One line of the `watch` timeline (streamed, so columns have fixed widths).
    public func renderRow() -> String {
        var line = Self.pad(ByteFormat.fixed(t, 2) + "s", 9) + Self.pad(ByteFormat.human(totals.footprintBytes), 13)
        line += Self.pad(ByteFormat.human(totals.dirtyBytes), 13) + Self.pad(ByteFormat.human(totals.cleanBytes), 13)
        line += Self.pad(ByteFormat.human(totals.purgeableBytes), 13) + Self.pad(ByteFormat.human(totals.swappedBytes), 13)
        line += Self.pad(ByteFormat.human(totals.residentBytes), 13) + Self.pad("\(processCount)", 6)
        let events = markers.map { "▶ \($0)" } + notes.map { "note: \($0)" }
        if !events.isEmpty { line += "  " + events.joined(separator: "; ") }
        return line
    }

    static func pad(_ s: String, _ width: Int) -> String {
        String(repeating: " ", count: max(0, width - s.count)) + s
    }
}
