import BenchSupport
import Foundation
import MemPressureSystem

/// One freeze-and-thaw or one fast shutdown and start. Times from the thaw, or from posix_spawn
/// of the postmaster.
struct RoundResult: Codable, Sendable {
    /// Until the first answer: a new connection made and `SELECT 1` answered.
    var readyMs = 0.0
    /// Until the point lookups were answered, one statement each, and every row checked.
    var lookupsMs = 0.0
    /// Until the full scan's aggregate over every row was answered and checked.
    var fullMs = 0.0
    /// Page faults and bytes read from storage (/proc/PID/stat majflt and minflt, /proc/PID/io
    /// read_bytes) of every postgres process in the cgroup at the end (the postmaster, its
    /// auxiliary processes and the measuring backend), over the same span; major faults also
    /// until the lookups were done.
    var majorFaults: UInt64 = 0
    var minorFaults: UInt64 = 0
    var majorFaultsToLookups: UInt64 = 0
    var readBytes: UInt64 = 0
    /// The memory cgroup's usage (its processes' memory, shared buffers and the page cache they
    /// brought in) when frozen (resume), and at the end.
    var usageBytesBefore: UInt64?
    var usageBytesAfter: UInt64?
    /// Resume: the processes frozen.
    var processes: Int?
    /// Resume after swap: the usage once squeezed, the limit reached, what the swap file held,
    /// how long the squeeze took.
    var usageBytesStopped: UInt64?
    var limitBytes: UInt64?
    var swappedBytes: UInt64?
    var squeezeMs: Double?
    /// Restart: until postmaster.pid said "ready" (accepting connections), from posix_spawn.
    var acceptingMs: Double?
    /// Restart: how long the fast shutdown before it took.
    var shutdownMs: Double?
    /// Restart: the share of the table's file in the page cache at the start (mincore).
    var tableResidentPercent: Double?
    /// Pages of the table and its index in shared buffers at the end (pg_buffercache).
    var bufferedPagesAfter: UInt64?
}

typealias Condition = BenchCondition<RoundResult>

extension BenchCondition where Round == RoundResult {
    var readyMs: Percentiles { percentiles(\.readyMs) }
    var lookupsMs: Percentiles { percentiles(\.lookupsMs) }
    var fullMs: Percentiles { percentiles(\.fullMs) }
}

struct PgReport: RenderedReport, Sendable {
    var formatVersion = 1
    var command: String
    var quick: Bool
    var machine: Machine
    var postgresVersion: String
    var settings: [ServerSetting]
    /// The table with its index on disk (pg_total_relation_size).
    var datasetBytes: UInt64
    var tableBytes: UInt64
    var indexBytes: UInt64
    /// The rows: `keys` of them (ids 0 ..< keys), `valueBytes` of payload.
    var dataset: Dataset
    /// Pages of the table and its index in shared buffers after pg_prewarm (pg_buffercache).
    var bufferedPagesAfterPrewarm: UInt64?
    var sharedBuffersBytes: UInt64
    var lookups: Int
    var roundsPerCondition: Int
    /// The full scan's answer after the load.
    var reference: Aggregate
    /// Resume (hot shared buffers): the thaw until the lookups were answered and checked.
    var resumeMs: Percentiles
    /// Restart (page cache warm, shared buffers empty): posix_spawn until the same.
    var relaunchMs: Percentiles
    /// resumeMs / relaunchMs, figure by figure.
    var ratio: Percentiles?
    /// Every row checked after the load; the lookups and the aggregate right after every round.
    var dataIntact: Bool
    var dataLoss: String?
    var conditions: [Condition]
    var notes: [String]
    var totalSeconds: Double

    func markdown() -> String {
        var md = "# PostgreSQL: resume after the freezer against a restart\n\n"
        md += regenerateLines(command: command, totalSeconds: totalSeconds, quick: quick, json: "postgres.json")
        md += "\n" + machine.summary
        md += "PostgreSQL \(postgresVersion), Debian's package: a cluster of the benchmark's own (initdb in \(machine.scratch), \(machine.scratchFileSystem)), its postmaster a child of the benchmark running as the postgres user, in a memory cgroup and a freezer cgroup of the benchmark's own, listening on a UNIX socket only.\n\n"

        md += "## Settings\n\n"
        md += "Given on the postmaster's command line (`-c`), and checked with `SHOW` before the load:\n\n"
        md += "| setting | value | why |\n|---|---|---|\n"
        for s in settings { md += "| `\(s.name)` | `\(s.value.isEmpty ? "''" : s.value)` | \(s.why) |\n" }
        md += "\n"

        md += "## The dataset\n\n"
        md += "`accounts (id bigint PRIMARY KEY, payload bytea)`: \(dataset.keys) rows, each payload \(Dataset.shortestValue)–\(Dataset.shortestValue + Dataset.valueSpread - 1) random bytes from seed \(dataset.seed) "
        md += "(\(mib(dataset.valueBytes)) of payload, stored in line: no row reaches the TOAST threshold), so every row can be rebuilt and compared. "
        md += "Loaded by one binary COPY, then the primary key, `VACUUM (FREEZE, ANALYZE)` (no later read sets a hint bit: the measurements dirty no page) and a checkpoint. "
        md += "On disk: table **\(mib(tableBytes))**, index \(mib(indexBytes)), \(mib(datasetBytes)) with both. "
        if let b = bufferedPagesAfterPrewarm {
            md += "After `pg_prewarm` of both, shared buffers held \(b) of their \((tableBytes + indexBytes) / 8192) pages (pg_buffercache). "
        }
        md += "The full scan's aggregate after the load: \(reference.rows) rows, sum(id) \(reference.idSum), sum of md5-derived values `\(reference.md5Sum)`.\n\n"

        md += "## Resume against restart\n\n"
        md += "Time until postgres served its data again: from the thaw (resume) or from posix_spawn of the postmaster (restart) until a new connection had answered and \(lookups) point lookups by primary key, spread over the table, had been answered one statement at a time and every row compared. "
        md += "Resume: shared buffers hot; restart: shared buffers empty, the cluster's files in the page cache. \(roundsPerCondition) rounds each; milliseconds.\n\n"
        md += "| | p50 | p90 | p99 |\n|---|---:|---:|---:|\n"
        md += "| resume | \(ms(resumeMs.p50)) | \(ms(resumeMs.p90)) | \(ms(resumeMs.p99)) |\n"
        md += "| restart | \(ms(relaunchMs.p50)) | \(ms(relaunchMs.p90)) | \(ms(relaunchMs.p99)) |\n"
        if let r = ratio { md += "| resume / restart | \(ratioText(r.p50)) | \(ratioText(r.p90)) | \(ratioText(r.p99)) |\n" }
        md += "\n"

        md += "## Every condition\n\n"
        md += "p50 / p90 / p99 in milliseconds, from the thaw or from posix_spawn: until the first answer (a new connection over the UNIX socket and `SELECT 1`), until the \(lookups) lookups were answered and checked, and until the full scan (one aggregate over every byte of every row: `sum(('x' || substr(md5(int8send(id) || payload), 1, 15))::bit(60)::bigint)`, with count(*) and sum(id)) was answered and checked. "
        md += "Most of the full scan is md5 over every byte of the table, CPU work that is the same in every condition; what differs between them is where its pages come from: shared buffers (resume), swap, the page cache or the disk. "
        md += "Page faults and reads from storage are those of every postgres process in the cgroup at the end (the postmaster, its auxiliary processes, the measuring backend; /proc/PID/stat majflt and minflt, /proc/PID/io read_bytes, which counts reads that missed the page cache and swap-ins) over the same span, medians.\n\n"
        md += "| condition | rounds | first answer | \(lookups) lookups | full scan | major faults | minor faults | read from storage |\n|---|---:|---:|---:|---:|---:|---:|---:|\n"
        md += conditions.conditionRows(columns: 8) { c in
            [triple(c.readyMs), triple(c.lookupsMs), triple(c.fullMs), ByteFormat.fixed(median(c.rounds.map { Double($0.majorFaults) }), 0), ByteFormat.fixed(median(c.rounds.map { Double($0.minorFaults) }), 0), mib(UInt64(median(c.rounds.map { Double($0.readBytes) })))]
        }
        md += "\n![p50 with a bar to p99, every condition and measure](postgres.svg)\n\n"

        let restarts = conditions.filter { $0.kind == .relaunch && $0.measured }
        md += conditions.ratiosSection(relaunch: "restart", measures: [("first answer", \.readyMs), ("lookups", \.lookupsMs), ("full scan", \.fullMs)])

        if let s = conditions.named("resume-after-swap") {
            md += s.swapSection { rs in
                func med(_ f: (RoundResult) -> Double?) -> Double { median(rs.compactMap(f)) }
                var md = "While postgres was frozen (\(ByteFormat.fixed(med { $0.processes.map { Double($0) } }, 0)) processes) its memory cgroup's limit was lowered in 16 steps from its usage towards 8 MiB, the kernel reclaiming at each (a step it answered EBUSY was tried again for up to 0.5 s): the page cache it had brought in was dropped and its memory, shared buffers included, went to the swap file. Then the limit was lifted and postgres thawed, faulting its pages back in from swap as it touched them. Medians over \(rs.count) rounds:\n\n"
                md += "| cgroup usage when frozen | limit reached | in the swap file | usage once squeezed | squeeze took | major faults until the lookups | major faults, full scan included | usage after |\n|---:|---:|---:|---:|---:|---:|---:|---:|\n"
                md += "| \(mib(UInt64(med { $0.usageBytesBefore.map { Double($0) } }))) | \(mib(UInt64(med { $0.limitBytes.map { Double($0) } }))) | \(mib(UInt64(med { $0.swappedBytes.map { Double($0) } }))) | \(mib(UInt64(med { $0.usageBytesStopped.map { Double($0) } }))) | \(ms(med { $0.squeezeMs })) ms | \(ByteFormat.fixed(med { Double($0.majorFaultsToLookups) }, 0)) | \(ByteFormat.fixed(med { Double($0.majorFaults) }, 0)) | \(mib(UInt64(med { $0.usageBytesAfter.map { Double($0) } }))) |\n\n"
                return md
            }
        }

        if !restarts.isEmpty {
            md += "## Restart, shared buffers and the page cache\n\n"
            md += "The share of the table's file in the page cache when postgres was started (mincore), median (min–max): "
            md += restarts.residency(\.tableResidentPercent)
            md += ". Of the time to the first answer, the postmaster took until postmaster.pid said `ready` (it accepts connections: what `pg_ctl -w` waits for, polled every 0.5 ms), p50 / p90 / p99 ms: "
            md += restarts.map { "\($0.name) \(triple(Percentiles($0.rounds.compactMap(\.acceptingMs))))" }.joined(separator: "; ")
            md += ". The fast shutdown before each restart (not counted) took "
            md += restarts.map { "\(triple(Percentiles($0.rounds.compactMap(\.shutdownMs)))) ms (\($0.name))" }.joined(separator: ", ")
            md += ". "
            let pages = (tableBytes + indexBytes) / 8192
            let buffered = conditions.filter(\.measured).compactMap { c -> String? in
                let b = c.rounds.compactMap(\.bufferedPagesAfter)
                return b.isEmpty ? nil : "\(c.name) \(ByteFormat.fixed(median(b.map { Double($0) }), 0))"
            }
            if !buffered.isEmpty {
                md += "Pages of the table and its index in shared buffers at the end of a round (pg_buffercache; \(pages) pages in all), medians: " + buffered.joined(separator: "; ") + ". "
            }
            md += "After a restart the lookups read their index and table pages into shared buffers one by one. "
            if tableBytes > sharedBuffersBytes / 4 {
                md += "The full scan does not fill them: a sequential scan of a table larger than a quarter of shared buffers reads through a ring of 256 KiB (PostgreSQL's bulk-read strategy), so each restart's full scan reads the whole table again, from the page cache (warm) or from the disk (cold), and a server that restarts stays cold for scans until something else (pg_prewarm) loads its buffers. "
            } else {
                md += "The table is no larger than a quarter of shared buffers, so the full scan reads it into them (no bulk-read ring). "
            }
            md += "Cold drops only the cluster's files (fsync, then posix_fadvise DONTNEED), never the machine's caches; postgres's own binary and libraries stay cached.\n\n"
        }

        md += "## Data checked\n\n"
        let checked = conditions.reduce(0) { $0 + $1.rounds.count }
        md += "After the load every one of the \(dataset.keys) rows was read back and compared byte for byte with its payload rebuilt from the seed, every id exactly once. "
        md += "After every one of the \(checked) resumes and restarts: each of the \(lookups) rows looked up compared byte for byte, and the full scan's count(*), sum(id) and md5 aggregate over every row equal to those after the load. "
        md += verdictAndNotes(dataIntact: dataIntact, dataLoss: dataLoss, notes: notes)
        return md
    }

    /// p50 of each measure and condition as a dot, with a bar from p50 to p99; log scale.
    func plots() -> [Plot] {
        let measured = conditions.filter(\.measured)
        guard !measured.isEmpty else { return [] }
        return [Plot.latencies(
            name: "postgres", title: "PostgreSQL \(postgresVersion.split(separator: " ").first ?? ""), \(mib(datasetBytes)) table and index: time until it serves its data again (p50, bar to p99)",
            measures: ["first answer", "\(lookups) lookups", "full scan"],
            conditions: measured.map { Plot.Timed(name: $0.name, isResume: $0.kind == .resume, figures: [$0.readyMs, $0.lookupsMs, $0.fullMs]) },
            series: ("resume", "restart"))]
    }
}
