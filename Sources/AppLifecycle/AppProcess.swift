import CMemoryPressure
import Glibc
import LinuxSystem
import SystemPackage

/// Why an app could not be started.
public struct LaunchError: Error, Sendable, Hashable, CustomStringConvertible {
    public var reason: String
    public init(_ reason: String) { self.reason = reason }
    public var description: String { reason }
}

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

    private init(pid: Int32, pidfd: Int32) {
        self.pid = pid
        self.pidfd = pidfd
        launchedAt = monotonicSeconds()
    }

    deinit { close(pidfd) }

    /// Starts `command` through `launcher` (mempressure-exec), which joins `cgroups` and execs it.
    static func spawn(
        launcher: String, cgroups: [String], command: [String], environment: [String: String], outputPath: String
    ) throws(LaunchError) -> AppProcess {
        guard let program = command.first, !program.isEmpty else { throw LaunchError("the app has no command") }
        if program.contains("/") {
            if access(program, F_OK) != 0 { throw LaunchError("cannot launch \(program): no such file") }
            if access(program, X_OK) != 0 { throw LaunchError("cannot launch \(program): not executable (permission denied)") }
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
        guard rc == 0 else {
            throw LaunchError("cannot start \(launcher): \(Errno(rawValue: rc).symbolicName) (\(Errno(rawValue: rc)))")
        }
        // Our own unreaped child: pidfd_open cannot race with a reuse of its PID.
        let fd = mp_pidfd_open(pid, 0)
        guard fd >= 0 else {
            let e = errno
            kill(pid, SIGKILL)  // our child, not yet reaped: the PID is still its
            var status: Int32 = 0
            waitpid(pid, &status, 0)
            throw LaunchError("pidfd_open(\(pid)) failed: \(Errno(rawValue: e).symbolicName) (pidfds need Linux 5.3)")
        }
        return AppProcess(pid: pid, pidfd: fd)
    }

    /// Sends `sig` through the pidfd. Returns false if the process has already exited.
    @discardableResult
    func signal(_ sig: Int32) -> Bool {
        mp_pidfd_send_signal(pidfd, sig) == 0
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

/// CPU, faults and I/O of a process now.
struct UsageSample: Sendable {
    var time: Double
    var cpuSeconds: Double
    var minorFaults: UInt64
    var majorFaults: UInt64
    var ioReadBytes: UInt64
    var ioWriteBytes: UInt64

    static let ticksPerSecond = Double(sysconf(Int32(_SC_CLK_TCK)))

    /// Reads /proc/PID/stat and /proc/PID/io; nil once the process is gone.
    static func read(pid: Int32, procfs: ProcFS = ProcFS()) -> UsageSample? {
        var buffer = ReadBuffer(capacity: 4096)
        do {
            let dir = try procfs.open(pid)
            try dir.read("stat", into: &buffer)
            let stat = try buffer.withBytes { (b) throws(ProcError) in try ProcessStat.parse(b, pid: pid) }
            var read: UInt64 = 0, written: UInt64 = 0
            do {
                try dir.read("io", into: &buffer)
                let io = buffer.withBytes { ProcessIO.parse($0) }
                read = io.readBytes
                written = io.writeBytes
            } catch {
                // /proc/PID/io needs ptrace access: without it, I/O is counted as zero.
            }
            return UsageSample(
                time: monotonicSeconds(), cpuSeconds: Double(stat.userTicks + stat.systemTicks) / ticksPerSecond,
                minorFaults: stat.minorFaults, majorFaults: stat.majorFaults, ioReadBytes: read, ioWriteBytes: written)
        } catch {
            return nil
        }
    }
}
