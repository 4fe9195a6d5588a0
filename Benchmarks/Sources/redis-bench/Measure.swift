// The measurement: one redis-server filled with the dataset and saved to its RDB file, stopped
// and resumed (as is, then after its memory cgroup was squeezed so its pages went to swap);
// then killed and relaunched on the same RDB file (page cache warm, then cold). After each
// resume and each relaunch every key is read back and compared, DBSIZE and DEBUG DIGEST checked.

import BenchSupport
import Glibc
import MemPressureSystem
import SystemPackage

struct Settings {
    var rounds: Int
    var datasetBytes: UInt64
    var sampleKeys: Int
    var seed: UInt64
    var redisServer: String
    var scratch: String
    var quick: Bool
    var swap: Bool
    var command: String
}

final class Bench: ProgramBench {
    let settings: Settings
    let dataset: Dataset
    let sample: [Int]
    let dir: String
    let killSwitch: KillSwitch
    private var server: RedisServer?
    private var cgroup: HarnessCgroup?
    private var runner: RoundRunner?
    private var referenceDigest: String?
    private var digestNote: String?
    private var notes: [String] = []
    var rdbPath: String { "\(dir)/dump.rdb" }
    var socketPath: String { "\(dir)/redis.sock" }
    var logPath: String { "\(dir)/redis.log" }
    let tool = "redis-bench"

    init(settings: Settings, killSwitch: KillSwitch) throws {
        self.settings = settings
        self.killSwitch = killSwitch
        dataset = Dataset(seed: settings.seed, targetBytes: settings.datasetBytes)
        sample = dataset.sample(settings.sampleKeys)
        dir = "\(settings.scratch)/mempressure-redis-bench-\(getpid())"
        guard mkdir(dir, 0o700) == 0 else {
            throw BenchError("cannot make the scratch directory \(dir): \(String(cString: strerror(errno)))")
        }
    }

    /// Kills and reaps redis, removes the cgroup, turns the swap file off and deletes it, and
    /// deletes the scratch directory (RDB, socket, log). Runs however the measurement ended.
    func cleanup() {
        if let server {
            server.kill()
            killSwitch.arm(nil)
            self.server = nil
        }
        cgroup?.remove()
        cgroup = nil
        runner?.removeSwap()
        removeTree(dir)
    }

    // MARK: The run

    func run() throws -> RedisReport {
        let started = monotonicSeconds()
        var machine = Machine.current(scratch: settings.scratch)
        let progress = Progress(tool, total: 1 + 4 * settings.rounds)

        // Launch (in a memory cgroup of its own when the machine has one) and fill.
        var swapUnavailable: String? = settings.swap ? HarnessCgroup.unavailableReason() : "--no-swap was given"
        if swapUnavailable == nil {
            do {
                cgroup = try HarnessCgroup(name: "mempressure-redis-bench-\(getpid())", owner: "redis", tool: tool)
            } catch {
                swapUnavailable = "no memory cgroup: \(error)"
            }
        }
        progress.doing("starting redis-server and filling it with \(dataset.keys) keys (\(ByteFormat.human(dataset.valueBytes)))")
        let first = try launch(cgroupProcs: cgroup?.procsFile)
        let (connection, _) = try connectWhenReady(first, timeout: 60)
        if let cgroup {
            let inside = try first.memoryCgroup()
            guard let inside, cgroup.path.hasSuffix(inside) else {
                throw BenchError("redis-server (pid \(first.pid)) is in memory cgroup \(inside ?? "none"), not in \(cgroup.path)")
            }
        }
        try checkConfiguration(connection)
        let info = try connection.bulkText("INFO", "server")
        let redisVersion = infoField(info, "redis_version") ?? "unknown"
        let allocator = infoField(try connection.bulkText("INFO", "memory"), "mem_allocator") ?? "unknown"
        try fill(connection)
        switch try connection.call("DEBUG", "DIGEST") {
        case .status(let d):
            referenceDigest = d
        case .bulk(let bytes?):
            referenceDigest = String(decoding: bytes, as: UTF8.self)
        case let other:
            digestNote = "DEBUG DIGEST is not available (\(other.text)): the check rests on reading every key back"
        }
        try connection.expectStatus("OK", "SAVE")
        let rdbBytes = try fileSize(rdbPath)
        if !settings.quick && rdbBytes < 256 << 20 {
            notes.append("the RDB file is \(ByteFormat.human(rdbBytes)), less than the 256 MiB the full run is meant to have (--dataset-mb)")
        }
        let memoryInfo = try connection.bulkText("INFO", "memory")
        let usedMemory = UInt64(infoField(memoryInfo, "used_memory") ?? "") ?? 0
        let residentAfterFill = try first.status().residentBytes ?? 0
        // Once, before any timing: the dataset as written is the dataset we meant.
        try readEverything(connection)
        try checkCounts(connection, during: "after the fill")
        progress.step()
        log(tool, "dataset: \(dataset.keys) keys, \(ByteFormat.human(dataset.valueBytes)) of values, RDB file \(ByteFormat.human(rdbBytes)), redis RSS \(ByteFormat.human(residentAfterFill))")

        var conditions: [Condition] = []
        let runner = RoundRunner(tool: tool, rounds: settings.rounds, progress: progress)
        self.runner = runner

        // Resume, as it was.
        var plain = Condition(name: "resume", kind: .resume, description: "SIGSTOP, then SIGCONT: its pages stayed in memory")
        try runner.run(&plain, "resume") { try resumeRound(first, connection, squeeze: false) }
        conditions.append(plain)

        // Resume after its pages went to swap.
        var swapped = Condition(name: "resume-after-swap", kind: .resume, description: "SIGSTOP; its memory cgroup squeezed until its pages went to swap (a temporary swap file); the limit lifted; SIGCONT")
        try runner.runWithSwap(&swapped, "resume after swap", unavailable: swapUnavailable, path: "\(dir)/swapfile", bytes: max(256 << 20, residentAfterFill * 3 / 2 + (64 << 20))) {
            try resumeRound(first, connection, squeeze: true)
        }
        conditions.append(swapped)
        connection.close()
        first.kill()
        killSwitch.arm(nil)
        server = nil
        cgroup?.remove()
        cgroup = nil

        // Relaunch on the same RDB file, warm and cold, interleaved (the order alternating).
        var warm = Condition(name: "relaunch-warm", kind: .relaunch, description: "SIGKILL (pidfd); redis-server started anew on the RDB file, the file in the page cache (read just before)")
        var cold = Condition(name: "relaunch-cold", kind: .relaunch, description: "as warm, but the RDB file's pages dropped from the page cache first (posix_fadvise DONTNEED on that file alone)")
        try runner.interleave(warm: &warm, cold: &cold, "relaunch") { try relaunchRound(cold: $0) }
        conditions += [warm, cold]
        if let bad = cold.rounds.first(where: { ($0.rdbResidentPercent ?? 0) > 10 }) {
            notes.append("the cold condition did not empty the page cache of the RDB file (\(ByteFormat.fixed(bad.rdbResidentPercent ?? 0, 1))% resident at exec): the file system at \(settings.scratch) may not drop its pages (tmpfs keeps them)")
        }
        if let d = digestNote { notes.append(d) }
        notes.append("redis warns that vm.overcommit_memory is 0 on this machine; that matters only for BGSAVE's fork, which the benchmark never runs (SAVE is in the foreground, and saving is off: --save \"\")")

        machine.loadAverageAtEnd = Machine.loadAverage()
        let resume = Percentiles(plain.rounds.map(\.sampleMs))
        let relaunch = Percentiles(warm.rounds.map(\.sampleMs))
        return RedisReport(
            command: settings.command, quick: settings.quick, machine: machine,
            redisVersion: "\(redisVersion) (\(allocator))", datasetBytes: rdbBytes, dataset: dataset,
            usedMemoryBytes: usedMemory, residentBytesAfterFill: residentAfterFill, sampleKeys: sample.count,
            roundsPerCondition: settings.rounds, digest: referenceDigest,
            resumeMs: resume, relaunchMs: relaunch, ratio: resume.ratio(to: relaunch),
            dataIntact: runner.loss == nil, dataLoss: runner.loss, conditions: conditions, notes: notes,
            totalSeconds: monotonicSeconds() - started)
    }

    // MARK: Launching

    func launch(cgroupProcs: String?) throws -> RedisServer {
        unlink(socketPath)  // a killed redis leaves its socket behind; connecting must wait for the new one
        let args = [
            "--port", "0", "--unixsocket", socketPath, "--unixsocketperm", "700",
            "--dir", dir, "--dbfilename", "dump.rdb",
            "--save", "", "--appendonly", "no", "--daemonize", "no", "--supervised", "no",
            "--logfile", "", "--loglevel", "notice", "--enable-debug-command", "local",
        ]
        let s = try RedisServer(executable: settings.redisServer, arguments: args, socketPath: socketPath, logPath: logPath, cgroupProcs: cgroupProcs)
        server = s
        killSwitch.arm(s.handle)
        return s
    }

    /// Connects as soon as the socket is there, and PINGs until the answer is PONG (not
    /// LOADING). Returns the connection and when the PONG arrived.
    func connectWhenReady(_ server: RedisServer, timeout: Double) throws -> (RedisConnection, Double) {
        let deadline = monotonicSeconds() + timeout
        var connection: RedisConnection? = nil
        while true {
            try Task.checkCancellation()
            try server.checkAlive("before it answered PING")
            guard monotonicSeconds() < deadline else { throw BenchError("redis-server (pid \(server.pid)) did not answer PING within \(Int(timeout)) s; its log:\n\(server.logTail())") }
            if connection == nil { connection = try connectIfListening(server.socketPath) }
            guard let c = connection else {
                pause(0.0002)  // not listening yet
                continue
            }
            let reply: Reply
            do {
                reply = try c.call("PING")
            } catch {
                try server.checkAlive("while answering PING")
                throw error
            }
            if reply == .status("PONG") { return (c, monotonicSeconds()) }
            guard case .error(let e) = reply, e.hasPrefix("LOADING") else { throw BenchError("redis-server answered PING with \(reply.text)") }
            pause(0.0005)  // still loading the RDB file
        }
    }

    /// A connection, or nil while there is no socket yet or nothing listens on it.
    func connectIfListening(_ path: String) throws -> RedisConnection? {
        do {
            return try RedisConnection(path: path)
        } catch {
            if error.errno == .noSuchFileOrDirectory || error.errno == .connectionRefused { return nil }
            throw error
        }
    }

    /// The options that make the measurement what it claims: no saving, no AOF.
    func checkConfiguration(_ c: RedisConnection) throws {
        for (name, expected) in [("save", ""), ("appendonly", "no"), ("dbfilename", "dump.rdb")] {
            let r = try c.call("CONFIG", "GET", name)
            guard case .array(let items?) = r, items.count == 2, items[1] == .bulk(Array(expected.utf8)) else {
                throw BenchError("redis-server's \(name) is not \"\(expected)\" (CONFIG GET answered \(r))")
            }
        }
    }

    // MARK: The dataset

    func fill(_ c: RedisConnection) throws {
        let batch = 1000
        let progress = Progress(tool, total: (dataset.keys + batch - 1) / batch)
        progress.doing("filling redis with \(dataset.keys) keys")
        var out: [UInt8] = []
        out.reserveCapacity(batch * 1700)
        var i = 0
        while i < dataset.keys {
            try Task.checkCancellation()
            let n = min(batch, dataset.keys - i)
            out.removeAll(keepingCapacity: true)
            for k in i..<i + n {
                out += Array("*3\r\n$3\r\nSET\r\n$\(Dataset.keyLength)\r\n".utf8)
                dataset.appendKey(k, to: &out)
                out += Array("\r\n$\(dataset.valueLength(k))\r\n".utf8)
                dataset.appendValue(k, to: &out)
                out += [13, 10]
            }
            try c.send(out)
            for k in i..<i + n {
                let r = try c.reply()
                guard r == .status("OK") else { throw BenchError("SET \(dataset.keyText(k)): redis answered \(r.text)") }
            }
            i += n
            progress.step()
        }
    }

    /// GET of the sample, one key at a time (a client coming back to work), each value compared.
    func readSample(_ c: RedisConnection) throws {
        var out: [UInt8] = []
        for k in sample {
            out.removeAll(keepingCapacity: true)
            appendGet(k, to: &out)
            try c.send(out)
            try check(k, c)
        }
    }

    /// GET of every key, pipelined 256 at a time, each value compared.
    func readEverything(_ c: RedisConnection) throws {
        var out: [UInt8] = []
        let batch = 256
        var i = 0
        while i < dataset.keys {
            let n = min(batch, dataset.keys - i)
            out.removeAll(keepingCapacity: true)
            for k in i..<i + n { appendGet(k, to: &out) }
            try c.send(out)
            for k in i..<i + n { try check(k, c) }
            i += n
        }
    }

    private static let getPrefix = Array("*2\r\n$3\r\nGET\r\n$\(Dataset.keyLength)\r\n".utf8)

    func appendGet(_ k: Int, to out: inout [UInt8]) {
        out += Self.getPrefix
        dataset.appendKey(k, to: &out)
        out += [13, 10]
    }

    /// Reads the reply to GET of key `k` and compares it with the value.
    func check(_ k: Int, _ c: RedisConnection) throws {
        let found: Int? = try c.bulk { bytes in
            guard let bytes else { throw DataLoss(description: "key \(dataset.keyText(k)) is missing") }
            return dataset.matches(k, bytes) ? nil : bytes.count
        }
        if let found {
            throw DataLoss(description: "key \(dataset.keyText(k)) holds \(found) bytes that are not its value (\(dataset.valueLength(k)) bytes from seed \(dataset.seed))")
        }
    }

    /// DBSIZE is the number of keys (with every key read back, no key more, none less), and
    /// the digest of the whole dataset is the one taken after the fill.
    func checkCounts(_ c: RedisConnection, during: String) throws {
        let size = try c.call("DBSIZE")
        guard size == .integer(Int64(dataset.keys)) else { throw DataLoss(description: "DBSIZE \(during) is \(size.text), expected \(dataset.keys)") }
        guard let referenceDigest else { return }
        let r = try c.call("DEBUG", "DIGEST")
        let digest: String
        switch r {
        case .status(let d): digest = d
        case .bulk(let b?): digest = String(decoding: b, as: UTF8.self)
        default: throw BenchError("DEBUG DIGEST answered \(r.text) \(during), though it worked after the fill")
        }
        guard digest == referenceDigest else { throw DataLoss(description: "DEBUG DIGEST \(during) is \(digest), after the fill it was \(referenceDigest)") }
    }

    // MARK: Rounds

    /// Stop, (squeeze to swap,) continue; then time the first reply, the sample, every key.
    func resumeRound(_ server: RedisServer, _ c: RedisConnection, squeeze: Bool) throws -> RoundResult {
        try Task.checkCancellation()
        try server.stop()
        var r = RoundResult()
        let before = try server.status()
        r.residentBytesBefore = before.residentBytes
        if squeeze, let cgroup {
            let t = monotonicSeconds()
            r.limitBytes = try cgroup.squeeze(floor: 8 << 20)
            r.squeezeMs = (monotonicSeconds() - t) * 1000
            let after = try server.status()
            r.swappedBytes = after.swapBytes
            r.residentBytesStopped = after.residentBytes
            try cgroup.removeLimit()
        }
        let faults = try server.stat()
        let t0 = monotonicSeconds()
        try server.resume()
        let pong = try c.call("PING")
        guard pong == .status("PONG") else { throw BenchError("redis-server answered PING after SIGCONT with \(pong.text)") }
        r.readyMs = (monotonicSeconds() - t0) * 1000
        try readBack(server, c, from: t0, minorBefore: faults.minorFaults, majorBefore: faults.majorFaults, into: &r, during: "after resume")
        return r
    }

    /// Kill, (drop the RDB file's pages,) exec; then time the first PONG, the sample, every key.
    func relaunchRound(cold: Bool) throws -> RoundResult {
        try Task.checkCancellation()
        var r = RoundResult()
        if cold { try dropPageCache(rdbPath) } else { try readWhole(rdbPath) }
        r.rdbResidentPercent = try residentPercent(rdbPath)
        let s = try launch(cgroupProcs: nil)
        let (c, readyAt) = try connectWhenReady(s, timeout: 600)
        r.readyMs = (readyAt - s.spawnedAt) * 1000
        r.loadMs = try s.lastLoadSeconds().map { $0 * 1000 }
        try readBack(s, c, from: s.spawnedAt, minorBefore: 0, majorBefore: 0, into: &r, during: "after relaunch")
        c.close()
        s.kill()
        killSwitch.arm(nil)
        server = nil
        return r
    }

    func readBack(_ s: RedisServer, _ c: RedisConnection, from t0: Double, minorBefore: UInt64, majorBefore: UInt64, into r: inout RoundResult, during: String) throws {
        try readSample(c)
        r.sampleMs = (monotonicSeconds() - t0) * 1000
        let mid = try s.stat()
        r.majorFaultsToSample = mid.majorFaults &- majorBefore
        try readEverything(c)
        r.fullMs = (monotonicSeconds() - t0) * 1000
        let end = try s.stat()
        r.majorFaults = end.majorFaults &- majorBefore
        r.minorFaults = end.minorFaults &- minorBefore
        r.residentBytesAfter = try s.status().residentBytes
        try checkCounts(c, during: during)
    }
}

func infoField(_ info: String, _ name: String) -> String? {
    for line in info.split(whereSeparator: { $0 == "\r\n" || $0 == "\n" || $0 == "\r" }) where line.hasPrefix(name + ":") {
        return String(line.dropFirst(name.count + 1))
    }
    return nil
}
