// resume-bench: the single-app tradeoff of iOS multitasking, measured. The model app
// (mempressure-workload) frees a share of what it can rebuild when it enters the background (its
// trim level); the less it keeps, the less jetsam holds against it, and the longer it takes to
// be working again when resumed. Is resuming still worth it, against relaunching from scratch?
//
// For each trim level and restore mode (lazy: ready at once, rebuild after; eager: rebuild, then
// ready), the app is sent to the background and suspended, then resumed, under three conditions:
//
//   none     no pressure: what the app trimmed itself is all that is missing
//   squeeze  real pressure: the app's memory cgroup is squeezed while it is suspended, down to
//            what cannot be reclaimed without swap, so the kernel takes its purgeable pages
//            (MADV_FREE'd) and its clean file pages
//   swap     freeze-dried: its anonymous memory written to swap (process_madvise MADV_PAGEOUT
//            through its pidfd) on a swap file made for the round, then its memory cgroup
//            squeezed with swappiness 100 so that the pages leave the swap cache too: the resume
//            reads them from the file (its major faults and pswpin prove it per round; a round
//            that did not is reported invalid and left out)
//   zram     the same on /dev/zram0 (lz4), as Android and ChromeOS swap
//
// and relaunched (terminated, with its state saved, then launched with the state restored),
// eagerly (everything built before ready) and lazily (the first screen before ready, the rest
// after, as real apps relaunch), with the page cache warm and cold (cold: every file the app mapped and its data dropped). Everything is measured from outside, through the
// supervisor and /proc; the app's own answers give the split of the rebuild. Every relaunch
// checks every byte of the saved state; a byte lost fails the run.
//
// A sweep of the model app's decode cost (the CPU its images and model cost to build) then asks
// where the break-even trim lies for each: the resume, nothing taken, against both relaunches.
//
// Writes Reports/resume-relaunch.{md,json,gp,svg}. Needs root (memory cgroups, swapon, zram) and a
// machine with no swap of its own.

import MemPressureLifecycle
import ArgumentParser
import BenchSupport
import Foundation
import Glibc
import MemPressureLifecycleProtocol
import MemPressureSystem
import MemPressureVMTracker

@main
struct ResumeBench: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "resume-bench",
        abstract: "Resume against relaunch for the model app at each trim level; writes Reports/resume-relaunch.{md,json,gp,svg}.")

    @Option(help: "The main package's release build directory (mempressure-exec, mempressure-workload).") var build = "../.build/release"
    @Option(help: "Where the report goes.") var output = "../Reports"
    @Option(help: "Resumes per point (trim × restore × condition), and relaunches per trim × restore × cache.") var rounds = 20
    @Option(help: "Trim levels, in percent.") var trims = "0,10,25,50,75,90,100"
    @Option(name: .customLong("decode-costs"), help: "The decode-cost sweep: costs besides the main grid's (--decode-cost of the model app), separated by commas; each runs resume with nothing taken and relaunch eager and lazy (page cache warm) at --sweep-trims for --rounds rounds. Empty: no sweep.") var decodeCosts = "128,1024,2048"
    @Option(name: .customLong("sweep-trims"), help: "The sweep's trim levels, in percent.") var sweepTrims = "0,25,50,75,100"
    @Flag(help: "A smoke run: trims 0, 50 and 100, 3 rounds; the sweep at cost 1024, trims 0 and 100, 2 rounds (make bench-quick writes it to a temporary directory).") var quick = false
    @Flag(name: .customLong("render-only"), help: "Re-render the Markdown and the plot from the JSON.") var renderOnly = false

    func run() async throws {
        let bench = self
        try await interruptible { try await bench.measure() }
    }

    var reportName: String { "resume-relaunch" }

    func measure() async throws {
        if renderOnly {
            var report = try readReport(ResumeReport.self, from: output, named: reportName)
            let loaded = SurvivalCheck.load(from: output)
            report.survivalChecks = loaded.checks
            report.survivalNote = loaded.note
            try writeReport(report, to: output, named: reportName, tool: "resume-bench")
            return
        }
        guard getuid() == 0 else { throw BenchError("resume-bench needs root (a memory cgroup to squeeze, swapon for freeze-dry)") }
        guard Supervisor.canBudget() else { throw BenchError("resume-bench needs a memory cgroup controller (cgroup v1 memory, or v2) to squeeze the app") }
        func integers(_ text: String, option: String, range: ClosedRange<Int>) throws -> [Int] {
            try text.split(separator: ",").map { word in
                guard let n = Int(word.trimmingCharacters(in: .whitespaces)), range.contains(n) else {
                    throw ValidationError("\(option) takes integers from \(range.lowerBound) to \(range.upperBound), separated by commas: '\(word)'")
                }
                return n
            }
        }
        // Each once, in order: a repeated value would name the same app twice.
        let levels = quick ? [0, 50, 100] : Array(Set(try integers(trims, option: "--trims", range: 0...100))).sorted()
        let rounds = quick ? 3 : self.rounds
        guard rounds >= 1 else { throw ValidationError("--rounds takes at least 1") }
        let costs = quick ? [1024] : Array(Set(try integers(decodeCosts, option: "--decode-costs", range: 0...1 << 20))).sorted()
        let sweepLevels = quick ? [0, 100] : Array(Set(try integers(sweepTrims, option: "--sweep-trims", range: 0...100))).sorted()
        let build = URL(fileURLWithPath: self.build).standardizedFileURL.path
        guard access("\(build)/mempressure-workload", X_OK) == 0 else {
            throw BenchError("no \(build)/mempressure-workload: build the main package first (swift build -c release at the top level)")
        }
        var run = try ResumeRun(build: build, levels: levels, rounds: rounds)
        // The switching benchmark's runs, for the recommendation's survival check.
        let (checks, checkNote) = SurvivalCheck.load(from: output)
        run.sweepCosts = costs.filter { $0 != run.size.decodeCost }
        run.sweepLevels = sweepLevels
        run.sweepRounds = quick ? 2 : rounds
        var report = try await run.measure()
        report.survivalChecks = checks
        report.survivalNote = checkNote
        try writeReport(report, to: output, named: reportName, tool: "resume-bench")
        let impossible = report.impossibilities()
        if !impossible.isEmpty { throw BenchError("IMPOSSIBLE: " + impossible.joined(separator: "; ")) }
        if report.stateBytesLost > 0 {
            throw BenchError("STATE LOST: \(report.stateBytesLost) bytes of saved state did not come back after a relaunch (see the report)")
        }
    }
}
