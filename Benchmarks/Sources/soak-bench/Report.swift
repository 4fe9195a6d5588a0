// The report: every sample of every configuration in Reports/soak.json; Reports/soak.md renders
// them (the verdict, the bounds and where they are documented, the memory judgement and its
// tolerance, a table of the samples, time per cycle, what was left behind) and soak.{gp,svg}
// plots RSS and records against cycles. The judgement is made from the JSON, so `--render-only`
// judges as the run did.

import BenchSupport
import MemPressureSystem

/// The least-squares line through `points` (x, y): its slope and the residuals' standard
/// deviation; nil with fewer than 3 points or one x.
func fit(_ points: [(x: Double, y: Double)]) -> (slope: Double, intercept: Double, residualSD: Double)? {
    guard points.count >= 3 else { return nil }
    let n = Double(points.count)
    let mx = points.reduce(0) { $0 + $1.x } / n
    let my = points.reduce(0) { $0 + $1.y } / n
    let sxx = points.reduce(0) { $0 + ($1.x - mx) * ($1.x - mx) }
    guard sxx > 0 else { return nil }
    let slope = points.reduce(0) { $0 + ($1.x - mx) * ($1.y - my) } / sxx
    let intercept = my - slope * mx
    let ss = points.reduce(0) { acc, p in
        let r = p.y - (intercept + slope * p.x)
        return acc + r * r
    }
    return (slope, intercept, (ss / max(1, n - 2)).squareRoot())
}

/// Whether the daemon's memory stayed flat once its bounds were reached, and by how much it grew.
struct MemoryJudgement: Codable, Sendable {
    /// The first sample at which the records reached their bound (within the one just forgotten),
    /// and the log its limit; nil if never.
    var appsBoundReachedAt: Int?
    var logBoundReachedAt: Int?
    /// The last third of the run: the samples from this cycle on.
    var judgedFrom: Int
    var judgedSamples: Int
    /// Least-squares slopes over the last third, bytes per 1,000 cycles.
    var anonPer1000: Double
    /// The RssAnon slope over the middle third, bytes per 1,000 cycles (nil with too few samples):
    /// beside the last third's, whether a slope that remains is slowing down.
    var anonPer1000MiddleThird: Double?
    var residentPer1000: Double
    /// What the RssAnon slope adds over the last third.
    var anonGrowthBytes: Double
    /// VmHWM at the end minus VmHWM at the start of the last third (the peak can only rise).
    var peakGrowthBytes: Int64
    /// The allocator's noise, measured in the same run: the standard deviation of RssAnon around
    /// its line over the last third.
    var noiseBytes: Double
    /// The most the last third may grow and still be flat: max(`floorBytes`, 3 × noise).
    var toleranceBytes: Double
    /// Both bounds were reached before the last third: the memory must be flat.
    var boundsReached: Bool
    var flat: Bool
    /// Without the log bound reached: what one more event costs (slope of RssAnon against the
    /// log's events over the samples where the records were at their bound), and the RssAnon
    /// this projects at the log limit.
    var bytesPerLogEvent: Double?
    var projectedAnonAtLogLimit: Double?

    static let floorBytes = 2.0 * 1048576
}

struct ConfigurationVerdict: Codable, Sendable {
    /// How many idle pool threads the last third may hold above the earlier high.
    static let poolSlack = 2

    var leaks: [String]
    var impossible: [String]
    var leftBehind: [String]
    var memory: MemoryJudgement?
    var failures: [String] { leaks + impossible + leftBehind + (memory.map { $0.boundsReached && !$0.flat ? ["memory grows once its bounds are reached"] : [] } ?? []) }

    init(_ run: ConfigurationRun) {
        var leaks: [String] = []
        var impossible: [String] = []
        for s in [run.baseline] + run.samples {
            if !s.leaked.isEmpty {
                let details = s.leaked.map { "\($0) \(s.outside.count($0)) against \(run.baseline.outside.count($0)) at the baseline" }
                leaks.append("cycle \(s.cycle): \(details.joined(separator: ", ")), still \(ByteFormat.fixed(s.settleSeconds, 0)) s after the window")
            }
        }
        for s in [run.start, run.baseline] + run.samples {
            let o = s.outside
            let counts = [o.descriptors, o.threads, o.parkedThreads, o.runtimeEntries, o.cgroups, o.children, s.records, s.logEvents, s.logAnswerBytes]
            if counts.contains(where: { $0 < 0 }) { impossible.append("cycle \(s.cycle): a count below zero") }
            if o.parkedThreads > o.threads { impossible.append("cycle \(s.cycle): more threads parked than threads") }
            if o.residentBytes > o.peakResidentBytes { impossible.append("cycle \(s.cycle): VmRSS \(o.residentBytes) above VmHWM \(o.peakResidentBytes)") }
            if o.residentAnonBytes > o.residentBytes { impossible.append("cycle \(s.cycle): RssAnon above VmRSS") }
            if s.records > run.settings.appBound { impossible.append("cycle \(s.cycle): \(s.records) app records, above its bound of \(run.settings.appBound)") }
            if s.logEvents > run.settings.logBound { impossible.append("cycle \(s.cycle): \(s.logEvents) log events, above its limit of \(run.settings.logBound)") }
            if s.outside.children < 1 { impossible.append("cycle \(s.cycle): no guardian among its children") }
        }
        let all = [run.baseline] + run.samples
        for (a, b) in zip(all, all.dropFirst()) where b.outside.peakResidentBytes < a.outside.peakResidentBytes {
            impossible.append("cycle \(b.cycle): VmHWM went down")
        }
        // The idle pool workers are bounded by libdispatch, not brought back by the daemon: they
        // may rise by at most `poolSlack` above their earlier high in the last third of the run (the
        // pool adds a worker when its workers block, more of them on a busy machine; a leak keeps
        // making new ones, hundreds over a third of the run).
        if let last = run.samples.last {
            let from = last.cycle * 2 / 3
            let before = ([run.baseline] + run.samples.filter { $0.cycle < from }).map(\.outside.parkedThreads).max() ?? 0
            if let late = run.samples.filter({ $0.cycle >= from }).max(by: { $0.outside.parkedThreads < $1.outside.parkedThreads }),
               late.outside.parkedThreads > before + Self.poolSlack {
                leaks.append("cycle \(late.cycle): \(late.outside.parkedThreads) idle pool threads in the last third, more than \(Self.poolSlack) above the \(before) before")
            }
        }
        self.leaks = leaks
        self.impossible = impossible
        var left: [String] = []
        let stop = run.stop
        if stop.killed { left.append("it did not exit within the grace after SIGTERM (SIGKILL)") }
        if !stop.exitedCleanly && !stop.killed { left.append("it exited \(stop.exit)") }
        if !stop.cgroupsLeft.isEmpty { left.append("cgroups left: \(stop.cgroupsLeft.joined(separator: ", "))") }
        if !stop.runtimeDirectoryRemoved { left.append("its runtime directory was not removed") }
        left += stop.leftBehind
        leftBehind = left
        memory = Self.judge(run)
    }

    static func judge(_ run: ConfigurationRun) -> MemoryJudgement? {
        let samples = run.samples
        guard let last = samples.last else { return nil }
        let appsAt = samples.first { $0.records >= run.settings.appBound - 1 }?.cycle
        let logAt = samples.first { $0.logEvents >= run.settings.logBound }?.cycle
        let from = last.cycle * 2 / 3
        let third = samples.filter { $0.cycle >= from }
        let middle = fit(samples.filter { $0.cycle >= last.cycle / 3 && $0.cycle < from }.map { (Double($0.cycle), Double($0.outside.residentAnonBytes)) })
        guard let first = third.first,
              let anon = fit(third.map { (Double($0.cycle), Double($0.outside.residentAnonBytes)) }),
              let resident = fit(third.map { (Double($0.cycle), Double($0.outside.residentBytes)) })
        else { return nil }
        let span = Double(last.cycle - first.cycle)
        let noise = anon.residualSD
        let tolerance = max(MemoryJudgement.floorBytes, 3 * noise)
        let reached = appsAt.map { $0 <= from } == true && logAt.map { $0 <= from } == true
        var j = MemoryJudgement(
            appsBoundReachedAt: appsAt, logBoundReachedAt: logAt, judgedFrom: first.cycle, judgedSamples: third.count,
            anonPer1000: anon.slope * 1000, anonPer1000MiddleThird: middle.map { $0.slope * 1000 }, residentPer1000: resident.slope * 1000, anonGrowthBytes: anon.slope * span,
            peakGrowthBytes: Int64(last.outside.peakResidentBytes) - Int64(first.outside.peakResidentBytes),
            noiseBytes: noise, toleranceBytes: tolerance, boundsReached: reached, flat: anon.slope * span < tolerance)
        if logAt == nil, let appsAt {
            let atBound = samples.filter { $0.cycle >= appsAt }
            if let perEvent = fit(atBound.map { (Double($0.logEvents), Double($0.outside.residentAnonBytes)) }), perEvent.slope > 0 {
                j.bytesPerLogEvent = perEvent.slope
                j.projectedAnonAtLogLimit = perEvent.intercept + perEvent.slope * Double(run.settings.logBound)
            }
        }
        return j
    }
}

struct SoakReport: RenderedReport, Sendable {
    var formatVersion = 1
    var command: String
    var quick: Bool
    var totalSeconds: Double
    var machine: String
    var loadAverageAtStart: String
    var loadAverageAtEnd: String
    var budget: String?
    /// The daemon's MALLOC_CONF (nil: jemalloc's defaults).
    var mallocConf: String?
    var schedule: Schedule
    var runs: [ConfigurationRun]
    var notes: [String]

    var verdicts: [ConfigurationVerdict] { runs.map(ConfigurationVerdict.init) }
    var failures: [String] {
        zip(runs, verdicts).flatMap { run, v in v.failures.map { "\(run.settings.name): \($0)" } }
    }

    func mb(_ b: UInt64) -> String { ByteFormat.fixed(Double(b) / 1048576, 1) }
    func mbSigned(_ b: Double) -> String { (b >= 0 ? "+" : "−") + ByteFormat.fixed(abs(b) / 1048576, 2) + " MiB" }

    func markdown() -> String {
        var md = "# Soak: the supervisor daemon over \(schedule.cycles) launch/terminate cycles\n\n"
        md += regenerateLines(command: command, totalSeconds: totalSeconds, quick: quick, json: "soak.json")
        md += "\nMachine: \(machine); load average \(loadAverageAtStart) at the start, \(loadAverageAtEnd) at the end (other developers share the machine).\n\n"
        md += """
            The real daemon, `mempressure supervise --dir SCRATCH/run\(budget.map { " --budget \($0)" } ?? "")`, is the benchmark's \
            child, driven only through its admin socket (`AdminClient`, as `mempressure app` does) and read from outside \
            (/proc/PID/status, /proc/PID/fd, its runtime directory, the `mempressure-PID-*` cgroups, its children). \
            Each cycle registers and launches an app under a name never used before, then terminates it: \
            `/bin/sleep 3600` (not a client); every \(schedule.outputEvery)th a shell that writes 1.2 MB to its output \
            (more than the 1 MiB at which the supervisor cuts an app's output file; two helper processes in its cgroup) \
            and then sleeps — its file is read until its last line arrives and must be gone once terminate answers; every \
            \(schedule.workloadEvery)th the model app (`mempressure-workload`, a client: control channel, callbacks, ready, \
            footprint samples, its state saved when terminated), launched, activated, terminated. Every \(schedule.forgetEvery)th app \
            is then forgotten explicitly (`app forget`); the others make way under `--max-apps` when their turn comes. \
            Three configurations, each a fresh daemon: its **defaults** (whose log limit, 100,000 events, lies beyond \
            the run's cycles), **records** (`--log-limit 20000`: the default 1,000 app records, and a log limit the run \
            reaches), and **tight** bounds reached early in the run.

            A sample every \(schedule.sampleEvery) cycles first waits (at most 10 s) for the counts that must come back — \
            descriptors, threads not parked, runtime-directory entries, app cgroups, child processes — to be at or \
            below the **baseline**, taken after \(schedule.warmUp) cycles (every kind run twice) once they stayed \
            unchanged for a second. One that does not come back is a leak and fails the run. Threads parked in \
            futex(2) are libdispatch's idle workers (the Swift concurrency pool): the pool adds one when its workers \
            block and retires it after 5 s without work, which the daemon's 1 s sampling loop never leaves it, so \
            they are counted apart and may rise by at most \(ConfigurationVerdict.poolSlack) above their earlier high in the last third of the run \
            (a leak keeps adding them). Then VmRSS, VmHWM and RssAnon, the app \
            records (`apps`) and the events the log holds (`log`). Time per cycle is the client's time in its admin \
            calls (launch, activate, terminate, forget), p50 / p90 / p99 over the window.


            """
        md += "## Verdict\n\n"
        for (run, v) in zip(runs, verdicts) {
            md += "- **\(run.settings.name)** (`\(run.settings.flags.isEmpty ? "no flags" : run.settings.flags.joined(separator: " "))`): "
            md += verdictLine(run, v) + "\n"
        }
        md += "\n" + boundsSection()
        md += memorySection()
        for run in runs { md += samplesSection(run) }
        md += timesSection()
        md += nothingLeftSection()
        if !notes.isEmpty { md += "## Notes\n\n" + notes.map { "- \($0)\n" }.joined() + "\n" }
        return md
    }

    func verdictLine(_ run: ConfigurationRun, _ v: ConfigurationVerdict) -> String {
        var parts: [String] = []
        parts.append(v.leaks.isEmpty
            ? "descriptors, threads, runtime-directory entries, cgroups and children back to the baseline after every window (idle pool threads: at most \(ConfigurationVerdict.poolSlack) above their earlier high in the last third)"
            : "**LEAK**: " + v.leaks.joined(separator: "; "))
        if let m = v.memory {
            if m.boundsReached {
                parts.append(m.flat
                    ? "memory **flat** once its bounds were reached (RssAnon \(mbSigned(m.anonGrowthBytes)) over the last third, tolerance \(ByteFormat.fixed(m.toleranceBytes / 1048576, 1)) MiB)"
                    : "memory **GROWS** although its bounds were reached: RssAnon \(mbSigned(m.anonPer1000)) per 1,000 cycles over the last third")
            } else {
                var text = "its bounds were not all reached within the run (records from cycle \(m.appsBoundReachedAt.map(String.init) ?? "never"), log limit \(m.logBoundReachedAt.map { "from cycle \($0)" } ?? "never")), so its memory is not judged flat: RssAnon \(mbSigned(m.anonPer1000)) per 1,000 cycles over the last third"
                if let perEvent = m.bytesPerLogEvent, let projected = m.projectedAnonAtLogLimit {
                    text += "; it follows the log as it fills (\(ByteFormat.fixed(perEvent, 0)) bytes of RssAnon per event once the records were at their bound, \(ByteFormat.fixed(projected / 1048576, 0)) MiB projected at its limit of \(run.settings.logBound) events\(mallocConf == nil ? ": an upper estimate, as each reading also holds the pages the allocator keeps of the previous sample's `log` answer" : ""))"
                }
                parts.append(text)
            }
        }
        if !v.impossible.isEmpty { parts.append("**IMPOSSIBLE**: " + v.impossible.joined(separator: "; ")) }
        parts.append(v.leftBehind.isEmpty ? "nothing left behind" : "**LEFT BEHIND**: " + v.leftBehind.joined(separator: "; "))
        return parts.joined(separator: "; ") + "."
    }

    func boundsSection() -> String {
        var md = "## The bounds, and where they are documented\n\n"
        md += "| bound | \(runs.map(\.settings.name).joined(separator: " | ")) | documented in |\n|---|\(String(repeating: "---:|", count: runs.count))---|\n"
        md += "| app records (`--max-apps`, `SupervisorConfiguration.maximumApps`) | \(runs.map { "\($0.settings.appBound)" }.joined(separator: " | ")) | `supervise --help`; `SupervisorConfiguration.maximumApps` (Sources/MemPressureLifecycle/SupervisorTypes.swift) |\n"
        md += "| log events (`--log-limit`, `logLimit`) | \(runs.map { "\($0.settings.logBound)" }.joined(separator: " | ")) | `supervise --help`; `SupervisorConfiguration.logLimit`; AppLifecycle article *The app lifecycle*, *Bounded histories* |\n"
        md += "| samples kept of an app not running (`endedTimelineLimit`) | \(runs.map { _ in "600" }.joined(separator: " | ")) | `SupervisorConfiguration.endedTimelineLimit` (its comment bounds the records: 1,000 × 600 × 56 bytes ≈ 34 MB); AppLifecycle article *The app lifecycle*, *Bounded histories* |\n"
        md += "| samples of a running app (`timelineLimit`) | \(runs.map { _ in "10000" }.joined(separator: " | ")) | `SupervisorConfiguration.timelineLimit`; AppLifecycle article *The app lifecycle* |\n"
        md += "| an app's output file | \(runs.map { _ in "1 MiB" }.joined(separator: " | ")) | `AppOutput.fileLimit` (Sources/MemPressureLifecycle/AppOutput.swift): cut, and removed when the run ends |\n"
        md += "| admin connections at once, idle timeout | \(runs.map { _ in "64, 30 s" }.joined(separator: " | ")) | `SupervisorConfiguration.maximumAdminConnections`, `adminIdleTimeout` |\n\n"
        md += """
            What holds each quantity: the daemon's memory (RssAnon) is held by the app records (each with at most \
            `endedTimelineLimit` samples once its run has ended) and the log's limit, and must be flat once both are \
            reached; the app records by `--max-apps` (and `app forget`); descriptors, threads not parked, \
            runtime-directory entries (an app's output file is removed when its run ends), app cgroups and child \
            processes by nothing but their release: each must come back to its baseline after every window.


            """
        return md
    }

    /// What makes the heap's resident size wander, with the daemon's allocator settings.
    var allocatorNote: String {
        guard let mallocConf else {
            return "jemalloc returns freed pages to the kernel on a 10 s decay, so the heap's resident size wanders with what the last seconds allocated"
        }
        return "the daemon ran with `MALLOC_CONF=\(mallocConf)`, so jemalloc returns freed pages at once and RssAnon follows the live heap; what remains is fragmentation, and the daemon's own 1 s sampling of its apps"
    }

    func memorySection() -> String {
        var md = "## Memory\n\n![VmRSS and app records against cycles, every configuration](soak.svg)\n\n"
        md += """
            **The tolerance.** The memory is judged over the last third of the run, which must begin after both bounds \
            were reached: the least-squares slope of RssAnon (the daemon's heap: VmRSS less its mapped files) over \
            those samples, times the cycles they span, must stay below max(\(ByteFormat.fixed(MemoryJudgement.floorBytes / 1048576, 0)) MiB, \
            3 × the allocator's noise). The noise is measured in the same run: the standard deviation of RssAnon \
            around that line (\(allocatorNote)). \(ByteFormat.fixed(MemoryJudgement.floorBytes / 1048576, 0)) MiB \
            over a third of the run is the floor: a daemon that keeps less than that per \
            \(schedule.cycles / 3) cycles (\(ByteFormat.fixed(MemoryJudgement.floorBytes / Double(max(1, schedule.cycles / 3)), 0)) bytes a cycle) is \
            below what this run can tell from noise, and says so rather than claiming it leaks nothing. Beside the last \
            third's slope, the middle third's: a slope that remains but falls from one third to the next is slowing \
            down, one that keeps its pace is not.


            """
        md += "| configuration | records bound reached | log limit reached | judged from | RssAnon /1,000 cycles (middle third) | VmRSS /1,000 cycles | RssAnon over the last third | VmHWM over the last third | noise (σ) | tolerance | verdict |\n"
        md += "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|\n"
        for (run, v) in zip(runs, verdicts) {
            guard let m = v.memory else {
                md += "| \(run.settings.name) | – | – | – | – | – | – | – | – | – | too few samples |\n"
                continue
            }
            let verdict = m.boundsReached ? (m.flat ? "flat" : "**grows**") : "not judged (bounds not reached)"
            let cells: [String] = [
                run.settings.name, m.appsBoundReachedAt.map { "cycle \($0)" } ?? "never", m.logBoundReachedAt.map { "cycle \($0)" } ?? "never",
                "cycle \(m.judgedFrom) (\(m.judgedSamples) samples)", mbSigned(m.anonPer1000) + (m.anonPer1000MiddleThird.map { " (\(mbSigned($0)))" } ?? ""), mbSigned(m.residentPer1000), mbSigned(m.anonGrowthBytes),
                mbSigned(Double(m.peakGrowthBytes)), ByteFormat.fixed(m.noiseBytes / 1048576, 2) + " MiB", ByteFormat.fixed(m.toleranceBytes / 1048576, 1) + " MiB", verdict,
            ]
            md += "| \(cells.joined(separator: " | ")) |\n"
        }
        md += "\n"
        return md
    }

    func samplesSection(_ run: ConfigurationRun) -> String {
        var md = "## Samples: \(run.settings.name)\n\n"
        md += "`\(run.command)` (BUILD: the main package's release build; pid \(run.pid)); device cgroups \(run.deviceCgroups.isEmpty ? "none" : run.deviceCgroups.map { "`\($0)`" }.joined(separator: ", ")). "
        md += "\(run.forgotten) apps forgotten explicitly; \(run.outputCuts) of \(run.outputRuns) output runs had their file cut at 1 MiB. \(ByteFormat.fixed(run.seconds / 60, 1)) minutes.\n\n"
        md += "| cycle | VmRSS MiB | VmHWM MiB | RssAnon MiB | fds | threads (parked) | run dir | cgroups | children | records | log events | log answer | ms per cycle p50 / p90 / p99 | settled in |\n"
        md += "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n"
        func row(_ s: Sample, _ label: String) -> String {
            let o = s.outside
            let cells: [String] = [
                label, mb(o.residentBytes), mb(o.peakResidentBytes), mb(o.residentAnonBytes), "\(o.descriptors)", "\(o.threads) (\(o.parkedThreads))", "\(o.runtimeEntries)",
                "\(o.cgroups)", "\(o.children)", "\(s.records)", "\(s.logEvents)", ByteFormat.human(UInt64(s.logAnswerBytes)),
                s.cycleMs.map(triple) ?? "–", s.settleSeconds > 0 ? ByteFormat.fixed(s.settleSeconds, 2) + " s" : "–",
            ]
            return "| \(cells.joined(separator: " | ")) |\n"
        }
        md += row(run.start, "0 (start)")
        md += row(run.baseline, "\(run.baseline.cycle) (baseline)")
        for s in run.samples { md += row(s, s.leaked.isEmpty ? "\(s.cycle)" : "\(s.cycle) **leak**") }
        return md + "\n"
    }

    func timesSection() -> String {
        var md = "## Time per cycle, by kind\n\nThe client's time in the cycle's admin calls, ms, p50 / p90 / p99 (count) over the whole run.\n\n"
        md += "| configuration | \(CycleKind.allCases.map(\.rawValue).joined(separator: " | ")) |\n|---|\(String(repeating: "---:|", count: CycleKind.allCases.count))\n"
        for run in runs {
            let cells = CycleKind.allCases.map { k in run.kinds.first { $0.kind == k }.map { "\(triple($0.ms)) (\($0.ms.count))" } ?? "–" }
            md += "| \(run.settings.name) | \(cells.joined(separator: " | ")) |\n"
        }
        return md + "\n"
    }

    func nothingLeftSection() -> String {
        var md = "## Leaving nothing behind\n\n"
        md += "Each daemon was stopped with SIGTERM through its pidfd (SIGKILL after 30 s, which was \(runs.contains { $0.stop.killed } ? "needed" : "never needed")); then the benchmark looked for any `mempressure-PID-*` cgroup of its PID under every hierarchy and removed its scratch directory. Ctrl-C does the same at once.\n\n"
        md += "| configuration | pid | stopped in | exit | cgroups left | runtime directory removed | said it left behind |\n|---|---:|---:|---|---|---|---|\n"
        for run in runs {
            let s = run.stop
            md += "| \(run.settings.name) | \(run.pid) | \(ByteFormat.fixed(s.seconds, 2)) s\(s.killed ? " (SIGKILL)" : "") | \(s.exit) | \(s.cgroupsLeft.isEmpty ? "none: no `mempressure-\(run.pid)-` cgroup remains" : s.cgroupsLeft.joined(separator: ", ")) | \(s.runtimeDirectoryRemoved ? "yes" : "**no**") | \(s.leftBehind.isEmpty ? "nothing" : s.leftBehind.joined(separator: "; ")) |\n"
        }
        return md + "\n"
    }

    func plots() -> [Plot] {
        var p = Plot(name: "soak", title: "The supervisor daemon: VmRSS (solid, left) and app records (dashed, right) against cycles", width: 960, height: 520)
        let colors = ["#4a7bd0", "#d04a4a", "#3a9a4a", "#a05ad0"]
        var series: [String] = []
        for (i, run) in runs.enumerated() {
            let block = "run\(i)"
            let points = [run.start, run.baseline] + run.samples
            p.data(block, columns: ["cycle", "VmRSS MiB", "RssAnon MiB", "records"], rows: points.map { s in
                [.int(s.cycle), .number(Double(s.outside.residentBytes) / 1048576), .number(Double(s.outside.residentAnonBytes) / 1048576), .int(s.records)]
            })
            let color = colors[i % colors.count]
            series.append("$\(block) using 1:2 axes x1y1 with linespoints lw 2 pt 7 ps 0.5 lc rgb '\(color)' title \(Plot.quoted("\(run.settings.name): VmRSS"))")
            series.append("$\(block) using 1:4 axes x1y2 with lines lw 1.5 dt 2 lc rgb '\(color)' title \(Plot.quoted("\(run.settings.name): app records"))")
        }
        p.command("set xlabel 'cycles (launch + terminate, a new name each)'")
        p.command("set ylabel 'VmRSS (MiB)'")
        p.command("set y2label 'app records'")
        p.command("set yrange [0:*]")
        p.command("set y2range [0:*]")
        p.command("set ytics nomirror")
        p.command("set y2tics")
        p.command("set key outside bottom center horizontal")
        p.command("plot " + series.joined(separator: ", \\\n     "))
        return [p]
    }
}
