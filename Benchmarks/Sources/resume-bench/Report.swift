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
}

/// Where resuming stops paying: the trim at which the resume (until fully working) takes as
/// long as the relaunch, interpolated between the trims measured; nil if it never does.
struct BreakEven: Codable, Sendable {
    var restore: String
    var condition: Condition
    var trim: Double?
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
        let trims = Array(Set(cycles.map(\.trim))).sorted()
        var points: [Point] = []
        for trim in trims {
            for restore in ["lazy", "eager"] {
                let warm = Percentiles(relaunches.filter { $0.trim == trim && $0.restore == restore && $0.cache == "warm" }.map(\.readyMs))
                let cold = Percentiles(relaunches.filter { $0.trim == trim && $0.restore == restore && $0.cache == "cold" }.map(\.readyMs))
                for condition in conditions {
                    // A swap round that did not read from the device does not count (see `invalid`).
                    let cs = cycles.filter { $0.trim == trim && $0.restore == restore && $0.condition == condition && $0.invalid == nil }
                    guard !cs.isEmpty else { continue }
                    func median(_ f: (Cycle) -> UInt64) -> UInt64 {
                        let values: [Double] = cs.map { Double(f($0)) }
                        return UInt64(Percentiles(values).p50)
                    }
                    let full = Percentiles(cs.map(\.fullMs))
                    let minor: [Double] = cs.map { Double($0.minorFaults) }
                    let major: [Double] = cs.map { Double($0.majorFaults) }
                    let ratio: Double = full.p50 / warm.p50
                    let point = Point(
                        trim: trim, restore: restore, condition: condition,
                        backgroundFootprintBytes: median(\.footprintBytes), dirtyBytes: median(\.dirtyBytes), purgeableBytes: median(\.purgeableBytes),
                        cleanBytes: median(\.cleanBytes), swappedBytes: median(\.swappedBytes),
                        resumeReadyMs: Percentiles(cs.map(\.readyMs)), resumeFullMs: full, relaunchMs: warm, relaunchColdMs: cold,
                        ratio: ratio, thawMs: Percentiles(cs.map(\.thawMs)),
                        minorFaults: Percentiles(minor).p50, majorFaults: Percentiles(major).p50,
                        refaultMs: Percentiles(cs.map(\.refaultMs)), rebuildCPUMs: Percentiles(cs.map(\.rebuildCPUMs)))
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
            }
        }
        breakEvens = evens
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

    func mib(_ b: UInt64) -> String { ByteFormat.fixed(Double(b) / 1048576, 1) }

    func markdown() -> String {
        var md = "# Resume versus relaunch: the single-app tradeoff\n\n"
        md += """
            The model app (`mempressure-workload`) holds \(size.stateMB) MiB of state (saved on \
            didEnterBackground, restored on relaunch), \(size.imageCacheMB) MiB of decoded images in a \
            PurgeableCache, \(size.backingMB) MiB of backing stores in purgeable buffers, \(size.modelMB) MiB \
            of a computed model (plain dirty memory) and \(size.assetsMB) MiB of mmap'd assets. When it \
            enters the background it frees its **trim level** of what it can rebuild (images, backing \
            stores, model). Resumed, it rebuilds what is missing before reporting ready (**eager**) or \
            reports ready at once and rebuilds after (**lazy**). Relaunched, it restores its state from \
            disk and builds everything before reporting ready.

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
            built) to `ready`, measured for the same app in the same block of the run, with the page \
            cache warm and cold (warm: every file the app mapped and its data read into it first, since \
            a squeeze in an earlier round may have taken them; cold: every file the app mapped — its \
            executable, the Swift runtime, jemalloc, the C library — and every file of its data dropped \
            from it, listed below). \
            **ratio** = resume full p50 / relaunch warm p50. Figures are p50 (p90, p99) over \
            \(rounds) rounds.

            Machine: \(machine). Regenerate: `\(command)`.


            """
        md += "## Break-even\n\n"
        let names: [String] = conditions.map(\.rawValue)
        md += "| restore | \(names.joined(separator: " | ")) |\n|---|\(String(repeating: "---:|", count: names.count))\n"
        for restore in ["lazy", "eager"] {
            var cells: [String] = []
            for c in conditions {
                let even: BreakEven? = breakEvens.first { $0.restore == restore && $0.condition == c }
                if let trim = even?.trim, trim <= Double(points.map(\.trim).min() ?? 0) {
                    cells.append("relaunch wins at every trim (from \(ByteFormat.fixed(trim, 0))%)")
                } else if let trim = even?.trim {
                    cells.append("\(ByteFormat.fixed(trim, 0))% trim")
                } else {
                    cells.append("never (resume wins at every trim)")
                }
            }
            md += "| \(restore) | \(cells.joined(separator: " | ")) |\n"
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
        md += "Background memory in MiB (medians): footprint (what jetsam charges: dirty + swapped), and dirty, purgeable, clean, swapped as VM Tracker reads them. Times in ms.\n\n"
        md += "| trim | restore | condition | footprint | dirty | purgeable | clean | swapped | resume ready | resume full | relaunch warm | relaunch cold | ratio |\n"
        md += "|---:|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n"
        for p in points {
            let memory: [String] = [p.backgroundFootprintBytes, p.dirtyBytes, p.purgeableBytes, p.cleanBytes, p.swappedBytes].map { mib($0) }
            let times: [String] = [p.resumeReadyMs, p.resumeFullMs, p.relaunchMs, p.relaunchColdMs].map { $0.text() }
            let cells: [String] = ["\(p.trim)%", p.restore, p.condition.rawValue] + memory + times + [ByteFormat.fixed(p.ratio, 2)]
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

    /// What a relaunch does that no resume does, from the warm relaunches' parts: why the curves
    /// meet where they do (or never).
    func relaunchParts() -> String {
        let warm = relaunches.filter { $0.cache == "warm" }
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
        let warm = Percentiles(relaunches.filter { $0.cache == "warm" }.map(\.readyMs)).p50
        let cold = Percentiles(relaunches.filter { $0.cache == "cold" }.map(\.readyMs)).p50
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
        if relaunches.contains(where: { $0.cache == "cold" }) {
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
        ratio.command("plot " + lines.joined(separator: ", \\\n     "))
        return [curve, ratio]
    }
}
