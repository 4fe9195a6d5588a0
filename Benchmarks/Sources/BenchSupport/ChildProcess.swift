// A program the benchmark starts itself (redis-server, the PostgreSQL postmaster): started with
// posix_spawn in a process group of its own (so a Ctrl-C at the terminal reaches only the
// benchmark, which then kills it), its output appended to a log file, signalled only through
// its pidfd, reaped by the benchmark. And the kill switch Ctrl-C pulls.

import CBenchSupport
import Glibc
import MemPressureSystem
import Synchronization
import SystemPackage

/// A child process the benchmark started.
public final class ChildProcess {
    /// What it is called in messages ("redis-server").
    public let name: String
    /// The harness, for log lines ("redis-bench").
    public let tool: String
    public let pid: Int32
    public let handle: ProcessHandle
    public let logPath: String
    /// When posix_spawn was called (monotonic seconds).
    public let spawnedAt: Double
    public private(set) var exitStatus: Int32?

    /// Starts `argv` (`argv[0]` a path) with stdout and stderr appended to `logPath`. With
    /// `cgroupProcs` (`cgroup.procs` files) a shell first writes its own PID to each and then
    /// execs the program, so that it is in those cgroups from its first allocation (same PID,
    /// same pidfd), and so is everything it forks. With `workingDirectory` it starts there
    /// (else in the benchmark's own). Each of `inheriting` gives the child the benchmark's
    /// descriptor `parent` as its descriptor `child` (above 2; `parent` must differ from `child`,
    /// or dup2 would leave it close-on-exec).
    public init(
        name: String, tool: String, argv program: [String], logPath: String, cgroupProcs: [String] = [], workingDirectory: String? = nil,
        inheriting: [(parent: Int32, child: Int32)] = []
    ) throws {
        var argv = program
        if !cgroupProcs.isEmpty {
            // sh -c 'for f; do ...' takes the files as $1..., then "--", then the program.
            let script = "while [ \"$1\" != -- ]; do echo $$ > \"$1\" || exit 126; shift; done; shift; exec \"$@\""
            argv = ["/bin/sh", "-c", script, "sh"] + cgroupProcs + ["--"] + argv
        }
        // The log: appended to, never through a link; our own file (0600).
        let log = open(logPath, O_WRONLY | O_CREAT | O_APPEND | O_NOFOLLOW | O_CLOEXEC, 0o600)
        guard log >= 0 else { throw SystemCallError("open", errno: Errno(rawValue: errno), subject: logPath) }
        defer { close(log) }
        var options = SpawnOptions(argv)
        options.standardInput = .null
        options.standardOutput = .descriptor(log)
        options.standardError = .output
        options.inheriting = inheriting.map { .init(parent: $0.parent, child: $0.child) }
        options.workingDirectory = workingDirectory
        // Its own process group; the signals the benchmark ignores itself (SIGINT, SIGTERM,
        // SIGHUP, SIGPIPE: an ignored signal stays ignored across exec) back to their defaults.
        options.defaultSignals = [SIGINT, SIGTERM, SIGHUP, SIGPIPE]
        let start = monotonicSeconds()
        handle = try Spawn.start(options)
        spawnedAt = start
        pid = handle.pid
        self.name = name
        self.tool = tool
        self.logPath = logPath
    }

    /// Throws if it has exited (and reaps it), with the end of its log.
    public func checkAlive(_ during: String) throws {
        guard exitStatus == nil else { throw BenchError("\(name) (pid \(pid)) is gone \(during)") }
        var status: Int32 = 0
        let r = retryOnInterrupt { waitpid(pid, &status, WNOHANG) }
        guard r == pid else { return }
        exitStatus = status
        throw BenchError("\(name) (pid \(pid)) exited \(describe(status)) \(during); the end of its log (\(logPath)):\n\(logTail())")
    }

    public func logTail(lines: Int = 15) -> String {
        do {
            let text = String(decoding: try ProcFS.readBytes(logPath), as: UTF8.self)
            return text.split(separator: "\n").suffix(lines).map { "  " + $0 }.joined(separator: "\n")
        } catch {
            return "  (no log: \(error))"
        }
    }

    /// SIGSTOP, and waits until the kernel shows it stopped (state T).
    public func stop() throws {
        try handle.signal(SIGSTOP)
        let deadline = monotonicSeconds() + 10
        while try stat().state != UInt8(ascii: "T") {
            guard monotonicSeconds() < deadline else { throw BenchError("\(name) (pid \(pid)) did not stop within 10 s of SIGSTOP") }
            pause(0.0002)
        }
    }

    public func signal(_ sig: Int32) throws(SystemCallError) { try handle.signal(sig) }

    /// Records that the caller reaped it (a `waitid(P_ALL)` loop), with its wait status: `kill()`
    /// and the waits then leave it alone.
    public func noteReaped(_ status: Int32) { exitStatus = status }

    /// Waits for it to exit (up to `timeout` seconds, noticing cancellation every 10 ms) and
    /// reaps it; throws if it has not exited by then.
    public func waitForExit(timeout: Double, _ during: String) throws {
        let deadline = monotonicSeconds() + timeout
        while exitStatus == nil {
            var status: Int32 = 0
            let r = retryOnInterrupt { waitpid(pid, &status, WNOHANG) }
            if r == pid {
                exitStatus = status
                return
            }
            try Task.checkCancellation()
            guard monotonicSeconds() < deadline else { throw BenchError("\(name) (pid \(pid)) did not exit within \(Int(timeout)) s \(during); its log:\n\(logTail())") }
            pause(0.001)
        }
    }

    /// SIGKILL through the pidfd, and reaps it. Idempotent.
    public func kill() {
        guard exitStatus == nil else { return }
        do {
            try handle.signal(SIGKILL)
        } catch {
            log(tool, "SIGKILL to \(name) (pid \(pid)): \(error)")  // it exited already: the wait below reaps it
        }
        var status: Int32 = 0
        _ = retryOnInterrupt { waitpid(pid, &status, 0) }
        exitStatus = status
    }

    public func stat() throws -> ProcessStat { try readStat(pid) }

    public func status() throws -> ProcessStatus { try readStatus(pid) }

    /// The path of its cgroup (v1: of the memory controller; v2: the unified one), from
    /// /proc/PID/cgroup.
    public func memoryCgroup() throws -> String? { try cgroupOf(pid) }
}

/// /proc/PID/stat of any process.
public func readStat(_ pid: Int32) throws -> ProcessStat {
    let bytes = try ProcFS.readBytes("/proc/\(pid)/stat")
    return try bytes.withUnsafeBytes { (b) throws(ProcError) in try ProcessStat.parse(b, pid: pid) }
}

/// /proc/PID/status of any process.
public func readStatus(_ pid: Int32) throws -> ProcessStatus {
    let bytes = try ProcFS.readBytes("/proc/\(pid)/status")
    return try bytes.withUnsafeBytes { (b) throws(ProcError) in try ProcessStatus.parse(b, pid: pid) }
}

/// The cgroup of `pid` holding its memory (the v1 line naming the memory controller, else the
/// v2 line `0::PATH`), from /proc/PID/cgroup; nil if it has neither.
public func cgroupOf(_ pid: Int32) throws -> String? {
    let text = String(decoding: try ProcFS.readBytes("/proc/\(pid)/cgroup"), as: UTF8.self)
    var unified: String?
    for line in text.split(separator: "\n") {
        let parts = line.split(separator: ":", maxSplits: 2, omittingEmptySubsequences: false)
        guard parts.count == 3 else { continue }
        if parts[1].split(separator: ",").contains("memory") { return String(parts[2]) }
        if parts[0] == "0" && parts[1].isEmpty { unified = String(parts[2]) }
    }
    return unified
}

/// Makes this process the reaper of the processes orphaned below it (prctl
/// PR_SET_CHILD_SUBREAPER): when a program the benchmark started is killed, the processes it
/// had forked become the benchmark's children, and `reapOrphans()` reaps them. Without it they
/// go to PID 1, which in a container may never reap them (they stay zombies).
public func becomeChildSubreaper() throws(SystemCallError) {
    guard bench_become_child_subreaper() == 0 else { throw SystemCallError("prctl(PR_SET_CHILD_SUBREAPER)", errno: Errno(rawValue: errno)) }
}

/// Reaps the zombies among this process's children (the orphans a subreaper inherits; never a
/// child that is still running). Returns how many.
@discardableResult
public func reapOrphans() -> Int {
    let me = getpid()
    var reaped = 0
    let pids: [Int32]
    do {
        pids = try ProcFS().pids()
    } catch {
        return 0
    }
    for pid in pids {
        do {
            let stat = try readStat(pid)
            guard stat.ppid == me, stat.isZombie else { continue }
        } catch {
            continue  // gone
        }
        var status: Int32 = 0
        if retryOnInterrupt({ waitpid(pid, &status, WNOHANG) }) == pid { reaped += 1 }
    }
    return reaped
}

/// "with status N" or "on signal N", for a wait status.
public func describe(_ status: Int32) -> String {
    let signal = status & 0x7f
    if signal == 0 { return "with status \((status >> 8) & 0xff)" }
    return "on signal \(signal)"
}

/// A short pause in a polling loop (the thing polled has no event to wait on).
public func pause(_ seconds: Double) {
    var ts = timespec(tv_sec: Int(seconds), tv_nsec: Int((seconds - Double(Int(seconds))) * 1e9))
    nanosleep(&ts, nil)
}

/// The kill switch Ctrl-C pulls: SIGKILL, through its pidfd, to the process running now (or
/// whatever the armed action kills: every process of a cgroup). The measurement then fails
/// where it stands and its cleanup reaps what was killed.
public final class KillSwitch: Sendable {
    private let current = Mutex<(@Sendable () -> Void)?>(nil)

    public init() {}

    /// Arms it to SIGKILL `handle` (nil: disarmed).
    public func arm(_ handle: ProcessHandle?) {
        guard let handle else { return arm(action: nil) }
        arm {
            do {
                try handle.signal(SIGKILL)
            } catch {
                // ESRCH: it has exited already; nothing left to stop.
            }
        }
    }

    /// Arms it to run `action` (nil: disarmed).
    public func arm(action: (@Sendable () -> Void)?) { current.withLock { $0 = action } }

    public func pull() {
        current.withLock { action in action?() }
    }
}
