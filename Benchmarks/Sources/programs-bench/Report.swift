import BenchSupport
import Foundation
import MemPressureSystem

/// What was done to the app between leaving it and asking for it again.
enum Condition: String, Codable, Sendable, CaseIterable {
    case freeze
    case swapFile = "swap-file"
    case zram
    case relaunchWarm = "relaunch-warm"
    case relaunchCold = "relaunch-cold"
    case relaunchKilled = "relaunch-killed"

    var isRelaunch: Bool { self == .relaunchWarm || self == .relaunchCold || self == .relaunchKilled }

    var words: String {
        switch self {
        case .freeze: "resume after a freeze (cgroup freezer, 1.5 s away)"
        case .swapFile: "resume after its memory went to a swap file and out of the swap cache"
        case .zram: "resume after its memory went to zram (lz4) and out of the swap cache"
        case .relaunchWarm: "relaunch, page cache warm (every file it maps and its data read into it first: a squeeze in an earlier round may have taken them)"
        case .relaunchCold: "relaunch, every file it maps and its data dropped from the page cache"
        case .relaunchKilled:
            "relaunch after a jetsam kill while frozen (the supervisor's kill as jetsam makes it: SIGKILL to every process of the app, its memory released at once, no chance to save or shut down: redis loads its last save, postgres recovers from its WAL, chromium finds its profile not closed), page cache warm"
        }
    }
}

/// One activation: how long until the probe passed (the data checked), and the evidence.
struct Cycle: Codable, Sendable {
    var program = ""
    var condition: Condition
    var round: Int
    /// From the activation's start until it returned (the readiness probe passed: it answers).
    var readyMs: Double
    /// From the same start until the check passed (its whole dataset read and intact).
    var ms: Double
    /// The app's swapped bytes when the activation began (the cgroup's total_swap).
    var swappedBytes: UInt64
    /// Its resident anonymous and shared memory then (total_rss + total_shmem).
    var residentBeforeBytes: UInt64
    var squeezedToBytes: UInt64?
    /// During the activation: the app's major faults (its cgroup's pgmajfault) and the pages the
    /// machine read from swap (pswpin).
    var majorFaults: UInt64
    var pagesSwappedIn: UInt64
    /// Why the round does not count (its swap-in was not real), if it does not.
    var invalid: String?
    /// For relaunches: how long the terminate took (SIGTERM until it exited: redis's save,
    /// postgres's checkpoint).
    var terminateMs: Double?
    /// For a cold relaunch: the bytes of the files dropped from the page cache, and those still
    /// resident after the drop (mapped by other processes of the machine, which keep them).
    var droppedBytes: UInt64?
    var stillResidentBytes: UInt64?
}

struct ProgramInfo: Codable, Sendable {
    var name: String
    var version: String
    var data: String
    var command: String
    /// The readiness probe's script.
    var probe: String
    var droppedForCold: [DroppedFile]
    /// Killed by jetsam's own decision, then relaunched; nil in reports before it.
    var jetsam: JetsamProof? = nil
    /// Why the jetsam phase did not show it, if it did not.
    var jetsamFailure: String? = nil
}

struct ProgramsReport: RenderedReport {
    var formatVersion = 1
    var machine: Machine
    var command: String
    var rounds: Int
    var megabytes: Int
    var programs: [ProgramInfo]
    var cycles: [Cycle]
    var notes: [String]
    var totalSeconds: Double

    func valid(_ program: String, _ condition: Condition) -> [Cycle] {
        cycles.filter { $0.program == program && $0.condition == condition && $0.invalid == nil }
    }

    func times(_ program: String, _ condition: Condition) -> Percentiles { Percentiles(valid(program, condition).map(\.ms)) }

    static func median(_ values: [Double]) -> Double { Percentiles(values).p50 }

    /// What cannot be: a resume that read its swapped memory back faster than the same program's
    /// resume from a freeze, at the median; a cold relaunch faster than a warm one.
    func impossibilities() -> [String] {
        var out: [String] = []
        for p in programs {
            let freeze = times(p.name, .freeze)
            for c in [Condition.swapFile, .zram] {
                let t = times(p.name, c)
                if t.count > 0, freeze.count > 0, t.p50 < freeze.p50 * 0.9 {
                    out.append("\(p.name): the resume from \(c.rawValue) (median \(ByteFormat.fixed(t.p50, 1)) ms) beat the resume from a freeze (\(ByteFormat.fixed(freeze.p50, 1)) ms), though it must read its memory back")
                }
            }
            let warm = times(p.name, .relaunchWarm)
            let cold = times(p.name, .relaunchCold)
            if warm.count > 0, cold.count > 0, cold.p50 < warm.p50 * 0.9 {
                out.append("\(p.name): the cold relaunch (median \(ByteFormat.fixed(cold.p50, 1)) ms) beat the warm one (\(ByteFormat.fixed(warm.p50, 1)) ms)")
            }
        }
        return out
    }

    /// Killed by jetsam's own decision (`JetsamPhase.swift`), per program.
    func jetsamSection() -> String {
        let proofs = programs.compactMap { p in p.jetsam.map { (p.name, $0) } }
        let failures = programs.compactMap { p in p.jetsamFailure.map { (p.name, $0) } }
        guard !proofs.isEmpty || !failures.isEmpty else { return "" }
        var s = "\n## Killed by jetsam's own decision\n\n"
        s += "Once its rounds were done, each program was launched again under a supervisor of its own with jetsam attached (the ios policy, the kernel's OOM killer not held; a device budget of 20 times what it held frozen, at least 2 GiB, in the table), "
        s += "sent to the background (frozen), and the model app in the foreground allocated until the device's working set (usage less inactive file pages, as jetsam reads it) would stand past jetsam's critical line (95% of the budget) by half of what the program held. "
        s += "Jetsam chose whom to kill; the program was then relaunched and its whole dataset checked, as after every relaunch above.\n\n"
        s += "Once per program: the phase shows that jetsam's ranking picks a real program and that it comes back, not how often.\n\n"
        s += "| program | budget | allocated | working set: before the allocation → after the kill | jetsam's victims | reason | band | footprint charged | kill after the latest pressure event | relaunch: ready / working |\n|---|---:|---:|---:|---|---|---|---:|---:|---:|\n"
        for (name, j) in proofs {
            let ws = "\(ByteFormat.fixed(j.workingSetBefore * 100, 1))% → \(ByteFormat.fixed(j.workingSetAfterKill * 100, 1))%"
            let latency = j.secondsFromLatestEvent.map { "\(ByteFormat.fixed($0 * 1000, 0)) ms" } ?? "–"
            s += "| \(name) | \(ByteFormat.human(j.budgetBytes)) | \(ByteFormat.human(j.allocatedBytes)) | \(ws) | \(j.victims.joined(separator: ", ")) | \(j.reason) | \(j.band) | \(ByteFormat.human(j.footprintBytes)) | \(latency) | \(ByteFormat.fixed(j.relaunchReadyMs, 0)) / \(ByteFormat.fixed(j.relaunchWorkingMs, 0)) ms |\n"
        }
        if !proofs.isEmpty {
            let alone = proofs.allSatisfy { $0.1.victims == [$0.0] }
            s += alone ? "\nEach program was jetsam's only victim (every episode of its phase counted), and it came back with its data intact.\n" : "\nWhere the victims list more than the program, jetsam took them too to bring the device back under its line.\n"
        }
        for (name, why) in failures { s += "\n**\(name): not shown** — the phase failed: \(why)\n" }
        return s
    }

    func markdown() -> String {
        var s = "# Resume against relaunch for real programs under the supervisor\n\n"
        s += "redis-server, PostgreSQL and headless chromium run as apps of `Supervisor` (`AppSpec` with `\"client\": false`): "
        s += "launched, frozen with the cgroup freezer, paged out to a swap file or to zram, resumed, terminated or killed as jetsam kills, and relaunched like any app. "
        s += "Each is **ready** when its readiness probe passes (configuration, `ReadinessProbe`: PING, `select 1`, the DevTools endpoint listing the page): the activation returns then. "
        s += "It is **working** when its check passes after that: its whole dataset read and found as it was made (redis's DEBUG DIGEST; pg_prewarm of the table, then a hash over every row; "
        s += "the page's script summing every array again). Both are timed from the start of the activation; every resume and relaunch verified the data.\n\n"
        s += "Each round takes every condition once, in an order that turns with the round; \(rounds) rounds per program; \(megabytes) MiB of data per program.\n\n"
        s += "Machine: Linux \(machine.kernel), \(machine.cpus) CPUs (\(machine.cpuModel)), \(ByteFormat.human(machine.memoryBytes)) RAM; scratch on \(machine.scratchFileSystem); "
        s += "vm.page-cluster \(machine.pageCluster) (swap readahead \(1 << (Int(machine.pageCluster) ?? 3)) pages); load average \(machine.loadAverageAtStart) at the start, \(machine.loadAverageAtEnd ?? "?") at the end. "
        s += "Run time \(ByteFormat.fixed(totalSeconds / 60, 1)) minutes.\n\n"
        s += "| program | version | data |\n|---|---|---|\n"
        for p in programs { s += "| \(p.name) | \(p.version) | \(p.data) |\n" }
        s += "\nConditions:\n\n"
        for c in Condition.allCases { s += "- **\(c.rawValue)**: \(c.words)\n" }
        s += "\n## Until working, with the data checked (ms), and until ready\n\n"
        s += "Valid rounds only. A swap round is valid when at least half the program's data was on swap after the squeeze, and its app's major faults (its cgroup's pgmajfault) during the resume "
        s += "are at least a quarter of what reading its swapped data back needs at one fault per readahead window "
        s += "(\(1 << (Int(machine.pageCluster) ?? 3)) pages on the swap file; one page on zram, which the kernel reads synchronously, without readahead). "
        s += "*Read from swap* is the machine's pswpin during the resume (the benchmark runs alone).\n\n"
        s += "| program | condition | valid / rounds | working: min | median | p90 | max | ready: median | swapped (median) | major faults (median) | read from swap (median) |\n"
        s += "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n"
        for p in programs {
            for c in Condition.allCases {
                let all = cycles.filter { $0.program == p.name && $0.condition == c }
                let v = valid(p.name, c)
                let t = Percentiles(v.map(\.ms))
                let swapped = Self.median(v.map { Double($0.swappedBytes) })
                let faults = Self.median(v.map { Double($0.majorFaults) })
                let swapIn = Self.median(v.map { Double($0.pagesSwappedIn) * 4096 })
                let ready = Self.median(v.map(\.readyMs))
                s += "| \(p.name) | \(c.rawValue) | \(v.count) / \(all.count) | \(ByteFormat.fixed(t.min, 1)) | **\(ByteFormat.fixed(t.p50, 1))** | \(ByteFormat.fixed(t.p90, 1)) | \(ByteFormat.fixed(t.max, 1)) | \(ByteFormat.fixed(ready, 1)) | "
                s += "\(ByteFormat.human(UInt64(swapped))) | \(Int(faults)) | \(ByteFormat.human(UInt64(swapIn))) |\n"
            }
        }
        let invalid = cycles.filter { $0.invalid != nil }
        if !invalid.isEmpty {
            s += "\nInvalid rounds (left out above):\n\n"
            for c in invalid.prefix(20) { s += "- \(c.program), \(c.condition.rawValue), round \(c.round + 1): \(c.invalid ?? "")\n" }
            if invalid.count > 20 { s += "- … \(invalid.count - 20) more in the JSON\n" }
        }
        s += "\n## Relaunch ÷ resume, against the published anchors\n\n"
        s += "Medians of the valid rounds, until working (until ready in brackets). PMR (ATC '25) measured a cold launch ≈ 3.1× a hot launch (resume) on phones; Fleet (ASPLOS '24) made hot launches 1.59× faster than the baseline's mix of hot and cold.\n\n"
        s += "| program | warm relaunch ÷ resume (freeze) | cold relaunch ÷ resume (freeze) | warm relaunch ÷ resume (swap file) | warm relaunch ÷ resume (zram) | PMR cold ÷ hot |\n"
        s += "|---|---:|---:|---:|---:|---:|\n"
        for p in programs {
            func readyMedian(_ c: Condition) -> Double { Self.median(valid(p.name, c).map(\.readyMs)) }
            func r(_ a: Condition, _ b: Condition) -> String {
                let t = times(p.name, a)
                let base = times(p.name, b).p50
                guard t.count > 0, base > 0 else { return "–" }
                let readyBase = readyMedian(b)
                let readyText = readyBase > 0 ? " (" + ByteFormat.fixed(readyMedian(a) / readyBase, 1) + "×)" : ""
                return ByteFormat.fixed(t.p50 / base, 1) + "×" + readyText
            }
            s += "| \(p.name) | \(r(.relaunchWarm, .freeze)) | \(r(.relaunchCold, .freeze)) | \(r(.relaunchWarm, .swapFile)) | \(r(.relaunchWarm, .zram)) | 3.1× |\n"
        }
        s += findings()
        s += "\n## Terminations and what a cold relaunch dropped\n\n"
        s += "| program | terminate (median ms) | files dropped | their bytes | still resident after the drop |\n|---|---:|---:|---:|---:|\n"
        for p in programs {
            let terms = cycles.filter { $0.program == p.name && $0.condition != .relaunchKilled }.compactMap(\.terminateMs)
            let files = p.droppedForCold.filter { $0.error == nil }
            let bytes = files.reduce(0) { $0 + $1.bytes }
            let resident = files.reduce(0) { $0 + $1.residentAfterBytes }
            s += "| \(p.name) | \(ByteFormat.fixed(Self.median(terms), 0)) | \(files.count) | \(ByteFormat.human(bytes)) | \(ByteFormat.human(resident)) |\n"
        }
        s += "\nThe files still resident after the drop are mapped by other processes of the machine (the C library, the dynamic loader), which keep them in the page cache; "
        s += "the JSON lists every file dropped, its size and what stayed.\n"
        s += jetsamSection()
        if !notes.isEmpty {
            s += "\n## Notes\n\n" + notes.map { "- \($0)\n" }.joined()
        }
        s += "\n![until working, by condition](real-programs.svg)\n\n"
        s += "Regenerate: `\(command)`; re-render from the JSON: `cd Benchmarks && swift run -c release programs-bench --render-only --output ../Reports`.\n"
        return s
    }

    /// What the figures say, program by program, whichever way they fall.
    func findings() -> String {
        var s = "\n## What the figures say\n\n"
        func ms(_ v: Double) -> String { ByteFormat.fixed(v, 0) + " ms" }
        for p in programs {
            let freeze = times(p.name, .freeze), warm = times(p.name, .relaunchWarm), cold = times(p.name, .relaunchCold)
            guard freeze.count > 0, warm.count > 0 else { continue }
            let readyFreeze = Self.median(valid(p.name, .freeze).map(\.readyMs))
            let readyWarm = Self.median(valid(p.name, .relaunchWarm).map(\.readyMs))
            s += "- **\(p.name)**: resumed from a freeze it answers in \(ms(readyFreeze)) and is working in \(ms(freeze.p50)); relaunched it answers in \(ms(readyWarm)) "
            s += "and works in \(ms(warm.p50)) warm, \(cold.count > 0 ? ms(cold.p50) : "–") cold. "
            // Within 10% either way is called a tie: the medians' spread is as large. The squeeze
            // that empties the swap cache takes the program's file pages too, as real pressure
            // would: the cold relaunch is the fairer match, the warm one is said beside it.
            let beaten = [Condition.swapFile, .zram].filter { times(p.name, $0).count > 0 && cold.count > 0 && times(p.name, $0).p50 > cold.p50 * 1.1 }
            for c in [Condition.swapFile, .zram] {
                let t = times(p.name, c)
                guard t.count > 0 else { continue }
                let read = Self.median(valid(p.name, c).map { Double($0.pagesSwappedIn) * 4096 })
                s += "From \(c == .zram ? "zram" : "a swap file") it works in \(ms(t.p50)) (\(ByteFormat.human(UInt64(read))) read back)"
                func against(_ r: Percentiles, _ what: String) -> String {
                    let ratio = t.p50 / r.p50
                    return ratio > 1.1 ? "**slower than a \(what) relaunch** (\(ByteFormat.fixed(ratio, 1))×)"
                        : ratio >= 0.9 ? "about as fast as a \(what) relaunch (\(ByteFormat.fixed(ratio, 2))× its time)"
                        : "\(ByteFormat.fixed(r.p50 / t.p50, 1))× faster than a \(what) relaunch"
                }
                s += ": " + against(cold, "cold") + ", " + against(warm, "warm") + ". "
            }
            let killed = times(p.name, .relaunchKilled)
            if killed.count > 0 {
                s += "After a jetsam kill (nothing saved, nothing shut down) it works in \(ms(killed.p50)), against \(ms(warm.p50)) after a clean terminate. "
            }
            if !beaten.isEmpty {
                s += "Where its memory has gone to \(beaten.map { $0 == .zram ? "zram" : "a swap file" }.joined(separator: " or ")), relaunching this program is the faster way back: "
                s += "reading its data back from swap a fault at a time costs more than starting it again and loading its data from files.\n"
            } else {
                let slowerThanWarm = [Condition.swapFile, .zram].contains { times(p.name, $0).count > 0 && times(p.name, $0).p50 > warm.p50 * 1.1 }
                s += slowerThanWarm ? "Resuming is never slower than a cold relaunch here.\n" : "Resuming is never slower than a relaunch here, warm or cold.\n"
            }
        }
        var ready: [String] = [], working: [String] = []
        for p in programs {
            let rf = Self.median(valid(p.name, .freeze).map(\.readyMs)), rw = Self.median(valid(p.name, .relaunchWarm).map(\.readyMs))
            let wf = times(p.name, .freeze).p50, ww = times(p.name, .relaunchWarm).p50
            guard rf > 0, wf > 0 else { continue }
            ready.append("\(ByteFormat.fixed(rw / rf, 1))× for \(p.name)")
            working.append("\(ByteFormat.fixed(ww / wf, 1))× for \(p.name)")
        }
        if !ready.isEmpty {
            s += "\nWarm relaunch ÷ resume from a freeze, until *ready* (the probe): \(ready.joined(separator: ", ")), against PMR's 3.1× for a cold against a hot launch. "
            s += "Until *working* (all the data read and checked): \(working.joined(separator: ", ")). The check costs the same after a resume as after a relaunch, which pulls the second ratio toward 1.\n"
        }
        return s
    }

    func plots() -> [Plot] {
        var rows: [(label: String, value: Double, highlight: Bool)] = []
        for p in programs {
            for c in Condition.allCases {
                let t = times(p.name, c)
                guard t.count > 0 else { continue }
                rows.append(("\(p.name) \(c.rawValue)", t.p50, c.isRelaunch))
            }
        }
        return [Plot.bars(name: "real-programs", title: "Until working with the data checked: median ms (relaunches in grey)", rows: rows, unit: " ms", decimals: 0)]
    }
}
