import CMemoryPressure
import Glibc
import SystemPackage

/// Why a program could not be started.
public enum SpawnError: Error, Sendable, Hashable, CustomStringConvertible {
    /// An argument or environment string holds a NUL byte (it would be cut short there).
    case nulByte(String)
    /// A file for its input or output could not be opened.
    case open(path: String, Errno)
    /// posix_spawn failed (the program could not be executed).
    case spawn(program: String, Errno)
    /// pidfd_open failed (pidfds need Linux 5.3); the child was killed and reaped.
    case pidfd(pid: Int32, Errno)

    public var description: String {
        switch self {
        case .nulByte(let what): "cannot start a program with a NUL byte in \(what)"
        case .open(let path, let e): "cannot open \(path): \(e.symbolicName) (\(e))"
        case .spawn(let program, let e): "cannot start \(program): \(e.symbolicName) (\(e))"
        case .pidfd(let pid, let e): "pidfd_open(\(pid)) failed: \(e.symbolicName) (pidfds need Linux 5.3)"
        }
    }

    public var errno: Errno {
        switch self {
        case .nulByte: .invalidArgument
        case .open(_, let e), .spawn(_, let e), .pidfd(_, let e): e
        }
    }
}

/// How a program is started: the one way the project starts child processes (the supervisor's
/// apps and guardian, the benchmarks' servers and workers, the hog's children, gnuplot).
///
/// The child gets standard input, output and error as asked, and the descriptors in
/// `inheriting`; nothing else of the parent's (every descriptor the project opens is
/// close-on-exec). Its signal dispositions for `defaultSignals` are reset (an ignored signal stays
/// ignored across exec) and its signal mask is cleared. With `newProcessGroup`, it leads a
/// process group of its own, so that a Ctrl-C at the terminal reaches only its parent.
public struct SpawnOptions: Sendable {
    /// Where a standard stream goes.
    public enum Stream: Sendable, Hashable {
        /// The parent's own.
        case inherit
        /// /dev/null.
        case null
        /// A descriptor of the parent's (duplicated into the child; the parent keeps its own).
        case descriptor(CInt)
        /// The same as standard output (for standard error).
        case output
    }

    /// The program (a path; with `searchPath`, a name looked up in PATH) and its arguments.
    public var arguments: [String]
    /// Its environment; nil: the parent's.
    public var environment: [String: String]?
    public var standardInput: Stream = .null
    public var standardOutput: Stream = .inherit
    public var standardError: Stream = .inherit
    /// Descriptors of the parent's given to the child under another number (`child` above 2).
    public var inheriting: [Inherited] = []
    public var newProcessGroup = true
    /// Signals whose disposition is reset to the default in the child; nil: every signal.
    public var defaultSignals: [Int32]? = nil
    public var workingDirectory: String?
    public var searchPath = false

    public struct Inherited: Sendable, Hashable {
        public var parent: CInt
        public var child: CInt
        public init(parent: CInt, child: CInt) {
            self.parent = parent
            self.child = child
        }
    }

    public init(_ arguments: [String]) {
        self.arguments = arguments
    }
}

public enum Spawn {
    /// Starts the program; returns a pidfd on it (the child is not reaped: wait on the handle).
    public static func start(_ options: SpawnOptions) throws(SpawnError) -> ProcessHandle {
        guard let program = options.arguments.first else { throw .spawn(program: "", .invalidArgument) }
        for a in options.arguments where a.utf8.contains(0) { throw .nulByte("argument \(String(reflecting: a))") }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        for (fd, stream) in [(CInt(0), options.standardInput), (1, options.standardOutput), (2, options.standardError)] {
            switch stream {
            case .inherit: break
            case .null: posix_spawn_file_actions_addopen(&actions, fd, "/dev/null", fd == 0 ? O_RDONLY : O_WRONLY, 0)
            case .descriptor(let parent): posix_spawn_file_actions_adddup2(&actions, parent, fd)
            case .output: posix_spawn_file_actions_adddup2(&actions, 1, fd)
            }
        }
        // Each inherited descriptor is first duplicated above the numbers it may land on, so that
        // no dup2 overwrites another's source nor lands on itself (which would keep close-on-exec).
        var copies: [CInt] = []
        defer { for c in copies { close(c) } }
        for d in options.inheriting {
            precondition(d.child > 2, "Spawn: inheriting onto \(d.child), a standard stream")
            let copy = fcntl(d.parent, F_DUPFD_CLOEXEC, (options.inheriting.map(\.child).max() ?? 2) + 1)
            guard copy >= 0 else { throw .open(path: "descriptor \(d.parent)", Errno(rawValue: errno)) }
            copies.append(copy)
            posix_spawn_file_actions_adddup2(&actions, copy, d.child)
        }
        if let dir = options.workingDirectory {
            let rc = withUnsafeMutablePointer(to: &actions) { mp_spawn_file_actions_addchdir($0, dir) }
            guard rc == 0 else { throw .open(path: dir, Errno(rawValue: rc)) }
        }
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var defaults = sigset_t()
        if let signals = options.defaultSignals {
            sigemptyset(&defaults)
            for s in signals { sigaddset(&defaults, s) }
        } else {
            sigfillset(&defaults)
        }
        var mask = sigset_t()
        sigemptyset(&mask)
        posix_spawnattr_setsigdefault(&attributes, &defaults)
        posix_spawnattr_setsigmask(&attributes, &mask)
        var flags = POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK
        if options.newProcessGroup {
            posix_spawnattr_setpgroup(&attributes, 0)
            flags |= POSIX_SPAWN_SETPGROUP
        }
        posix_spawnattr_setflags(&attributes, Int16(flags))

        var envp: [UnsafeMutablePointer<CChar>?] = [nil]
        if let environment = options.environment {
            for (k, v) in environment where k.utf8.contains(0) || v.utf8.contains(0) { throw .nulByte("environment variable \(k)") }
            envp = environment.sorted { $0.key < $1.key }.map { strdup("\($0.key)=\($0.value)") } + [nil]
        }
        let argv = cStrings(options.arguments)
        defer {
            for p in argv { free(p) }
            for p in envp { free(p) }
        }
        var pid: pid_t = 0
        let rc: CInt
        if options.environment == nil {
            rc = options.searchPath
                ? posix_spawnp(&pid, program, &actions, &attributes, argv, environ)
                : posix_spawn(&pid, program, &actions, &attributes, argv, environ)
        } else {
            rc = options.searchPath
                ? posix_spawnp(&pid, program, &actions, &attributes, argv, envp)
                : posix_spawn(&pid, program, &actions, &attributes, argv, envp)
        }
        guard rc == 0 else { throw .spawn(program: program, Errno(rawValue: rc)) }
        do {
            // Our child, not yet reaped: pidfd_open cannot race with a reuse of its PID.
            return try ProcessHandle(pid: pid)
        } catch {
            // No pidfd: killed and reaped by its PID, which is still its own (not yet reaped).
            kill(pid, SIGKILL)
            var status: Int32 = 0
            _ = retryOnInterrupt { waitpid(pid, &status, 0) }
            throw .pidfd(pid: pid, error.errno)
        }
    }

    /// Replaces this process with `arguments` (`arguments[0]` a path), in the same environment:
    /// execv(2). Returns only if it failed, with why. Signals this process handles reset to their
    /// defaults; descriptors opened close-on-exec (all of this project's) close.
    public static func replaceProcess(with arguments: [String]) -> Errno {
        guard let program = arguments.first, !arguments.contains(where: { $0.utf8.contains(0) }) else { return .invalidArgument }
        let argv = cStrings(arguments)
        defer { for p in argv { free(p) } }
        execv(program, argv)
        return Errno(rawValue: errno)
    }

    /// `strings` as a NULL-terminated array of C strings (each to be freed).
    private static func cStrings(_ strings: [String]) -> [UnsafeMutablePointer<CChar>?] {
        strings.map { strdup($0) } + [nil]
    }

    /// The parent's environment, as a dictionary (to add to it for a child).
    public static var currentEnvironment: [String: String] {
        var out: [String: String] = [:]
        var p = environ
        while let entry = p.pointee {
            let s = String(cString: entry)
            if let eq = s.firstIndex(of: "=") { out[String(s[..<eq])] = String(s[s.index(after: eq)...]) }
            p += 1
        }
        return out
    }
}

extension ProcessHandle {
    /// How a child ended, from waitid's siginfo.
    public enum Termination: Sendable, Hashable, CustomStringConvertible {
        case exited(Int32)
        case signaled(Int32)

        public var description: String {
            switch self {
            case .exited(let code): "exited with status \(code)"
            case .signaled(let sig): "killed by signal \(sig)"
            }
        }
    }

    /// Blocks until this child exits, and reaps it (with `reap: false`, leaves it a zombie:
    /// WNOWAIT). Throws ECHILD once it has been reaped.
    public func waitForTermination(reap: Bool = true) throws(SystemCallError) -> Termination {
        let info = try wait(for: WEXITED | (reap ? 0 : WNOWAIT))
        let code = info._sifields._sigchld.si_status
        return info.si_code == Int32(CLD_EXITED) ? .exited(code) : .signaled(code)
    }
}
