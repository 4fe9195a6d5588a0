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

/// A process the supervisor launched, held through its pidfd (`ProcessHandle`): every signal goes
/// through it, so once the process has exited a reused PID can never be hit (pidfd_send_signal
/// then fails with ESRCH).
final class AppProcess: Sendable {
    let handle: ProcessHandle
    let launchedAt: Double
    /// Its start time after boot (field 22 of /proc/PID/stat), read while it is our unreaped
    /// child: with the PID, it names this process and no later one.
    let startTicks: UInt64?

    var pid: Int32 { handle.pid }

    private init(handle: ProcessHandle) {
        self.handle = handle
        launchedAt = monotonicSeconds()
        startTicks = Self.startTicks(of: handle.pid)
    }

    private static func startTicks(of pid: Int32) -> UInt64? {
        do {
            let bytes = try ProcFS.readBytes("/proc/\(pid)/stat")
            return try bytes.withUnsafeBytes { (b) throws(ProcError) in try ProcessStat.parse(b, pid: pid) }.startTicks
        } catch {
            return nil
        }
    }

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
        let handle: ProcessHandle
        do {
            handle = try ProcessHandle(pid: pid)
        } catch {
            // No pidfd: the child is killed and reaped by its PID, which is still its (not yet
            // reaped, it cannot have been reused).
            kill(pid, SIGKILL)
            var status: Int32 = 0
            _ = retryOnInterrupt { waitpid(pid, &status, 0) }
            throw .pidfd(pid: pid, error.errno)
        }
        return AppProcess(handle: handle)
    }

    /// Sends `sig` through the pidfd. Returns false if the process has already exited.
    @discardableResult
    func signal(_ sig: Int32) -> Bool {
        do {
            try handle.signal(sig)
            return true
        } catch {
            return false  // ESRCH: it has exited (the pidfd still names it, so nothing else was hit)
        }
    }

    /// Blocks until the process has stopped (`stopped`) or continued: the kernel reports both
    /// to the parent (waitid WSTOPPED, WCONTINUED), which the supervisor is. False if the
    /// process exited (or was reaped) instead. Run on a thread of its own.
    func waitForStopChange(stopped: Bool) -> Bool {
        do {
            _ = try handle.wait(for: stopped ? WSTOPPED : WCONTINUED)
            return true
        } catch {
            return false  // ECHILD: reaped meanwhile
        }
    }

    /// Frees the memory of this process, which is being killed, at once (process_mrelease,
    /// Linux 5.15), rather than when it gets to run its exit.
    func releaseMemory() throws(SystemCallError) {
        do {
            try handle.releaseMemory()
        } catch where error.errno == .noSuchProcess {
            return  // already gone: nothing left to free
        }
    }

    /// process_madvise(MADV_PAGEOUT) over the ranges: their anonymous pages are written to
    /// swap (and clean pages dropped). Returns the bytes advised.
    func pageOut(_ ranges: [(start: UInt64, end: UInt64)]) throws(SupervisorError) -> UInt64 {
        do {
            return try handle.advise(ranges, mp_MADV_PAGEOUT, name: "MADV_PAGEOUT")
        } catch {
            throw .system(error)
        }
    }

    /// Blocks until the process exits and reaps it (run on a thread of its own).
    func waitForExit() -> ExitStatus {
        let info: siginfo_t
        do {
            info = try handle.wait(for: WEXITED)
        } catch {
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
