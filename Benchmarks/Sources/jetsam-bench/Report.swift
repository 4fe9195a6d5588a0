import BenchSupport
import Foundation
import LinuxSystem

struct JetsamReport: RenderedReport {
    var formatVersion = 1
    var machine: String
    var command: String
    var latency: LatencyResult?
    var ranker: [RankerTiming]
    var memoryBack: [MemoryBackResult]
    var spike: Spike
    var runs: [SpikeRun]

    func ms(_ s: Double) -> String { ByteFormat.fixed(s * 1000, s < 0.001 ? 3 : 2) }
    func µs(_ s: Double) -> String { ByteFormat.fixed(s * 1e6, 1) }
    func mib(_ b: UInt64) -> String { ByteFormat.fixed(Double(b) / 1048576, 0) }

    func markdown() -> String {
        var md = "# Jetsam: decision latency, the ranker, memory back after a kill, and the same spike under four killers\n\n"
        md += "Regenerate: `\(command)` (measures; about 10 minutes) or `make reports` (re-renders this file from jetsam.json).\n"
        md += "Machine: \(machine). Times are medians with their p90, p99 and min–max over the rounds given; ratios are against a baseline measured in the same run.\n\n"

        if let l = latency {
            md += "## From the pressure event to SIGKILL, \(l.apps) supervised apps\n\n"
            md += "One foreground app grows at 300 MiB/s in a 2048 MiB device to 97% of it, past critical; \(l.apps - 1) suspended model apps holding 1–12 MiB of dirty memory each. "
            md += "The warning's grace is set long so that only the critical event ends it; measured from that event (as the pressure monitor emitted it) to the first SIGKILL, per round.\n\n"
            md += "| rounds | median | p90 | p99 | min–max | target | ranker `decide` on the recorded input (median, p99) | kernel OOM kills |\n|---:|---:|---:|---:|---:|---:|---:|---:|\n"
            md += "| \(l.rounds) | \(ms(l.eventToKill.median)) ms | \(ms(l.eventToKill.p90)) ms | \(ms(l.eventToKill.p99)) ms | \(ms(l.eventToKill.min))–\(ms(l.eventToKill.max)) ms | < 5 ms | \(µs(l.decideOnRecordedInput.median)) µs, \(µs(l.decideOnRecordedInput.p99)) µs | \(l.kernelOOMKills) |\n\n"
            md += "The event itself comes from the cgroup usage source, read every \(ms(l.pollIntervalSeconds)) ms (or at once from the kernel's memory.pressure_level eventfd): the usage crossed the threshold up to one poll interval before. lmkd, for comparison, polls every 10 to 100 ms and waits 100 ms between kills.\n\n"
            for n in l.notes { md += "- \(n)\n" }
        }

        md += "## The ranker alone\n\n"
        md += "A seeded mix of apps in every state, short by a fifth of the budget (several victims). `decide` picks the victims with their explanations; `rank` orders and explains every app. Baseline: the same snapshots sorted by footprint alone.\n\n"
        md += "| apps | policy | `decide` median (p90, p99) | `rank` median (p99) | baseline sort median | decide / sort |\n|---:|---|---:|---:|---:|---:|\n"
        for r in ranker {
            md += "| \(r.apps) | \(r.policy) | \(µs(r.decide.median)) µs (\(µs(r.decide.p90)), \(µs(r.decide.p99))) | \(µs(r.rank.median)) µs (\(µs(r.rank.p99))) | \(µs(r.baselineSort.median)) µs | \(ByteFormat.fixed(r.decideOverBaseline, 1))x |\n"
        }
        md += "\n"

        md += "## Until a victim's memory is back\n\n"
        md += "A process holding N MiB of dirty memory in a cgroup of its own is sent SIGKILL; measured until the cgroup's usage has dropped by 90% of what it added. With process_mrelease the killer frees the address space itself at once; without, the victim must be scheduled to run its exit.\n\n"
        md += "| size | with process_mrelease (p90) | without (p90) | without / with | the mrelease call (median) |\n|---:|---:|---:|---:|---:|\n"
        for m in memoryBack {
            md += "| \(m.sizeMB) MiB | \(ms(m.withRelease.median)) ms (\(ms(m.withRelease.p90))) | \(ms(m.withoutRelease.median)) ms (\(ms(m.withoutRelease.p90))) | \(ByteFormat.fixed(m.withoutRelease.median / max(m.withRelease.median, 1e-9), 2))x | \(ms(m.releaseCall.median)) ms |\n"
        }
        md += "\n"

        md += "## The same spike under four killers\n\n"
        md += "A \(spike.budgetMB) MiB device (a memory cgroup) holding "
        md += spike.apps.map { "\($0.name) (\($0.role.rawValue), \($0.dirtyMB) MiB)" }.joined(separator: ", ")
        md += "; the foreground app, \(spike.foreground), then grows by \(spike.growthMB) MiB at \(spike.growthMBPerSecond) MiB/s. "
        md += "earlyoom and nohang run with their own default thresholds (earlyoom: SIGTERM at 10% available, SIGKILL at 5%; nohang: 5% and 2%), each inside a PID namespace of its own holding only these processes, where /proc/meminfo shows the device as LXCFS shows a container its own: MemTotal the budget, MemAvailable the budget less the cgroup's working set, refreshed every 5 ms; "
        md += "\"kernel\" is the memory cgroup's own OOM killer, with no killer beside it. Needed: what must be freed for the working set to end at 75% of the budget. Recovery: from the working set first reaching 80% of the budget to its first return to 75% after its peak. A death is timed at SIGKILL for jetsam (its own record) and when reaped for the others (the benchmark sees only that); freed memory is read from the working set around it.\n\n"
        md += "| killer | rounds | victims (round 1) | kills, median | foreground survived | freed / needed, median | recovery, median (min–max) | peak working set | kernel OOM kills |\n|---|---:|---|---:|---:|---:|---:|---:|---:|\n"
        var contenders: [String] = []
        for r in runs where !contenders.contains(r.contender) { contenders.append(r.contender) }
        for c in contenders {
            let rs = runs.filter { $0.contender == c }
            let kills = Stats(rs.map { Double($0.deaths.count) })
            let ratio = Stats(rs.map { $0.neededBytes > 0 ? Double($0.freedBytes) / Double($0.neededBytes) : 0 })
            let recoveries = rs.compactMap(\.recoverySeconds)
            let rec = recoveries.isEmpty ? "never" : "\(ms(Stats(recoveries).median)) ms (\(ms(Stats(recoveries).min))–\(ms(Stats(recoveries).max)))" + (recoveries.count < rs.count ? ", \(rs.count - recoveries.count) never" : "")
            let victims = rs.first.map { $0.deaths.map(\.app).joined(separator: ", ") } ?? ""
            md += "| \(c) | \(rs.count) | \(victims.isEmpty ? "none" : victims) | \(ByteFormat.fixed(kills.median, 0)) | \(rs.filter(\.foregroundSurvived).count) of \(rs.count) | \(ByteFormat.fixed(ratio.median, 2)) | \(rec) | \(mib(rs.map(\.peakUsedBytes).max() ?? 0)) MiB | \(rs.reduce(0) { $0 + $1.kernelOOMKills }) |\n"
        }
        md += "\n![working set over time, round 1 of each killer](jetsam.svg)\n\n"
        for c in contenders {
            let notes = Set(runs.filter { $0.contender == c }.flatMap(\.notes)).sorted()
            if !notes.isEmpty { md += "- \(c): " + notes.joined(separator: "; ") + "\n" }
        }
        return md
    }

    /// The working set over time, round 1 of each killer, with the budget and the deaths.
    func svg() -> String {
        let width = 900.0, height = 420.0, left = 70.0, right = 20.0, top = 40.0, bottom = 50.0
        var contenders: [String] = []
        for r in runs where !contenders.contains(r.contender) { contenders.append(r.contender) }
        let firsts = contenders.compactMap { c in runs.first { $0.contender == c } }
        let tMax = max(1, firsts.flatMap { $0.series.map(\.t) }.max() ?? 1)
        let yMax = Double(spike.budgetBytes) * 1.1
        func x(_ t: Double) -> Double { left + (width - left - right) * t / tMax }
        func y(_ b: Double) -> Double { top + (height - top - bottom) * (1 - b / yMax) }
        let colors = ["#d04a4a", "#4a7bd0", "#3a9a4a", "#9a6a2a", "#777"]
        var out = "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"\(Int(width))\" height=\"\(Int(height))\" font-family=\"sans-serif\" font-size=\"12\">\n"
        out += "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n"
        out += "<text x=\"10\" y=\"18\" font-weight=\"bold\">Working set of the device during the spike (round 1 of each killer); a dot is a death</text>\n"
        for f in [0.0, 0.25, 0.5, 0.75, 1.0] {
            let b = Double(spike.budgetBytes) * f
            out += "<line x1=\"\(Int(left))\" x2=\"\(Int(width - right))\" y1=\"\(Int(y(b)))\" y2=\"\(Int(y(b)))\" stroke=\"\(f == 1 ? "#000" : "#ddd")\"\(f == 1 ? " stroke-dasharray=\"4,3\"" : "")/>\n"
            out += "<text x=\"\(Int(left - 6))\" y=\"\(Int(y(b) + 4))\" text-anchor=\"end\">\(Int(b / 1048576)) MiB</text>\n"
        }
        out += "<text x=\"\(Int(width - right))\" y=\"\(Int(y(Double(spike.budgetBytes)) - 4))\" text-anchor=\"end\">budget</text>\n"
        var s = 0.0
        while s <= tMax {
            out += "<text x=\"\(Int(x(s)))\" y=\"\(Int(height - bottom + 16))\" text-anchor=\"middle\">\(Int(s)) s</text>\n"
            s += 1
        }
        for (i, r) in firsts.enumerated() {
            let color = colors[i % colors.count]
            let points = r.series.filter { $0.t >= 0 }.map { "\(ByteFormat.fixed(x($0.t), 1)),\(ByteFormat.fixed(y(Double($0.usedBytes)), 1))" }.joined(separator: " ")
            out += "<polyline fill=\"none\" stroke=\"\(color)\" stroke-width=\"1.5\" points=\"\(points)\"/>\n"
            for d in r.deaths {
                let used = r.series.last { $0.t <= d.t }?.usedBytes ?? 0
                out += "<circle cx=\"\(Int(x(d.t)))\" cy=\"\(Int(y(Double(used))))\" r=\"4\" fill=\"\(color)\"><title>\(escapeXML(d.app)) at \(ByteFormat.fixed(d.t, 2)) s</title></circle>\n"
            }
            let ly = height - 14.0
            let lx = left + Double(i) * 205
            out += "<rect x=\"\(Int(lx))\" y=\"\(Int(ly - 9))\" width=\"12\" height=\"3\" fill=\"\(color)\"/><text x=\"\(Int(lx + 16))\" y=\"\(Int(ly))\">\(escapeXML(r.contender))</text>\n"
        }
        return out + "</svg>\n"
    }
}
