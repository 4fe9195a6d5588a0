/// Signed byte changes between two reports.

import MemPressureSystem
public struct Delta: Codable, Sendable, Hashable {
    public var virtualBytes: Int64 = 0
    public var residentBytes: Int64 = 0
    public var pssBytes: Int64 = 0
    public var dirtyBytes: Int64 = 0
    public var cleanBytes: Int64 = 0
    public var purgeableBytes: Int64 = 0
    public var swappedBytes: Int64 = 0
    public var footprintBytes: Int64 = 0

    public init() {}

    public init(from a: Totals, to b: Totals) {
        virtualBytes = signedDifference(b.virtualBytes, a.virtualBytes)
        residentBytes = signedDifference(b.residentBytes, a.residentBytes)
        pssBytes = signedDifference(b.pssBytes, a.pssBytes)
        dirtyBytes = signedDifference(b.dirtyBytes, a.dirtyBytes)
        cleanBytes = signedDifference(b.cleanBytes, a.cleanBytes)
        purgeableBytes = signedDifference(b.purgeableBytes, a.purgeableBytes)
        swappedBytes = signedDifference(b.swappedBytes, a.swappedBytes)
        footprintBytes = signedDifference(b.footprintBytes, a.footprintBytes)
    }

    public var isZero: Bool { self == Delta() }

    /// No change of the process's own memory: PSS alone moves when *other* processes map or
    /// unmap the same pages, so it does not make a region "changed".
    public var isZeroApartFromShares: Bool {
        var own = self
        own.pssBytes = 0
        return own.isZero
    }
}

/// `b - a` as a signed number, saturating instead of trapping on absurd inputs.
func signedDifference(_ b: UInt64, _ a: UInt64) -> Int64 {
    if b >= a {
        let d = b - a
        return d > UInt64(Int64.max) ? Int64.max : Int64(d)
    }
    let d = a - b
    return d >= UInt64(Int64.max) ? -Int64.max : -Int64(d)
}

extension Totals {
    init(_ row: VMReport.TypeRow) {
        self.init(
            virtualBytes: row.virtualBytes, residentBytes: row.residentBytes, pssBytes: row.pssBytes,
            dirtyBytes: row.dirtyBytes, cleanBytes: row.cleanBytes, purgeableBytes: row.purgeableBytes,
            swappedBytes: row.swappedBytes, footprintBytes: row.footprintBytes)
    }

    init(_ row: VMReport.RegionRow) {
        self.init(
            virtualBytes: row.virtualBytes, residentBytes: row.residentBytes, pssBytes: row.pssBytes,
            dirtyBytes: row.dirtyBytes, cleanBytes: row.cleanBytes, purgeableBytes: row.purgeableBytes,
            swappedBytes: row.swappedBytes, footprintBytes: row.footprintBytes)
    }
}

/// The difference between two VM reports of the same process or app: growth per type and, when
/// both reports carry regions, region by region.
///
/// Regions are matched so that a region that grew or shrank is reported as such, not as one
/// removed and one added: first by identical range, then by the same start (a heap or mapping
/// growing up), then by the same end (a stack growing down), then by overlap, each time only
/// between regions of the same process, path and type.
public struct ReportDiff: Codable, Sendable, Hashable {
    public static let currentFormatVersion = 1

    public var formatVersion = Self.currentFormatVersion
    public var before: Side
    public var after: Side
    public var elapsedSeconds: Double
    public var totals: Delta
    public var types: [TypeChange]
    /// Nil when either report was taken without `--regions`.
    public var regions: [RegionChange]?
    public var notes: [String]
    /// The verdict of `diff --fail-on-growth` (absent without it): see `checkGrowth`.
    public var growthCheck: GrowthCheck?

    /// Whether the footprint grew by more than a limit, and by which region types.
    public struct GrowthCheck: Codable, Sendable, Hashable {
        /// The most the footprint may grow (`--fail-on-growth BYTES`).
        public var limitBytes: UInt64
        /// How much it grew (negative: it shrank): `totals.footprintBytes`.
        public var footprintGrowthBytes: Int64
        /// Growth above `limitBytes`: `diff` exits with status 1.
        public var exceeded: Bool
        /// The region types whose footprint grew, largest growth first.
        public var grownTypes: [TypeGrowth]

        public struct TypeGrowth: Codable, Sendable, Hashable {
            public var type: String
            public var footprintBytes: Int64
        }
    }

    /// Sets `growthCheck` against `limitBytes`: exceeded when the footprint grew by strictly
    /// more than it.
    public mutating func checkGrowth(limitBytes: UInt64) {
        let growth = totals.footprintBytes
        let grown = types.filter { $0.delta.footprintBytes > 0 }
            .sorted { ($1.delta.footprintBytes, $0.type) < ($0.delta.footprintBytes, $1.type) }
            .map { GrowthCheck.TypeGrowth(type: $0.type, footprintBytes: $0.delta.footprintBytes) }
        growthCheck = GrowthCheck(
            limitBytes: limitBytes, footprintGrowthBytes: growth, exceeded: growth > 0 && UInt64(growth) > limitBytes,
            grownTypes: grown)
    }

    public struct Side: Codable, Sendable, Hashable {
        public var pid: Int32
        public var name: String
        public var capturedAt: Timestamp
    }

    public struct TypeChange: Codable, Sendable, Hashable {
        public var type: String
        public var regionCountBefore: Int
        public var regionCountAfter: Int
        public var delta: Delta
    }

    public enum Change: String, Codable, Sendable, Hashable {
        case added, removed, grew, shrank, moved, changed
    }

    public struct RegionChange: Codable, Sendable, Hashable {
        public var change: Change
        public var pid: Int32
        public var type: String
        public var path: String
        /// "0x...-0x..." before and after (nil for added / removed).
        public var before: String?
        public var after: String?
        public var delta: Delta
    }

    public init(from a: VMReport, to b: VMReport) {
        before = Side(pid: a.pid, name: a.name, capturedAt: a.capturedAt)
        after = Side(pid: b.pid, name: b.name, capturedAt: b.capturedAt)
        elapsedSeconds = a.capturedAt.seconds(to: b.capturedAt)
        totals = Delta(from: a.totals, to: b.totals)
        notes = []
        if a.pid != b.pid || a.name != b.name {
            notes.append("the reports are of different processes: \(a.name) (\(a.pid)) and \(b.name) (\(b.pid))")
        }

        var aTypes: [String: VMReport.TypeRow] = [:]
        for t in a.types { aTypes[t.type] = t }
        var bTypes: [String: VMReport.TypeRow] = [:]
        for t in b.types { bTypes[t.type] = t }
        let zero = Totals()
        types = Set(aTypes.keys).union(bTypes.keys).map { name in
            let x = aTypes[name], y = bTypes[name]
            return TypeChange(
                type: name, regionCountBefore: x?.regionCount ?? 0, regionCountAfter: y?.regionCount ?? 0,
                delta: Delta(from: x.map(Totals.init) ?? zero, to: y.map(Totals.init) ?? zero))
        }
        .filter { !$0.delta.isZeroApartFromShares || $0.regionCountBefore != $0.regionCountAfter }
        .sorted { a, b in
            let (x, y) = (abs(a.delta.footprintBytes), abs(b.delta.footprintBytes))
            if x != y { return x > y }
            let (r, s) = (abs(a.delta.residentBytes), abs(b.delta.residentBytes))
            if r != s { return r > s }
            return a.type < b.type
        }

        if let ra = a.regions, let rb = b.regions {
            regions = Self.matchRegions(ra, rb)
        } else {
            regions = nil
            notes.append("region-by-region changes need both reports taken with --regions; showing types only")
        }
    }

    static func matchRegions(_ a: [VMReport.RegionRow], _ b: [VMReport.RegionRow]) -> [RegionChange] {
        struct Key: Hashable {
            var pid: Int32
            var address: UInt64
        }
        var usedB = [Bool](repeating: false, count: b.count)
        var byRange: [Key: [Int]] = [:]  // keyed by start, value: indices with that start
        var byEnd: [Key: [Int]] = [:]
        for (j, r) in b.enumerated() {
            byRange[Key(pid: r.pid, address: r.startAddress), default: []].append(j)
            byEnd[Key(pid: r.pid, address: r.endAddress), default: []].append(j)
        }
        var byPID: [Int32: [Int]] = [:]
        for (j, r) in b.enumerated() { byPID[r.pid, default: []].append(j) }

        func sameKind(_ x: VMReport.RegionRow, _ y: VMReport.RegionRow) -> Bool {
            x.path == y.path && x.type == y.type
        }
        var matchOf = [Int?](repeating: nil, count: a.count)
        // Pass 1: identical ranges.
        for (i, r) in a.enumerated() {
            if let j = byRange[Key(pid: r.pid, address: r.startAddress)]?.first(where: { !usedB[$0] && b[$0].endAddress == r.endAddress && sameKind(b[$0], r) }) {
                matchOf[i] = j
                usedB[j] = true
            }
        }
        // Pass 2: same start (grew or shrank at the top).
        for (i, r) in a.enumerated() where matchOf[i] == nil {
            if let j = byRange[Key(pid: r.pid, address: r.startAddress)]?.first(where: { !usedB[$0] && sameKind(b[$0], r) }) {
                matchOf[i] = j
                usedB[j] = true
            }
        }
        // Pass 3: same end (grew or shrank at the bottom, like a stack).
        for (i, r) in a.enumerated() where matchOf[i] == nil {
            if let j = byEnd[Key(pid: r.pid, address: r.endAddress)]?.first(where: { !usedB[$0] && sameKind(b[$0], r) }) {
                matchOf[i] = j
                usedB[j] = true
            }
        }
        // Pass 4: overlapping.
        for (i, r) in a.enumerated() where matchOf[i] == nil {
            if let j = byPID[r.pid]?.first(where: {
                !usedB[$0] && sameKind(b[$0], r) && b[$0].startAddress < r.endAddress && r.startAddress < b[$0].endAddress
            }) {
                matchOf[i] = j
                usedB[j] = true
            }
        }

        var changes: [RegionChange] = []
        func range(_ r: VMReport.RegionRow) -> String { "\(r.start)-\(r.end)" }
        for (i, r) in a.enumerated() {
            guard let j = matchOf[i] else {
                changes.append(RegionChange(change: .removed, pid: r.pid, type: r.type, path: r.path, before: range(r), after: nil, delta: Delta(from: Totals(r), to: Totals())))
                continue
            }
            let s = b[j]
            let delta = Delta(from: Totals(r), to: Totals(s))
            let change: Change
            if s.startAddress == r.startAddress && s.endAddress == r.endAddress {
                guard !delta.isZeroApartFromShares else { continue }
                change = .changed
            } else if s.virtualBytes > r.virtualBytes {
                change = .grew
            } else if s.virtualBytes < r.virtualBytes {
                change = .shrank
            } else {
                change = .moved
            }
            changes.append(RegionChange(change: change, pid: r.pid, type: r.type, path: r.path, before: range(r), after: range(s), delta: delta))
        }
        for (j, s) in b.enumerated() where !usedB[j] {
            changes.append(RegionChange(change: .added, pid: s.pid, type: s.type, path: s.path, before: nil, after: range(s), delta: Delta(from: Totals(), to: Totals(s))))
        }
        return changes.sorted { x, y in
            let (p, q) = (abs(x.delta.footprintBytes), abs(y.delta.footprintBytes))
            if p != q { return p > q }
            let (r, s) = (abs(x.delta.residentBytes), abs(y.delta.residentBytes))
            if r != s { return r > s }
            return (x.pid, x.before ?? x.after ?? "") < (y.pid, y.before ?? y.after ?? "")
        }
    }
}
