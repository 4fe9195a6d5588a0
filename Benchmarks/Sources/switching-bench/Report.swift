import BenchSupport
import Foundation
import MemPressureSystem

struct TraceInfo: Codable, Sendable {
    var name: String
    var file: String?
    var model: String?
    var seed: UInt64?
    var alpha: Double?
    var returnProbability: Double?
    var apps: [String]
    var switches: Int
    var switchCounts: [Int]
    var timed: Bool
}

struct SwitchingReport: RenderedReport {
    var formatVersion = 1
    var machine: Machine
    var command: String
    var quick: Bool
    var trace: TraceInfo
    var restore: String
    var decodeCost: Int
    var profiles: [AppProfile]
    /// Each app's footprint (the largest sampled while active), and their mean: a budget of
    /// "room for k apps" is k times the mean.
    var footprints: [UInt64]
    var meanAppFootprintBytes: UInt64
    var budgets: [Double]
    var trims: [Double]
    var policies: [String]
    var calibrationRounds: Int
    var calibration: [Calibration]
    var runs: [RunResult]
    var totalSeconds: Double
    var notes: [String]

    func mib(_ b: UInt64) -> String { ByteFormat.fixed(Double(b) / 1048576, 1) }
    func ms(_ x: Double) -> String { ByteFormat.fixed(x, x < 10 ? 1 : 0) }
    func pct(_ x: Double) -> String { ByteFormat.fixed(x * 100, 0) + "%" }
    func trimText(_ t: Double) -> String { ByteFormat.fixed(t, t == t.rounded() ? 0 : 1) }
    func room(_ k: Double) -> String { ByteFormat.fixed(k, k == k.rounded() ? 0 : 1) }
    var jetsamRuns: [RunResult] { runs.filter { $0.policy != "kernel" } }
    var kernelRuns: [RunResult] { runs.filter { $0.policy == "kernel" } }
    func describe(_ p: String) -> String { p == "kernel" ? "kernel (no jetsam)" : p }

    func markdown() -> String {
        var md = "# App switching: resume or relaunch, under six jetsam policies and the kernel alone\n\n"
        if quick { md += "**A quick smoke run** (`--quick`): a short trace, few budgets and policies; not the full sweep.\n\n" }
        md += "Regenerate: `\(command)` (measures; \(minutes(totalSeconds)) here) or `make reports` (re-renders this page and its plots from switching.json).\n\n"
        md += "Machine: \(machine.kernel), \(machine.cpus) CPUs, \(ByteFormat.fixed(Double(machine.memoryBytes) / 1073741824, 1)) GiB memory, "
        md += machine.swapBytes == 0 ? "no swap" : "\(ByteFormat.fixed(Double(machine.swapBytes) / 1073741824, 1)) GiB swap"
        md += "; load average \(ByteFormat.fixed(machine.loadBefore, 1)) before the run and \(ByteFormat.fixed(machine.loadAfter, 1)) after (the machine's 2 CPUs may have been shared with other work, which slows every measurement alike).\n\n"

        md += "## What runs\n\n"
        md += "\(profiles.count) model apps (`mempressure-workload`, real processes under the supervisor, each in the device's memory cgroup) of mixed sizes replay one app-switching trace. "
        md += "Each app holds saved state, decoded images (a purgeable cache), view backing stores (purgeable buffers), mmap'd assets (clean), a computed model and plain dirty memory; "
        md += "on didEnterBackground it saves its state and releases its trim level's share of the images, backing stores and model; on resume it rebuilds them "
        md += restore == "eager" ? "before it reports ready (`--restore eager`: ready means fully working again).\n\n" : "after it reports ready (`--restore lazy`).\n\n"
        md += "| app | scale | state | images | backing | assets | model | dirty | footprint (active) |" + trims.map { " background at trim \(trimText($0)) | resume / relaunch at trim \(trimText($0)) |" }.joined() + "\n"
        md += "|---|---:|---:|---:|---:|---:|---:|---:|---:|" + trims.map { _ in "---:|---:|" }.joined() + "\n"
        for (i, p) in profiles.enumerated() {
            md += "| \(p.name) | \(ByteFormat.fixed(p.scale, 2)) | \(p.stateMB) | \(p.imageCacheMB) | \(p.backingMB) | \(p.assetsMB) | \(p.modelMB) | \(p.dirtyMB) | \(mib(footprints[i])) MiB |"
            for t in trims {
                if let c = calibration.first(where: { $0.trim == t && $0.app == p.name }) {
                    md += " \(mib(c.backgroundFootprintBytes)) MiB | \(ms(c.resumeMedianMs)) / \(ms(c.relaunchMedianMs)) ms |"
                } else {
                    md += " | |"
                }
            }
            md += "\n"
        }
        md += "\nSizes in MiB (the options given to the model app; `--decode-cost \(decodeCost)`). Footprint is the supervisor's reading (dirty memory the app alone holds plus swap; purgeable and clean pages are not charged), the largest while active; background is the median while suspended. "
        md += "Resume and relaunch are medians of \(calibrationRounds) each per app with no memory pressure (a device far larger than all apps together, no killer), from the activate command to the app's `ready`; a relaunch restores the saved state (page cache warm). These are the model's inputs, measured just before the runs of their trim level; the budgets are sized from the first trim level's footprints.\n\n"
        md += "**The trace**: \(trace.name); \(trace.switches) switches over \(trace.apps.count) apps"
        md += " (switches per app: " + zip(trace.apps, trace.switchCounts).map { "\($0) \($1)" }.joined(separator: ", ") + ")"
        md += trace.file == nil ? ". The same seed gives the same trace in any process (SplitMix64; `SwitchTraceGenerator` in CachePolicies, pinned by a test).\n\n" : ".\n\n"
        md += "**A run**: a supervisor with a device budget of room for k apps (k × the mean footprint, \(mib(meanAppFootprintBytes)) MiB: "
        md += budgets.map { "\(room($0)) → \(mib(UInt64(Double(meanAppFootprintBytes) * $0))) MiB" }.joined(separator: ", ")
        md += ") and a jetsam killer with one policy (its defaults: warnings first, kills until a quarter of the budget is free), or none (\"kernel\": the memory cgroup's own OOM killer alone). "
        md += "Every app is launched once and sent to the background (the warm-up), then each switch of the trace: the foreground app goes to the background (until suspended), then the target is activated — a resume if it is suspended, a relaunch if it was killed — "
        md += "timed from the activate command to the app's `ready`. An app killed while being activated is launched again at once (a user tapping it again), up to \(Retry.attempts) times or \(ByteFormat.fixed(Retry.seconds, 0)) s, the time counted in the switch; a switch that never brings its app up counts as failed. After every relaunch every byte of the app's state is checked against the activations the harness counted (`verify N`); at the end, the saved state of every app not running is checked too. "
        md += "Background footprint: the supervisor's samples (4 a second and at each transition) of apps in the background, weighted by time over the replay: the total of all background apps together (the memory the device spends on keeping apps), and per app.\n\n"
        md += "**The model**: expected switch latency = P(alive) × resume + (1 − P(alive)) × relaunch, with P(alive) the run's measured share of resumes and resume and relaunch the unloaded (calibrated) times of the apps switched to. Where the measurement exceeds it, pressure itself cost time (reclaim, kills during a switch, a relaunch slowed by the killer or the page cache).\n\n"

        md += "## Background footprint against expected switch latency\n\n"
        md += "![Pareto frontier of background footprint against expected switch latency, one line per policy](switching.svg)\n\n"
        md += "Each point is one run (a budget and a trim level); each line joins a policy's Pareto-optimal runs (no other run of the policy has both less background memory and a lower expected latency). Down and to the left is better. "
        md += "Failed switches (an app that never came up) have no latency and are not in the expectation: "
        md += policies.map { p in "\(describe(p)) \(runs.filter { $0.policy == p }.reduce(0) { $0 + $1.failedSwitches })" }.joined(separator: ", ")
        md += " of \(runs.first?.switches ?? 0) × \(budgets.count * trims.count) switches each — a policy's line is only as good as that count.\n\n"

        md += "## Findings\n\n"
        for f in findings() { md += "- \(f)\n" }
        md += "\n"

        md += "## Per policy\n\n"
        md += "All runs of each policy together (\(budgets.count) budgets × \(trims.count) trim levels).\n\n"
        md += "| policy | switches | resumes | relaunches | failed | resume share | kills (jetsam) | warnings sent | kernel OOM kills (replay + warm-up) | held at the limit | mean switch | p95 switch (median over runs) | expected (mean over runs) | measured / expected | bytes lost |\n"
        md += "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n"
        for p in policies {
            let rs = runs.filter { $0.policy == p }
            guard !rs.isEmpty else { continue }
            let sw = rs.reduce(0) { $0 + $1.switches }
            let res = rs.reduce(0) { $0 + $1.resumes }
            let allMs = rs.flatMap { $0.records.filter { $0.kind != .failed }.map(\.ms) }
            let failed = rs.reduce(0) { $0 + $1.failedSwitches }
            md += "| \(describe(p)) | \(sw) | \(res) | \(rs.reduce(0) { $0 + $1.relaunches }) | \(failed) | \(pct(Double(res) / Double(max(1, sw - failed)))) | \(rs.reduce(0) { $0 + $1.kills }) | \(rs.reduce(0) { $0 + $1.warningsSent }) | "
            md += "\(rs.reduce(UInt64(0)) { $0 + $1.kernelOOMKills }) + \(rs.reduce(UInt64(0)) { $0 + $1.warmupKernelOOMKills }) | \(p == "kernel" ? "–" : String(rs.reduce(0) { $0 + ($1.heldAtLimit ?? 0) })) | \(ms(mean(allMs) ?? 0)) ms | \(ms(median(rs.map(\.p95SwitchMs)))) ms | "
            md += "\(ms(mean(rs.map(\.expectedSwitchMs)) ?? 0)) ms | \(ByteFormat.fixed((mean(rs.map(\.meanSwitchMs)) ?? 0) / max(1e-9, mean(rs.map(\.expectedSwitchMs)) ?? 0), 2)) | \(rs.reduce(0) { $0 + $1.bytesLost }) |\n"
        }
        md += "\n"

        md += "## Every run\n\n"
        md += "Kills are jetsam's during the replay; kernel OOM kills are the cgroup's (`memory.oom_control` `oom_kill`) during the replay, and during the warm-up after the plus sign. Failed: switches that never brought their app up (\(Retry.attempts) launches or \(ByteFormat.fixed(Retry.seconds, 0)) s), left out of the latencies. Background: the time-weighted total of the background apps (per app, and how many on average). Load: the machine's 1-minute load average as the run began.\n\n"
        for t in trims {
            md += "### Trim \(trimText(t))\n\n"
            md += "| budget | policy | resumes | relaunches | failed | kills | warnings | kernel OOM | mean | p95 | expected | measured / expected | background total (per app, apps) | bytes lost | load |\n"
            md += "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n"
            for k in budgets {
                for r in runs where r.trim == t && r.budgetApps == k {
                    md += "| room for \(room(k)) (\(r.budgetBytes >> 20) MiB) | \(describe(r.policy)) | \(r.resumes) (\(pct(r.resumeShare))) | \(r.relaunches) | \(r.failedSwitches) | \(r.kills) | \(r.warningsSent) | \(r.kernelOOMKills) + \(r.warmupKernelOOMKills) | "
                    md += "\(ms(r.meanSwitchMs)) ms | \(ms(r.p95SwitchMs)) ms | \(ms(r.expectedSwitchMs)) ms | \(ByteFormat.fixed(r.meanSwitchMs / max(1e-9, r.expectedSwitchMs), 2)) | "
                    md += "\(mib(r.backgroundTotalBytes)) MiB (\(mib(r.backgroundFootprintBytes)), \(ByteFormat.fixed(r.backgroundApps, 1))) | \(r.bytesLost) | \(ByteFormat.fixed(r.loadAverage, 1))\(r.swapBytes > 0 ? ", swap" : "") |\n"
                }
            }
            md += "\n"
        }

        md += "## The model against the measurement\n\n"
        md += "![measured mean switch latency against the model's expectation, per run](switching-model.svg)\n\n"
        md += "Mean of resumes and of relaunches as measured in the runs, against the unloaded (calibrated) times the model uses:\n\n"
        md += "| policy | measured resume (mean over runs) | calibrated resume | measured relaunch (mean over runs) | calibrated relaunch |\n|---|---:|---:|---:|---:|\n"
        for p in policies {
            let rs = runs.filter { $0.policy == p }
            guard !rs.isEmpty else { continue }
            let mr = rs.compactMap(\.meanResumeMs), ml = rs.compactMap(\.meanRelaunchMs)
            md += "| \(describe(p)) | \(mr.isEmpty ? "–" : ms(mean(mr)!) + " ms") | \(ms(mean(rs.map(\.calibratedResumeMs)) ?? 0)) ms | \(ml.isEmpty ? "–" : ms(mean(ml)!) + " ms") | \(ms(mean(rs.map(\.calibratedRelaunchMs)) ?? 0)) ms |\n"
        }
        md += "\n"

        let lossRuns = runs.filter { !$0.losses.isEmpty }
        if !lossRuns.isEmpty {
            md += "## State lost\n\n| trim | budget | policy | app | bytes | activations counted | activations lost | found by | how its run before died |\n|---:|---|---|---|---:|---:|---:|---|---|\n"
            for r in lossRuns {
                for l in r.losses {
                    md += "| \(trimText(r.trim)) | room for \(room(r.budgetApps)) | \(describe(r.policy)) | \(l.app) | \(l.bytes) | \(l.activations) | \(l.activationsLost.map(String.init) ?? "–") | \(l.foundBy)\(l.switchIndex.map { " (switch \($0 + 1))" } ?? "") | \(l.death) |\n"
                }
            }
            md += "\n"
        }
        let noted = runs.filter { !$0.notes.isEmpty }
        if !notes.isEmpty || !noted.isEmpty {
            md += "## Notes\n\n"
            for n in notes { md += "- \(n)\n" }
            for r in noted {
                md += "- trim \(trimText(r.trim)), room for \(room(r.budgetApps)), \(describe(r.policy)): " + r.notes.joined(separator: "; ") + "\n"
            }
            md += "\n"
        }
        return md
    }

    func minutes(_ s: Double) -> String {
        s >= 90 ? "\(Int((s / 60).rounded())) minutes" : "\(Int(s.rounded())) seconds"
    }

    /// What the runs say, computed from them (so that `--render-only` writes the same).
    func findings() -> [String] {
        var out: [String] = []
        let swapped = runs.filter { $0.swapBytes > 0 }
        if !swapped.isEmpty {
            out.append("**Swap was present during \(swapped.count) of \(runs.count) runs** (up to \(mib(swapped.map(\.swapBytes).max() ?? 0)) MiB, added by another program while this ran): there the device's memory cgroup let apps be swapped out and jetsam freeze-dried instead of killing, so those runs are not those of this machine without swap. They are marked in the tables.")
        }
        // Kernel OOM kills under our killer.
        let oom = jetsamRuns.filter { $0.kernelOOMKills + $0.warmupKernelOOMKills > 0 }
        if jetsamRuns.isEmpty {
        } else if oom.isEmpty {
            let held = jetsamRuns.reduce(0) { $0 + ($1.heldAtLimit ?? 0) }
            let heldRuns = jetsamRuns.filter { ($0.heldAtLimit ?? 0) > 0 }.count
            var s = "**No kernel OOM kill under jetsam**: in all \(jetsamRuns.count) runs with a policy the cgroup's OOM killer never acted, warm-up included; jetsam made \(jetsamRuns.reduce(0) { $0 + $1.kills + $1.warmupKills }) kills. "
            if held == 0 {
                s += "No allocation reached the device's limit during a replay: jetsam acted before it every time."
            } else {
                s += "Jetsam holds the kernel's killer (cgroup v1 `oom_kill_disable`): \(held) time(s), in \(heldRuns) run(s), an allocation reached the device's limit during a replay and waited there for jetsam's decision (the column \"held at the limit\"); without the hold the kernel would have killed then, usually the app being launched. Every other kill came before the limit."
            }
            out.append(s)
        } else {
            let total = oom.reduce(UInt64(0)) { $0 + $1.kernelOOMKills + $1.warmupKernelOOMKills }
            let kernelDeaths = jetsamRuns.flatMap(\.deaths).filter { $0.by == "kernel" }
            let launching = kernelDeaths.filter { $0.state == "inactive" }.count
            let failed = jetsamRuns.reduce(0) { $0 + $1.failedSwitches }
            var s = "**Kernel OOM kills under jetsam: \(total)**, in \(oom.count) of \(jetsamRuns.count) runs with a policy (" + budgets.compactMap { k -> String? in
                let rs = oom.filter { $0.budgetApps == k }
                guard !rs.isEmpty else { return nil }
                return "room for \(room(k)): \(rs.count) of \(jetsamRuns.filter { $0.budgetApps == k }.count) runs, \(rs.reduce(UInt64(0)) { $0 + $1.kernelOOMKills }) in the replays + \(rs.reduce(UInt64(0)) { $0 + $1.warmupKernelOOMKills }) in the warm-ups"
            }.joined(separator: "; ") + "; every run's count is in the tables below). "
            s += "Of the kernel's kills during the replays, \(launching) of \(kernelDeaths.count) took an app while it was being launched (inactive): the app switched to, usually the largest process in the device at that moment. "
            s += failed > 0 ? "\(failed) switch(es) under jetsam never brought their app up (\(Retry.attempts) launches or \(ByteFormat.fixed(Retry.seconds, 0)) s). " : ""
            s += "The killer looks every 50 ms while pressure is up and holds the kernel's OOM killer of the device cgroup (`holdKernelOOMKiller`, cgroup v1 `oom_kill_disable`); a kernel kill under jetsam means the hold was not in force (cgroup v2, turned off, or let go when jetsam had nothing left to kill): the episodes' timelines say which."
            out.append(s)
        }
        // State lost, by how the app's run before died.
        func causes(_ rs: [RunResult]) -> String {
            var counts: [(String, Int, Int)] = []  // cause, losses, bytes
            for l in rs.flatMap(\.losses) {
                if let i = counts.firstIndex(where: { $0.0 == l.death }) {
                    counts[i].1 += 1
                    counts[i].2 += l.bytes
                } else {
                    counts.append((l.death, 1, l.bytes))
                }
            }
            return counts.sorted { $0.1 > $1.1 }.map { "\($0.1) killed by \($0.0) (\($0.2) bytes)" }.joined(separator: ", ")
        }
        let lossNote = "An app's state changes when it is activated (its first word counts activations) and is saved in didEnterBackground; an app killed after an activation and before that save finished loses that activation — \"while backgroundRunning\" is a kill in the middle of didEnterBackground, \"while active\" a kill in the foreground. The harness then counts on from what the app holds, so each loss is reported once."
        let jetsamLoss = jetsamRuns.filter { $0.bytesLost > 0 }
        if !jetsamRuns.isEmpty {
            if jetsamLoss.isEmpty {
                out.append("**No state lost under jetsam**: every relaunch under every policy restored every byte of the app's state (\(jetsamRuns.reduce(0) { $0 + $1.relaunches }) relaunches checked, and the saved state of every app not running at the end).")
            } else {
                let own = jetsamLoss.flatMap(\.losses).filter { $0.death.hasPrefix("jetsam") }
                let inBackground = own.filter { $0.death.hasSuffix("backgroundRunning") }.count
                let inForeground = own.filter { $0.death.hasSuffix("active") && !$0.death.hasSuffix("inactive") }.count
                var s = "**State lost under jetsam** in \(jetsamLoss.count) of \(jetsamRuns.count) runs, \(jetsamLoss.reduce(0) { $0 + $1.bytesLost }) bytes in \(jetsamLoss.reduce(0) { $0 + $1.losses.count }) losses: \(causes(jetsamLoss)). "
                if inBackground > 0 {
                    s += "In \(inBackground) jetsam took a background-running app after its didEnterBackground (jetsam spares an app inside that callback; the state this app lost was changed after the save, or the save outlasted the callback's timeout). "
                }
                if inForeground > 0 {
                    s += "In \(inForeground) it took the foreground app, which every policy keeps last and takes only at critical pressure when nothing else is left. "
                }
                out.append(s + lossNote)
            }
        }
        if !kernelRuns.isEmpty {
            let kills = kernelRuns.reduce(UInt64(0)) { $0 + $1.kernelOOMKills }
            let kernelDeaths = kernelRuns.flatMap(\.deaths).filter { $0.by == "kernel" }
            var states: [(String, Int)] = []
            for d in kernelDeaths {
                if let i = states.firstIndex(where: { $0.0 == d.state }) { states[i].1 += 1 } else { states.append((d.state, 1)) }
            }
            let failed = kernelRuns.reduce(0) { $0 + $1.failedSwitches }
            var s = "**The kernel alone** killed \(kills) times during the replays (\(kernelRuns.reduce(UInt64(0)) { $0 + $1.warmupKernelOOMKills }) more in the warm-ups): "
            s += states.sorted { $0.1 > $1.1 }.map { "\($0.1) while \($0.0 == "inactive" ? "launching (inactive)" : $0.0)" }.joined(separator: ", ")
            s += ". Its OOM killer takes the largest process, and the largest is usually the app being launched: \(failed) of \(kernelRuns.reduce(0) { $0 + $1.switches }) switches never brought their app up (\(Retry.attempts) launches or \(ByteFormat.fixed(Retry.seconds, 0)) s), against \(jetsamRuns.reduce(0) { $0 + $1.failedSwitches }) of \(jetsamRuns.reduce(0) { $0 + $1.switches }) under jetsam. "
            let lossRuns = kernelRuns.filter { $0.bytesLost > 0 }
            if lossRuns.isEmpty {
                s += "No state was lost: no app was killed between an activation and its next save."
            } else {
                s += "State was lost in \(lossRuns.count) of \(kernelRuns.count) runs: \(causes(lossRuns)). " + lossNote
            }
            out.append(s)
        }
        // Which policy switches fastest, budget by budget (completed switches; failed ones apart).
        var lines: [String] = []
        for k in budgets {
            var perPolicy: [(String, Double, Int, Double)] = []
            for p in policies {
                let rs = runs.filter { $0.policy == p && $0.budgetApps == k }
                if let m = mean(rs.map(\.meanSwitchMs)) { perPolicy.append((p, m, rs.reduce(0) { $0 + $1.failedSwitches }, mean(rs.map(\.resumeShare)) ?? 0)) }
            }
            perPolicy.sort { $0.1 < $1.1 }
            if !perPolicy.isEmpty {
                lines.append("room for \(room(k)): " + perPolicy.map { "\(describe($0.0)) \(ms($0.1)) ms (\(pct($0.3)) resumes" + ($0.2 > 0 ? ", \($0.2) failed" : "") + ")" }.joined(separator: ", "))
            }
        }
        if !lines.isEmpty {
            out.append("**Mean switch latency by budget** (completed switches, mean over the trim levels, fastest first; failed switches are left out of the latency, and counted): " + lines.joined(separator: "; ") + ". Jetsam keeps a quarter of the budget free (its target), so at the same budget it keeps fewer apps alive than the kernel, which kills only at the limit — and then mostly the app being launched.")
        }
        // Trim.
        if trims.count > 1, let small = budgets.min() {
            var parts: [String] = []
            for t in trims {
                let rs = runs.filter { $0.trim == t && $0.budgetApps == small && $0.policy != "kernel" }
                guard !rs.isEmpty else { continue }
                parts.append("trim \(trimText(t)): resumes \(pct(mean(rs.map(\.resumeShare)) ?? 0)), background \(mib(UInt64(mean(rs.map { Double($0.backgroundFootprintBytes) }) ?? 0))) MiB per app, resume \(ms(mean(rs.map(\.calibratedResumeMs)) ?? 0)) ms unloaded, mean switch \(ms(mean(rs.map(\.meanSwitchMs)) ?? 0)) ms")
            }
            if !parts.isEmpty { out.append("**Trim at the smallest budget** (room for \(room(small)), jetsam policies averaged): " + parts.joined(separator: "; ") + ". Trimming lets more apps stay alive but makes each resume rebuild what it released.") }
        }
        // The model.
        let ratios = runs.filter { $0.expectedSwitchMs > 0 }.map { $0.meanSwitchMs / $0.expectedSwitchMs }
        if !ratios.isEmpty {
            let worst = runs.max { $0.meanSwitchMs / max(1e-9, $0.expectedSwitchMs) < $1.meanSwitchMs / max(1e-9, $1.expectedSwitchMs) }!
            out.append("**The model against the measurement**: measured / expected is \(ByteFormat.fixed(median(ratios), 2)) in the median run (from \(ByteFormat.fixed(ratios.min()!, 2)) to \(ByteFormat.fixed(ratios.max()!, 2))); the largest gap is \(describe(worst.policy)) at room for \(room(worst.budgetApps)), trim \(trimText(worst.trim)): \(ms(worst.meanSwitchMs)) ms measured against \(ms(worst.expectedSwitchMs)) ms expected (its relaunches took \(worst.meanRelaunchMs.map { ms($0) } ?? "–") ms against \(ms(worst.calibratedRelaunchMs)) ms unloaded, its resumes \(worst.meanResumeMs.map { ms($0) } ?? "–") ms against \(ms(worst.calibratedResumeMs)) ms).")
        }
        // Headroom.
        if let big = budgets.max() {
            let k = runs.filter { $0.budgetApps == big && $0.policy == "kernel" }
            let j = runs.filter { $0.budgetApps == big && $0.policy != "kernel" }
            if !k.isEmpty, !j.isEmpty {
                out.append("**At the largest budget** (room for \(room(big))): jetsam runs averaged \(ByteFormat.fixed(mean(j.map { Double($0.kills) }) ?? 0, 1)) kills and \(pct(mean(j.map(\.resumeShare)) ?? 0)) resumes, the kernel alone \(ByteFormat.fixed(mean(k.map { Double($0.kernelOOMKills) }) ?? 0, 1)) kills and \(pct(mean(k.map(\.resumeShare)) ?? 0)) resumes.")
            }
        }
        // Frontier.
        var areas: [(String, Double)] = []
        for p in policies {
            let f = frontier(runs.filter { $0.policy == p })
            if let best = f.map(\.expectedSwitchMs).min() { areas.append((p, best)) }
        }
        if !areas.isEmpty {
            areas.sort { $0.1 < $1.1 }
            out.append("**Lowest expected switch latency on each frontier**: " + areas.map { "\(describe($0.0)) \(ms($0.1)) ms" }.joined(separator: ", ") + ".")
        }
        return out
    }

    /// The Pareto-optimal runs: no other run has both a smaller background total and a lower
    /// expected latency; by background total.
    func frontier(_ rs: [RunResult]) -> [RunResult] {
        let sorted = rs.sorted { ($0.backgroundTotalBytes, $0.expectedSwitchMs) < ($1.backgroundTotalBytes, $1.expectedSwitchMs) }
        var out: [RunResult] = []
        var best = Double.infinity
        for r in sorted where r.expectedSwitchMs < best {
            out.append(r)
            best = r.expectedSwitchMs
        }
        return out
    }

    static let colors = ["#d04a4a", "#4a7bd0", "#3a9a4a", "#9a6a2a", "#8a4ab0", "#2a9a9a", "#555555"]

    func plots() -> [Plot] {
        var p = Plot(name: "switching", title: "Background footprint against expected switch latency: each policy's Pareto frontier over budgets and trim levels", width: 960, height: 540)
        var plot: [String] = []
        for (i, policy) in policies.enumerated() {
            let rs = runs.filter { $0.policy == policy }
            guard !rs.isEmpty else { continue }
            let color = Self.colors[i % Self.colors.count]
            p.data("all\(i)", columns: ["background MiB", "expected ms", "budget", "trim"], rows: rs.map {
                [.number(Double($0.backgroundTotalBytes) / 1048576), .number($0.expectedSwitchMs), .number($0.budgetApps), .number($0.trim)]
            })
            p.data("front\(i)", columns: ["background MiB", "expected ms"], rows: frontier(rs).map {
                [.number(Double($0.backgroundTotalBytes) / 1048576), .number($0.expectedSwitchMs)]
            })
            plot.append("$all\(i) using 1:2 with points pt 6 ps 0.7 lc rgb '\(color)' notitle")
            // A policy whose switches failed (the app never came up) has them out of its
            // expectation: its line looks better than it is, and says so, dashed.
            let failed = rs.reduce(0) { $0 + $1.failedSwitches }
            let switches = rs.reduce(0) { $0 + $1.switches }
            let title = failed == 0 ? describe(policy) : "\(policy == "kernel" ? "kernel" : describe(policy)) (\(failed)/\(switches) failed)"
            plot.append("$front\(i) using 1:2 with linespoints lw 2 \(failed == 0 ? "" : "dt 2 ")pt 7 ps 0.9 lc rgb '\(color)' title \(Plot.quoted(title))")
        }
        p.command("set key outside right top vertical")
        p.command("set xlabel 'background footprint: all background apps together, time-weighted mean (MiB)'")
        p.command("set ylabel 'expected switch latency (ms)'")
        p.command("set xrange [0:*]")
        // Resumes take milliseconds, relaunches a hundred or more: a wide range is drawn on a
        // logarithmic axis.
        let ys = runs.map(\.expectedSwitchMs).filter { $0 > 0 }
        if let lo = ys.min(), let hi = ys.max(), hi / lo > 20 {
            p.command("set logscale y")
            p.command("set yrange [\(lo / 1.5):\(hi * 1.5)]")
        } else {
            p.command("set yrange [0:*]")
        }
        p.command("plot " + plot.joined(separator: ", \\\n     "))

        var m = Plot(name: "switching-model", title: "Measured mean switch latency against the model's expectation, one point per run", width: 760, height: 560)
        var mplot: [String] = []
        var top = 1.0
        for (i, policy) in policies.enumerated() {
            let rs = runs.filter { $0.policy == policy }
            guard !rs.isEmpty else { continue }
            top = max(top, rs.map { max($0.meanSwitchMs, $0.expectedSwitchMs) }.max() ?? 1)
            m.data("runs\(i)", columns: ["expected ms", "measured ms"], rows: rs.map { [.number($0.expectedSwitchMs), .number($0.meanSwitchMs)] })
            mplot.append("$runs\(i) using 1:2 with points pt 7 ps 0.8 lc rgb '\(Self.colors[i % Self.colors.count])' title \(Plot.quoted(describe(policy)))")
        }
        let limit = top * 1.1
        m.command("set key outside right top vertical")
        m.command("set xlabel 'expected: P(alive) x resume + (1 - P(alive)) x relaunch, unloaded (ms)'")
        m.command("set ylabel 'measured mean switch latency (ms)'")
        m.command("set xrange [0:\(limit)]")
        m.command("set yrange [0:\(limit)]")
        m.command("set arrow from 0,0 to \(limit),\(limit) nohead dt 2 lc rgb '#888888'")
        m.command("set label 'measured = expected' at \(limit * 0.62),\(limit * 0.57) textcolor rgb '#888888'")
        m.command("plot " + mplot.joined(separator: ", \\\n     "))
        return [p, m]
    }
}
