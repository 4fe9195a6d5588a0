import BenchSupport
import Foundation
import MemPressureCachePolicies
import MemPressureLifecycle
import MemPressureMonitor
import MemPressureSystem

struct TraceInfo: Codable, Sendable {
    var seed: UInt64
    var name: String
    var file: String?
    var model: String?
    var alpha: Double?
    var apps: [String]
    var switches: Int
    /// Usage sessions (a day trace), nil otherwise.
    var sessions: Int?
    var switchCounts: [Int]
    var timed: Bool
    /// The trace's length in its own (scaled) seconds, nil when untimed.
    var seconds: Double?

    init(seed: UInt64, trace: SwitchTrace, file: String?, model: String?, alpha: Double) {
        self.seed = seed
        name = trace.name
        self.file = file
        self.model = model
        self.alpha = file == nil ? alpha : nil
        apps = trace.apps
        switches = trace.switches.count
        sessions = trace.sessions.map { ($0.last ?? -1) + 1 }
        switchCounts = trace.switchCounts
        timed = trace.times != nil
        seconds = trace.times?.last
    }
}

/// One measure of a run, as the report tabulates it.
struct Metric: Sendable {
    var name: String
    var unit: String
    var decimals: Int
    /// Whether more is better (cached apps kept); otherwise less is.
    var higherIsBetter = false
    var value: @Sendable (RunResult) -> Double?

    static let all: [Metric] = [
        Metric(name: "switch time, mean", unit: "ms", decimals: 0) { $0.timeoutMeanMs },
        Metric(name: "switch time, p50", unit: "ms", decimals: 0) { $0.timeoutP50Ms },
        Metric(name: "switch time, p95", unit: "ms", decimals: 0) { $0.timeoutP95Ms },
        Metric(name: "switch time, p99", unit: "ms", decimals: 0) { $0.timeoutP99Ms },
        Metric(name: "failed switches", unit: "", decimals: 1) { Double($0.failedSwitches) },
        Metric(name: "relaunches", unit: "", decimals: 1) { Double($0.relaunches) },
        Metric(name: "resume share", unit: "%", decimals: 1, higherIsBetter: true) { $0.resumeShare * 100 },
        Metric(name: "cached apps kept", unit: "", decimals: 2, higherIsBetter: true) { $0.backgroundApps },
        Metric(name: "kills per minute", unit: "", decimals: 1) { $0.killsPerMinute },
        Metric(name: "kernel OOM kills", unit: "", decimals: 1) { Double($0.kernelOOMKills) },
        Metric(name: "refaults per minute", unit: "", decimals: 0) { r in r.refaults.map { Double($0) / max(1e-9, r.replaySeconds / 60) } },
        Metric(name: "PSI some stall", unit: "ms/min", decimals: 0) { $0.psiSomeMsPerMinute },
        Metric(name: "PSI full stall", unit: "ms/min", decimals: 0) { $0.psiFullMsPerMinute },
        Metric(name: "pages swapped in", unit: "", decimals: 0) { r in r.pagesSwappedIn.map { Double($0) } },
        Metric(name: "zram memory, peak", unit: "MiB", decimals: 0) { $0.zramPeakBytes.map { Double($0) / 1048576 } },
        Metric(name: "app CPU", unit: "s", decimals: 1) { $0.appCPUSeconds },
        Metric(name: "benchmark process CPU", unit: "s", decimals: 1) { $0.benchCPUSeconds },
        Metric(name: "state lost", unit: "bytes", decimals: 0) { Double($0.bytesLost) },
    ]
    static func named(_ name: String) -> Metric { all.first { $0.name == name }! }
}

/// A configuration of the device: swap, trim, budget. Its runs are one per policy and seed.
struct Group: Hashable, Sendable {
    var swap: String
    var trim: Double
    var budgetApps: Double
}

struct SwitchingReport: RenderedReport {
    /// 3: cached apps counted from the supervisor's transitions (`cachedApps`).
    static let currentFormat = 3
    var formatVersion = currentFormat
    var machine: Machine
    var command: String
    var quick: Bool
    var peers: PeerVersions
    var traces: [TraceInfo]
    var timeScale: Double?
    var maxGap: Double
    var appScale: Double
    var restore: String
    var decodeCost: Int
    /// The relaunch ÷ resume ratio at trim 0 the apps' frames were sized for (`--relaunch-ratio`;
    /// 0 or nil in reports written before it existed: no frame).
    var relaunchRatio: Double?
    var profiles: [AppProfile]
    /// Each app's footprint (the largest sampled while active), and their mean: a budget of
    /// "room for k apps" is k times the mean.
    var footprints: [UInt64]
    var meanAppFootprintBytes: UInt64
    var budgets: [Double]
    var trims: [Double]
    var policies: [String]
    var swaps: [String]
    var seeds: [UInt64]
    var calibrationRounds: Int
    var calibration: [Calibration]
    var runs: [RunResult]
    var totalSeconds: Double
    var notes: [String]

    static let rivals = ["kernel", "kernel-blind", "lmkd-emu", "earlyoom", "nohang", "earlyoom-matched", "nohang-matched"]

    /// Every run without its switches and deaths (the figures stay).
    mutating func dropRaw() {
        for i in runs.indices {
            runs[i].records = nil
            runs[i].deaths = nil
        }
    }
    func isRival(_ p: String) -> Bool { Self.rivals.contains(p) }
    func holds(_ p: String) -> Bool { JetsamVariant(p)?.holdsKernelOOMKiller ?? false }

    /// The paired tests of every jetsam configuration against the best rival in group `g`, on
    /// the metrics the findings name, Holm-adjusted together: (policy, metric name) → p.
    func adjustedPValues(_ g: Group, metrics: [Metric]) -> [String: Double] {
        guard let best = bestRival(g) else { return [:] }
        var keys: [String] = [], ps: [Double] = []
        for p in policies where !isRival(p) && !runs(g, p).isEmpty {
            for m in metrics {
                guard let pv = pValue(g, p, best, m) else { continue }
                keys.append("\(p)|\(m.name)")
                ps.append(pv)
            }
        }
        return Dictionary(uniqueKeysWithValues: zip(keys, PairedTest.holm(ps)))
    }

    func mibText(_ b: UInt64) -> String { ByteFormat.fixed(Double(b) / 1048576, 0) }
    func fixed(_ x: Double, _ d: Int) -> String { x.isFinite ? ByteFormat.fixed(x, d) : "–" }
    func room(_ k: Double) -> String { ByteFormat.fixed(k, k == k.rounded() ? 0 : 1) }
    func trimText(_ t: Double) -> String { ByteFormat.fixed(t, t == t.rounded() ? 0 : 1) }

    func describe(_ p: String) -> String {
        switch p {
        case "kernel": "kernel (oom_score_adj by state)"
        case "kernel-blind": "kernel, blind (every app at adj 0)"
        case "lmkd-emu": "lmkd emulation"
        case "earlyoom": "earlyoom"
        case "nohang": "nohang"
        case "earlyoom-matched": "earlyoom at jetsam's thresholds"
        case "nohang-matched": "nohang at jetsam's thresholds"
        default:
            {
                let parts = p.split(separator: "-")
                var text = parts.first == "default" ? "jetsam's defaults" : "jetsam \(parts.first ?? "")"
                for suffix in parts.dropFirst() {
                    switch suffix {
                    case "hold": text += ", kernel's killer held"
                    case "freeze": text += ", freeze-dry first"
                    case "lean": text += ", lean (to 5% free)"
                    default: text += "-\(suffix)"
                    }
                }
                return text
            }()
        }
    }

    var groups: [Group] {
        var out: [Group] = []
        for swap in swaps {
            for trim in trims {
                for k in budgets { out.append(Group(swap: swap, trim: trim, budgetApps: k)) }
            }
        }
        return out.filter { g in runs.contains { $0.swap == g.swap && $0.trim == g.trim && $0.budgetApps == g.budgetApps } }
    }

    func groupText(_ g: Group) -> String {
        "\(g.swap == "none" ? "no swap" : g.swap == "zram" ? "zram swap (lz4)" : "a swap file"), room for \(room(g.budgetApps)) apps\(trims.count > 1 ? ", trim \(trimText(g.trim))" : "")"
    }

    /// The runs of one policy in one group, ordered by seed (the pairing of the paired test).
    func runs(_ g: Group, _ policy: String) -> [RunResult] {
        runs.filter { $0.swap == g.swap && $0.trim == g.trim && $0.budgetApps == g.budgetApps && $0.policy == policy }.sorted { $0.seed < $1.seed }
    }

    func interval(_ g: Group, _ policy: String, _ m: Metric) -> MeanInterval? {
        let values = runs(g, policy).compactMap(m.value)
        return values.isEmpty ? nil : MeanInterval(values)
    }

    func intervalText(_ i: MeanInterval?, _ m: Metric) -> String {
        guard let i else { return "–" }
        return i.runs < 2 ? fixed(i.mean, m.decimals) : "\(fixed(i.mean, m.decimals)) [\(fixed(i.low, m.decimals)), \(fixed(i.high, m.decimals))]"
    }

    /// The rival with the lowest mean switch time (failed switches as timeouts) in the group.
    func bestRival(_ g: Group) -> String? {
        let m = Metric.named("switch time, mean")
        return policies.filter(isRival).compactMap { p in interval(g, p, m).map { (p, $0.mean) } }.min { $0.1 < $1.1 }?.0
    }

    /// The paired test of `policy` against `other` on metric `m` in group `g` (pairs by seed).
    func pValue(_ g: Group, _ policy: String, _ other: String, _ m: Metric) -> Double? {
        let a = runs(g, policy), b = runs(g, other)
        var xs: [Double] = [], ys: [Double] = []
        for r in a {
            guard let o = b.first(where: { $0.seed == r.seed }), let x = m.value(r), let y = m.value(o) else { continue }
            xs.append(x)
            ys.append(y)
        }
        return PairedTest.signFlipP(xs, ys)
    }

    func pText(_ p: Double?) -> String {
        guard let p else { return "–" }
        return p < 0.001 ? "< 0.001" : ByteFormat.fixed(p, 3)
    }

    func minutes(_ s: Double) -> String {
        s >= 90 ? "\(Int((s / 60).rounded())) minutes" : "\(Int(s.rounded())) seconds"
    }

    func markdown() -> String {
        var md = "# App switching over a day of use: jetsam against rivals that know the apps' states\n\n"
        if quick { md += "**A quick smoke run** (`--quick`): few seeds and sessions; not the evaluation.\n\n" }
        md += "Regenerate: `\(command)` (measures; \(minutes(totalSeconds)) here) or `make reports` (re-renders this page and its plot from switching.json).\n\n"
        md += "Machine: \(machine.kernel), \(machine.cpus) CPUs, \(ByteFormat.fixed(Double(machine.memoryBytes) / 1073741824, 1)) GiB memory, "
        md += machine.swapBytes == 0 ? "no swap of its own" : "\(ByteFormat.fixed(Double(machine.swapBytes) / 1073741824, 1)) GiB swap"
        md += "; load average \(ByteFormat.fixed(machine.loadBefore, 1)) before and \(ByteFormat.fixed(machine.loadAfter, 1)) after (2 shared CPUs: every policy's runs are interleaved, seed by seed, in a seeded order, so drift falls on all alike).\n\n"

        md += "## Findings\n\n"
        for f in findings() { md += "- \(f)\n" }
        md += "\n"
        md += "![mean switch time against cached apps kept, per policy and configuration, with 95% intervals](switching.svg)\n\n"
        md += "One point per policy and configuration (" + groups.map(groupText).joined(separator: "; ") + "): down and to the right is better.\n\n"

        md += "## What runs\n\n"
        md += "**Apps**: \(profiles.count) model apps (`mempressure-workload`, real processes under the supervisor, each an app cgroup in the device's memory cgroup), sizes ×\(ByteFormat.fixed(appScale, 1)) of the catalogue's. "
        md += "Each holds saved state, decoded images (a purgeable cache), view backing stores (purgeable buffers), mmap'd assets (clean), a computed model and plain dirty memory; on didEnterBackground it saves its state and releases its trim level's share of the rebuildable memory; on resume it rebuilds it "
        md += restore == "eager" ? "before it reports ready.\n\n" : "after it reports ready.\n\n"
        md += "| app | footprint (active) |" + trims.map { " background at trim \(trimText($0)) | resume / relaunch at trim \(trimText($0)) | relaunch ÷ resume |" }.joined() + "\n"
        md += "|---|---:|" + trims.map { _ in "---:|---:|---:|" }.joined() + "\n"
        for (i, p) in profiles.enumerated() {
            md += "| \(p.name) | \(mibText(footprints[i])) MiB |"
            for t in trims {
                if let c = calibration.first(where: { $0.trim == t && $0.app == p.name }) {
                    md += " \(mibText(c.backgroundFootprintBytes)) MiB | \(fixed(c.resumeMedianMs, 1)) / \(fixed(c.relaunchMedianMs, 0)) ms | \(fixed(c.relaunchMedianMs / max(1e-9, c.resumeMedianMs), 1))× |"
                } else {
                    md += " | | |"
                }
            }
            md += "\n"
        }
        md += "\nFootprint is the supervisor's reading (dirty memory the app alone holds plus its swap; purgeable and clean pages are not charged). Resume and relaunch: medians of \(calibrationRounds) per app with no pressure and no swap, activate to `ready` (a relaunch restores the saved state, page cache warm; `--decode-cost \(decodeCost)`)" + ((relaunchRatio ?? 0) > 0 ? "; each app draws a frame whenever it comes to the foreground, at launch and on every resume, before ready (decoded like an image: real CPU), sized for a relaunch \(fixed(relaunchRatio ?? 0, 1))× its resume at trim 0 (`--relaunch-ratio`, from two calibrations without and with a trial frame): \(profiles.map { "\($0.name) \(fixed(Double($0.frameKB ?? 0) / 1024, 1))" }.joined(separator: ", ")) MiB" : "") + ".\n\n"
        if let t = traces.first {
            md += "**Traces**: one per seed (\(seeds.map(String.init).joined(separator: ", "))), "
            if t.model == "day" {
                md += "a day of use generated from the published statistics of the LSApp dataset (Aliannejadi et al., ACM TOIS 2021: 2.18 ± 1.46 unique apps and 5.46 ± 11.2 switches per session, median session 1:46, Zipf popularity; idle gaps between sessions lognormal with a 7.2-minute median, after Hintze et al. 2014 — `SwitchTraceGenerator.day`, pinned by a test). "
                md += "Time is scaled by \(fixed(timeScale ?? 1, 4)) and every idle gap (the screen off: the foreground app goes to the background) is cut to \(fixed(maxGap, 2)) s. "
            } else {
                md += "\(t.name). "
            }
            let sw = traces.map(\.switches)
            md += "Switches per run: \(sw.min() ?? 0) to \(sw.max() ?? 0)"
            if let s = traces.compactMap(\.sessions).min() { md += " in \(s)–\(traces.compactMap(\.sessions).max() ?? s) sessions" }
            md += ".\n\n"
        }
        md += "**A run**: a supervisor with a device budget of room for k apps (k × the mean footprint, \(mibText(meanAppFootprintBytes)) MiB), one policy, the apps launched once each (the warm-up), then the trace. "
        md += "Every switch: the foreground app to the background, the target activated — a resume if it is alive, a relaunch if it was killed — timed from the activate command to `ready`. An app killed while being activated is launched again at once, up to \(Retry.attempts) times or \(fixed(Retry.seconds, 0)) s; a switch that never brings its app up is **failed**, counted once (not per retry), and counted in the switch times as a timeout (\(fixed(Retry.seconds, 0)) s, or what it took). After every relaunch every byte of the app's state is checked.\n\n"
        md += "**Policies**: every app's processes carry the `oom_score_adj` of its state (the supervisor's `OOMScoreBands`: active 0, inactive 100, background-running 300, suspended 500, and 700 and 900 at or above the high-memory line), so every rival knows what jetsam knows, except the blind kernel run, which shows what that knowledge is worth.\n\n"
        md += "| policy | what decides | the kernel's OOM killer |\n|---|---|---|\n"
        for p in policies {
            switch p {
            case "kernel": md += "| \(describe(p)) | nothing in user space: at the device's limit the memcg OOM killer takes the largest badness (size + adj × budget / 1000) | acts |\n"
            case "kernel-blind": md += "| \(describe(p)) | the same, every app at adj 0 (the rivals of the earlier report) | acts |\n"
            case "lmkd-emu": md += "| \(describe(p)) | `LmkdEmulation`: lmkd's PSI-mode decision (\(peers.lmkd)) on this device's memory | acts |\n"
            case "earlyoom", "earlyoom-matched":
                md += "| \(describe(p)) | earlyoom \(peers.earlyoom ?? "") (Debian's) in the run's own PID namespace, on a /proc/meminfo that shows the device: SIGTERM to the highest oom_score at \(p == "earlyoom" ? "10" : "20")% available, SIGKILL at 5% | acts |\n"
            case "nohang", "nohang-matched":
                md += "| \(describe(p)) | nohang \(peers.nohang ?? "") (Debian's, its packaged configuration\(p == "nohang" ? "" : " with jetsam's thresholds")) in the run's own PID namespace, on a /proc/meminfo that shows the device: SIGTERM to the highest badness (oom_score) at \(p == "nohang" ? "5" : "20")% available, SIGKILL at \(p == "nohang" ? "2" : "5")% | acts |\n"
            default:
                guard let c = JetsamVariant(p)?.configuration else { continue }
                let freeze = c.freezeDryBelowBytes == .max ? "freeze-dry of every suspended app while there is swap, then "
                    : c.freezeDryBelowBytes > 0 ? "freeze-dry of suspended apps under \(c.freezeDryBelowBytes >> 20) MiB while there is swap, then " : ""
                let target = c.targetAvailableShare == 0.25 ? "a quarter" : "\(fixed(c.targetAvailableShare * 100, 0))%"
                let rank = c.rankingPolicy
                var order = ""
                if c.policy == .ios, case .shareOfBudget(let share) = rank.highMemory {
                    order = " (high memory from \(fixed(share * 100, 1))% of the budget; \(rank.withinBand == .leastRecentFirst ? "least recently used" : "largest") first within a band)"
                }
                md += "| \(describe(p)) | jetsam: warnings, then \(freeze)kills by the \(c.policy.rawValue) policy\(order) until \(target) of the budget is free | \(c.holdKernelOOMKiller ? "held (`oom_kill_disable`): a task at the limit waits for jetsam" : "acts (a kernel kill under jetsam is counted)") |\n"
            }
        }
        md += "\nPeers: \(peers.kernel); lmkd emulation after \(peers.lmkd)\(peers.earlyoom.map { "; earlyoom \($0)" } ?? "")\(peers.nohang.map { "; nohang \($0)" } ?? ""). earlyoom and nohang run each in a PID namespace of the run's own (`unshare --pid --fork --mount-proc`) holding only the supervisor (the namespace's first process, which neither takes), its apps, its guard and the peer itself, where /proc/meminfo is the device's (MemTotal the budget, MemAvailable the budget less the device's working set, rewritten every 5 ms); their kills are the deaths by SIGTERM or SIGKILL the supervisor did not send, less the kernel's.\n\n"
        md += "**Statistics**: each cell is the mean over seeds with its 95% percentile-bootstrap interval (10,000 resamples, seeded) in brackets; with 10 seeds a percentile bootstrap covers nearer 90% than 95%, so read the brackets as a little narrow. Against the best rival (the rival with the lowest mean switch time in that configuration — chosen on the same runs, which favours the rival), p is the two-sided paired sign-flip test over seeds (exact for up to 16 seeds; with fewer than 6 seeds nothing can reach 0.05); the findings against the best rival use these p-values Holm-adjusted over every jetsam configuration and the four metrics they name; the tables, the goal and the comparison with jetsam as it was show them unadjusted.\n\n"

        for g in groups {
            md += "## \(groupText(g).prefix(1).uppercased() + groupText(g).dropFirst())\n\n"
            let present = policies.filter { !runs(g, $0).isEmpty }
            md += "| metric |" + present.map { " \(describe($0)) |" }.joined() + "\n|---|" + present.map { _ in "---:|" }.joined() + "\n"
            for m in Metric.all {
                let cells = present.map { intervalText(interval(g, $0, m), m) }
                guard cells.contains(where: { $0 != "–" }) else { continue }
                md += "| \(m.name)\(m.unit.isEmpty ? "" : " (\(m.unit))") |" + cells.map { " \($0) |" }.joined() + "\n"
            }
            md += "\nRuns per policy: " + present.map { "\(describe($0)) \(runs(g, $0).count)" }.joined(separator: ", ") + ".\n\n"
            if let best = bestRival(g) {
                md += "Against the best rival here, **\(describe(best))** (difference of means, policy − rival; p):\n\n"
                let ms = ["switch time, mean", "switch time, p95", "failed switches", "relaunches", "cached apps kept", "kills per minute"].map(Metric.named)
                md += "| policy |" + ms.map { " \($0.name) |" }.joined() + "\n|---|" + ms.map { _ in "---:|" }.joined() + "\n"
                for p in present where p != best {
                    md += "| \(describe(p)) |"
                    for m in ms {
                        guard let a = interval(g, p, m), let b = interval(g, best, m) else {
                            md += " – |"
                            continue
                        }
                        let d = a.mean - b.mean
                        md += " \(d >= 0 ? "+" : "")\(fixed(d, m.decimals)) (p \(pText(pValue(g, p, best, m)))) |"
                    }
                    md += "\n"
                }
                md += "\n"
            }
            if g.swap == "zram", let peak = present.flatMap({ runs(g, $0) }).compactMap(\.zramPeakBytes).max() {
                md += "zram's compressed pages are charged to no memory cgroup: the device used up to \(mibText(peak)) MiB of memory beyond its budget for them (the row \"zram memory, peak\"), which a phone's budget would include.\n\n"
            }
            let held = present.flatMap { runs(g, $0) }.flatMap(\.heldStallSeconds)
            if !held.isEmpty {
                let s = held.sorted()
                md += "Held at the limit (the hold variants): \(held.count) allocations waited for jetsam's kill; the wait from the kernel's event to the kill: median \(fixed(s[s.count / 2] * 1000, 0)) ms, max \(fixed((s.last ?? 0) * 1000, 0)) ms.\n\n"
            }
        }

        md += "## Every run\n\n"
        md += "| configuration | seed | policy | switches | resumes | relaunches | failed | kills | kernel OOM | mean / p95 (ms) | cached apps | refaults | swapped in | state lost | load |\n|---|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n"
        for g in groups {
            for r in runs.filter({ $0.swap == g.swap && $0.trim == g.trim && $0.budgetApps == g.budgetApps }).sorted(by: { ($0.seed, $0.policy) < ($1.seed, $1.policy) }) {
                md += "| \(groupText(g)) | \(r.seed) | \(describe(r.policy)) | \(r.switches) | \(r.resumes) | \(r.relaunches) | \(r.failedSwitches) | \(r.kills) | \(r.kernelOOMKills) | \(fixed(r.timeoutMeanMs, 0)) / \(fixed(r.timeoutP95Ms, 0)) | \(fixed(r.backgroundApps, 2)) | \(r.refaults.map(String.init) ?? "–") | \(r.pagesSwappedIn.map(String.init) ?? "–") | \(r.bytesLost) | \(fixed(r.loadAverage, 1)) |\n"
            }
        }
        md += "\n"
        let noted = runs.filter { !$0.notes.isEmpty }
        if !notes.isEmpty || !noted.isEmpty {
            md += "## Notes\n\n"
            for n in notes { md += "- \(n)\n" }
            for r in noted { md += "- seed \(r.seed), \(r.swap), room for \(room(r.budgetApps)), \(describe(r.policy)): " + r.notes.joined(separator: "; ") + "\n" }
            md += "\n"
        }
        return md
    }

    /// What the runs say, computed from them (so that `--render-only` writes the same), whichever
    /// way it falls.
    func findings() -> [String] {
        var out: [String] = []
        let mean = Metric.named("switch time, mean"), p95 = Metric.named("switch time, p95"), cached = Metric.named("cached apps kept")
        let failed = Metric.named("failed switches")
        for g in groups {
            let present = policies.filter { !runs(g, $0).isEmpty }
            let ranked = present.compactMap { p in interval(g, p, mean).map { (p, $0) } }.sorted { $0.1.mean < $1.1.mean }
            guard let first = ranked.first else { continue }
            var s = "**\(groupText(g))**: lowest mean switch time \(describe(first.0)), \(fixed(first.1.mean, 0)) ms [\(fixed(first.1.low, 0)), \(fixed(first.1.high, 0))]; "
            s += "ranking " + ranked.map { "\(describe($0.0)) \(fixed($0.1.mean, 0))" }.joined(separator: " < ") + " ms. "
            let seedsHere = runs(g, first.0).count
            if let best = bestRival(g), PairedTest.smallestP(pairs: seedsHere) >= 0.05 {
                s += "Against the best rival (\(describe(best))): too few seeds to test (\(seedsHere): the smallest p the paired test can give is \(pText(PairedTest.smallestP(pairs: seedsHere)))). "
            } else if let best = bestRival(g) {
                let ours = present.filter { !isRival($0) }
                let adjusted = adjustedPValues(g, metrics: [mean, p95, failed, cached])
                // Where jetsam loses: any of its configurations significantly worse than the best rival.
                var losses: [String] = [], wins: [String] = [], ties: [String] = []
                for p in ours {
                    for m in [mean, p95, failed, cached] {
                        guard let a = interval(g, p, m), let b = interval(g, best, m), let pv = adjusted["\(p)|\(m.name)"] else { continue }
                        let better = m.higherIsBetter ? a.mean > b.mean : a.mean < b.mean
                        let text = "\(describe(p)) \(m.name) \(fixed(a.mean, m.decimals)) against \(fixed(b.mean, m.decimals)) (p \(pText(pv)))"
                        if pv < 0.05 { if better { wins.append(text) } else { losses.append(text) } } else if m.name == mean.name { ties.append(text) }
                    }
                }
                s += "Against the best rival (\(describe(best))): "
                if !losses.isEmpty { s += "**jetsam loses** on " + losses.joined(separator: "; ") + ". " }
                if !wins.isEmpty { s += "it wins on " + wins.joined(separator: "; ") + ". " }
                if !ties.isEmpty { s += "No significant difference in mean switch time for " + ties.joined(separator: "; ") + ". " }
                if losses.isEmpty && wins.isEmpty && ties.isEmpty { s += "nothing to test. " }
            }
            if let informed = interval(g, "kernel", mean), let blind = interval(g, "kernel-blind", mean) {
                s += "What the states are worth to the kernel alone: \(fixed(informed.mean, 0)) ms with oom_score_adj against \(fixed(blind.mean, 0)) blind (p \(pText(pValue(g, "kernel", "kernel-blind", mean))))"
                if let fi = interval(g, "kernel", failed), let fb = interval(g, "kernel-blind", failed) { s += ", \(fixed(fi.mean, 1)) against \(fixed(fb.mean, 1)) failed switches per run" }
                s += ". "
            }
            out.append(s)
        }
        out += goalFindings()
        // Kernel kills under jetsam, now that the killer is not held.
        let free = runs.filter { !isRival($0.policy) && !holds($0.policy) }
        if !free.isEmpty {
            let kills = free.reduce(UInt64(0)) { $0 + $1.kernelOOMKills }
            let withKills = free.filter { $0.kernelOOMKills > 0 }.count
            out.append(kills == 0
                ? "**No kernel OOM kill under jetsam with the kernel's killer free to act**: \(free.count) runs; jetsam acted before the limit every time."
                : "**The kernel's OOM killer acted under jetsam** (not held): \(kills) kills in \(withKills) of \(free.count) runs — allocations that outran jetsam; with the apps' oom_score_adj the kernel took by band (the deaths are in switching.json with `--raw`).")
        }
        let hold = runs.filter { holds($0.policy) }
        if !hold.isEmpty {
            let stalls = hold.flatMap(\.heldStallSeconds).sorted()
            out.append("**Holding the kernel's killer** (\(hold.count) runs): \(hold.reduce(UInt64(0)) { $0 + $1.kernelOOMKills }) kernel kills, \(stalls.count) allocations stalled at the limit waiting for jetsam" + (stalls.isEmpty ? "." : ", median \(fixed(stalls[stalls.count / 2] * 1000, 0)) ms, longest \(fixed((stalls.last ?? 0) * 1000, 0)) ms."))
        }
        // The anchor: cold ≈ 3.1 × hot (PMR).
        let ratios = calibration.filter { $0.resumeMedianMs > 0 }.map { $0.relaunchMedianMs / $0.resumeMedianMs }
        if !ratios.isEmpty {
            let s = ratios.sorted()
            out.append("**Relaunch against resume** with no pressure: \(fixed(s[s.count / 2], 1))× (median over apps and trims; \(fixed(s.first ?? 0, 1))–\(fixed(s.last ?? 0, 1))×), against PMR's (ATC '25) cold ≈ 3.1× hot on phones" + ((relaunchRatio ?? 0) > 0 ? ": the frame each app draws on launch and resume was sized for \(fixed(relaunchRatio ?? 0, 1))× (`--relaunch-ratio`)." : ": a resume here costs the model app's rebuild and callbacks only, no frame drawn (`--relaunch-ratio 0`), so every relaunch weighs more than on a phone."))
        }
        let lost = runs.filter { $0.bytesLost > 0 }
        let checked = runs.reduce(0) { $0 + $1.relaunches }
        if lost.isEmpty {
            out.append("**No state lost** in any run: every relaunch restored every byte (\(checked) relaunches checked).")
        } else {
            // Per policy: the runs that lost state, the bytes, and in which state the apps died.
            var parts: [String] = []
            for p in policies {
                let mine = lost.filter { $0.policy == p }
                guard !mine.isEmpty else { continue }
                let losses = mine.flatMap(\.losses)
                let whileSaving = losses.filter { $0.death.hasSuffix("while backgroundRunning") }.count
                parts.append("\(describe(p)) in \(mine.count) of \(runs.filter { $0.policy == p }.count) runs (\(mine.reduce(0) { $0 + $1.bytesLost }) bytes, \(losses.count) apps; \(whileSaving) of them killed while background-running)")
            }
            let clean = policies.filter { p in !isRival(p) && !runs.filter { $0.policy == p }.isEmpty && !lost.contains { $0.policy == p } }
            var s = "**State lost** by " + parts.joined(separator: "; ") + " (\(checked) relaunches checked): an app killed while background-running is, here, one killed inside didEnterBackground as it saves its state (the model apps run no background task) — its last activation is lost."
            let jetsamLost = lost.contains { !isRival($0.policy) }
            if !clean.isEmpty && !jetsamLost { s += " None by " + clean.map(describe).joined(separator: ", ") + ": jetsam does not take an app inside didEnterBackground (the supervisor tells it); the others cannot know." }
            out.append(s)
        }
        return out
    }

    /// Why jetsam's defaults keep fewer apps than `rival`, from the runs: the memory each kept
    /// in the background (cached apps × their mean footprint, both weighted by time), the size
    /// of the apps kept, and what the rival's way cost (kernel OOM kills, state lost).
    func shortfallReasons(_ g: Group, rival: String) -> String? {
        let mine = runs(g, "default"), theirs = runs(g, rival)
        guard !mine.isEmpty, !theirs.isEmpty else { return nil }
        func avg(_ rs: [RunResult], _ f: (RunResult) -> Double) -> Double { rs.map(f).reduce(0, +) / Double(rs.count) }
        let kept = { (r: RunResult) in r.backgroundApps * Double(r.backgroundFootprintBytes) / 1048576 }
        let (keptMine, keptTheirs) = (avg(mine, kept), avg(theirs, kept))
        let (sizeMine, sizeTheirs) = (avg(mine) { Double($0.backgroundFootprintBytes) / 1048576 }, avg(theirs) { Double($0.backgroundFootprintBytes) / 1048576 })
        let budget = avg(mine) { Double($0.budgetBytes) / 1048576 }
        var parts: [String] = []
        parts.append("jetsam kept \(fixed(keptMine, 0)) MiB of apps in the background against \(describe(rival))'s \(fixed(keptTheirs, 0)) MiB (\(fixed(abs(keptTheirs - keptMine) / budget * 100, 1))% of the \(fixed(budget, 0)) MiB budget \(keptMine <= keptTheirs ? "less" : "more"))")
        // Per-app size: the mean footprint of the apps each kept, weighted by time (the samples'
        // ratio, which a late sample does not bias); said, not tested.
        parts.append("its cached apps held \(fixed(sizeMine, 1)) MiB each against \(fixed(sizeTheirs, 1)) (means, not tested)")
        let kernelMine = avg(mine) { Double($0.kernelOOMKills) }, kernelTheirs = avg(theirs) { Double($0.kernelOOMKills) }
        let lostTheirs = theirs.filter { $0.bytesLost > 0 }.count
        var cost = "kernel OOM kills \(fixed(kernelTheirs, 1)) a run against jetsam's \(fixed(kernelMine, 1))"
        if lostTheirs > 0 { cost += ", state lost in \(lostTheirs) of \(theirs.count) runs against jetsam's \(mine.filter { $0.bytesLost > 0 }.count)" }
        let target = JetsamVariant("default")?.configuration.targetAvailableShare ?? 0
        if mine.allSatisfy({ $0.kills == 0 && $0.kernelOOMKills == 0 }) {
            return "Why: no app was killed under jetsam in these runs (nor by the kernel): the apps it did not keep are apps out of the background for longer (the app being switched to, the foreground app in an idle gap), not apps it took; " + parts.joined(separator: "; ") + "."
        }
        guard keptMine < keptTheirs else { return "Why: " + parts.joined(separator: "; ") + "." }
        // The pressure configuration the default policy's runs give their supervisors
        // (`supervisorConfiguration`; the supervisor's default when it sets none): its
        // working-set line is their critical.
        let line: String
        do {
            let runs = try supervisorConfiguration(build: "", budgetBytes: 1 << 30, policy: "default").0
            line = "\(fixed((runs.pressure ?? PressureConfiguration()).usageCriticalFraction * 100, 0))% of the budget, the usage source's"
        } catch {
            line = "not known: \(error)"
        }
        return "Why: " + parts.joined(separator: "; ") + ". Jetsam acts when the working set reaches its critical line (\(line)) and frees until \(fixed(target * 100, 0))% is free, a headroom the rival leaves to the kernel's reclaim and OOM killer; what that cost the rival: " + cost + "."
    }

    /// The goal (issue 22), per configuration, for jetsam's defaults (`default`): no failed
    /// switch, no byte lost, at least the resume share and the cached apps of the best rival,
    /// and a p95 switch time no worse — "at least" and "no worse" read as: not significantly
    /// below (above) it in the paired test over seeds (unadjusted, p < 0.05), the means said.
    func goalFindings() -> [String] {
        guard policies.contains("default") else { return [] }
        let failed = Metric.named("failed switches"), lost = Metric.named("state lost")
        let share = Metric.named("resume share"), cached = Metric.named("cached apps kept"), p95 = Metric.named("switch time, p95")
        var out: [String] = []
        for g in groups where !runs(g, "default").isEmpty {
            guard let best = bestRival(g) else { continue }
            var met: [String] = [], short: [String] = [], untested: [String] = []
            for m in [failed, lost] {
                let worst = runs(g, "default").compactMap(m.value).max() ?? 0
                if worst == 0 { met.append("0 \(m.name) in every run") } else { short.append("\(m.name) up to \(fixed(worst, m.decimals)) in a run") }
            }
            for m in [share, cached, p95] {
                guard let a = interval(g, "default", m), let b = interval(g, best, m) else { continue }
                let seeds = runs(g, "default").count
                guard let pv = pValue(g, "default", best, m), PairedTest.smallestP(pairs: seeds) < 0.05 else {
                    untested.append("\(m.name) \(fixed(a.mean, m.decimals)) against \(fixed(b.mean, m.decimals))")
                    continue
                }
                let worse = m.higherIsBetter ? a.mean < b.mean : a.mean > b.mean
                let text = "\(m.name) \(fixed(a.mean, m.decimals)) against \(fixed(b.mean, m.decimals))\(m.unit.isEmpty ? "" : " " + m.unit) (p \(pText(pv)))"
                if worse && pv < 0.05 {
                    let gap = m.higherIsBetter ? b.mean - a.mean : a.mean - b.mean
                    short.append(text + ": short by \(fixed(gap, m.decimals))\(m.unit.isEmpty ? "" : " " + m.unit)")
                } else {
                    met.append(text + (worse ? ", worse but not significantly" : ""))
                }
            }
            var s = "**The goal, \(groupText(g))** (jetsam's defaults against the best rival, \(describe(best)); p unadjusted): "
            if !short.isEmpty {
                s += "**not met** on " + short.joined(separator: "; ") + (met.isEmpty ? "." : "; met: " + met.joined(separator: "; ") + ".")
            } else if !untested.isEmpty {
                s += "**not tested** (too few seeds for the paired test) on " + untested.joined(separator: "; ") + (met.isEmpty ? "." : "; met: " + met.joined(separator: "; ") + ".")
            } else {
                s += "**met** — " + met.joined(separator: "; ") + "."
            }
            // Why, for the shortfalls the explanation is about: apps kept, and resumes.
            if short.contains(where: { $0.hasPrefix(cached.name) || $0.hasPrefix(share.name) }), let why = shortfallReasons(g, rival: best) { s += " " + why }
            out.append(s)
        }
        // The change in the same runs: jetsam's defaults against jetsam as this evaluation began
        // with every suspended app freeze-dried (`ios-freeze`, the defaults before this build's).
        if policies.contains("ios-freeze") {
            let mean = Metric.named("switch time, mean")
            var parts: [String] = []
            for g in groups where !runs(g, "default").isEmpty && !runs(g, "ios-freeze").isEmpty {
                let cells = [mean, p95, share, cached].compactMap { m -> String? in
                    guard let a = interval(g, "default", m), let b = interval(g, "ios-freeze", m) else { return nil }
                    return "\(m.name) \(fixed(a.mean, m.decimals)) against \(fixed(b.mean, m.decimals)) (p \(pText(pValue(g, "default", "ios-freeze", m))))"
                }
                parts.append("\(groupText(g)): " + cells.joined(separator: ", "))
            }
            if !parts.isEmpty { out.append("**Jetsam's defaults against jetsam as it was** (\(describe("ios-freeze")), in the same runs; p unadjusted): " + parts.joined(separator: "; ") + ".") }
        }
        return out
    }

    static let colors = ["#d04a4a", "#4a7bd0", "#3a9a4a", "#9a6a2a", "#8a4ab0", "#2a9a9a", "#555555", "#b0a030", "#e07cc0", "#000000"]

    func plots() -> [Plot] {
        var p = Plot(name: "switching", title: "Mean switch time (failed switches as timeouts) against cached apps kept: mean over seeds with 95% intervals", width: 980, height: 560)
        let mean = Metric.named("switch time, mean"), cached = Metric.named("cached apps kept")
        var plot: [String] = []
        for (i, policy) in policies.enumerated() {
            var rows: [[PlotValue]] = []
            for (j, g) in groups.enumerated() {
                guard let y = interval(g, policy, mean), let x = interval(g, policy, cached) else { continue }
                rows.append([.number(x.mean), .number(y.mean), .number(x.low), .number(x.high), .number(y.low), .number(y.high), .int(j)])
            }
            guard !rows.isEmpty else { continue }
            p.data("p\(i)", columns: ["cached apps", "mean ms", "x low", "x high", "y low", "y high", "configuration"], rows: rows)
            plot.append("$p\(i) using 1:2:3:4:5:6 with xyerrorbars pt 7 ps 1 lw 1.5 lc rgb '\(Self.colors[i % Self.colors.count])' title \(Plot.quoted(describe(policy)))")
        }
        p.command("set key outside right top vertical")
        p.command("set xlabel 'cached apps kept (time-weighted mean number of apps alive in the background)'")
        p.command("set ylabel 'mean switch time (ms)'")
        p.command("set yrange [0:*]")
        if groups.count > 1 {
            for (j, g) in groups.enumerated() { p.command("# configuration \(j): \(groupText(g))") }
        }
        p.command("plot " + (plot.isEmpty ? "0 notitle" : plot.joined(separator: ", \\\n     ")))
        return [p]
    }
}
