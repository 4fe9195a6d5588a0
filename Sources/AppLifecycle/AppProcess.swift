import CMemoryPressure
import Glibc
import SystemPackage
import LinuxSystem

/// How a process ended.
public enum ExitStatus: Sendable, Hashable, Codable, CustomStringConvertible {
    case exited(Int32)
    case signaled(Int32)

    public var description: String {
        switch self {
        case .exited(let code): "exited with status \(code)"
        case .signaled(let sig): "killed by signal \(sig) (\(signalName(sig)))"
        }
    }

    public var isCleanExit: Bool { self == .exited(0) }
}

func signalName(_ sig: Int32) -> String {
    switch sig {
    case SIGKILL: "SIGKILL"
    case SIGTERM: "SIGTERM"
    case SIGSEGV: "SIGSEGV"
    case SIGABRT: "SIGABRT"
    case SIGBUS: "SIGBUS"
    case SIGILL: "SIGILL"
    case SIGFPE: "SIGFPE"
    case SIGINT: "SIGINT"
    case SIGTRAP: "SIGTRAP"
    default: "signal \(sig)"
    }
}

/// A process the supervisor launched, with a pidfd: every signal goes through the pidfd, so once
/// the process has exited a reused PID can never be hit (pidfd_send_signal then fails with ESRCH).
final class AppProcess: @unchecked Sendable {
    let pid: Int32
    let pidfd: Int32
    let launchedAt: Double
    /// Its start time after boot (field 22 of /proc/PID/stat), read while it is our unreaped
    /// child: with the PID, it names this process and no later one.
    let startTicks: UInt64?

    private init(pid: Int32, pidfd: Int32) {
        self.pid = pid
        self.pidfd = pidfd
        launchedAt = monotonicSeconds()
        startTicks = Self.startTicks(of: pid)
    }

    private static func startTicks(of pid: Int32) -> UInt64? {
        do {
            let bytes = try ProcFS.readBytes("/proc/\(pid)/stat")
            return try bytes.withUnsafeBytes { (b) throws(ProcError) in try ProcessStat.parse(b, pid: pid) }.startTicks
        } catch {
            return nil
        }
    }

    deinit { close(pidfd) }

    /// Starts `command` through `launcher` (mempressure-exec), which joins `cgroups` and execs it.
    static func spawn(
        launcher: String, cgroups: [String], command: [String], environment: [String: String], outputPath: String
    ) throws(LaunchError) -> AppProcess {
        guard let program = command.first, !program.isEmpty else { throw .noCommand }
        if program.contains("/") {
            if access(program, F_OK) != 0 { throw .programNotFound(program) }
            if access(program, X_OK) != 0 { throw .notExecutable(program) }
        }
        var args = [launcher]
        for g in cgroups { args += ["--cgroup", g] }
        args.append("--")
        args += command

        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, outputPath, O_WRONLY | O_CREAT | O_APPEND, 0o644)
        posix_spawn_file_actions_adddup2(&actions, 1, 2)

        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        // A process group of its own, and default signal dispositions and mask.
        var all = sigset_t()
        sigfillset(&all)
        var none = sigset_t()
        sigemptyset(&none)
        posix_spawnattr_setsigdefault(&attributes, &all)
        posix_spawnattr_setsigmask(&attributes, &none)
        posix_spawnattr_setpgroup(&attributes, 0)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETPGROUP))

        var env = environment
        for (k, v) in currentEnvironment() where env[k] == nil { env[k] = v }
        let argv = args.map { strdup($0) } + [nil]
        let envp = env.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer {
            for p in argv { free(p) }
            for p in envp { free(p) }
        }
        var pid: pid_t = 0
        let rc = posix_spawn(&pid, launcher, &actions, &attributes, argv, envp)
        guard rc == 0 else { throw .spawn(launcher: launcher, Errno(rawValue: rc)) }
        // Our own unreaped child: pidfd_open cannot race with a reuse of its PID.
        let fd = mp_pidfd_open(pid, 0)
        guard fd >= 0 else {
            let e = errno
            kill(pid, SIGKILL)  // our child, not yet reaped: the PID is still its
            var status: Int32 = 0
            waitpid(pid, &status, 0)
            throw .pidfd(pid: pid, Errno(rawValue: e))
        }
        return AppProcess(pid: pid, pidfd: fd)
    }

    /// Sends `sig` through the pidfd. Returns false if the process has already exited.
    @discardableResult
    func signal(_ sig: Int32) -> Bool {
        mp_pidfd_send_signal(pidfd, sig) == 0
    }

    /// Blocks until the process has stopped (`stopped`) or continued: the kernel reports both
    /// to the parent (waitid WSTOPPED, WCONTINUED), which the supervisor is. False if the
    /// process exited (or was reaped) instead. Run on a thread of its own.
    func waitForStopChange(stopped: Bool) -> Bool {
        var info = siginfo_t()
        let options = stopped ? WSTOPPED : WCONTINUED
        // ECHILD: reaped meanwhile.
        return retryOnInterrupt { waitid(idtype_t(rawValue: 3) /* P_PIDFD */, id_t(pidfd), &info, options) } == 0
    }

    /// Frees the memory of this process, which is being killed, at once (process_mrelease,
    /// Linux 5.15), rather than when it gets to run its exit.
    func releaseMemory() throws(SystemCallError) {
        guard mp_process_mrelease(pidfd, 0) == 0 else {
            let e = Errno(rawValue: errno)
            if e == .noSuchProcess { return }  // already gone: nothing left to free
            throw SystemCallError("process_mrelease", errno: e, subject: "pid \(pid)")
        }
    }

    /// process_madvise(MADV_PAGEOUT) over the ranges: their anonymous pages are written to
    /// swap (and clean pages dropped). Returns the bytes advised.
    func pageOut(_ ranges: [(start: UInt64, end: UInt64)]) throws(SupervisorError) -> UInt64 {
        guard !ranges.isEmpty else { return 0 }
        let starts = ranges.map(\.start)
        let lengths = ranges.map { $0.end &- $0.start }
        let n = mp_process_madvise_ranges(pidfd, starts, lengths, ranges.count, mp_MADV_PAGEOUT)
        guard n >= 0 else { throw .system(SystemCallError("process_madvise(MADV_PAGEOUT)", errno: Errno(rawValue: errno), subject: "pid \(pid)")) }
        return UInt64(n)
    }

    /// Blocks until the process exits and reaps it (run on a thread of its own).
    func waitForExit() -> ExitStatus {
        var info = siginfo_t()
        if retryOnInterrupt({ waitid(idtype_t(rawValue: 3) /* P_PIDFD */, id_t(pidfd), &info, WEXITED) }) != 0 {
            return .exited(-1)
        }
        let code = info._sifields._sigchld.si_status
        switch info.si_code {
        case Int32(CLD_EXITED): return .exited(code)
        default: return .signaled(code)
        }
    }
}

func currentEnvironment() -> [String: String] {
    var out: [String: String] = [:]
    var p = environ
    while let entry = p.pointee {
        let s = String(cString: entry)
        if let eq = s.firstIndex(of: "=") { out[String(s[..<eq])] = String(s[s.index(after: eq)...]) }
        p += 1
    }
    return out
}
