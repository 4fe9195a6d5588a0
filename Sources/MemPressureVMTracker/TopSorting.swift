// What `mempressure top` sorts and filters its apps by.

import Glibc
import MemPressureSystem

/// A column of `mempressure top` to sort its apps by. Byte and count columns sort largest
/// first, `name` and `pid` ascending; apps with an unknown value (a field the kernel does not
/// print) come last. Ties are broken by PID, then by the app's key, then by name, so the order
/// never depends on the order /proc listed the processes in.
public enum TopSortKey: String, Sendable, CaseIterable, Codable {
    case footprint, name, pid, processes, dirty, clean, purgeable, swapped, resident, pss, uss, swappss, thp, locked

    /// The value sorted on: a number, or the name for `.name`.
    enum Value: Comparable {
        case number(UInt64?)
        case text(String)

        static func < (a: Value, b: Value) -> Bool {
            switch (a, b) {
            case (.number(let x), .number(let y)): return (x ?? 0) < (y ?? 0)  // unknowns: see `sorted`
            case (.text(let x), .text(let y)): return Array(x.utf8).lexicographicallyPrecedes(Array(y.utf8))
            case (.number, .text): return true
            case (.text, .number): return false
            }
        }
    }

    func value(_ app: TopReport.App) -> Value {
        let t = app.totals
        switch self {
        case .footprint: return .number(t.footprintBytes)
        case .name: return .text(app.name)
        case .pid: return .number(app.pid.map { UInt64(UInt32(bitPattern: $0)) })
        case .processes: return .number(UInt64(max(0, app.processCount)))
        case .dirty: return .number(t.dirtyBytes)
        case .clean: return .number(t.cleanBytes)
        case .purgeable: return .number(t.purgeableBytes)
        case .swapped: return .number(t.swappedBytes)
        case .resident: return .number(t.residentBytes)
        case .pss: return .number(t.pssBytes)
        case .uss: return .number(t.ussBytes)
        case .swappss: return .number(t.swapPssBytes)
        case .thp: return .number(t.thpBytes)
        case .locked: return .number(t.lockedBytes)
        }
    }

    /// Whether larger values come first.
    var descending: Bool {
        switch self {
        case .name, .pid: false
        default: true
        }
    }

    /// `apps` in this column's order (see the type's documentation).
    public func sorted(_ apps: [TopReport.App]) -> [TopReport.App] {
        let keyed = apps.map { (app: $0, value: value($0)) }
        return keyed.sorted { a, b in
            if a.value != b.value {
                // Unknown numbers last in either direction.
                if case .number(let x) = a.value, case .number(let y) = b.value, (x == nil) != (y == nil) { return y == nil }
                return descending ? b.value < a.value : a.value < b.value
            }
            let (p, q) = (a.app.pid.map(Int64.init) ?? Int64.max, b.app.pid.map(Int64.init) ?? Int64.max)
            if p != q { return p < q }
            if a.app.key != b.app.key { return Array(a.app.key.utf8).lexicographicallyPrecedes(Array(b.app.key.utf8)) }
            return Array(a.app.name.utf8).lexicographicallyPrecedes(Array(b.app.name.utf8))
        }.map(\.app)
    }
}

/// Which apps `mempressure top` shows.
public struct TopFilter: Sendable, Hashable, Codable, CustomStringConvertible {
    /// A shell pattern (fnmatch(3): `*`, `?`, `[...]`) the app's name must match, as
    /// `--match` does for the other commands.
    public var namePattern: String?
    /// Only processes whose real UID (the first `Uid` of /proc/PID/status) is this one; the
    /// snapshot must have been taken with `SnapshotOptions.status`.
    public var uid: UInt32?

    public init(namePattern: String? = nil, uid: UInt32? = nil) {
        self.namePattern = namePattern
        self.uid = uid
    }

    public var isEmpty: Bool { namePattern == nil && uid == nil }

    /// Whether an app of this name passes `namePattern`.
    public func matches(name: String) -> Bool {
        guard let namePattern else { return true }
        return fnmatch(namePattern, name, 0) == 0
    }

    /// "--match 'x' --user 0": the filters given, as a user typed them.
    public var description: String {
        var parts: [String] = []
        if let namePattern { parts.append("--match '\(namePattern)'") }
        if let uid { parts.append("--user \(uid)") }
        return parts.joined(separator: " ")
    }
}
