// The processes the benchmark adds to the machine: population-worker (Benchmarks/scripts,
// compiled by the harness) run under 40 names, each holding 64 to 256 KiB of dirty heap. They
// are the benchmark's own children (posix_spawn, a process group of their own so that a Ctrl-C at
// the terminal reaches only the benchmark), each with a pidfd; the benchmark kills them through
// their pidfds and reaps them. A pipe tells when every one has written its memory: each writes
// one byte to it and closes it.

import BenchSupport
import Glibc
import LinuxSystem

final class Population {
    struct Member {
        let pid: Int32
        let handle: ProcessHandle
    }

    /// How many process names the workers share (worker i is `xbench-(i % 40)`).
    static let names = 40

    /// The workers now running.
    private(set) var members: [Member] = []
    private let worker: String
    private let links: String
    private let logPath: String

    /// `worker` is the compiled population-worker; the links naming it go into `links` (a
    /// directory of the benchmark's scratch space); the workers' output goes to `logPath`.
    init(worker: String, links: String, logPath: String) throws {
        self.worker = worker
        self.links = links
        self.logPath = logPath
        guard mkdir(links, 0o755) == 0 else { throw BenchError("mkdir \(links): \(String(cString: strerror(errno)))") }
        for i in 0..<Self.names {
            let link = "\(links)/\(Self.name(i))"
            guard symlink(worker, link) == 0 else { throw BenchError("symlink \(worker) \(link): \(String(cString: strerror(errno)))") }
        }
    }

    /// The process name (comm) of worker `i`.
    static func name(_ i: Int) -> String {
        let n = i % names
        return n < 10 ? "xbench-0\(n)" : "xbench-\(n)"
    }

    /// KiB of dirty heap worker `i` holds: 64, 128, 192 or 256.
    static func kibibytes(_ i: Int) -> Int { 64 * (1 + i % 4) }

    /// Starts workers until `count` run, and waits (up to `timeout` seconds) until each new one
    /// has written its memory.
    func grow(to count: Int, timeout: Double = 60) throws {
        guard count > members.count else { return }
        var ends: [Int32] = [-1, -1]
        guard pipe(&ends) == 0 else { throw BenchError("pipe: \(String(cString: strerror(errno)))") }
        // Close-on-exec, so that no exporter or later worker inherits them (the benchmark starts
        // nothing else meanwhile).
        _ = fcntl(ends[0], F_SETFD, FD_CLOEXEC)
        _ = fcntl(ends[1], F_SETFD, FD_CLOEXEC)
        if ends[1] == 3 {
            // dup2(3, 3) in the child would leave it close-on-exec: move it above 3.
            let moved = fcntl(ends[1], F_DUPFD_CLOEXEC, 4)
            close(ends[1])
            ends[1] = moved
            guard moved >= 0 else {
                close(ends[0])
                throw BenchError("fcntl(F_DUPFD_CLOEXEC): \(String(cString: strerror(errno)))")
            }
        }
        defer { close(ends[0]) }
        var writeEndOpen = true
        defer { if writeEndOpen { close(ends[1]) } }
        let first = members.count
        for i in first..<count {
            try Task.checkCancellation()
            members.append(try spawn(i, readyFD: ends[1]))
        }
        // Only the workers hold the write end now: the pipe reaches end of file when the last
        // has written and closed it, or exited without.
        close(ends[1])
        writeEndOpen = false
        let expected = count - first
        var ready = 0
        var buffer = [UInt8](repeating: 0, count: 4096)
        let deadline = monotonicSeconds() + timeout
        while ready < expected {
            try Task.checkCancellation()
            guard monotonicSeconds() < deadline else {
                throw BenchError("\(expected - ready) of \(expected) population workers did not become ready within \(Int(timeout)) s (their log: \(logPath))")
            }
            var p = pollfd(fd: ends[0], events: Int16(POLLIN), revents: 0)
            let polled = retryOnInterrupt { poll(&p, 1, 100) }
            guard polled >= 0 else { throw BenchError("poll on the readiness pipe: \(String(cString: strerror(errno)))") }
            guard polled > 0 else { continue }
            let n = buffer.withUnsafeMutableBytes { b in retryOnInterrupt { read(ends[0], b.baseAddress!, b.count) } }
            guard n >= 0 else { throw BenchError("read from the readiness pipe: \(String(cString: strerror(errno)))") }
            guard n > 0 else {
                throw BenchError("\(expected - ready) of \(expected) population workers exited before becoming ready (their log: \(logPath))")
            }
            ready += n
        }
    }

    private func spawn(_ i: Int, readyFD: Int32) throws -> Member {
        let path = "\(links)/\(Self.name(i))"
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, logPath, O_WRONLY | O_CREAT | O_APPEND, 0o600)
        posix_spawn_file_actions_adddup2(&actions, 1, 2)
        posix_spawn_file_actions_adddup2(&actions, readyFD, 3)  // the copy at 3 is not close-on-exec
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        // A process group of its own; the signals the benchmark ignores back to their defaults
        // (an ignored signal stays ignored across exec); no signal blocked.
        var defaults = sigset_t()
        sigemptyset(&defaults)
        for s in [SIGINT, SIGTERM, SIGHUP, SIGPIPE] { sigaddset(&defaults, s) }
        var mask = sigset_t()
        sigemptyset(&mask)
        posix_spawnattr_setsigdefault(&attributes, &defaults)
        posix_spawnattr_setsigmask(&attributes, &mask)
        posix_spawnattr_setpgroup(&attributes, 0)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK))
        let argv: [String] = [path, "\(Self.kibibytes(i))"]
        let args: [UnsafeMutablePointer<CChar>?] = argv.map { strdup($0) } + [nil]
        defer { for a in args { free(a) } }
        var pid: pid_t = 0
        let rc = posix_spawn(&pid, path, &actions, &attributes, args, environ)
        guard rc == 0 else { throw BenchError("posix_spawn \(path): \(String(cString: strerror(rc)))") }
        do {
            return Member(pid: pid, handle: try ProcessHandle(pid: pid))  // our unreaped child: the PID is still its
        } catch {
            // Without a pidfd it cannot be signalled later; it is our unreaped child, so its PID
            // is still its own for this one kill.
            Glibc.kill(pid, SIGKILL)
            var status: Int32 = 0
            _ = retryOnInterrupt { waitpid(pid, &status, 0) }
            throw error
        }
    }

    /// SIGKILL to every worker through its pidfd, then reaps them all. Idempotent.
    func kill() {
        for m in members {
            do {
                try m.handle.signal(SIGKILL)
            } catch {
                log("export-bench", "SIGKILL to population worker \(m.pid): \(error)")  // exited already: reaped below
            }
        }
        for m in members {
            var status: Int32 = 0
            _ = retryOnInterrupt { waitpid(m.pid, &status, 0) }
        }
        members = []
    }
}
