import MemPressureLifecycleProtocol

// The bands and the sort keys of each policy. A policy is a band function plus, per band, a
// list of keys compared in order; the band is always compared first. Every policy ends its keys
// with footprint (larger first), name bytes and PID, so the order is total: names are unique,
// so no two candidates ever compare equal and the input's order never shows through.
//
// The same comparison serves the sort and the explanations ("ahead of Maps: same band, larger
// footprint"), so the text cannot disagree with the order.

/// One key a policy sorts a band by. Each one's direction is "dies first".
enum OrderKey: Sendable {
    /// Larger footprint first: what a kill gives back.
    case footprint
    /// Larger `max(residentBytes, footprintBytes)` first: the OOM killer's badness.
    case badness
    /// Larger resident size first: lmkd's "heaviest".
    case resident
    /// Less recently used first (`JetsamAppSnapshot.lastUseSeconds`: 0 in the foreground, else
    /// since last active, else since launch); never used before everything.
    case leastRecent
    /// Lower expected relaunch cost per byte freed first; an app freeing nothing last.
    case costPerByte
    /// Name UTF-8 bytes ascending.
    case name
    /// PID ascending.
    case pid
}

/// Up to four keys, stored inline (no array to retain in the sort's inner loop).
struct KeyList: Sendable {
    private var keys: (OrderKey, OrderKey, OrderKey, OrderKey)
    let count: Int

    init(_ a: OrderKey, _ b: OrderKey, _ c: OrderKey, _ d: OrderKey? = nil) {
        keys = (a, b, c, d ?? c)
        count = d == nil ? 3 : 4
    }

    subscript(index: Int) -> OrderKey {
        switch index {
        case 0: keys.0
        case 1: keys.1
        case 2: keys.2
        default: keys.3
        }
    }
}

/// What the sort reads of a candidate: plain numbers, no references, so that comparing and
/// moving them costs no reference counting.
struct SortView: Sendable {
    var bandOrder: Int
    var footprint: UInt64
    var resident: UInt64
    var badness: UInt64
    /// `lastUseSeconds`, meaningful when `everUsed`.
    var sinceUse: Double
    var everUsed: Bool
    var costMicros: UInt64
    var pid: Int32
    /// The app's index in the input, for its name in the `NameTable`.
    var inputIndex: Int

    var costItem: CostItem { CostItem(bytes: footprint, cost: costMicros) }
}

/// An app that can be ranked: its repaired snapshot and what the policies read from it.
struct Candidate: Sendable {
    var snapshot: JetsamAppSnapshot
    /// The app's index in the input.
    var inputIndex: Int
    /// Notes of the repairs `Validation` applied.
    var repairs: [Factor]
    var estimate: ReuseEstimate
    var bandOrder = 0
    var band = JetsamBand.candidate
    /// For the cost policy: in the least-cost set.
    var inCostSet = false

    var isForeground: Bool { snapshot.state == .active }
    var badness: UInt64 { max(snapshot.residentBytes, snapshot.footprintBytes) }
    var costItem: CostItem { CostItem(bytes: snapshot.footprintBytes, cost: estimate.costMicros) }

    var view: SortView {
        SortView(
            bandOrder: bandOrder,
            footprint: snapshot.footprintBytes,
            resident: snapshot.residentBytes,
            badness: badness,
            sinceUse: snapshot.lastUseSeconds ?? 0,
            everUsed: snapshot.lastUseSeconds != nil,
            costMicros: estimate.costMicros,
            pid: snapshot.pid,
            inputIndex: inputIndex
        )
    }
}

enum Policies {
    static let bySize = KeyList(.footprint, .name, .pid)
    static let byRecency = KeyList(.leastRecent, .footprint, .name, .pid)
    static let byResident = KeyList(.resident, .footprint, .name, .pid)
    static let byBadness = KeyList(.badness, .footprint, .name, .pid)
    static let byCost = KeyList(.costPerByte, .footprint, .name, .pid)

    /// Sets the candidate's band under the policy. For `cost`, `inCostSet` must be set first.
    static func assignBand(_ c: inout Candidate, policy: JetsamPolicyName, highMemoryBytes: UInt64) {
        let state = c.snapshot.state
        let high = c.snapshot.footprintBytes >= highMemoryBytes
        let band: (Int, JetsamBand)
        switch policy {
        case .ios:
            switch state {
            case .suspended: band = high ? (0, .suspendedHigh) : (2, .suspendedLow)
            case .backgroundRunning: band = high ? (1, .backgroundHigh) : (3, .backgroundLow)
            case .inactive: band = (4, .inactive)
            case .active, .notRunning: band = (5, .foreground)
            }
        case .xnu:
            switch state {
            case .suspended: band = (0, .idle)
            case .backgroundRunning: band = (1, .background)
            case .inactive: band = (2, .foregroundInactive)
            case .active, .notRunning: band = (3, .foreground)
            }
        case .lmkd:
            switch state {
            case .suspended: band = (0, .cached)
            case .backgroundRunning: band = (1, .service)
            case .inactive: band = (2, .visible)
            case .active, .notRunning: band = (3, .foreground)
            }
        case .largest, .lru:
            band = c.isForeground ? (1, .foreground) : (0, .candidate)
        case .cost:
            band = c.isForeground ? (2, .foreground) : (c.inCostSet ? (0, .leastCostSet) : (1, .byCost))
        }
        c.bandOrder = band.0
        c.band = band.1
    }

    /// The keys that order a band of the policy, after the band itself.
    static func keys(policy: JetsamPolicy, bandOrder: Int) -> KeyList {
        switch policy.name {
        case .ios: policy.withinBand == .leastRecentFirst ? byRecency : bySize
        case .xnu: bandOrder <= 1 ? byRecency : bySize
        case .lmkd: bandOrder <= 1 ? byRecency : byResident
        case .largest: byBadness
        case .lru: bandOrder == 0 ? byRecency : bySize
        case .cost: bandOrder == 1 ? byCost : bySize
        }
    }

    /// Compares two candidates on one key: < 0 when `a` dies first.
    @inline(__always)
    static func compare(_ a: SortView, _ b: SortView, on key: OrderKey, names: NameTable) -> Int {
        @inline(__always) func descending<T: Comparable>(_ x: T, _ y: T) -> Int { x == y ? 0 : (x > y ? -1 : 1) }
        switch key {
        case .footprint:
            return descending(a.footprint, b.footprint)
        case .badness:
            return descending(a.badness, b.badness)
        case .resident:
            return descending(a.resident, b.resident)
        case .leastRecent:
            switch (a.everUsed, b.everUsed) {
            case (false, false): return 0
            case (false, true): return -1
            case (true, false): return 1
            case (true, true): return descending(a.sinceUse, b.sinceUse)
            }
        case .costPerByte:
            return CostSearch.costPerByteSign(a.costItem, b.costItem)
        case .name:
            return names.compare(a.inputIndex, b.inputIndex)
        case .pid:
            return a.pid == b.pid ? 0 : (a.pid < b.pid ? -1 : 1)
        }
    }

    /// The first key on which `a` and `b` differ under the policy, and which way: `key` nil
    /// means they differ by band. Returns nil only for two candidates that are the same app.
    static func decisive(_ a: SortView, _ b: SortView, policy: JetsamPolicy, names: NameTable) -> (key: OrderKey?, sign: Int)? {
        if a.bandOrder != b.bandOrder { return (nil, a.bandOrder < b.bandOrder ? -1 : 1) }
        let keys = keys(policy: policy, bandOrder: a.bandOrder)
        for index in 0..<keys.count {
            let sign = compare(a, b, on: keys[index], names: names)
            if sign != 0 { return (keys[index], sign) }
        }
        return nil
    }

    /// Whether `a` dies before `b` under the keys (the band compared first).
    @inline(__always)
    static func precedes(_ a: SortView, _ b: SortView, policy: JetsamPolicy, names: NameTable) -> Bool {
        if a.bandOrder != b.bandOrder { return a.bandOrder < b.bandOrder }
        let keys = keys(policy: policy, bandOrder: a.bandOrder)
        for index in 0..<keys.count {
            let sign = compare(a, b, on: keys[index], names: names)
            if sign != 0 { return sign < 0 }
        }
        return false
    }

    /// The canonical order, footprint descending, then name bytes, then PID: the cost search's
    /// tie-break, whatever the band.
    static func canonicallyPrecedes(_ a: SortView, _ b: SortView, names: NameTable) -> Bool {
        for index in 0..<bySize.count {
            let sign = compare(a, b, on: bySize[index], names: names)
            if sign != 0 { return sign < 0 }
        }
        return false
    }
}
