import MemPressureLifecycleProtocol
import MemPressureSystem

// The cost policy: free the needed bytes at the least expected relaunch cost.
//
// The model.
//   relaunch_i  = the app's measured launch-to-ready time, else the prior (the median of the
//                 measured ones in the input, else `JetsamPolicy.defaultRelaunchSeconds`).
//   P_i         = the probability that the user comes back to the app within the horizon H
//                 (`reuseHorizonSeconds`): the probability that the kill is paid for with a
//                 relaunch the user waits for.
//   cost_i      = relaunch_i × P_i, in whole microseconds.
//
// P. Returns to an app are a Poisson process of unknown rate λ. Our estimate of the rate is
//   λ̂ = (k + 1) / (g + H)
// with k = `activations` (frequency: more uses, higher rate) and g = `secondsSinceActive`, or 0
// for an inactive app, which is in the foreground now (recency: the longer since the last use,
// the lower); the +1 and +H smooth it, so that an app
// active this instant has a finite rate ((k + 1) uses per horizon). Taking the unknown rate as
// exponentially distributed around λ̂ (the least-informed prior with that mean), the probability
// of at least one return within H is
//   P = E[1 − e^(−λH)] = λ̂H / (1 + λ̂H).
// It is monotone (up with k, down with g), in [0, 1), and needs no transcendental function, so
// it is computed bit-identically on every machine. An app never active since launch (g = nil)
// has no evidence of use: λ̂ = 0. P is then raised to `minimumReuseProbability` (0.01 by
// default) so that the relaunch time still separates such apps.
//
// Examples with H = 300 s: active once, 60 s ago → P = 0.63; active 10 times, 60 s ago → 0.90;
// active once, an hour ago → 0.13; never active → 0.01.
//
// The set. Among the candidates other than the foreground app, the victim set is the one that
// frees at least the needed bytes (footprints summed; purgeable bytes are not counted) with
//   1. the least total cost (whole microseconds: sums are exact, so the result does not depend
//      on the order of summation),
//   2. then the fewest victims,
//   3. then the most bytes freed (more headroom at the same cost),
//   4. then the set holding the earliest app in the canonical order (footprint descending,
//      name bytes, PID) where the two sets differ.
// That is a total order, so the optimum is unique. Up to `exactSearchLimit` candidates it is
// found exactly by meeting in the middle: the candidates are split in two halves, every subset
// of each half is enumerated (2 × 2^(n/2), 2,048 at n = 20), the second half's subsets are
// sorted by bytes with a suffix minimum of their key, and for each subset of the first half a
// binary search finds the best completion. Beyond the limit it is greedy: candidates by cost
// per byte ascending until enough, then victims that turn out unnecessary are dropped (the
// costliest first), and a single candidate that covers the need alone replaces the result when
// it is better by the key above. Either way the set is minimal: no victim can be left out.
// Inside the set the largest footprint dies first.
//
// When all candidates other than the foreground app together are not enough, the set is all of
// them (and the decision is not sufficient unless pressure is critical and the foreground app
// makes up the rest).

/// The cost model's view of one app.
struct ReuseEstimate: Sendable {
    var relaunchSeconds: Double
    var relaunchIsPrior: Bool
    /// λ̂ in returns per second; 0 for an app never active.
    var rate: Double
    var probability: Double
    var costMicros: UInt64

    var costSeconds: Double { Double(costMicros) / 1e6 }

    init(_ app: JetsamAppSnapshot, priorSeconds: Double, policy: JetsamPolicy) {
        relaunchSeconds = app.relaunchSeconds ?? priorSeconds
        relaunchIsPrior = app.relaunchSeconds == nil
        let horizon = policy.reuseHorizonSeconds
        // An inactive app is in the foreground (being launched or resumed, or on its way out):
        // in use now, g = 0, whether or not it was ever active.
        if let since = app.state == .inactive ? 0 : app.secondsSinceActive {
            rate = (Double(max(app.activations, 1)) + 1) / (since + horizon)
            let x = rate * horizon
            probability = x / (1 + x)
        } else {
            rate = 0
            probability = 0
        }
        probability = max(probability, policy.minimumReuseProbability)
        // Validated relaunch ≤ one day and P ≤ 1, so at most 8.64e10 µs: no overflow in sums.
        costMicros = min(roundedHalfUp(relaunchSeconds * probability * 1e6), 1_000_000_000_000_000)
    }
}

/// How the cost policy's set was found.
enum CostSearchMethod: Sendable {
    case nothingNeeded
    case exact
    case greedy
    case infeasible
}

/// One candidate of the search: footprint and cost, in canonical order.
struct CostItem {
    var bytes: UInt64
    var cost: UInt64
}

/// A set's key (see the top of this file): smaller is better.
struct SetKey {
    var cost: UInt64
    var count: Int
    var bytes: UInt64

    /// Compares cost, count and bytes; nil when those tie (the membership then decides).
    static func order(_ a: SetKey, _ b: SetKey) -> Bool? {
        if a.cost != b.cost { return a.cost < b.cost }
        if a.count != b.count { return a.count < b.count }
        if a.bytes != b.bytes { return a.bytes > b.bytes }
        return nil
    }
}

enum CostSearch {
    /// The least-cost set's members as indices into `items` (canonical order), ascending.
    static func leastCostSet(_ items: [CostItem], needed: UInt64, exactLimit: Int) -> (members: [Int], method: CostSearchMethod) {
        if needed == 0 { return ([], .nothingNeeded) }
        let total = items.reduce(UInt64(0)) { $0.saturatingAdd($1.bytes) }
        if total < needed { return (Array(items.indices), .infeasible) }
        if items.count <= exactLimit {
            return (exact(items, needed: needed), .exact)
        }
        return (greedy(items, needed: needed), .greedy)
    }

    /// Meet in the middle. `items.count` ≤ 24, so the masks fit in a UInt32 and each half has at
    /// most 4,096 subsets. Bit (n − 1 − i) stands for item i, so a larger mask holds the earlier
    /// item where two sets first differ: key 4 is "larger mask wins".
    static func exact(_ items: [CostItem], needed: UInt64) -> [Int] {
        let n = items.count
        let h = n / 2
        let m = n - h
        let first = subsets(items[0..<h])
        let second = subsets(items[h..<n])

        // The second half's subsets sorted by bytes; best[j] is the best (by key, then mask) of
        // the subsets at positions j... of that order, i.e. of those freeing at least its bytes.
        let order = second.indices.sorted {
            second[$0].bytes != second[$1].bytes ? second[$0].bytes < second[$1].bytes : $0 < $1
        }
        var best = [Int](repeating: 0, count: order.count)
        var running = order[order.count - 1]
        for j in stride(from: order.count - 1, through: 0, by: -1) {
            let candidate = order[j]
            if better(second[candidate], UInt32(candidate), than: second[running], UInt32(running)) {
                running = candidate
            }
            best[j] = running
        }

        var bestKey: SetKey?
        var bestMask: UInt32 = 0
        for (maskA, a) in first.enumerated() {
            let rest = a.bytes >= needed ? 0 : needed - a.bytes
            // The first position in `order` whose subset frees at least `rest`.
            var low = 0
            var high = order.count
            while low < high {
                let mid = (low + high) / 2
                if second[order[mid]].bytes < rest { low = mid + 1 } else { high = mid }
            }
            guard low < order.count else { continue }
            let maskB = best[low]
            let b = second[maskB]
            let key = SetKey(
                cost: a.cost.saturatingAdd(b.cost),
                count: a.count + b.count,
                bytes: a.bytes.saturatingAdd(b.bytes)
            )
            let mask = (UInt32(maskA) << UInt32(m)) | UInt32(maskB)
            if let current = bestKey, !better(key, mask, than: current, bestMask) { continue }
            bestKey = key
            bestMask = mask
        }
        // Feasible by the caller's check, so some subset reached `needed`.
        return (0..<n).filter { bestMask & (UInt32(1) << UInt32(n - 1 - $0)) != 0 }
    }

    /// Every subset of `items` with its key, indexed by the local mask (bit (count − 1 − i) is
    /// item i).
    private static func subsets(_ items: ArraySlice<CostItem>) -> [SetKey] {
        let items = Array(items)
        let count = items.count
        var result = [SetKey](repeating: SetKey(cost: 0, count: 0, bytes: 0), count: 1 << count)
        if count == 0 { return result }
        for mask in 1..<(1 << count) {
            let item = items[count - 1 - mask.trailingZeroBitCount]
            let previous = result[mask & (mask - 1)]
            result[mask] = SetKey(
                cost: previous.cost.saturatingAdd(item.cost),
                count: previous.count + 1,
                bytes: previous.bytes.saturatingAdd(item.bytes)
            )
        }
        return result
    }

    @inline(__always)
    private static func better(_ a: SetKey, _ maskA: UInt32, than b: SetKey, _ maskB: UInt32) -> Bool {
        SetKey.order(a, b) ?? (maskA > maskB)
    }

    /// Greedy by cost per byte, pruned, compared with the best single cover.
    static func greedy(_ items: [CostItem], needed: UInt64) -> [Int] {
        let byCostPerByte = items.indices.sorted { costPerByteOrder(items[$0], $0, items[$1], $1) }
        var member = [Bool](repeating: false, count: items.count)
        var chosen: [Int] = []
        var freed: UInt64 = 0
        for index in byCostPerByte where freed < needed {
            chosen.append(index)
            member[index] = true
            freed = freed.saturatingAdd(items[index].bytes)
        }
        // Drop the unnecessary: the costliest first, then the smaller, then the later in
        // canonical order. (A saturated sum cannot be taken apart; it is kept as is.)
        if freed != .max {
            let dropOrder = chosen.sorted { a, b in
                if items[a].cost != items[b].cost { return items[a].cost > items[b].cost }
                if items[a].bytes != items[b].bytes { return items[a].bytes < items[b].bytes }
                return a > b
            }
            for index in dropOrder where freed - items[index].bytes >= needed {
                freed -= items[index].bytes
                member[index] = false
            }
        }
        var kept = items.indices.filter { member[$0] }
        var key = SetKey(cost: kept.reduce(0) { $0.saturatingAdd(items[$1].cost) }, count: kept.count, bytes: freed)

        // A single candidate that covers the need alone, if it is better.
        for index in items.indices where items[index].bytes >= needed {
            let single = SetKey(cost: items[index].cost, count: 1, bytes: items[index].bytes)
            if SetKey.order(single, key) ?? membershipPrecedes([index], kept) {
                key = single
                kept = [index]
            }
        }
        return kept
    }

    /// Cost per byte, compared exactly (cross-multiplied at full width): < 0 when `a` is
    /// cheaper per byte; a candidate freeing nothing is the dearest.
    static func costPerByteSign(_ a: CostItem, _ b: CostItem) -> Int {
        switch (a.bytes == 0, b.bytes == 0) {
        case (true, true): return 0
        case (true, false): return 1
        case (false, true): return -1
        case (false, false):
            let left = a.cost.multipliedFullWidth(by: b.bytes)
            let right = b.cost.multipliedFullWidth(by: a.bytes)
            if left.high != right.high { return left.high < right.high ? -1 : 1 }
            if left.low != right.low { return left.low < right.low ? -1 : 1 }
            return 0
        }
    }

    /// Cost per byte ascending, then footprint descending, then canonical position.
    static func costPerByteOrder(_ a: CostItem, _ ia: Int, _ b: CostItem, _ ib: Int) -> Bool {
        let sign = costPerByteSign(a, b)
        if sign != 0 { return sign < 0 }
        if a.bytes != b.bytes { return a.bytes > b.bytes }
        return ia < ib
    }

    /// Key 4 on sorted index lists: the set holding the earliest index where they differ.
    static func membershipPrecedes(_ a: [Int], _ b: [Int]) -> Bool {
        for (x, y) in zip(a, b) where x != y {
            return x < y
        }
        return a.count > b.count
    }
}
