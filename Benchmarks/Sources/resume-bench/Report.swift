import BenchSupport
import Foundation
import MemPressureSystem

/// One point of the tradeoff: a trim level, a restore mode and a condition.
struct Point: Codable, Sendable {
    var trim: Int
    var restore: String
    var condition: Condition
    /// Medians over the rounds, in the background just before the resume.
    var backgroundFootprintBytes: UInt64
    var dirtyBytes: UInt64
    var purgeableBytes: UInt64
    var cleanBytes: UInt64
    var swappedBytes: UInt64
    var resumeReadyMs: Percentiles
    var resumeFullMs: Percentiles
    /// Relaunches of the same app (trim, restore), measured in the same block of the run.
    var relaunchMs: Percentiles
    var relaunchColdMs: Percentiles
    /// resumeFullMs.p50 / relaunchMs.p50: above 1, relaunching would have been as quick.
    var ratio: Double
    var thawMs: Percentiles
    var minorFaults: Double
    var majorFaults: Double
    var refaultMs: Percentiles
    var rebuildCPUMs: Percentiles
    /// Lazy relaunches (the first screen before ready, the rest after) of the same block: to
    /// ready, page cache warm and cold, and until everything is built (warm). Nil in reports
    /// before lazy relaunches.
    var relaunchLazyMs: Percentiles? = nil
    var relaunchLazyColdMs: Percentiles? = nil
    var relaunchLazyFullMs: Percentiles? = nil
    /// resumeReadyMs.p50 / relaunchLazyMs.p50: the wait for the first screen, resumed against
    /// relaunched lazily (warm); at 1 or more a lazy relaunch shows it as soon.
    var readyRatio: Double? = nil
    /// For zram: the memory the device took for the app's pages (median): what a freeze-dried
    /// app still costs the device's RAM.
    var zramMemoryBytes: UInt64? = nil
}

/// A point of the decode-cost sweep: a resume with nothing taken against both relaunches (page
/// cache warm), for one decode cost, trim and restore mode.
struct SweepPoint: Codable, Sendable {
    var decodeCost: Int
    var trim: Int
    var restore: String
    var resumeReadyMs: Percentiles
    var resumeFullMs: Percentiles
    /// Eager relaunch to ready (everything built), lazy relaunch to ready and until built.
    var relaunchMs: Percentiles
    var relaunchLazyMs: Percentiles
    var relaunchLazyFullMs: Percentiles
    /// resume ready ÷ lazy relaunch ready, and resume full ÷ eager relaunch.
    var readyRatio: Double
    var fullRatio: Double
}

/// Where resuming stops paying: the trim at which the resume (until fully working) takes as
/// long as the relaunch, interpolated between the trims measured; nil if it never does.
struct BreakEven: Codable, Sendable {
    var restore: String
    var condition: Condition
    var trim: Double?
    /// What is compared: nil or "full" — the resume until fully working against the eager
    /// relaunch; "ready" — the resume until ready against the lazy relaunch until ready (the
    /// wait for a first screen).
    var measure: String? = nil
    /// The sweep's decode cost; nil for the main grid.
    var decodeCost: Int? = nil
}

struct ResumeReport: RenderedReport {
    var formatVersion = 1
    var machine: String
    var command: String
    var size: AppSize
    var rounds: Int
    var conditions: [Condition]
    var points: [Point]
    /// The break-even of eager restores with no pressure: the app's own trim as the only
    /// variable (`breakEvens` has every restore mode and condition).
    var breakEvenTrim: Double?
    var breakEvens: [BreakEven]
    var stateBytesLost: Int
    var cycles: [Cycle]
    var relaunches: [Relaunch]
    var notes: [String]
    /// vm.page-cluster of the run (swap readahead 2^N pages); nil in reports before it was kept.
    var pageCluster: Int? = nil
    /// The files the first cold relaunch dropped from the page cache.
    var coldDropped: [DroppedFile]? = nil
    /// The decode-cost sweep (the main grid's cost included, from its points with nothing
    /// taken) and its break-evens; nil in reports before it.
    var sweep: [SweepPoint]? = nil
    var sweepBreakEvens: [BreakEven]? = nil
    /// The survival model checked against switching-bench's runs (read from its JSON beside
    /// this report when written), or why not.
    var survivalChecks: [SurvivalCheck]? = nil
    var survivalNote: String? = nil

    init(machine: String, command: String, size: AppSize, rounds: Int, conditions: [Condition], cycles: [Cycle], relaunches: [Relaunch], notes: [String]) {
        self.machine = machine
        self.command = command
        self.size = size
        self.rounds = rounds
        self.conditions = conditions
        self.cycles = cycles
        self.relaunches = relaunches
        self.notes = notes
        stateBytesLost = relaunches.reduce(0) { $0 + $1.lostBytes }
        let mainCycles = cycles.filter { $0.decodeCost == nil }
        let mainRelaunches = relaunches.filter { $0.decodeCost == nil }
        let trims = Array(Set(mainCycles.map(\.trim))).sorted()
        var points: [Point] = []
        for trim in trims {
            for restore in ["lazy", "eager"] {
                let block = mainRelaunches.filter { $0.trim == trim && $0.restore == restore }
                let eager = block.filter { ($0.mode ?? "eager") == "eager" }, lazy = block.filter { $0.mode == "lazy" }
                let warm = Percentiles(eager.filter { $0.cache == "warm" }.map(\.readyMs))
                let cold = Percentiles(eager.filter { $0.cache == "cold" }.map(\.readyMs))
                let lazyWarm = lazy.filter { $0.cache == "warm" }
                let lazyReady = Percentiles(lazyWarm.map(\.readyMs))
                let lazyCold = Percentiles(lazy.filter { $0.cache == "cold" }.map(\.readyMs))
                let lazyFull = Percentiles(lazyWarm.compactMap(\.fullMs))
                for condition in conditions {
                    // A swap round that did not read from the device does not count (see `invalid`).
                    let cs = mainCycles.filter { $0.trim == trim && $0.restore == restore && $0.condition == condition && $0.invalid == nil }
                    guard !cs.isEmpty else { continue }
                    func median(_ f: (Cycle) -> UInt64) -> UInt64 {
                        let values: [Double] = cs.map { Double(f($0)) }
                        return UInt64(Percentiles(values).p50)
                    }
                    let full = Percentiles(cs.map(\.fullMs))
                    let minor: [Double] = cs.map { Double($0.minorFaults) }
                    let major: [Double] = cs.map { Double($0.majorFaults) }
                    let ratio: Double = full.p50 / warm.p50
                    var point = Point(
                        trim: trim, restore: restore, condition: condition,
                        backgroundFootprintBytes: median(\.footprintBytes), dirtyBytes: median(\.dirtyBytes), purgeableBytes: median(\.purgeableBytes),
                        cleanBytes: median(\.cleanBytes), swappedBytes: median(\.swappedBytes),
                        resumeReadyMs: Percentiles(cs.map(\.readyMs)), resumeFullMs: full, relaunchMs: warm, relaunchColdMs: cold,
                        ratio: ratio, thawMs: Percentiles(cs.map(\.thawMs)),
                        minorFaults: Percentiles(minor).p50, majorFaults: Percentiles(major).p50,
                        refaultMs: Percentiles(cs.map(\.refaultMs)), rebuildCPUMs: Percentiles(cs.map(\.rebuildCPUMs)))
                    let zram = cs.compactMap(\.zramMemoryBytes)
                    if !zram.isEmpty { point.zramMemoryBytes = UInt64(Percentiles(zram.map { Double($0) }).p50) }
                    if lazyReady.count > 0 {
                        point.relaunchLazyMs = lazyReady
                        point.relaunchLazyColdMs = lazyCold.count > 0 ? lazyCold : nil
                        point.relaunchLazyFullMs = lazyFull.count > 0 ? lazyFull : nil
                        point.readyRatio = point.resumeReadyMs.p50 / lazyReady.p50
                    }
                    points.append(point)
                }
            }
        }
        self.points = points
        var evens: [BreakEven] = []
        for restore in ["lazy", "eager"] {
            for condition in conditions {
                let curve = points.filter { $0.restore == restore && $0.condition == condition }.sorted { $0.trim < $1.trim }
                evens.append(BreakEven(restore: restore, condition: condition, trim: Self.breakEven(curve.map { (Double($0.trim), $0.ratio) })))
                let ready: [(trim: Double, ratio: Double)] = curve.compactMap { p in p.readyRatio.map { (Double(p.trim), $0) } }
                if !ready.isEmpty {
                    evens.append(BreakEven(restore: restore, condition: condition, trim: Self.breakEven(ready), measure: "ready"))
                }
            }
        }
        breakEvens = evens
        (sweep, sweepBreakEvens) = Self.sweep(cycles: cycles, relaunches: relaunches, mainCost: size.decodeCost)
        breakEvenTrim = evens.first { $0.restore == "eager" && $0.condition == .none }?.trim
    }

    /// The first trim where the ratio reaches 1, linearly interpolated; nil if it never does.
    static func breakEven(_ curve: [(trim: Double, ratio: Double)]) -> Double? {
        guard let first = curve.first else { return nil }
        if first.ratio >= 1 { return first.trim }
        for (a, b) in zip(curve, curve.dropFirst()) where a.ratio < 1 && b.ratio >= 1 {
            return a.trim + (b.trim - a.trim) * (1 - a.ratio) / (b.ratio - a.ratio)
        }
        return nil
    }

    /// The decode-cost sweep's points and break-evens (both measures), the main grid's points
    /// with nothing taken counting at its own cost; nil without a sweep.
    static func sweep(cycles: [Cycle], relaunches: [Relaunch], mainCost: Int) -> ([SweepPoint]?, [BreakEven]?) {
        let costs = Array(Set(cycles.compactMap(\.decodeCost))).sorted()
        guard !costs.isEmpty else { return (nil, nil) }
        var points: [SweepPoint] = []
        for cost in Array(Set(costs + [mainCost])).sorted() {
            let key: Int? = cost == mainCost ? nil : cost
            let cs = cycles.filter { $0.decodeCost == key && $0.condition == .none }
            let rs = relaunches.filter { $0.decodeCost == key && $0.cache == "warm" }
            for trim in Array(Set(cs.map(\.trim))).sorted() {
                for restore in ["lazy", "eager"] {
                    let c = cs.filter { $0.trim == trim && $0.restore == restore }
                    let r = rs.filter { $0.trim == trim && $0.restore == restore }
                    let eager = Percentiles(r.filter { ($0.mode ?? "eager") == "eager" }.map(\.readyMs))
                    let lazy = r.filter { $0.mode == "lazy" }
                    let lazyReady = Percentiles(lazy.map(\.readyMs))
                    guard !c.isEmpty, eager.count > 0, lazyReady.count > 0 else { continue }
                    let ready = Percentiles(c.map(\.readyMs)), full = Percentiles(c.map(\.fullMs))
                    points.append(
                        SweepPoint(
                            decodeCost: cost, trim: trim, restore: restore, resumeReadyMs: ready, resumeFullMs: full, relaunchMs: eager,
                            relaunchLazyMs: lazyReady, relaunchLazyFullMs: Percentiles(lazy.compactMap(\.fullMs)),
                            readyRatio: ready.p50 / lazyReady.p50, fullRatio: full.p50 / eager.p50))
                }
            }
        }
        var evens: [BreakEven] = []
        for cost in Array(Set(points.map(\.decodeCost))).sorted() {
            for restore in ["lazy", "eager"] {
                let curve = points.filter { $0.decodeCost == cost && $0.restore == restore }.sorted { $0.trim < $1.trim }
                guard !curve.isEmpty else { continue }
                evens.append(BreakEven(restore: restore, condition: .none, trim: breakEven(curve.map { (Double($0.trim), $0.readyRatio) }), measure: "ready", decodeCost: cost))
                evens.append(BreakEven(restore: restore, condition: .none, trim: breakEven(curve.map { (Double($0.trim), $0.fullRatio) }), measure: "full", decodeCost: cost))
            }
        }
        return (points, evens)
    }

    func mib(_ b: UInt64) -> String { ByteFormat.fixed(Double(b) / 1048576, 1) }

    /// A break-even for a table cell: the trim, or that one side wins at every trim.
    func breakEvenText(_ even: BreakEven?, lowestTrim: Int? = nil) -> String {
        let lowest = Double(lowestTrim ?? points.map(\.trim).min() ?? 0)
        guard let even else { return "–" }
        if let trim = even.trim, trim <= lowest { return "relaunch wins at every trim (from \(ByteFormat.fixed(trim, 0))%)" }
        if let trim = even.trim { return "**\(ByteFormat.fixed(trim, 0))% trim**" }
        return "never (resume wins at every trim)"
    }

    func markdown() -> String {
        var md = "# Resume versus relaunch: the single-app tradeoff\n\n"
        md += """
            The model app (`mempressure-workload`) holds \(size.stateMB) MiB of state (saved on \
            didEnterBackground, restored on relaunch), \(size.imageCacheMB) MiB of decoded images in a \
            PurgeableCache, \(size.backingMB) MiB of backing stores in purgeable buffers, \(size.modelMB) MiB \
            of a computed model (plain dirty memory) and \(size.assetsMB) MiB of mmap'd assets. When it \
            enters the background it frees its **trim level** of what it can rebuild (images, backing \
            stores, model). Resumed, it rebuilds what is missing before reporting ready (**eager**) or \
            rebuilds the first screen's share of it (\(firstScreenText), the first of each kind, which a \
            trim frees first) before ready and the rest after (**lazy**). Relaunched, it restores its \
            state from disk and builds everything before reporting ready (**eager relaunch**), or, as \
            real apps relaunch, builds the first screen's share before ready and the rest after \
            (**lazy relaunch**).

            Conditions while it is suspended: **none** (only what it trimmed itself is gone); \
            **squeeze** (its memory cgroup's limit lowered to what reclaim cannot take without swap: \
            the kernel takes its purgeable and clean pages); **swap** (freeze-dried: its anonymous \
            memory written to a swap file made for the round with process_madvise MADV_PAGEOUT, \
            then its memory cgroup squeezed with swappiness 100 so that the pages leave the swap \
            cache too, and the resume reads them from the file); **zram** (the same on /dev/zram0 \
            with lz4, as Android and ChromeOS swap). A swap or zram round counts only if the app's \
            major faults during the resume are at least a quarter of what its swapped bytes need at \
            one fault per readahead window (2^page-cluster pages from the file; one page from zram, \
            which the kernel reads synchronously): the evidence is in its own table below.

            Times are from the supervisor's command: *ready* is the app's `ready`, *full* is when its \
            rebuild has finished and its working set has been read again (every released thing \
            rebuilt). Relaunch is from the launch command (fork, exec, state restored, everything \
            built, or the first screen for a lazy relaunch) to `ready`, and to everything built (*lazy \
            full*), measured for the same app in the same block of the run, with the page \
            cache warm and cold (warm: every file the app mapped and its data read into it first, since \
            a squeeze in an earlier round may have taken them; cold: every file the app mapped — its \
            executable, the Swift runtime, jemalloc, the C library — and every file of its data dropped \
            from it, listed below). \
            **ratio** = resume full p50 / eager relaunch warm p50 (until fully working); **ready \
            ratio** = resume ready p50 / lazy relaunch warm p50 (the wait for a first screen). \
            Figures are p50 (p90, p99) over \(rounds) rounds, or min / p50 / p90 / max where a table says so.

            Machine: \(machine). Regenerate: `\(command)`.


            """
        md += "## Break-even\n\n"
        let names: [String] = conditions.map(\.rawValue)
        let header = "| restore | \(names.joined(separator: " | ")) |\n|---|\(String(repeating: "---:|", count: names.count))\n"
        if breakEvens.contains(where: { $0.measure == "ready" }) {
            md += "**To a first screen** — the trim from which the resume until ready takes as long as a lazy relaunch until ready (warm), interpolated between the trims measured. The lazy restore rebuilds the first screen before ready, as the lazy relaunch builds it; the eager restore rebuilds everything the trim freed before ready, against the same lazy relaunch (an app that restores eagerly but relaunches lazily):\n\n" + header
            for restore in ["lazy", "eager"] {
                let cells: [String] = conditions.map { c in breakEvenText(breakEvens.first { $0.restore == restore && $0.condition == c && $0.measure == "ready" }) }
                md += "| \(restore) restore ÷ lazy relaunch | \(cells.joined(separator: " | ")) |\n"
            }
            md += readyWhy()
            md += "\n**Until fully working** — the resume until everything is rebuilt against the eager relaunch (everything built):\n\n"
        }
        md += header
        for restore in ["lazy", "eager"] {
            let cells: [String] = conditions.map { c in breakEvenText(breakEvens.first { $0.restore == restore && $0.condition == c && ($0.measure ?? "full") == "full" }) }
            md += "| \(restore) restore ÷ eager relaunch | \(cells.joined(separator: " | ")) |\n"
        }
        for c in conditions where c.isSwap {
            let ratios = points.filter { $0.condition == c }.map(\.ratio)
            // The eviction took the app's file pages too: the cold relaunch is the fair match.
            let coldRatios = points.filter { $0.condition == c && $0.relaunchColdMs.p50 > 0 }.map { $0.resumeFullMs.p50 / $0.relaunchColdMs.p50 }
            guard let low = ratios.min(), let high = ratios.max(), let coldLow = coldRatios.min(), let coldHigh = coldRatios.max() else { continue }
            let device = c == .zram ? "zram" : "a swap file"
            md += "\nAfter a freeze-dry to \(device) (the pages read back from the device, as the evidence below shows), resume ÷ warm relaunch runs from \(ByteFormat.fixed(low, 2)) to \(ByteFormat.fixed(high, 2)) over the trims and restore modes, "
            md += "and resume ÷ cold relaunch from \(ByteFormat.fixed(coldLow, 2)) to \(ByteFormat.fixed(coldHigh, 2)) (the squeeze that empties the swap cache also takes the app's file pages, as real pressure would, so the cold relaunch is the fairer match): "
            md += coldHigh < 1 ? (high < 1 ? "resuming wins everywhere." : "resuming beats the cold relaunch everywhere; the warm relaunch beats the resume where its ratio passes 1.")
                : coldLow >= 1 ? "**relaunching wins at every trim**, even cold: reading the pages back costs more than the whole launch."
                : "against the cold relaunch it is close, the ratio passing 1 at some trims (the ratio table below has a column per condition against the warm relaunch; the points table gives both relaunches)\(low >= 1 ? ", and the warm relaunch wins at every trim" : "")."

            md += "\n"
        }
        md += relaunchParts()
        md += "\n![background footprint against resume time, with the relaunch lines](resume-relaunch.svg)\n\n"
        md += "![resume / relaunch per trim level](resume-relaunch-ratio.svg)\n\n"
        md += sweepSection()
        md += recommendationSection()
        var columns: [(restore: String, condition: Condition)] = []
        for r in ["lazy", "eager"] { for c in conditions { columns.append((r, c)) } }
        let headers: [String] = columns.map { "\($0.restore), \($0.condition.rawValue)" }
        md += "## Resume / relaunch ratio per trim level\n\n| trim | \(headers.joined(separator: " | ")) |\n"
        md += "|---:|\(String(repeating: "---:|", count: columns.count))\n"
        let trims: [Int] = Array(Set(points.map(\.trim))).sorted()
        for trim in trims {
            var cells: [String] = []
            for (r, c) in columns {
                let p: Point? = points.first { $0.trim == trim && $0.restore == r && $0.condition == c }
                cells.append(p.map { ByteFormat.fixed($0.ratio, 2) } ?? "–")
            }
            md += "| \(trim)% | \(cells.joined(separator: " | ")) |\n"
        }
        md += "\n## Every point\n\n"
        md += "Background memory in MiB (medians): footprint (what jetsam charges: dirty + swapped), and dirty, purgeable, clean, swapped as VM Tracker reads them. Times in ms, min / p50 / p90 / max over the rounds.\n\n"
        md += "| trim | restore | condition | footprint | dirty | purgeable | clean | swapped | resume ready | resume full | relaunch warm | relaunch cold | lazy relaunch warm | lazy relaunch cold | lazy full | ratio | ready ratio |\n"
        md += "|---:|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n"
        for p in points {
            let memory: [String] = [p.backgroundFootprintBytes, p.dirtyBytes, p.purgeableBytes, p.cleanBytes, p.swappedBytes].map { mib($0) }
            let times: [String] = [p.resumeReadyMs, p.resumeFullMs, p.relaunchMs, p.relaunchColdMs].map { $0.rangeText() }
            let lazy: [String] = [p.relaunchLazyMs, p.relaunchLazyColdMs, p.relaunchLazyFullMs].map { $0?.rangeText() ?? "–" }
            let ratios: [String] = [ByteFormat.fixed(p.ratio, 2), p.readyRatio.map { ByteFormat.fixed($0, 2) } ?? "–"]
            let cells: [String] = ["\(p.trim)%", p.restore, p.condition.rawValue] + memory + times + lazy + ratios
            md += "| \(cells.joined(separator: " | ")) |\n"
        }
        md += "\n## Where a resume's time goes\n\n"
        md += "Thaw: from the resume command until the supervisor saw the app running again (SIGCONT delivered). Faults: minor and major page faults of the app from just before the resume until fully rebuilt (/proc/PID/stat). Refault: the app's time reading its working set again (assets, model, state: pages the kernel took come back here). Rebuild CPU: the CPU time of the rebuilding thread (decoding images and the model). p50 (p90, p99) in ms; faults are medians.\n\n"
        md += "| trim | restore | condition | thaw | minor faults | major faults | refault | rebuild CPU |\n|---:|---|---|---:|---:|---:|---:|---:|\n"
        for p in points {
            let cells: [String] = ["\(p.trim)%", p.restore, p.condition.rawValue, p.thawMs.text(2), "\(Int(p.minorFaults))", "\(Int(p.majorFaults))", p.refaultMs.text(), p.rebuildCPUMs.text()]
            md += "| \(cells.joined(separator: " | ")) |\n"
        }
        md += swapEvidence()
        md += coldSection()
        md += "\n## State fidelity\n\n"
        md += "\(relaunches.count) relaunches, each checking every byte of the saved state against what the app's activations must have left: **\(stateBytesLost) bytes lost**.\n"
        if !notes.isEmpty { md += "\n## Notes\n\n" + notes.map { "- \($0)\n" }.joined() }
        return md
    }

    /// What cannot be: a resume after its pages were taken (squeeze, swap, zram) faster than the
    /// same point's resume with nothing taken, or a cold relaunch faster than the warm one (at the
    /// median, by more than 10%).
    func impossibilities() -> [String] {
        var out: [String] = []
        for p in points where p.condition != .none {
            guard let none = points.first(where: { $0.trim == p.trim && $0.restore == p.restore && $0.condition == .none }) else { continue }
            if p.resumeFullMs.p50 < none.resumeFullMs.p50 * 0.9 {
                out.append("trim \(p.trim)%, \(p.restore): the resume after \(p.condition.rawValue) (\(ByteFormat.fixed(p.resumeFullMs.p50, 1)) ms) beat the one with nothing taken (\(ByteFormat.fixed(none.resumeFullMs.p50, 1)) ms)")
            }
        }
        // A lazy relaunch builds a subset of what an eager one builds before ready.
        for p in points where p.condition == .none {
            if let lazy = p.relaunchLazyMs, lazy.p50 > p.relaunchMs.p50 * 1.1 {
                out.append("trim \(p.trim)%, \(p.restore): the lazy relaunch (\(ByteFormat.fixed(lazy.p50, 1)) ms to ready) was slower than the eager one (\(ByteFormat.fixed(p.relaunchMs.p50, 1)) ms), which builds more before ready")
            }
        }
        // A dearer decode cannot make the same eager relaunch quicker.
        if let sweep {
            let byCost = Dictionary(grouping: sweep, by: \.decodeCost).mapValues { ps in Percentiles(ps.map(\.relaunchMs.p50)).p50 }
            let costs = byCost.keys.sorted()
            for (a, b) in zip(costs, costs.dropFirst()) where (byCost[b] ?? 0) < (byCost[a] ?? 0) * 0.9 {
                out.append("the eager relaunch at decode cost \(b) (\(ByteFormat.fixed(byCost[b] ?? 0, 1)) ms) beat the one at \(a) (\(ByteFormat.fixed(byCost[a] ?? 0, 1)) ms)")
            }
        }
        for p in points where p.condition == .none && p.relaunchColdMs.count > 0 && p.relaunchColdMs.p50 < p.relaunchMs.p50 * 0.9 {
            out.append("trim \(p.trim)%, \(p.restore): the cold relaunch (\(ByteFormat.fixed(p.relaunchColdMs.p50, 1)) ms) beat the warm one (\(ByteFormat.fixed(p.relaunchMs.p50, 1)) ms)")
        }
        return out
    }

    /// Per swap condition and point: the rounds that read from the device, and the evidence.
    func swapEvidence() -> String {
        let swapConditions = conditions.filter(\.isSwap)
        guard !swapConditions.isEmpty else { return "" }
        let window = 1 << (pageCluster ?? 3)
        var md = "\n## Swap-in, proved per round\n\n"
        md += "Medians over the rounds of each point: what was on swap when the resume began (VM Tracker), the app's major faults until fully rebuilt, and the pages the machine read from swap (pswpin, ×4 KiB). "
        md += "A round counts when its major faults reach a quarter of its swapped bytes ÷ \(window) pages (the swap file's readahead window) or ÷ 1 page (zram).\n\n"
        md += "| trim | restore | condition | valid / rounds | swapped MiB | major faults | read from swap MiB |\n|---:|---|---|---:|---:|---:|---:|\n"
        let trims = Array(Set(cycles.map(\.trim))).sorted()
        for trim in trims {
            for restore in ["lazy", "eager"] {
                for c in swapConditions {
                    let all = cycles.filter { $0.trim == trim && $0.restore == restore && $0.condition == c }
                    guard !all.isEmpty else { continue }
                    let valid = all.filter { $0.invalid == nil }
                    let swapped = Percentiles(all.map { Double($0.swappedBytes) }).p50
                    let faults = Percentiles(all.map { Double($0.majorFaults) }).p50
                    let read = Percentiles(all.map { Double(($0.pagesSwappedIn ?? 0) * 4096) }).p50
                    md += "| \(trim)% | \(restore) | \(c.rawValue) | \(valid.count) / \(all.count) | \(mib(UInt64(swapped))) | \(Int(faults)) | \(mib(UInt64(read))) |\n"
                }
            }
        }
        let invalid = cycles.filter { $0.invalid != nil }
        if !invalid.isEmpty {
            md += "\nRounds left out (\(invalid.count)):\n\n"
            for c in invalid.prefix(12) { md += "- trim \(c.trim)%, \(c.restore), \(c.condition.rawValue), round \(c.round + 1): \(c.invalid ?? "")\n" }
            if invalid.count > 12 { md += "- … \(invalid.count - 12) more in the JSON\n" }
        }
        return md
    }

    /// What the cold relaunches dropped from the page cache.
    func coldSection() -> String {
        guard let files = coldDropped, !files.isEmpty else { return "" }
        let ok = files.filter { $0.error == nil }
        let bytes = ok.reduce(0) { $0 + $1.bytes }
        let stayed = ok.filter { $0.residentAfterBytes > 0 }
        var md = "\n## What a cold relaunch dropped\n\n"
        md += "Every cold relaunch dropped \(ok.count) files (\(mib(bytes)) MiB) from the page cache: every file the app had mapped and every file of its data. "
        md += "\(stayed.count) of them kept \(mib(stayed.reduce(0) { $0 + $1.residentAfterBytes })) MiB, mapped by other processes of the machine, which the kernel does not drop:\n\n"
        for f in ok { md += "- `\(f.path)`: \(mib(f.bytes)) MiB\(f.residentAfterBytes > 0 ? ", \(mib(f.residentAfterBytes)) MiB stayed" : "")\n" }
        for f in files where f.error != nil { md += "- `\(f.path)`: not dropped: \(f.error ?? "")\n" }
        return md
    }

    /// The first screen's share, as the introduction says it.
    var firstScreenText: String {
        guard let share = size.firstScreen, share > 0 else { return "none: ready at once" }
        return "\(ByteFormat.fixed(share * 100, 0))%"
    }

    /// Why the first-screen break-evens fall where they do, from the warm lazy relaunches' parts
    /// and the eager resumes with nothing taken.
    func readyWhy() -> String {
        let lazy = relaunches.filter { $0.decodeCost == nil && $0.mode == "lazy" && $0.cache == "warm" }
        let connected = lazy.compactMap(\.connectedMs)
        guard !lazy.isEmpty, connected.count == lazy.count else { return "" }
        let ready = Percentiles(lazy.map(\.readyMs)).p50
        let full = Percentiles(lazy.compactMap(\.fullMs)).p50
        let start = Percentiles(connected).p50
        var md = "\nA lazy relaunch (warm) shows its first screen in \(ByteFormat.fixed(ready, 1)) ms p50 over \(lazy.count) — the process started and connected in \(ByteFormat.fixed(start, 1)) ms, then the state read back and the first screen built — and has built everything \(ByteFormat.fixed(full, 1)) ms after its launch command. "
        let eager = points.filter { $0.restore == "eager" && $0.condition == .none }.sorted { $0.trim < $1.trim }
        if let top = eager.last, let even = breakEvens.first(where: { $0.restore == "eager" && $0.condition == .none && $0.measure == "ready" }) {
            md += "An eager resume rebuilds everything the trim freed before ready (\(ByteFormat.fixed(top.resumeReadyMs.p50, 1)) ms at a \(top.trim)% trim, nothing taken), so "
            if let trim = even.trim {
                md += "the two meet where the trim frees what takes as long to rebuild as the lazy relaunch takes to start: at **\(ByteFormat.fixed(trim, 0))%** with nothing taken; beyond it, an app that trims that much and restores eagerly would show its first screen sooner by relaunching lazily. "
            } else {
                md += "even its whole rebuild is quicker than a lazy relaunch's start here: no break-even with nothing taken. "
            }
        }
        let lazyNone = breakEvens.first { $0.restore == "lazy" && $0.condition == .none && $0.measure == "ready" }
        md += "A lazy resume rebuilds only the first screen before ready and never starts a process nor reads the state back: "
        md += lazyNone.map { $0.trim == nil } == true ? "with nothing taken it is ahead at every trim. " : "yet with nothing taken a lazy relaunch catches it up here (see the table). "
        md += "Where a first-screen break-even appears under squeeze, swap or zram, reading the app's own pages back costs more than a lazy relaunch's start. "
        let fullNone = breakEvens.filter { ($0.measure ?? "full") == "full" && $0.condition == .none }
        md += fullNone.allSatisfy { $0.trim == nil }
            ? "Until fully working, a relaunch — eager or lazy — still does everything a resume does and more (the process, the state), which is why that table has no break-even with nothing taken.\n"
            : "Until fully working, a relaunch still does everything a resume does and more (the process, the state), yet the table shows a break-even with nothing taken: a rebuild after a resume cost more than the same build at launch in this run.\n"
        return md
    }

    /// The decode-cost sweep: where the break-evens lie as building the app's memory costs more
    /// or less CPU.
    func sweepSection() -> String {
        guard let sweep, let evens = sweepBreakEvens, !sweep.isEmpty else { return "" }
        let costs = Array(Set(sweep.map(\.decodeCost))).sorted()
        var md = "## Break-even by decode cost\n\n"
        md += "The model app's decode cost (`--decode-cost`, rounds of mixing per KiB: the CPU its images and model take to build, at launch and on every rebuild) swept over \(costs.map(String.init).joined(separator: ", ")) (\(size.decodeCost) is the grid above); "
        md += "at each, a resume with nothing taken against the eager and the lazy relaunch (page cache warm), \(rounds) rounds a point, interleaved as above. "
        md += "The first-screen break-even (resume ready ÷ lazy relaunch ready reaching 1) and the fully-working one (resume full ÷ eager relaunch):\n\n"
        md += "| decode cost | restore | first screen | fully working | eager relaunch | lazy relaunch: ready / full |\n|---:|---|---|---|---:|---:|\n"
        for cost in costs {
            for restore in ["eager", "lazy"] {
                let ps = sweep.filter { $0.decodeCost == cost && $0.restore == restore }
                guard !ps.isEmpty else { continue }
                let lowest = ps.map(\.trim).min()
                let ready = breakEvenText(evens.first { $0.decodeCost == cost && $0.restore == restore && $0.measure == "ready" }, lowestTrim: lowest)
                let full = breakEvenText(evens.first { $0.decodeCost == cost && $0.restore == restore && $0.measure == "full" }, lowestTrim: lowest)
                let eager = ps.map(\.relaunchMs.p50).sorted()[ps.count / 2]
                let lazyReady = ps.map(\.relaunchLazyMs.p50).sorted()[ps.count / 2]
                let lazyFull = ps.map(\.relaunchLazyFullMs.p50).sorted()[ps.count / 2]
                md += "| \(cost) | \(restore) | \(ready) | \(full) | \(ByteFormat.fixed(eager, 1)) | \(ByteFormat.fixed(lazyReady, 1)) / \(ByteFormat.fixed(lazyFull, 1)) |\n"
            }
        }
        md += "\nRelaunch times are the medians over the trims of each row's p50 (a relaunch does not depend on the trim). Resume ready ÷ lazy relaunch ready per trim:\n\n"
        let trims = Array(Set(sweep.map(\.trim))).sorted()
        md += "| decode cost | restore | \(trims.map { "\($0)%" }.joined(separator: " | ")) |\n|---:|---|\(String(repeating: "---:|", count: trims.count))\n"
        for cost in costs {
            for restore in ["eager", "lazy"] {
                let cells: [String] = trims.map { t in sweep.first { $0.decodeCost == cost && $0.restore == restore && $0.trim == t }.map { ByteFormat.fixed($0.readyRatio, 2) } ?? "–" }
                md += "| \(cost) | \(restore) | \(cells.joined(separator: " | ")) |\n"
            }
        }
        let eagerEvens = evens.filter { $0.measure == "ready" && $0.restore == "eager" }.sorted { ($0.decodeCost ?? 0) < ($1.decodeCost ?? 0) }
        if eagerEvens.count >= 2 {
            let listed = eagerEvens.map { e in "\(e.trim.map { "\(ByteFormat.fixed($0, 0))%" } ?? "none") at \(e.decodeCost ?? 0)" }
            md += "\nEager restore against a lazy relaunch, the first-screen break-even by decode cost: \(listed.joined(separator: ", ")). "
            let trims = eagerEvens.map { $0.trim ?? 101 }
            let falling = zip(trims, trims.dropFirst()).allSatisfy { $0.1 <= $0.0 } && trims.first != trims.last
            md += falling
                ? "It falls as the build grows dearer: a lazy relaunch puts off all but the first screen while an eager resume redoes all it trimmed, and the fixed start (exec, runtime, the state read) counts for less.\n"
                : "It does not fall steadily with the cost here: read each row as measured.\n"
        }
        return md + "\n![resume ready / lazy relaunch ready per trim, per condition and decode cost, with the break-even line](resume-relaunch-lazy.svg)\n\n"
    }

    /// What a relaunch does that no resume does, from the warm relaunches' parts: why the curves
    /// meet where they do (or never).
    func relaunchParts() -> String {
        let warm = relaunches.filter { $0.cache == "warm" && $0.decodeCost == nil && ($0.mode ?? "eager") == "eager" }
        let connected = warm.compactMap(\.connectedMs), launched = warm.compactMap(\.launchedMs)
        guard !warm.isEmpty, connected.count == warm.count, launched.count == warm.count else { return "" }
        let ready = Percentiles(warm.map(\.readyMs)).p50
        let start = Percentiles(connected).p50
        let finish = Percentiles(zip(launched, connected).map { $0 - $1 }).p50
        let rest = Percentiles(zip(warm.map(\.readyMs), launched).map { $0 - $1 }).p50
        var md = "\nA warm relaunch (p50 \(ByteFormat.fixed(ready, 1)) ms over \(warm.count)) is the process starting and connecting (exec, the Swift runtime, jemalloc, the hello: \(ByteFormat.fixed(start, 1)) ms), didFinishLaunching (the state read back from disk, the assets mapped, every image, backing store and the model built: \(ByteFormat.fixed(finish, 1)) ms) and the activation to `ready` (\(ByteFormat.fixed(rest, 1)) ms)."
        let full = points.filter { $0.trim == 100 && $0.restore == "eager" && $0.condition == .none }.first?.resumeFullMs.p50
        if let full {
            md += " A resume after a 100% trim rebuilds what the app freed — the images, backing stores and model, as didFinishLaunching builds them — in \(ByteFormat.fixed(full, 1)) ms; it never starts the process nor reads the state back, so "
            md += full < ready
                ? "\(ByteFormat.fixed(ready - full, 1)) ms of the relaunch are beyond any trim: for this app the curves meet only if a rebuild after a resume costs that much more than the same build at launch (reclaim, refaults), which the squeeze and swap columns measure."
                : "here the resume costs as much as the relaunch."
        }
        return md + "\n"
    }

    func plots() -> [Plot] {
        let colors: [Condition: String] = [.none: "#4a7bd0", .squeeze: "#d04a4a", .swap: "#3a9a4a", .zram: "#b07a20"]
        var curve = Plot(name: "resume-relaunch", title: "Background footprint against resume time (p50); the relaunch lines for comparison", width: 900, height: 520)
        var series: [String] = []
        for (i, restore) in ["eager", "lazy"].enumerated() {
            for condition in conditions {
                let ps = points.filter { $0.restore == restore && $0.condition == condition }.sorted { $0.trim < $1.trim }
                guard !ps.isEmpty else { continue }  // every round of it left out (no real swap-in)
                let block = "\(restore)_\(condition.rawValue)"
                curve.data(block, columns: ["footprint MiB", "resume ms", "trim"], rows: ps.map { p in
                    [.number(Double(p.backgroundFootprintBytes) / 1048576), .number(restore == "eager" ? p.resumeFullMs.p50 : p.resumeReadyMs.p50), .text("\(p.trim)%")]
                })
                let what = restore == "eager" ? "eager, until fully working" : "lazy, until ready"
                series.append("$\(block) using 1:2 with linespoints lw 1.5 pt 7 ps 0.6 dt \(i + 1) lc rgb '\(colors[condition] ?? "#777777")' title \(Plot.quoted("\(condition.rawValue): \(what)"))")
                if restore == "eager" && condition == .none {
                    series.append("$\(block) using 1:2:3 with labels offset 0,0.8 font 'sans,9' notitle")
                }
            }
        }
        let eagerMain = relaunches.filter { $0.decodeCost == nil && ($0.mode ?? "eager") == "eager" }
        let warm = Percentiles(eagerMain.filter { $0.cache == "warm" }.map(\.readyMs)).p50
        let cold = Percentiles(eagerMain.filter { $0.cache == "cold" }.map(\.readyMs)).p50
        curve.command("set key outside right top vertical")
        curve.command("set xlabel 'background footprint (MiB): dirty + swapped, what jetsam charges'")
        curve.command("set ylabel 'ms from the resume command'")
        // The relaunch lines are arrows, which autoscaling ignores: the range holds them too.
        var top: Double = Swift.max(warm, cold.isFinite ? cold : 0)
        for p in points { top = Swift.max(top, p.resumeFullMs.p50) }
        curve.command("set yrange [0:\(top * 1.1)]")
        curve.command("set xrange [0:*]")
        curve.command("set arrow from graph 0, first \(warm) to graph 1, first \(warm) nohead lw 1.5 lc rgb 'black'")
        curve.command("set label \(Plot.quoted("relaunch, warm (p50 \(ByteFormat.fixed(warm, 0)) ms)")) at graph 0.02, first \(warm) offset 0,0.7")
        if eagerMain.contains(where: { $0.cache == "cold" }) {
            curve.command("set arrow from graph 0, first \(cold) to graph 1, first \(cold) nohead dt 2 lw 1.5 lc rgb '#555555'")
            curve.command("set label \(Plot.quoted("relaunch, cold (p50 \(ByteFormat.fixed(cold, 0)) ms)")) at graph 0.02, first \(cold) offset 0,0.7")
        }
        curve.command("plot " + series.joined(separator: ", \\\n     "))

        var ratio = Plot(name: "resume-relaunch-ratio", title: "Resume (until fully working) / relaunch, p50, per trim level; above 1 relaunching is as quick", width: 900, height: 440)
        var lines: [String] = []
        for (i, restore) in ["eager", "lazy"].enumerated() {
            for condition in conditions {
                let ps = points.filter { $0.restore == restore && $0.condition == condition }.sorted { $0.trim < $1.trim }
                guard !ps.isEmpty else { continue }
                let block = "r_\(restore)_\(condition.rawValue)"
                ratio.data(block, columns: ["trim %", "ratio"], rows: ps.map { [.int($0.trim), .number($0.ratio)] })
                lines.append("$\(block) using 1:2 with linespoints lw 1.5 pt 7 ps 0.6 dt \(i + 1) lc rgb '\(colors[condition] ?? "#777777")' title \(Plot.quoted("\(condition.rawValue), \(restore)"))")
            }
        }
        ratio.command("set key outside right top vertical")
        ratio.command("set xlabel 'trim level (%): share of what it can rebuild that the app frees in the background'")
        ratio.command("set ylabel 'resume full / relaunch'")
        ratio.command("set xrange [-2:102]")
        ratio.command("set yrange [0:*]")
        ratio.command("set arrow from graph 0, first 1 to graph 1, first 1 nohead lw 1.5 lc rgb 'black'")
        ratio.command("set label 'break-even' at graph 0.01, first 1 offset 0,0.6 font 'sans,9'")
        ratio.command("plot " + lines.joined(separator: ", \\\n     "))
        var plots = [curve, ratio]

        // The wait for a first screen: resume ready ÷ lazy relaunch ready, per condition (eager
        // and lazy restores) and per decode cost (nothing taken, eager restore).
        if points.contains(where: { $0.readyRatio != nil }) {
            var lazyPlot = Plot(name: "resume-relaunch-lazy", title: "Resume until ready ÷ lazy relaunch until ready (p50); at 1 or above, relaunching lazily is as quick", width: 900, height: 560)
            var lazyLines: [String] = []
            for (i, restore) in ["eager", "lazy"].enumerated() {
                for condition in conditions {
                    let ps = points.filter { $0.restore == restore && $0.condition == condition && $0.readyRatio != nil }.sorted { $0.trim < $1.trim }
                    guard !ps.isEmpty else { continue }
                    let block = "l_\(restore)_\(condition.rawValue)"
                    lazyPlot.data(block, columns: ["trim %", "ready ratio"], rows: ps.map { [.int($0.trim), .number($0.readyRatio ?? 0)] })
                    lazyLines.append("$\(block) using 1:2 with linespoints lw 1.5 pt 7 ps 0.6 dt \(i + 1) lc rgb '\(colors[condition] ?? "#777777")' title \(Plot.quoted("\(condition.rawValue), \(restore)"))")
                }
            }
            let shades = ["#9a9a9a", "#5a5a5a", "#2a2a2a", "#000000"]
            let sweepCosts = Array(Set((sweep ?? []).map(\.decodeCost))).sorted().filter { $0 != size.decodeCost }
            for (i, cost) in sweepCosts.enumerated() {
                let ps = (sweep ?? []).filter { $0.decodeCost == cost && $0.restore == "eager" }.sorted { $0.trim < $1.trim }
                guard !ps.isEmpty else { continue }
                let block = "cost_\(cost)"
                lazyPlot.data(block, columns: ["trim %", "ready ratio"], rows: ps.map { [.int($0.trim), .number($0.readyRatio)] })
                lazyLines.append("$\(block) using 1:2 with linespoints lw 1.5 pt 5 ps 0.6 dt 3 lc rgb '\(shades[min(i, shades.count - 1)])' title \(Plot.quoted("none, eager, cost \(cost)"))")
            }
            lazyPlot.command("set key below horizontal maxcols 4")
            lazyPlot.command("set label 'eager or lazy: the restore; cost: the decode cost (256 in the solid and dashed lines)' at graph 0.99, graph 0.96 right font 'sans,9'")
            lazyPlot.command("set xlabel 'trim level (%): share of what it can rebuild that the app frees in the background'")
            lazyPlot.command("set ylabel 'resume ready / lazy relaunch ready'")
            lazyPlot.command("set xrange [-2:102]")
            lazyPlot.command("set yrange [0:*]")
            lazyPlot.command("set arrow from graph 0, first 1 to graph 1, first 1 nohead lw 1.5 lc rgb 'black'")
            lazyPlot.command("set label 'break-even' at graph 0.01, first 1 offset 0,0.6 font 'sans,9'")
            lazyPlot.command("plot " + lazyLines.joined(separator: ", \\\n     "))
            plots.append(lazyPlot)
        }
        return plots
    }
}
