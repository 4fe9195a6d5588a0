// redis-server as a child of the benchmark: started with posix_spawn (in a process group of its
// own, so a Ctrl-C at the terminal reaches only the benchmark, which then kills it), signalled
// only through its pidfd, reaped by the benchmark. And the memory cgroup (v1) it can be put in.

import BenchSupport
import Glibc
import LinuxSystem
import Synchronization
import SystemPackage

/// A redis-server the benchmark started.
final class RedisServer {
    let pid: Int32
    let handle: ProcessHandle
    let socketPath: String
    let logPath: String
    /// When posix_spawn was called (monotonic seconds).
    let spawnedAt: Double
    private(set) var exitStatus: Int32?

    /// Starts `executable ARGS` with stdout and stderr appended to `logPath`. With `cgroupProcs`
    /// (a v1 `cgroup.procs` file) a shell first writes its own PID there and then execs redis,
    /// so that redis is in that cgroup from its first allocation (same PID, same pidfd).
    init(executable: String, arguments: [String], socketPath: String, logPath: String, cgroupProcs: String?) throws {
        var argv = [executable] + arguments
        if let cgroupProcs {
            argv = ["/bin/sh", "-c", "echo $$ > \"$0\" && exec \"$@\"", cgroupProcs] + argv
        }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, logPath, O_WRONLY | O_CREAT | O_APPEND, 0o600)
        posix_spawn_file_actions_adddup2(&actions, 1, 2)
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        // Its own process group; SIGINT and SIGTERM back to their defaults (the benchmark
        // ignores them itself, and an ignored signal would stay ignored across exec); no
        // signal blocked.
        var defaults = sigset_t()
        sigemptyset(&defaults)
        sigaddset(&defaults, SIGINT)
        sigaddset(&defaults, SIGTERM)
        var mask = sigset_t()
        sigemptyset(&mask)
        posix_spawnattr_setsigdefault(&attributes, &defaults)
        posix_spawnattr_setsigmask(&attributes, &mask)
        posix_spawnattr_setpgroup(&attributes, 0)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK))
        let args = argv.map { strdup($0) } + [nil]
        defer { for a in args { free(a) } }
        var pid: pid_t = 0
        let start = monotonicSeconds()
        let rc = posix_spawn(&pid, argv[0], &actions, &attributes, args, environ)
        guard rc == 0 else { throw BenchError("posix_spawn \(argv[0]): \(String(cString: strerror(rc)))") }
        spawnedAt = start
        self.pid = pid
        do {
            handle = try ProcessHandle(pid: pid)  // our child, not yet reaped: the PID is still its
        } catch {
            // Without a pidfd it cannot be signalled safely; it is our unreaped child, so its
            // PID is still its own for this one kill.
            Glibc.kill(pid, SIGKILL)
            var status: Int32 = 0
            _ = retryOnInterrupt { waitpid(pid, &status, 0) }
            throw error
        }
        self.socketPath = socketPath
        self.logPath = logPath
    }

    /// Throws if it has exited (and reaps it), with the end of its log.
    func checkAlive(_ during: String) throws {
        guard exitStatus == nil else { throw BenchError("redis-server (pid \(pid)) is gone \(during)") }
        var status: Int32 = 0
        let r = retryOnInterrupt { waitpid(pid, &status, WNOHANG) }
        guard r == pid else { return }
        exitStatus = status
        throw BenchError("redis-server (pid \(pid)) exited \(describe(status)) \(during); the end of its log (\(logPath)):\n\(logTail())")
    }

    func logTail(lines: Int = 15) -> String {
        do {
            let text = String(decoding: try ProcFS.readBytes(logPath), as: UTF8.self)
            return text.split(separator: "\n").suffix(lines).map { "  " + $0 }.joined(separator: "\n")
        } catch {
            return "  (no log: \(error))"
        }
    }

    /// How long the latest load of the RDB file took, as redis logged it ("DB loaded from
    /// disk: 1.234 seconds"); nil if the log has no such line.
    func lastLoadSeconds() throws -> Double? {
        let text = String(decoding: try ProcFS.readBytes(logPath), as: UTF8.self)
        guard let line = text.split(separator: "\n").last(where: { $0.contains("DB loaded from disk: ") }),
              let range = line.range(of: "DB loaded from disk: ") else { return nil }
        return Double(line[range.upperBound...].prefix { $0.isNumber || $0 == "." })
    }

    /// SIGSTOP, and waits until the kernel shows it stopped (state T).
    func stop() throws {
        try handle.signal(SIGSTOP)
        let deadline = monotonicSeconds() + 10
        while try stat().state != UInt8(ascii: "T") {
            guard monotonicSeconds() < deadline else { throw BenchError("redis-server (pid \(pid)) did not stop within 10 s of SIGSTOP") }
            pause(0.0002)
        }
    }

    func resume() throws { try handle.signal(SIGCONT) }

    /// SIGKILL through the pidfd, and reaps it. Idempotent.
    func kill() {
        guard exitStatus == nil else { return }
        do {
            try handle.signal(SIGKILL)
        } catch {
            log("redis-bench", "SIGKILL to redis-server (pid \(pid)): \(error)")  // it exited already: the wait below reaps it
        }
        var status: Int32 = 0
        _ = retryOnInterrupt { waitpid(pid, &status, 0) }
        exitStatus = status
    }

    func stat() throws -> ProcessStat {
        let bytes = try ProcFS.readBytes("/proc/\(pid)/stat")
        return try bytes.withUnsafeBytes { (b) throws(ProcError) in try ProcessStat.parse(b, pid: pid) }
    }

    func status() throws -> ProcessStatus {
        let bytes = try ProcFS.readBytes("/proc/\(pid)/status")
        return try bytes.withUnsafeBytes { (b) throws(ProcError) in try ProcessStatus.parse(b, pid: pid) }
    }

    /// Its memory cgroup (v1), from /proc/PID/cgroup.
    func memoryCgroup() throws -> String? {
        let text = String(decoding: try ProcFS.readBytes("/proc/\(pid)/cgroup"), as: UTF8.self)
        for line in text.split(separator: "\n") {
            let parts = line.split(separator: ":", maxSplits: 2, omittingEmptySubsequences: false)
            if parts.count == 3, parts[1].split(separator: ",").contains("memory") { return String(parts[2]) }
        }
        return nil
    }
}

func describe(_ status: Int32) -> String {
    let signal = status & 0x7f
    if signal == 0 { return "with status \((status >> 8) & 0xff)" }
    return "on signal \(signal)"
}

/// A short pause in a polling loop (the thing polled has no event to wait on).
func pause(_ seconds: Double) {
    var ts = timespec(tv_sec: Int(seconds), tv_nsec: Int((seconds - Double(Int(seconds))) * 1e9))
    nanosleep(&ts, nil)
}

/// The kill switch Ctrl-C pulls: SIGKILL, through its pidfd, to the redis-server running now.
/// The measurement then fails where it stands and its cleanup reaps the process.
final class KillSwitch: Sendable {
    private let current = Mutex<ProcessHandle?>(nil)

    func arm(_ handle: ProcessHandle?) { current.withLock { $0 = handle } }

    func pull() {
        current.withLock { handle in
            guard let handle else { return }
            do {
                try handle.signal(SIGKILL)
            } catch {
                // ESRCH: it has exited already; nothing left to stop.
            }
        }
    }
}

/// A memory cgroup (v1) of the benchmark's own for redis, removed when done.
final class RedisCgroup {
    static let base = "/sys/fs/cgroup/memory"
    let path: String
    private var removed = false

    /// Why there can be none on this machine, or nil.
    static func unavailableReason() -> String? {
        if getuid() != 0 { return "not running as root (a memory cgroup and swapon need root)" }
        if !ProcFS.isFile("\(base)/cgroup.procs") { return "no cgroup v1 memory controller at \(base)" }
        return nil
    }

    init(name: String) throws {
        path = "\(Self.base)/\(name)"
        guard mkdir(path, 0o755) == 0 else { throw SystemCallError("mkdir", errno: Errno(rawValue: errno), subject: path) }
    }

    var procsFile: String { "\(path)/cgroup.procs" }

    func usageBytes() throws -> UInt64 {
        let bytes = try ProcFS.readBytes("\(path)/memory.usage_in_bytes")
        guard let n = ByteScanner.singleNumber(bytes) else { throw BenchError("\(path)/memory.usage_in_bytes: not a number") }
        return n
    }

    /// Sets memory.limit_in_bytes; the kernel reclaims down to it first, or fails with EBUSY.
    func setLimit(_ bytes: UInt64) throws(SystemCallError) {
        try ProcFS.writeFileInPlace("\(path)/memory.limit_in_bytes", Array("\(bytes)".utf8))
    }

    func removeLimit() throws(SystemCallError) {
        try ProcFS.writeFileInPlace("\(path)/memory.limit_in_bytes", Array("-1".utf8))
    }

    /// Squeezes the cgroup while its process is stopped, as rising pressure would: the limit
    /// lowered in steps of a sixteenth of its usage, from its usage down to `floor`. The kernel
    /// reclaims at each step or answers EBUSY, which it does transiently while the pages it
    /// chose are still being written to swap: each step is tried up to 50 times, 10 ms apart.
    /// Returns the lowest limit reached (at least one step, or it throws).
    func squeeze(floor: UInt64) throws -> UInt64 {
        let usage = try usageBytes()
        let step = max(UInt64(4 << 20), usage / 16)
        var limit = usage
        while limit > floor {
            let next = limit > floor + step ? limit - step : floor
            var reached = false
            for _ in 0..<50 {
                try Task.checkCancellation()
                do {
                    try setLimit(next)
                    reached = true
                    break
                } catch {
                    guard error.errno == .resourceBusy else { throw error }
                    pause(0.01)
                }
            }
            guard reached else { break }
            limit = next
        }
        guard limit < usage else {
            throw BenchError("the kernel could not reclaim anything from redis's cgroup (\(ByteFormat.human(usage)); EBUSY for 0.5 s): is swap on?")
        }
        return limit
    }

    /// rmdir, once its processes are gone (the kernel uncharges a dead task's memory
    /// asynchronously: retried for up to 5 s). Idempotent.
    func remove() {
        guard !removed else { return }
        let deadline = monotonicSeconds() + 5
        while rmdir(path) != 0 {
            if errno == ENOENT { break }
            guard errno == EBUSY, monotonicSeconds() < deadline else {
                log("redis-bench", "could not remove \(path): \(String(cString: strerror(errno)))")
                return
            }
            pause(0.02)
        }
        removed = true
    }
}
