/// The VM Tracker report of a process or an app: the stable JSON contract of
/// `mempressure vm --json` (see the article "JSON reports", VMTracker.docc/JSONReports.md).
/// Fields are only ever added; a change in meaning bumps `formatVersion`.

import MemPressureLifecycleProtocol
import MemPressureSystem
public struct VMReport: Codable, Sendable, Hashable {
    public static let currentFormatVersion = 1

    public var formatVersion: Int
    /// The app's root process (for a supervised app, the process its supervisor started; for
    /// cgroup and pattern apps, its lowest PID).
    public var pid: Int32
    public var name: String
    public var capturedAt: Timestamp
    /// "process" for one process, "app" for several.
    public var scope: String
    public var totals: Totals
    /// One row per region type, in the order of the report's sort key.
    public var types: [TypeRow]
    /// The processes of the app, each with its totals.
    public var processes: [ProcessRow]
    /// Every region (only with `--regions`).
    public var regions: [RegionRow]?
    /// What the report could not include and why (vanished members, unreadable processes).
    public var notes: [String]
    /// The supervised app these processes are (`vm APP`, or `--cgroup` of one app's cgroup);
    /// absent otherwise.
    public var supervisedApp: SupervisedAppCgroup?

    public struct TypeRow: Codable, Sendable, Hashable {
        public var type: String
        public var regionCount: Int
        public var virtualBytes: UInt64
        public var residentBytes: UInt64
        public var dirtyBytes: UInt64
        public var swappedBytes: UInt64
        public var purgeableBytes: UInt64
        public var cleanBytes: UInt64
        public var pssBytes: UInt64
        public var footprintBytes: UInt64
        /// USS, SwapPss, THP and Locked of the type's regions (as in `Totals`: the last three are
        /// absent where the kernel does not print them; all four in reports written before they
        /// existed).
        public var ussBytes: UInt64?
        public var swapPssBytes: UInt64?
        public var thpBytes: UInt64?
        public var lockedBytes: UInt64?
        /// The one path all regions of this type share, or nil when they have several.
        public var path: String?
        /// "rw-/rwx" (current/maximum) when all regions agree, else nil.
        public var protections: String?

        public init(
            type: String, regionCount: Int, virtualBytes: UInt64, residentBytes: UInt64, dirtyBytes: UInt64,
            swappedBytes: UInt64, purgeableBytes: UInt64, cleanBytes: UInt64, pssBytes: UInt64, footprintBytes: UInt64,
            path: String?, protections: String?
        ) {
            self.type = type
            self.regionCount = regionCount
            self.virtualBytes = virtualBytes
            self.residentBytes = residentBytes
            self.dirtyBytes = dirtyBytes
            self.swappedBytes = swappedBytes
            self.purgeableBytes = purgeableBytes
            self.cleanBytes = cleanBytes
            self.pssBytes = pssBytes
            self.footprintBytes = footprintBytes
            self.path = path
            self.protections = protections
        }
    }

    public struct RegionRow: Codable, Sendable, Hashable {
        public var pid: Int32
        /// Addresses as hexadecimal strings ("0x7f3a..."), since they exceed 2^53.
        public var start: String
        public var end: String
        public var permissions: String
        public var offset: UInt64
        public var path: String
        public var type: String
        public var virtualBytes: UInt64
        public var residentBytes: UInt64
        public var pssBytes: UInt64
        public var dirtyBytes: UInt64
        public var cleanBytes: UInt64
        public var purgeableBytes: UInt64
        public var swappedBytes: UInt64
        public var footprintBytes: UInt64
        /// Maximum protection from VmFlags (mr/mw/me), "rwx".
        public var maxProtection: String
        /// For regions a library of this project registered, the call stack that created them
        /// (present with `--stacks`).
        public var stack: [String]?

        public init(
            pid: Int32, start: String, end: String, permissions: String, offset: UInt64, path: String, type: String,
            virtualBytes: UInt64, residentBytes: UInt64, pssBytes: UInt64, dirtyBytes: UInt64, cleanBytes: UInt64,
            purgeableBytes: UInt64, swappedBytes: UInt64, footprintBytes: UInt64, maxProtection: String
        ) {
            self.pid = pid
            self.start = start
            self.end = end
            self.permissions = permissions
            self.offset = offset
            self.path = path
            self.type = type
            self.virtualBytes = virtualBytes
            self.residentBytes = residentBytes
            self.pssBytes = pssBytes
            self.dirtyBytes = dirtyBytes
            self.cleanBytes = cleanBytes
            self.purgeableBytes = purgeableBytes
            self.swappedBytes = swappedBytes
            self.footprintBytes = footprintBytes
            self.maxProtection = maxProtection
        }

        public var startAddress: UInt64 { parseHexAddress(start) ?? 0 }
        public var endAddress: UInt64 { parseHexAddress(end) ?? 0 }
    }

    public struct ProcessRow: Codable, Sendable, Hashable {
        public var pid: Int32
        public var ppid: Int32
        public var name: String
        /// The state letter of /proc/PID/stat (R, S, D, T, ...).
        public var state: String
        public var totals: Totals
    }
}

/// What a table or a regions map is sorted by.
public enum SortKey: String, Sendable, CaseIterable, Codable {
    case dirty, resident, virtual, swapped, purgeable, footprint, address

    func value(_ c: MemoryCounters) -> UInt64 {
        switch self {
        case .dirty: c.dirty
        case .resident: c.resident
        case .virtual: c.virtual
        case .swapped: c.swapped
        case .purgeable: c.purgeable
        case .footprint: c.footprint
        case .address: 0
        }
    }
}

/// Regions of one type, summed: one row of the VM Tracker summary.
public struct TypeSummary: Sendable, Hashable {
    public var type: RegionType
    public var regionCount: Int = 0
    public var counters = MemoryCounters()
    public var path: PathBytes?
    public var multiplePaths = false
    public var protections: String?
    public var multipleProtections = false

    init(type: RegionType) { self.type = type }

    mutating func add(_ r: Region) {
        regionCount += 1
        counters += r.counters
        if !r.path.isEmpty {
            if let path, path != r.path { multiplePaths = true } else { path = r.path }
        }
        let prot = r.permissions.protection + "/" + r.vmFlags.maximumProtection
        if let protections, protections != prot { multipleProtections = true } else { protections = prot }
    }

    /// Sums regions by type; rows sorted by `sort` (largest first; by name for `.address`).
    static func summarize(_ regions: some Sequence<Region>, sort: SortKey) -> [TypeSummary] {
        var byType: [RegionType: TypeSummary] = [:]
        for r in regions { byType[r.type, default: TypeSummary(type: r.type)].add(r) }
        return byType.values.sorted { a, b in
            let (x, y) = (sort.value(a.counters), sort.value(b.counters))
            if x != y { return x > y }
            if a.counters.resident != b.counters.resident { return a.counters.resident > b.counters.resident }
            return a.type.name < b.type.name
        }
    }
}

extension VMReport {
    /// Builds the report of an app (a single process is an app of one).
    public init(_ app: AppSnapshot, includeRegions: Bool, sort: SortKey = .dirty, includeStacks: Bool = false) {
        let allRegions = app.processes.flatMap { p in p.regions.lazy.map { (p.pid, $0) } }
        let totals = app.totals
        formatVersion = Self.currentFormatVersion
        pid = app.mainPID ?? 0
        name = app.name
        capturedAt = app.capturedAt
        scope = app.processes.count == 1 && app.rootPID != nil ? "process" : "app"
        self.totals = Totals(totals)
        types = TypeSummary.summarize(allRegions.lazy.map { $0.1 }, sort: sort).map { s in
            var row = TypeRow(
                type: s.type.name, regionCount: s.regionCount, virtualBytes: s.counters.virtual,
                residentBytes: s.counters.resident, dirtyBytes: s.counters.dirty, swappedBytes: s.counters.swapped,
                purgeableBytes: s.counters.purgeable, cleanBytes: s.counters.clean, pssBytes: s.counters.pss,
                footprintBytes: s.counters.footprint, path: s.multiplePaths ? nil : s.path?.description,
                protections: s.multipleProtections ? nil : s.protections)
            row.ussBytes = s.counters.uss
            row.swapPssBytes = s.counters.swapPssIfReported
            row.thpBytes = s.counters.thp
            row.lockedBytes = s.counters.lockedIfReported
            return row
        }
        processes = app.processes.map { p in
            ProcessRow(pid: p.pid, ppid: p.stat.ppid, name: p.name, state: p.stat.stateLetter, totals: Totals(p.totals))
        }
        if includeRegions {
            var rows = allRegions.map { pid, r in
                var row = RegionRow(pid: pid, region: r)
                if includeStacks { row.stack = r.stack }
                return row
            }
            if sort != .address {
                let keyed = zip(rows, allRegions.map { sort.value($0.1.counters) })
                rows = keyed.sorted { a, b in a.1 != b.1 ? a.1 > b.1 : (a.0.pid, a.0.startAddress) < (b.0.pid, b.0.startAddress) }.map(\.0)
            }
            regions = rows
        } else {
            regions = nil
        }
        notes = app.skipped.map(\.description) + app.processes.flatMap(\.notes)
        supervisedApp = app.supervisedApp
    }
}

extension VMReport.RegionRow {
    public init(pid: Int32, region r: Region) {
        self.pid = pid
        start = "0x" + hexString(r.start)
        end = "0x" + hexString(r.end)
        permissions = r.permissions.description
        offset = r.offset
        path = r.path.description
        type = r.type.name
        virtualBytes = r.counters.virtual
        residentBytes = r.counters.resident
        pssBytes = r.counters.pss
        dirtyBytes = r.counters.dirty
        cleanBytes = r.counters.clean
        purgeableBytes = r.counters.purgeable
        swappedBytes = r.counters.swapped
        footprintBytes = r.counters.footprint
        maxProtection = r.vmFlags.maximumProtection
        stack = nil
    }
}

/// Parses "0x7f3a00000000" (or without the prefix).
func parseHexAddress(_ text: String) -> UInt64? {
    var digits = Substring(text).utf8[...]
    if digits.starts(with: "0x".utf8) || digits.starts(with: "0X".utf8) { digits = digits.dropFirst(2) }
    return ByteScanner.hex(digits)
}
