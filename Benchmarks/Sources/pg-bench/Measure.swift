// The measurement: one cluster loaded with the seeded table, its index built, frozen by VACUUM,
// and prewarmed into shared buffers; every postgres process frozen (the cgroup freezer) and
// thawed, as is and after its memory cgroup was squeezed so that its pages went to swap; then
// restarted (a fast shutdown, started anew) with the page cache warm and cold. Each round opens
// its own connection after the thaw or the start, and times the first answer, a fixed set of
// point lookups by primary key (each row compared with its value rebuilt from the seed), and a
// full scan computing an aggregate over every byte of every row (compared with the value taken
// after the load).

import BenchSupport
import Glibc
import MemPressureSystem

struct Settings {
    var rounds: Int
    var datasetBytes: UInt64
    var lookups: Int
    var seed: UInt64
    var sharedBuffersMB: Int
    var binDirectory: String
    var scratch: String
    var quick: Bool
    var swap: Bool
    var command: String
}

/// The full scan's answer: the number of rows, the sum of their ids, and the sum over every
/// row of the first 60 bits of md5(id as 8 bytes ‖ payload).
struct Aggregate: Codable, Sendable, Equatable {
    var rows: String
    var idSum: String
    var md5Sum: String
}

final class Bench: ProgramBench {
    let settings: Settings
    let dataset: Dataset
    /// The ids the point lookups read, in order.
    let sample: [Int]
    let killSwitch: KillSwitch
    let cluster: Cluster
    private var postmaster: Postmaster?
    /// Every postmaster started, for its shared memory segment if it is killed.
    private var started: [Postmaster] = []
    private var cgroup: HarnessCgroup?
    private var runner: RoundRunner?
    private var reference: Aggregate?
    private var heapFiles: [String] = []
    /// Whether pg_buffercache counts shared buffers.
    private var bufferCache = false
    private var notes: [String] = []
    let tool = "pg-bench"
    let table = "accounts"

    init(settings: Settings, killSwitch: KillSwitch) throws {
        self.settings = settings
        self.killSwitch = killSwitch
        dataset = Dataset(seed: settings.seed, targetBytes: settings.datasetBytes)
        sample = dataset.sample(settings.lookups)
        cluster = Cluster(binDirectory: settings.binDirectory, directory: "\(settings.scratch)/mempressure-pg-bench-\(getpid())", sharedBuffersMB: settings.sharedBuffersMB)
        try cluster.makeDirectory()
    }

    /// Kills every postgres process (through its cgroup, thawed), reaps them, removes the
    /// shared memory segment of a killed postmaster, the cgroup, the swap file and the scratch
    /// directory (cluster, socket, logs). Runs however the measurement ended.
    func cleanup() {
        killSwitch.arm(action: nil)
        if let cgroup, !cgroup.killAll() {
            log(tool, "some postgres processes outlived SIGKILL in \(cgroup.path)")
        }
        postmaster?.process.kill()
        postmaster = nil
        for p in started {
            p.process.kill()  // reaped already unless it was killed just now
            if let id = p.sharedMemoryID { Cluster.removeSharedMemory(id: id, creator: p.process.pid) }
        }
        reapOrphans()
        cgroup?.remove()
        cgroup = nil
        runner?.removeSwap()
        removeTree(cluster.directory)
    }

    // MARK: The run

    func run() throws -> PgReport {
        let startedAt = monotonicSeconds()
        var machine = Machine.current(scratch: settings.scratch)
        let progress = Progress(tool, total: 2 + 4 * settings.rounds)

        if let reason = HarnessCgroup.unavailableReason(freezer: true) {
            throw BenchError("pg-bench stops postgres as a whole through a cgroup of its own, and there can be none: \(reason)")
        }
        let group = try HarnessCgroup(name: "mempressure-pg-bench-\(getpid())", owner: "postgres", tool: tool, freezer: true)
        cgroup = group
        killSwitch.arm { group.killAll() }

        progress.doing("initdb, starting postgres")
        try cluster.initdb()
        try start()
        var c = try connect()
        try checkConfiguration(c)
        let version = c.serverVersion
        try load(c)
        c.close()
        progress.step()

        // The dataset as written is the dataset we meant: every row, byte for byte; then the
        // aggregate the full scans must give again; then the table and index into shared buffers.
        progress.doing("checking every row, prewarming shared buffers")
        c = try connect()
        try checkEveryRow(c)
        reference = try fullScan(c, during: "after the load")
        let sizes = try c.query("SELECT pg_relation_size('\(table)'), pg_indexes_size('\(table)'), pg_total_relation_size('\(table)'), pg_relation_filepath('\(table)'), coalesce(pg_relation_size(reltoastrelid), 0) FROM pg_class WHERE relname = '\(table)'")
        let tableBytes = UInt64(sizes.text(0, 0)) ?? 0
        let indexBytes = UInt64(sizes.text(0, 1)) ?? 0
        let totalBytes = UInt64(sizes.text(0, 2)) ?? 0
        heapFiles = try cluster.relationFiles(sizes.text(0, 3))
        if sizes.text(0, 4) != "0" { notes.append("the table has a TOAST relation of \(sizes.text(0, 4)) bytes: some rows were stored out of line") }
        try c.query("CREATE EXTENSION pg_prewarm")
        try c.query("SELECT pg_prewarm('\(table)'), pg_prewarm('\(table)_pkey')")
        bufferCache = try installBufferCache(c)
        let buffered = try bufferedPages(c)
        c.close()
        if !settings.quick && tableBytes < 256 << 20 {
            notes.append("the table is \(ByteFormat.human(tableBytes)) on disk, less than the 256 MiB the full run is meant to have (--dataset-mb)")
        }
        let wanted = (tableBytes + indexBytes) / 8192
        if let buffered, buffered < wanted {
            notes.append("after pg_prewarm, shared buffers held \(buffered) of the \(wanted) pages of the table and its index: shared_buffers is too small for them (--shared-buffers-mb)")
        }
        progress.step()
        log(tool, "dataset: \(dataset.keys) rows, \(ByteFormat.human(dataset.valueBytes)) of payload; table \(ByteFormat.human(tableBytes)), index \(ByteFormat.human(indexBytes)) on disk; cgroup usage \(ByteFormat.human(try group.usageBytes()))")

        var conditions: [Condition] = []
        let runner = RoundRunner(tool: tool, rounds: settings.rounds, progress: progress)
        self.runner = runner

        // Resume, as it was.
        var plain = Condition(name: "resume", kind: .resume, description: "every postgres process frozen while idle (cgroup freezer), shared buffers holding the table and its index; thawed")
        try runner.run(&plain, "resume") { try resumeRound(squeeze: false) }
        conditions.append(plain)

        // Resume after its pages went to swap.
        var swapped = Condition(name: "resume-after-swap", kind: .resume, description: "frozen; its memory cgroup squeezed until its pages (shared buffers included) went to swap (a temporary swap file); the limit lifted; thawed")
        try runner.runWithSwap(&swapped, "resume after swap", unavailable: settings.swap ? nil : "--no-swap was given", path: "\(cluster.directory)/swapfile", bytes: max(256 << 20, try group.usageBytes() * 3 / 2 + (64 << 20))) {
            try resumeRound(squeeze: true)
        }
        conditions.append(swapped)

        // Restart, page cache warm and cold, interleaved (the order alternating).
        var warm = Condition(name: "restart-warm", kind: .relaunch, description: "a fast shutdown (SIGINT to the postmaster), then postgres started anew: shared buffers empty, the cluster's files in the page cache (read just before)")
        var cold = Condition(name: "restart-cold", kind: .relaunch, description: "as warm, but every file of the cluster dropped from the page cache first (fsync, then posix_fadvise DONTNEED, file by file; never the machine's caches)")
        try runner.interleave(warm: &warm, cold: &cold, "restart") { try restartRound(cold: $0) }
        conditions += [warm, cold]
        if let p = postmaster {
            _ = try cluster.shutdownFast(p)
            postmaster = nil
        }
        if let bad = cold.rounds.first(where: { ($0.tableResidentPercent ?? 0) > 10 }) {
            notes.append("the cold condition did not empty the page cache of the table (\(ByteFormat.fixed(bad.tableResidentPercent ?? 0, 1))% resident at the start): the file system at \(settings.scratch) may not drop its pages (tmpfs keeps them)")
        }

        machine.loadAverageAtEnd = Machine.loadAverage()
        let resume = Percentiles(plain.rounds.map(\.lookupsMs))
        let relaunch = Percentiles(warm.rounds.map(\.lookupsMs))
        return PgReport(
            command: settings.command, quick: settings.quick, machine: machine, postgresVersion: version,
            settings: cluster.settings, datasetBytes: totalBytes, tableBytes: tableBytes, indexBytes: indexBytes,
            dataset: dataset, bufferedPagesAfterPrewarm: buffered, sharedBuffersBytes: UInt64(settings.sharedBuffersMB) << 20, lookups: sample.count,
            roundsPerCondition: settings.rounds, reference: reference!,
            resumeMs: resume, relaunchMs: relaunch, ratio: resume.ratio(to: relaunch),
            dataIntact: runner.loss == nil, dataLoss: runner.loss, conditions: conditions, notes: notes,
            totalSeconds: monotonicSeconds() - startedAt)
    }

    // MARK: The server

    func start() throws {
        guard let cgroup else { throw BenchError("no cgroup") }
        let p = try cluster.start(in: cgroup)
        postmaster = p
        started.append(p)
    }

    /// A new connection (one per measurement).
    func connect(timeout: Double = 120) throws -> PgConnection {
        try PgConnection(socketDirectory: cluster.directory, port: cluster.port, user: cluster.user, database: "postgres", deadline: monotonicSeconds() + timeout)
    }

    /// The settings the measurement depends on are what the server shows.
    func checkConfiguration(_ c: PgConnection) throws {
        for s in cluster.settings {
            let shown = try c.query("SHOW \(s.name)").text(0, 0)
            guard shown == s.value else { throw BenchError("postgres shows \(s.name) = '\(shown)', not '\(s.value)'") }
        }
    }

    /// Makes pg_buffercache (contrib) available to count shared buffers; false (and a note)
    /// without it.
    func installBufferCache(_ c: PgConnection) throws -> Bool {
        do {
            try c.query("CREATE EXTENSION pg_buffercache")
            return true
        } catch {
            notes.append("pg_buffercache is not available (\(error)): shared buffers were not counted")
            return false
        }
    }

    /// Pages of the table and its index (their main forks) in shared buffers, by pg_buffercache;
    /// nil without it.
    func bufferedPages(_ c: PgConnection) throws -> UInt64? {
        guard bufferCache else { return nil }
        let r = try c.query("SELECT count(*) FROM pg_buffercache WHERE reldatabase = (SELECT oid FROM pg_database WHERE datname = current_database()) AND relforknumber = 0 AND relfilenode IN (pg_relation_filenode('\(table)'), pg_relation_filenode('\(table)_pkey'))")
        return UInt64(r.text(0, 0))
    }

    // MARK: The dataset

    /// The table (id bigint, payload bytea), filled by one binary COPY in the transaction that
    /// created it; then its primary key, VACUUM (FREEZE, ANALYZE) so that no later read sets a
    /// hint bit or freezes a row (no page dirtied by the measurement), and a checkpoint.
    func load(_ c: PgConnection) throws {
        let batch = 1000
        let progress = Progress(tool, total: (dataset.keys + batch - 1) / batch + 1)
        progress.doing("loading \(dataset.keys) rows (\(ByteFormat.human(dataset.valueBytes)) of payload)")
        try c.query("BEGIN")
        try c.query("CREATE TABLE \(table) (id bigint NOT NULL, payload bytea NOT NULL)")
        var next = 0
        var header: [UInt8]? = Array("PGCOPY\n".utf8) + [0xff, 13, 10, 0] + [0, 0, 0, 0] + [0, 0, 0, 0]
        var trailerSent = false
        try c.copyIn("COPY \(table) FROM STDIN (FORMAT binary)") {
            try Task.checkCancellation()
            guard next < dataset.keys else {
                if trailerSent { return nil }
                trailerSent = true
                return [0xff, 0xff]
            }
            var out = header ?? []
            header = nil
            out.reserveCapacity(batch * 1600)
            for id in next..<min(next + batch, dataset.keys) {
                out += [0, 2, 0, 0, 0, 8]
                withUnsafeBytes(of: Int64(id).bigEndian) { out.append(contentsOf: $0) }
                withUnsafeBytes(of: Int32(dataset.valueLength(id)).bigEndian) { out.append(contentsOf: $0) }
                dataset.appendValue(id, to: &out)
            }
            next = min(next + batch, dataset.keys)
            progress.step()
            return out
        }
        try c.query("COMMIT")
        progress.doing("building the primary key, VACUUM (FREEZE, ANALYZE), CHECKPOINT")
        try c.query("ALTER TABLE \(table) ADD PRIMARY KEY (id)")
        try c.query("VACUUM (FREEZE, ANALYZE) \(table)")
        try c.query("CHECKPOINT")
        progress.step()
    }

    /// Every row read back (single-row mode, binary) and compared with its value rebuilt from
    /// the seed; every id exactly once.
    func checkEveryRow(_ c: PgConnection) throws {
        var seen = [Bool](repeating: false, count: dataset.keys)
        var count = 0
        try c.forEachRow("SELECT id, payload FROM \(table)", binary: true) { r in
            let id = try r.int64(0, 0)
            guard id >= 0, id < dataset.keys else { throw DataLoss(description: "a row with id \(id), which the dataset does not have") }
            guard !seen[Int(id)] else { throw DataLoss(description: "id \(id) is in the table twice") }
            seen[Int(id)] = true
            guard r.withBytes(0, 1, { dataset.matches(Int(id), $0) }) else {
                throw DataLoss(description: "row \(id) holds \(r.withBytes(0, 1) { $0.count }) bytes that are not its payload (\(dataset.valueLength(Int(id))) bytes from seed \(dataset.seed))")
            }
            count += 1
        }
        guard count == dataset.keys else { throw DataLoss(description: "the table has \(count) rows after the load, expected \(dataset.keys)") }
    }

    /// The point lookups, one statement each (the primary key's index), each row compared.
    func lookUp(_ c: PgConnection) throws {
        for id in sample {
            let r = try c.query("SELECT payload FROM \(table) WHERE id = $1", int64: [Int64(id)], binary: true)
            guard r.rows == 1 else { throw DataLoss(description: "SELECT of id \(id) found \(r.rows) rows") }
            guard r.withBytes(0, 0, { dataset.matches(id, $0) }) else {
                throw DataLoss(description: "row \(id) holds \(r.withBytes(0, 0) { $0.count }) bytes that are not its payload (\(dataset.valueLength(id)) bytes from seed \(dataset.seed))")
            }
        }
    }

    /// The full scan: one aggregate over every byte of every row. Checked against the dataset
    /// (count, sum of ids) and, once taken, the reference.
    func fullScan(_ c: PgConnection, during: String) throws -> Aggregate {
        let r = try c.query("SELECT count(*), sum(id), sum(('x' || substr(md5(int8send(id) || payload), 1, 15))::bit(60)::bigint) FROM \(table)")
        let a = Aggregate(rows: r.text(0, 0), idSum: r.text(0, 1), md5Sum: r.text(0, 2))
        let n = UInt64(dataset.keys)
        guard a.rows == "\(n)" else { throw DataLoss(description: "count(*) \(during) is \(a.rows), expected \(n)") }
        guard a.idSum == "\(n * (n - 1) / 2)" else { throw DataLoss(description: "sum(id) \(during) is \(a.idSum), expected \(n * (n - 1) / 2)") }
        if let reference, a != reference {
            throw DataLoss(description: "the md5 aggregate over every row \(during) is \(a.md5Sum), after the load it was \(reference.md5Sum)")
        }
        return a
    }

    // MARK: Rounds

    /// Freeze, (squeeze to swap,) thaw; then a new connection, the lookups, the full scan.
    func resumeRound(squeeze: Bool) throws -> RoundResult {
        try Task.checkCancellation()
        guard let cgroup else { throw BenchError("no cgroup") }
        var r = RoundResult()
        try cgroup.freeze()
        let members = try cgroup.members()
        r.processes = members.count
        r.usageBytesBefore = try cgroup.usageBytes()
        if squeeze, let swap = runner?.swap {
            let t = monotonicSeconds()
            r.limitBytes = try cgroup.squeeze(floor: 8 << 20)
            r.squeezeMs = (monotonicSeconds() - t) * 1000
            r.usageBytesStopped = try cgroup.usageBytes()
            r.swappedBytes = try swapUsedBytes(swap.path)
            try cgroup.removeLimit()
        }
        let before = try counters(members)
        let t0 = monotonicSeconds()
        try cgroup.thaw()
        try measure(from: t0, before: before, into: &r, during: "after resume")
        return r
    }

    /// Fast shutdown, (drop the cluster's files from the page cache, or read them all,) start;
    /// then a new connection, the lookups, the full scan.
    func restartRound(cold: Bool) throws -> RoundResult {
        try Task.checkCancellation()
        var r = RoundResult()
        if let p = postmaster {
            r.shutdownMs = try cluster.shutdownFast(p) * 1000
            postmaster = nil
        }
        if cold { try dropPageCache(tree: cluster.dataDirectory) } else { try readWhole(tree: cluster.dataDirectory) }
        var resident = 0
        var total = 0
        for f in heapFiles {
            let (a, b) = try residentPages(f)
            resident += a
            total += b
        }
        r.tableResidentPercent = total > 0 ? Double(resident) * 100 / Double(total) : 0
        try start()
        guard let p = postmaster else { throw BenchError("postgres did not start") }
        r.acceptingMs = (p.readyAt - p.process.spawnedAt) * 1000
        try measure(from: p.process.spawnedAt, before: [:], into: &r, during: "after restart")
        return r
    }

    func measure(from t0: Double, before: [Int32: Counters], into r: inout RoundResult, during: String) throws {
        guard let cgroup else { throw BenchError("no cgroup") }
        let c = try connect()
        defer { c.close() }
        guard try c.query("SELECT 1").text(0, 0) == "1" else { throw BenchError("postgres answered SELECT 1 with something else \(during)") }
        r.readyMs = (monotonicSeconds() - t0) * 1000
        try lookUp(c)
        r.lookupsMs = (monotonicSeconds() - t0) * 1000
        let mid = try counters(try cgroup.members())
        r.majorFaultsToLookups = Counters.delta(mid, before).major
        _ = try fullScan(c, during: during)
        r.fullMs = (monotonicSeconds() - t0) * 1000
        let after = try counters(try cgroup.members())
        let d = Counters.delta(after, before)
        r.majorFaults = d.major
        r.minorFaults = d.minor
        r.readBytes = d.readBytes
        r.usageBytesAfter = try cgroup.usageBytes()
        r.bufferedPagesAfter = try bufferedPages(c)
    }

    /// Page faults and storage reads of each process (/proc/PID/stat, /proc/PID/io); a process
    /// gone meanwhile is left out.
    func counters(_ pids: [Int32]) throws -> [Int32: Counters] {
        var out: [Int32: Counters] = [:]
        for pid in pids {
            do {
                let s = try readStat(pid)
                let io = try ProcFS.readBytes("/proc/\(pid)/io").withUnsafeBytes { ProcessIO.parse($0) }
                out[pid] = Counters(minor: s.minorFaults, major: s.majorFaults, readBytes: io.readBytes)
            } catch {
                continue  // exited since the list was read
            }
        }
        return out
    }

    /// What our swap file holds now (/proc/swaps, Used in KiB).
    func swapUsedBytes(_ path: String) throws -> UInt64 {
        let text = String(decoding: try ProcFS.readBytes("/proc/swaps"), as: UTF8.self)
        for line in text.split(separator: "\n").dropFirst() {
            let f = line.split(whereSeparator: { $0 == " " || $0 == "\t" })
            if f.count >= 4, f[0] == path, let used = UInt64(f[3]) { return used * 1024 }
        }
        throw BenchError("\(path) is not in /proc/swaps")
    }
}

/// Page faults and bytes read from storage of one process.
struct Counters {
    var minor: UInt64
    var major: UInt64
    var readBytes: UInt64

    /// Summed over the processes of `after`: what each did since `before` (from zero for a
    /// process that was not there before: a new backend, or every process after a restart).
    static func delta(_ after: [Int32: Counters], _ before: [Int32: Counters]) -> Counters {
        var d = Counters(minor: 0, major: 0, readBytes: 0)
        for (pid, a) in after {
            let b = before[pid] ?? Counters(minor: 0, major: 0, readBytes: 0)
            d.minor += a.minor &- b.minor
            d.major += a.major &- b.major
            d.readBytes += a.readBytes &- b.readBytes
        }
        return d
    }
}
