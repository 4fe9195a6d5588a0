import BenchSupport
import MemPressureSystem

// The end-to-end section of Reports/jetsam.md and its plot, rendered from the rounds alone (so
// that `--render-only` redraws them from jetsam.json).

extension EndToEndResult {
    /// The stages of a round, in order, with what each one is.
    static var stages: [(name: String, of: (EndToEndRound) -> Double)] {
        [
            ("crossing → the monitor's wake", \.crossingToWake),
            ("wake → jetsam's look at memory", \.wakeToLook),
            ("look → SIGKILL (the apps' readings, rank, signal)", \.lookToKill),
            ("SIGKILL → memory back", \.killToBack),
        ]
    }

    func rounds(of condition: WakeCondition) -> [EndToEndRound] { rounds.filter { $0.condition == condition.name } }

    /// "value [low–high]" in milliseconds: quantile `q` of `xs` and its 95% interval (an open
    /// end said as such).
    static func withInterval(_ xs: [Double], quantile q: Double, value: Double) -> String {
        let ci = QuantileInterval(xs, quantile: q)
        return "\(ms(value * 1000)) [\(ci.low.map { ms($0 * 1000) } ?? "below the smallest")–\(ci.high.map { ms($0 * 1000) } ?? "beyond the largest")]"
    }

    static func medianWithInterval(_ xs: [Double]) -> String { withInterval(xs, quantile: 0.5, value: Percentiles(xs).p50) }
    static func p99WithInterval(_ xs: [Double]) -> String { withInterval(xs, quantile: 0.99, value: Percentiles(xs).p99) }

    /// The command that measures this section again with the same plan.
    var command: String {
        let standard = quick ? EndToEndPlan.quick() : EndToEndPlan.full()
        var options = quick ? " --quick" : ""
        options += " --sections end-to-end"
        if plan.roundsPerCondition != standard.roundsPerCondition { options += " --end-to-end-rounds \(plan.roundsPerCondition)" }
        if plan.seeds != standard.seeds { options += " --end-to-end-seeds \(plan.seeds.map(String.init).joined(separator: ","))" }
        return "cd Benchmarks && swift run -c release jetsam-bench\(options) --build ../.build/release --output \(quick ? "DIR" : "../Reports")"
    }

    func markdown(command: String) -> String {
        var md = "## From the allocation that crosses the critical line to SIGKILL and to the memory back, \(plan.apps) supervised apps\n\n"
        if quick { md += "**A quick run** (`--quick`: \(plan.apps) apps, \(plan.roundsPerCondition) rounds per condition, one seed): a smoke test, not the figures to quote.\n\n" }
        let total = rounds.count
        md += "Measured by `\(command)`; \(total) rounds, \(plan.roundsPerCondition) per condition and seed, seeds \(plan.seeds.map(String.init).joined(separator: ", ")). "
        md += "For each seed, three supervisors run side by side, one per way of waking the pressure monitor — the kernel's events (cgroup v1 usage thresholds, reclaim and OOM notifications; the monitor's poll every \(ms(WakeCondition.all[0].pollInterval * 1000)) ms besides), and the polled path (`useCgroupEvents = false`) at 50 ms (jetsam's old loop) and at 250 ms (the monitor's default) — "
        md += "each a \(plan.budgetBytes >> 20) MiB device holding \(plan.apps - 1) model apps (\(plan.appDirtyMB.lowerBound)–\(plan.appDirtyMB.upperBound) MiB of dirty memory each, seeded; \(plan.backgroundRunning) running in the background, the others suspended) and the foreground app, whose ballast holds the working set at \(Int(plan.startShare * 100))% of the budget when a round begins. "
        md += "The rounds of the three are interleaved in a seeded random order.\n\n"
        md += "In a round the foreground app allocates \(plan.chunkBytes >> 10) KiB at a time, each page written, and after each chunk reads the device's `memory.usage_in_bytes` and CLOCK_MONOTONIC itself (the model app's `ramp` command): the chunk after which the usage first reached the critical line — the working set at 95% of the budget, plus the inactive file pages the round began with — is the crossing, timed at its end (the chunk took \(ms(Percentiles(rounds.map(\.crossingChunk)).p50 * 1000)) ms at the median, so the crossing is known that closely); it goes on \(plan.moreBytes >> 20) MiB past the line (the kernel checks thresholds every 128 pages charged per CPU) and stops. "
        md += "The monitor's wake is the first at or after the chunk before the crossing whose reading judged the device critical (when its poll(2) returned); jetsam's look is its last reading of the device's memory before it ranked the apps (in an episode the critical wake opened: its opening reading, after which it takes the apps' footprints as the supervisor last read them and decides; the kernel's OOM count and the memory outside the apps, which only the report needs, are read after the SIGKILL); SIGKILL is the kill's own time (`KillReceipt.signalledAt`, from the episode); memory back is when a thread of the harness blocked on an eventfd the kernel signals as the device's usage crosses the line (`cgroup.event_control`) woke and read the usage below it (a 20 ms poll of its own stands in if no event comes: \(rounds.filter { $0.memoryBackBy != "event" }.count) of \(total) rounds). "
        md += "Jetsam runs as shipped (ios policy) except that the warning's grace is 0 and its target 5% free (the critical line): the warning at 80% then closes at once (20% is free: \"warnings sufficed\"), and the critical line opens an episode of its own that kills at once and ends with its first victim — the same path under every condition. Freeze-dry is off (no swap here). "
        md += "A round is physically impossible — and fails the run — if the SIGKILL precedes the crossing, the episode's look precedes its wake or the SIGKILL its look, or the memory is back before the SIGKILL; the kernel's OOM killer must kill no one (it killed \(rounds.reduce(0) { $0 + $1.kernelOOMKills }) times), and the foreground app never.\n\n"

        md += "| wake-up | rounds | crossing → SIGKILL, median [95% CI] | p90 | p99 [95% CI] | max | crossing → memory back, median [95% CI] | p90 | p99 | max |\n"
        md += "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n"
        for c in conditions {
            let rs = rounds(of: c)
            guard !rs.isEmpty else { continue }
            let kill = rs.map(\.crossingToKill), back = rs.map(\.crossingToBack)
            let k = Percentiles(kill), b = Percentiles(back)
            md += "| \(c.name) | \(rs.count) | \(Self.medianWithInterval(kill)) ms | \(ms(k.p90 * 1000)) ms | \(Self.p99WithInterval(kill)) ms | \(ms(k.max * 1000)) ms | \(Self.medianWithInterval(back)) ms | \(ms(b.p90 * 1000)) ms | \(ms(b.p99 * 1000)) ms | \(ms(b.max * 1000)) ms |\n"
        }
        md += "\n"
        md += verdict()
        md += "![crossing to SIGKILL and to memory back, every round, by wake-up](jetsam-end-to-end.svg)\n\n"

        md += "### Where the time goes\n\n"
        md += "Each round split at the monitor's wake, jetsam's look and the SIGKILL (medians, p90, p99 and max over the rounds). The slowest tenth: the rounds at or above the p90 of crossing → SIGKILL, and each stage's share of their time.\n\n"
        md += "| wake-up | stage | median | p90 | p99 | max | share in the slowest tenth |\n|---|---|---:|---:|---:|---:|---:|\n"
        for c in conditions {
            let rs = rounds(of: c)
            guard !rs.isEmpty else { continue }
            let cut = Percentiles(rs.map(\.crossingToKill)).p90
            let slow = rs.filter { $0.crossingToKill >= cut }
            let slowTotal = slow.reduce(0) { $0 + $1.crossingToBack }
            for (name, of) in Self.stages {
                let p = Percentiles(rs.map(of))
                let share = slowTotal > 0 ? slow.reduce(0) { $0 + of($1) } / slowTotal : 0
                md += "| \(c.name) | \(name) | \(ms(p.p50 * 1000)) ms | \(ms(p.p90 * 1000)) ms | \(ms(p.p99 * 1000)) ms | \(ms(p.max * 1000)) ms | \(ByteFormat.fixed(share * 100, 0))% |\n"
            }
        }
        md += "\n"
        for c in conditions {
            let rs = rounds(of: c)
            guard !rs.isEmpty else { continue }
            let byEvent = rs.filter { $0.wakeup == .event }.count
            let first = rs.filter(\.openedByFirstCriticalWake).count
            let early = rs.filter { $0.crossingToWake < 0 }.count
            md += "- **\(c.name)**: the critical wake came from a kernel event in \(byEvent) of \(rs.count) rounds, from the poll in \(rs.count - byEvent); the kill came from the episode that wake opened in \(first) (the others: an episode opened earlier, by the warning, went on to kill). "
            let reclaimed = rs.filter(\.belowLineBeforeKill).count
            if reclaimed > 0 { md += "In \(reclaimed) round(s) the device's usage was already below the line before the SIGKILL (the kernel reclaimed page cache at the limit; the working set stayed past critical): memory back is there the first reading after the SIGKILL. " }
            let warned = rs.filter { $0.wakeLevel != .critical }.count
            if warned > 0 { md += "In \(warned) round(s) jetsam looked at memory before any critical wake: a wake the monitor judged a warning, on the app's way up, opened an episode whose look found the line already passed; that wake is the one counted, so crossing → wake is negative there and wake → look longer. " }
            if early > 0 { md += "In \(early) round(s) poll(2) returned before the crossing chunk ended (a threshold armed up to 1 MiB below the judgement's line fires early; the reading after it saw the line passed): crossing → wake is negative there. " }
            let victims = Dictionary(grouping: rs, by: \.victimState.rawValue).map { "\($0.value.count) \($0.key)" }.sorted().joined(separator: ", ")
            md += "Victims: \(victims), footprint median \(mib(UInt64(Percentiles(rs.map { Double($0.victimFootprintBytes) }).p50))); kills per round median \(ByteFormat.fixed(Percentiles(rs.map { Double($0.kills) }).p50, 0)). "
            md += "The app allocated at \(ByteFormat.fixed(Percentiles(rs.map(\.allocationRate)).p50 / 1048576, 0)) MiB/s (median).\n"
        }
        md += "\n"
        md += "Load while it ran: " + load.joined(separator: "; ") + ".\n\n"
        for n in notes { md += "- \(n)\n" }
        if !notes.isEmpty { md += "\n" }
        return md
    }

    /// The CPU's pressure (PSI some avg10, %) in the load lines, as the seeds began and ended.
    var cpuPressures: [Double] {
        load.compactMap { line in
            guard let r = line.range(of: "some avg10=") else { return nil }
            return Double(line[r.upperBound...].prefix { $0 == "." || $0.isNumber })
        }
    }

    /// Whether the goal (p99 ≤ 5 ms from the crossing to the SIGKILL, with kernel events) holds, said plainly.
    func verdict() -> String {
        guard let events = conditions.first(where: \.useCgroupEvents), !rounds(of: events).isEmpty else { return "" }
        let rs = rounds(of: events)
        let kill = rs.map(\.crossingToKill)
        let p = Percentiles(kill)
        let ci = QuantileInterval(kill, quantile: 0.99)
        let goal = 0.005
        var md = "**Goal: p99 ≤ 5 ms from the crossing to the SIGKILL, with kernel events.** "
        if p.p99 <= goal {
            md += "It holds in this run: p99 \(ms(p.p99 * 1000)) ms over \(rs.count) rounds (max \(ms(p.max * 1000)) ms)"
            md += ci.high.map { $0 <= goal ? ", and the 95% interval of the p99 ends at \(ms($0 * 1000)) ms." : "; but the 95% interval of the p99 reaches \(ms($0 * 1000)) ms: more rounds are needed to be sure." } ?? "; \(rs.count) rounds are too few to bound the p99 from above (no upper 95% limit)."
        } else {
            md += "It does not hold: p99 \(ms(p.p99 * 1000)) ms over \(rs.count) rounds (median \(ms(p.p50 * 1000)) ms, max \(ms(p.max * 1000)) ms); \(kill.filter { $0 > goal }.count) of \(rs.count) rounds took longer than 5 ms. "
            // Why: the stage before the SIGKILL that holds the most of the slow rounds' time.
            let slow = rs.filter { $0.crossingToKill > goal }
            let total = slow.reduce(0) { $0 + $1.crossingToKill }
            if total > 0, let worst = Self.stages.dropLast().max(by: { a, b in slow.reduce(0) { $0 + a.of($1) } < slow.reduce(0) { $0 + b.of($1) } }) {
                md += "In the rounds over 5 ms most of the time went to \(worst.name) (\(ByteFormat.fixed(slow.reduce(0) { $0 + worst.of($1) } / total * 100, 0))% of it)"
                md += worst.name == Self.stages[1].name
                    ? ": the time from the monitor's wake to jetsam's opening reading of the device's memory (`episode`'s `.measure` entry) — the wake travelling to jetsam through the monitor's stream and the reading, through the supervisor's actor, which may be busy (sampling the apps) or waiting for a CPU. "
                    : ". "
            }
            md += "Where the time goes is below."
        }
        // How busy the machine was: runs on a busier machine are slower, whatever the code.
        let pressures = cpuPressures
        if let high = pressures.max(), let low = pressures.min() {
            md += " The CPU's pressure (PSI some avg10) was \(ByteFormat.fixed(low, 0))–\(ByteFormat.fixed(high, 0))% as the seeds began and ended: the share of the time some runnable thread of the machine waited for a CPU, which the monitor's, jetsam's and the supervisor's threads did too."
        }
        md += "\n\n"
        for c in conditions where !c.useCgroupEvents {
            let polled = rounds(of: c).map(\.crossingToKill)
            guard !polled.isEmpty, p.p50 > 0, p.p99 > 0, Percentiles(polled).p50 > 0, Percentiles(polled).p99 > 0 else { continue }
            let q = Percentiles(polled)
            md += "- \(c.name): crossing → SIGKILL median \(Self.medianWithInterval(polled)) ms, p99 \(ms(q.p99 * 1000)) ms; kernel events / polled: \(ratioText(p.p50 / q.p50)) of the median, \(ratioText(p.p99 / q.p99)) of the p99 (the polled path takes \(ratioText(q.p50 / p.p50))× as long at the median).\n"
        }
        return md + "\n"
    }

    /// Every round's crossing → SIGKILL (solid) and crossing → memory back (dashed) as the
    /// share of rounds done by then, per condition; the goal marked.
    func plot() -> Plot {
        var p = Plot(name: "jetsam-end-to-end", title: "From the allocation that crosses the critical line: share of rounds with SIGKILL sent (solid) and memory back (dashed) by then", width: 900, height: 480)
        let colors = ["#d04a4a", "#4a7bd0", "#3a9a4a"]
        var plots: [String] = []
        for (i, c) in conditions.enumerated() {
            let rs = rounds(of: c)
            guard !rs.isEmpty else { continue }
            for (suffix, values, dash) in [("kill", rs.map(\.crossingToKill), "1"), ("back", rs.map(\.crossingToBack), "2")] {
                let sorted = values.sorted()
                p.data("\(suffix)\(i)", columns: ["milliseconds", "share of rounds"], rows: sorted.enumerated().map { n, x in
                    [.number(max(x * 1000, 0.01)), .number(Double(n + 1) / Double(sorted.count))]
                })
                let title = suffix == "kill" ? Plot.quoted("\(c.name): SIGKILL") : Plot.quoted("\(c.name): memory back")
                plots.append("$\(suffix)\(i) using 1:2 with steps lw 1.6 dt \(dash) lc rgb '\(colors[i % colors.count])' title \(title)")
            }
        }
        p.command("set key outside right top vertical")
        p.command("set logscale x 10")
        p.command("set xlabel 'milliseconds from the crossing (log scale)'")
        p.command("set ylabel 'share of rounds'")
        p.command("set yrange [0:1.02]")
        p.command("set arrow from 5, graph 0 to 5, graph 1 nohead dt 3 lc rgb 'black'")
        p.command("set label 'goal: p99 ≤ 5 ms' at 5, graph 0.96 left offset 0.5,0")
        p.command("set arrow from graph 0, first 0.99 to graph 1, first 0.99 nohead dt 3 lc rgb '#888888'")
        p.command("plot " + plots.joined(separator: ", \\\n     "))
        return p
    }
}
