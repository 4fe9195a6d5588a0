import BenchSupport
import Foundation
import MemPressureSystem

struct JetsamReport: RenderedReport {
    var formatVersion = 1
    var machine: String
    var command: String
    /// From the allocation that crosses the critical line to SIGKILL and memory back (nil in
    /// reports written before it was measured, or when not asked for).
    var endToEnd: EndToEndResult?
    var latency: LatencyResult?
    var ranker: [RankerTiming]?
    var memoryBack: [MemoryBackResult]?
    var spike: Spike?
    var runs: [SpikeRun]?
    /// Sections this run did not measure, kept from the report it replaced: which, and what it
    /// says of them (nil when every section was measured by this run).
    var kept: [String]?

    func ms(_ s: Double) -> String { ByteFormat.fixed(s * 1000, s < 0.001 ? 3 : 2) }
    func µs(_ s: Double) -> String { ByteFormat.fixed(s * 1e6, 1) }
    func mib(_ b: UInt64) -> String { ByteFormat.fixed(Double(b) / 1048576, 0) }

    func markdown() -> String {
        var md = "# Jetsam: end-to-end latency, decision latency, the ranker, memory back after a kill, and the same spike under every killer\n\n"
        md += "Regenerate: `\(command)` (measures every section; about 25 minutes) or `make reports` (re-renders this file from jetsam.json). One section alone: `--sections end-to-end` (or ranker, memory, latency, spike; several comma-separated), the others kept from the jetsam.json it replaces.\n"
        md += "Machine: \(machine). Times are medians with their p90, p99 and min–max over the rounds given; ratios are against a baseline measured in the same run.\n\n"
        for k in kept ?? [] { md += "- Kept from the run before: \(k)\n" }
        if let kept, !kept.isEmpty { md += "\n" }

        if let e = endToEnd { md += e.markdown(command: e.command) }

        if let l = latency {
            md += "## Decision latency: from the event jetsam answered to SIGKILL, \(l.apps) supervised apps (not end to end)\n\n"
            md += "The killer's own figure, which this report gave before the end-to-end one above, kept beside it: a different quantity. It starts when jetsam heard memory was critically short, not at the allocation that made it so; the time from the allocation to the monitor's wake is the end-to-end section's first stage. "
            md += "One foreground app grows at 300 MiB/s in a 2048 MiB device to 97% of it, past critical; \(l.apps - 1) suspended model apps holding 1–12 MiB of dirty memory each. "
            md += "The warning's grace is set long so that only memory turning critically short ends it (the working set at 95% of the budget); measured from the moment that was seen — the usage source's critical event, or, when the merged pressure level was already up, the killer's own watch — to the first SIGKILL, per round.\n\n"
            md += "| rounds | median | p90 | p99 | min–max | target | ranker `decide` on the recorded input (median, p99) | kernel OOM kills |\n|---:|---:|---:|---:|---:|---:|---:|---:|\n"
            md += "| \(l.rounds) | \(ms(l.eventToKill.median)) ms | \(ms(l.eventToKill.p90)) ms | \(ms(l.eventToKill.p99)) ms | \(ms(l.eventToKill.min))–\(ms(l.eventToKill.max)) ms | < 5 ms | \(µs(l.decideOnRecordedInput.median)) µs, \(µs(l.decideOnRecordedInput.p99)) µs | \(l.kernelOOMKills) |\n\n"
            md += "The working set was read every \(ms(l.pollIntervalSeconds)) ms where no kernel event woke the reader (at 50 ms this figure was measured when jetsam still ran a loop of its own). lmkd, for comparison, polls every 10 to 100 ms and waits 100 ms between kills.\n\n"
            for n in l.notes { md += "- \(n)\n" }
        }

        if let ranker {
            md += "## The ranker alone\n\n"
            md += "A seeded mix of apps in every state, short by a fifth of the budget (several victims). `decide` picks the victims with their explanations; `rank` orders and explains every app. Baseline: the same snapshots sorted by footprint alone.\n\n"
            md += "| apps | policy | `decide` median (p90, p99) | `rank` median (p99) | baseline sort median | decide / sort |\n|---:|---|---:|---:|---:|---:|\n"
            for r in ranker {
                md += "| \(r.apps) | \(r.policy) | \(µs(r.decide.median)) µs (\(µs(r.decide.p90)), \(µs(r.decide.p99))) | \(µs(r.rank.median)) µs (\(µs(r.rank.p99))) | \(µs(r.baselineSort.median)) µs | \(ByteFormat.fixed(r.decideOverBaseline, 1))x |\n"
            }
            md += "\n"
        }

        if let memoryBack {
            md += "## Until a victim's memory is back\n\n"
            md += "A process holding N MiB of dirty memory in a cgroup of its own is sent SIGKILL; measured until the cgroup's usage has dropped by 90% of what it added. With process_mrelease the killer frees the address space itself at once; without, the victim must be scheduled to run its exit.\n\n"
            md += "| size | with process_mrelease (p90) | without (p90) | without / with | the mrelease call (median) | kernel OOM kills |\n|---:|---:|---:|---:|---:|---:|\n"
            for m in memoryBack {
                md += "| \(m.sizeMB) MiB | \(ms(m.withRelease.median)) ms (\(ms(m.withRelease.p90))) | \(ms(m.withoutRelease.median)) ms (\(ms(m.withoutRelease.p90))) | \(ByteFormat.fixed(m.withoutRelease.median / max(m.withRelease.median, 1e-9), 2))x | \(ms(m.releaseCall.median)) ms | \(m.kernelOOMKills.map(String.init) ?? "–") |\n"
            }
            let gone = memoryBack.compactMap { m in m.releaseFoundExited.flatMap { $0 > 0 ? "\(m.sizeMB) MiB: \($0) of \(m.withRelease.rounds)" : nil } }
            if !gone.isEmpty {
                md += "\nIn some rounds process_mrelease found the victim's address space already gone (ESRCH: its exit was quicker); they count with their exit's timing: " + gone.joined(separator: "; ") + ".\n"
            }
            md += "\n"
        }

        if let spike, let runs {
            md += "## The same spike under every killer\n\n"
            md += "A \(spike.budgetMB) MiB device (a memory cgroup) holding "
            md += spike.apps.map { "\($0.name) (\($0.role.rawValue), \($0.dirtyMB) MiB)" }.joined(separator: ", ")
            md += "; the foreground app, \(spike.foreground), then grows by \(spike.growthMB) MiB at \(spike.growthMBPerSecond) MiB/s. "
            md += "The lmkd emulation (`LmkdEmulation`, lmkd's PSI-mode decision, as switching-bench runs it) and jetsam run in the supervisor. "
            md += "earlyoom and nohang run twice: with their own default thresholds (earlyoom: SIGTERM at 10% available, SIGKILL at 5%; nohang: 5% and 2%), and with jetsam's (both at 20% available, where jetsam's usage source says warning, and 5%, its critical), each inside a PID namespace of its own holding only these processes, where /proc/meminfo shows the device as LXCFS shows a container its own: MemTotal the budget, MemAvailable the budget less the cgroup's working set, refreshed every 5 ms (its swap lines are the machine's); "
            md += "\"kernel\" is the memory cgroup's own OOM killer, with no killer beside it. Every contender knows the apps' states: each app's oom_score_adj is the one the supervisor gives it (`OOMScoreBands`: "
            md += spike.apps.map { "\($0.name) \(spike.oomScoreAdj($0))" }.joined(separator: ", ")
            md += "), which the kernel's badness, lmkd, earlyoom and nohang all read; and jetsam does not hold the kernel's OOM killer (a kernel kill under jetsam would count). Every round runs each contender once, in an order drawn from the round's number. Needed: what must be freed for the working set to end at 75% of the budget. Recovery: from the working set first reaching 80% of the budget to its first return to 75% after its peak. A death is timed at SIGKILL for jetsam and the lmkd emulation (their own records) and when reaped for the others (the benchmark sees only that); freed memory is read from the working set around it. "
            md += "Kills, freed / needed, the peak working set and zram's memory are means over rounds with their 95% percentile-bootstrap intervals (10,000 resamples, seeded); foreground survived and kernel OOM kills are counts over the rounds, recovery a median with its range.\n\n"
            var swaps: [String] = []
            for r in runs where !swaps.contains(r.swapText) { swaps.append(r.swapText) }
            for swap in swaps {
                let here = runs.filter { $0.swapText == swap }
                let zram = here.contains { $0.zramPeakBytes != nil }
                md += "### \(swap.prefix(1).uppercased() + swap.dropFirst())\n\n"
                if zram {
                    md += "The machine's only swap is `/dev/zram0` (lz4, as large as the budget), set up for these rounds and reset after; the memory cgroup limits the apps' memory, not their swap, and the zram device's own memory is not charged to the device: its peak is given per killer, the memory the device borrowed from outside its budget.\n\n"
                }
                md += "| killer | rounds | victims (round 1) | kills | foreground survived | freed / needed | recovery, median (min–max) | peak working set (MiB) | kernel OOM kills |" + (zram ? " zram's memory, peak (MiB) |" : "") + "\n"
                md += "|---|---:|---|---:|---:|---:|---:|---:|---:|" + (zram ? "---:|" : "") + "\n"
                var contenders: [String] = []
                for r in here where !contenders.contains(r.contender) { contenders.append(r.contender) }
                func cell(_ xs: [Double], _ d: Int) -> String {
                    let i = MeanInterval(xs)
                    return "\(ByteFormat.fixed(i.mean, d)) [\(ByteFormat.fixed(i.low, d)), \(ByteFormat.fixed(i.high, d))]"
                }
                for c in contenders {
                    let rs = here.filter { $0.contender == c }
                    let recoveries = rs.compactMap(\.recoverySeconds)
                    let rec = recoveries.isEmpty ? "never" : "\(ms(Stats(recoveries).median)) ms (\(ms(Stats(recoveries).min))–\(ms(Stats(recoveries).max)))" + (recoveries.count < rs.count ? ", \(rs.count - recoveries.count) never" : "")
                    let victims = rs.min { $0.round < $1.round }.map { $0.deaths.map(\.app).joined(separator: ", ") } ?? ""
                    let ratio = rs.filter { $0.neededBytes > 0 }.map { Double($0.freedBytes) / Double($0.neededBytes) }
                    md += "| \(c) | \(rs.count) | \(victims.isEmpty ? "none" : victims) | \(cell(rs.map { Double($0.deaths.count) }, 1)) | \(rs.filter(\.foregroundSurvived).count) of \(rs.count) | \(ratio.isEmpty ? "nothing needed" : cell(ratio, 2)) | \(rec) | \(cell(rs.map { Double($0.peakUsedBytes) / 1048576 }, 0)) | \(rs.reduce(0) { $0 + $1.kernelOOMKills }) |"
                    if zram { md += " \(cell(rs.compactMap(\.zramPeakBytes).map { Double($0) / 1048576 }, 0)) |" }
                    md += "\n"
                }
                md += "\n"
            }
            var contenders: [String] = []
            for r in runs where !contenders.contains(r.contender) { contenders.append(r.contender) }
            md += "\n![working set over time, round 1 of each killer](jetsam.svg)\n\n"
            for c in contenders {
                let notes = Set(runs.filter { $0.contender == c }.flatMap(\.notes)).sorted()
                if !notes.isEmpty { md += "- \(c): " + notes.joined(separator: "; ") + "\n" }
            }
        }
        return md
    }

    /// The end-to-end rounds (`EndToEndResult.plot`), and the working set over time in round 1
    /// of each killer of the spike, with the budget and the deaths.
    func plots() -> [Plot] {
        var plots: [Plot] = []
        if let e = endToEnd, !e.rounds.isEmpty { plots.append(e.plot()) }
        guard let spike, let runs else { return plots }
        var contenders: [String] = []
        for r in runs where !contenders.contains(r.contender) { contenders.append(r.contender) }
        let firsts = contenders.compactMap { c in runs.first { $0.contender == c && !$0.series.isEmpty } }
        var p = Plot(name: "jetsam", title: "Working set of the device during the spike (round 1 of each killer, \(runs.first { !$0.series.isEmpty }?.swapText ?? "no swap")); a dot is a death", width: 900, height: 480)
        var plot: [String] = []
        let colors = ["#d04a4a", "#4a7bd0", "#3a9a4a", "#9a6a2a", "#8a4ab0", "#555555", "#2a9a9a"]
        for (i, r) in firsts.enumerated() {
            p.data("series\(i)", columns: ["seconds", "MiB"], rows: r.series.filter { $0.t >= 0 }.map { [.number($0.t), .number(Double($0.usedBytes) / 1048576)] })
            p.data("deaths\(i)", columns: ["seconds", "MiB", "app"], rows: r.deaths.map { d in
                [.number(d.t), .number(Double(r.series.last { $0.t <= d.t }?.usedBytes ?? 0) / 1048576), .text(d.app)]
            })
            let color = colors[i % colors.count]
            plot.append("$series\(i) using 1:2 with lines lw 1.5 lc rgb '\(color)' title \(Plot.quoted(r.contender))")
            plot.append("$deaths\(i) using 1:2 with points pt 7 ps 0.8 lc rgb '\(color)' notitle")
        }
        let budget = Double(spike.budgetBytes) / 1048576
        p.command("set key outside right top vertical")
        p.command("set xlabel 'seconds since the spike began'")
        p.command("set ylabel 'working set (MiB)'")
        p.command("set yrange [0:\(budget * 1.1)]")
        p.command("set arrow from graph 0, first \(budget) to graph 1, first \(budget) nohead dt 2 lc rgb 'black'")
        p.command("set label 'budget' at graph 0.99, first \(budget) right offset 0,0.6")
        p.command("plot " + plot.joined(separator: ", \\\n     "))
        return plots + [p]
    }
}
