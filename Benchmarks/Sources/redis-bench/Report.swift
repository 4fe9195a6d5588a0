import BenchSupport
import Foundation
import Glibc
import MemPressureSystem

/// One stop-and-resume or one kill-and-relaunch. Times from SIGCONT, or from posix_spawn.
struct RoundResult: Codable, Sendable {
    /// Until the first reply: PONG after SIGCONT; after exec the first PONG that is not LOADING.
    var readyMs = 0.0
    /// Until the sample of keys was read back, one GET at a time, and every value checked.
    var sampleMs = 0.0
    /// Until every key was read back (pipelined) and checked.
    var fullMs = 0.0
    /// Page faults of redis-server from SIGCONT (or exec) to the end of the full pass
    /// (/proc/PID/stat majflt, minflt), and major ones until the sample was read.
    var majorFaults: UInt64 = 0
    var minorFaults: UInt64 = 0
    var majorFaultsToSample: UInt64 = 0
    /// VmRSS when stopped (resume), and after the full pass.
    var residentBytesBefore: UInt64?
    var residentBytesAfter: UInt64?
    /// Resume after swap: VmSwap and VmRSS once squeezed, the limit reached, how long it took.
    var swappedBytes: UInt64?
    var residentBytesStopped: UInt64?
    var limitBytes: UInt64?
    var squeezeMs: Double?
    /// Relaunch: how long redis took to load the RDB file, by its own log.
    var loadMs: Double?
    /// Relaunch: the share of the RDB file in the page cache at exec (mincore).
    var rdbResidentPercent: Double?
}

typealias Condition = BenchCondition<RoundResult>

extension BenchCondition where Round == RoundResult {
    var readyMs: Percentiles { percentiles(\.readyMs) }
    var sampleMs: Percentiles { percentiles(\.sampleMs) }
    var fullMs: Percentiles { percentiles(\.fullMs) }
}

struct RedisReport: RenderedReport, Sendable {
    var formatVersion = 1
    var command: String
    var quick: Bool
    var machine: Machine
    var redisVersion: String
    /// The RDB file's size.
    var datasetBytes: UInt64
    var dataset: Dataset
    /// INFO memory used_memory and the process's VmRSS, after the fill.
    var usedMemoryBytes: UInt64
    var residentBytesAfterFill: UInt64
    var sampleKeys: Int
    var roundsPerCondition: Int
    /// DEBUG DIGEST after the fill (nil if the build refuses DEBUG).
    var digest: String?
    /// Resume (pages in memory): SIGCONT until the sample was read back and checked.
    var resumeMs: Percentiles
    /// Relaunch (page cache warm): posix_spawn until the sample was read back and checked.
    var relaunchMs: Percentiles
    /// resumeMs / relaunchMs, figure by figure.
    var ratio: Percentiles?
    /// Every key of every round read back intact, DBSIZE and the digest unchanged.
    var dataIntact: Bool
    var dataLoss: String?
    var conditions: [Condition]
    var notes: [String]
    var totalSeconds: Double

    func markdown() -> String {
        var md = "# redis-server: resume after SIGSTOP against relaunch from its RDB file\n\n"
        md += regenerateLines(command: command, totalSeconds: totalSeconds, quick: quick, json: "redis.json")
        md += "\n" + machine.summary
        md += "redis-server \(redisVersion), Debian's package, a child of the benchmark listening on a UNIX socket only; its files in \(machine.scratch) (\(machine.scratchFileSystem)).\n\n"

        md += "## The dataset\n\n"
        md += "\(dataset.keys) keys (`mp:000000000` …), each value \(Dataset.shortestValue)–\(Dataset.shortestValue + Dataset.valueSpread - 1) random bytes from seed \(dataset.seed) "
        md += "(\(mib(dataset.valueBytes)) of values), so every value can be rebuilt and compared. "
        md += "RDB file (`SAVE`): **\(mib(datasetBytes))**; redis used_memory \(mib(usedMemoryBytes)), resident \(mib(residentBytesAfterFill)) after the fill. "
        md += "Digest (`DEBUG DIGEST`) after the fill: " + (digest.map { "`\($0)`" } ?? "not available") + ".\n\n"

        md += "## Resume against relaunch\n\n"
        md += "Time until redis served its data again: from SIGCONT (resume) or from posix_spawn of redis-server (relaunch) until a sample of \(sampleKeys) keys spread over the key space had been read back, one GET at a time, and every value compared. "
        md += "Resume: its pages stayed in memory; relaunch: the RDB file in the page cache. \(roundsPerCondition) rounds each; milliseconds.\n\n"
        md += "| | p50 | p90 | p99 |\n|---|---:|---:|---:|\n"
        md += "| resume | \(ms(resumeMs.p50)) | \(ms(resumeMs.p90)) | \(ms(resumeMs.p99)) |\n"
        md += "| relaunch | \(ms(relaunchMs.p50)) | \(ms(relaunchMs.p90)) | \(ms(relaunchMs.p99)) |\n"
        if let r = ratio { md += "| resume / relaunch | \(ratioText(r.p50)) | \(ratioText(r.p90)) | \(ratioText(r.p99)) |\n" }
        md += "\n"

        md += "## Every condition\n\n"
        md += "p50 / p90 / p99 in milliseconds, from SIGCONT or from posix_spawn: until the first reply (PONG; after a relaunch the first PONG that is not `-LOADING`), until the sample was read back and checked, and until every key had been read back (GET, pipelined 256 at a time) and checked. "
        md += "Page faults are redis-server's own (/proc/PID/stat majflt and minflt) over the same span, medians.\n\n"
        md += "| condition | rounds | first reply | sample of \(sampleKeys) keys | every key | major faults | minor faults |\n|---|---:|---:|---:|---:|---:|---:|\n"
        md += conditions.conditionRows(columns: 7) { c in
            [triple(c.readyMs), triple(c.sampleMs), triple(c.fullMs), ByteFormat.fixed(median(c.rounds.map { Double($0.majorFaults) }), 0), ByteFormat.fixed(median(c.rounds.map { Double($0.minorFaults) }), 0)]
        }
        md += "\n![p50 with a bar to p99, every condition and measure](redis.svg)\n\n"

        let relaunches = conditions.filter { $0.kind == .relaunch && $0.measured }
        md += conditions.ratiosSection(relaunch: "relaunch", measures: [("first reply", \.readyMs), ("sample", \.sampleMs), ("every key", \.fullMs)])

        if let s = conditions.named("resume-after-swap") {
            md += s.swapSection { rs in
                func med(_ f: (RoundResult) -> Double?) -> Double { median(rs.compactMap(f)) }
                var md = "While redis was stopped its memory cgroup's limit was lowered in 16 steps from its usage towards 8 MiB, the kernel reclaiming at each (a step it answered EBUSY was tried again for up to 0.5 s: the pages it chose may still be on their way to swap); then the limit was lifted and redis continued, faulting its pages back in from swap as it touched them. Medians over \(rs.count) rounds:\n\n"
                md += "| resident when stopped | limit reached | in swap (VmSwap) | resident once squeezed | squeeze took | major faults until the sample | major faults, every key | resident after |\n|---:|---:|---:|---:|---:|---:|---:|---:|\n"
                md += "| \(mib(UInt64(med { $0.residentBytesBefore.map { Double($0) } }))) | \(mib(UInt64(med { $0.limitBytes.map { Double($0) } }))) | \(mib(UInt64(med { $0.swappedBytes.map { Double($0) } }))) | \(mib(UInt64(med { $0.residentBytesStopped.map { Double($0) } }))) | \(ms(med { $0.squeezeMs })) ms | \(ByteFormat.fixed(med { Double($0.majorFaultsToSample) }, 0)) | \(ByteFormat.fixed(med { Double($0.majorFaults) }, 0)) | \(mib(UInt64(med { $0.residentBytesAfter.map { Double($0) } }))) |\n\n"
                return md
            }
        }

        if !relaunches.isEmpty {
            md += "## Relaunch and the page cache\n\n"
            md += "The share of the RDB file's pages in the page cache at exec (mincore), median (min–max): "
            md += relaunches.residency(\.rdbResidentPercent)
            md += ". Of the time to the first reply, loading the RDB file itself took (redis's own log, \"DB loaded from disk\"), p50 / p90 / p99 ms: "
            md += relaunches.map { "\($0.name) \(triple(Percentiles($0.rounds.compactMap(\.loadMs))))" }.joined(separator: "; ")
            md += "; the rest is exec, redis's start-up and the benchmark's polling (a PING every 0.5 ms while it answers LOADING)"
            md += ". Cold drops only that file's pages (posix_fadvise DONTNEED), never the machine's caches; redis-server's own binary and libraries stay cached.\n\n"
        }

        md += "## Data checked\n\n"
        let checked = conditions.reduce(0) { $0 + $1.rounds.count }
        md += "After the fill and after every one of the \(checked) resumes and relaunches: every one of the \(dataset.keys) keys read back and compared byte for byte with its value rebuilt from the seed, "
        md += "DBSIZE equal to \(dataset.keys) (so no key more), " + (digest == nil ? "" : "and DEBUG DIGEST equal to the digest after the fill. ")
        md += verdictAndNotes(dataIntact: dataIntact, dataLoss: dataLoss, notes: notes)
        return md
    }

    /// p50 of each measure and condition as a dot, with a bar from p50 to p99; log scale.
    func plots() -> [Plot] {
        let measured = conditions.filter(\.measured)
        guard !measured.isEmpty else { return [] }
        return [Plot.latencies(
            name: "redis", title: "redis-server \(redisVersion.split(separator: " ").first ?? ""), \(mib(datasetBytes)) RDB: time until it serves its data again (p50, bar to p99)",
            measures: ["first reply", "sample", "every key"],
            conditions: measured.map { Plot.Timed(name: $0.name, isResume: $0.kind == .resume, figures: [$0.readyMs, $0.sampleMs, $0.fullMs]) },
            series: ("resume", "relaunch"))]
    }
}
