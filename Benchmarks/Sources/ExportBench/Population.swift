// The processes the benchmark adds to the machine: population-worker (Benchmarks/scripts,
// compiled by the harness) run under 40 names, each holding 64 to 256 KiB of dirty heap. They
// are the benchmark's own children (posix_spawn, a process group of their own so that a Ctrl-C at
// the terminal reaches only the benchmark), each with a pidfd: `ChildProcess`es. The benchmark
// kills them through their pidfds and reaps them. A pipe tells when every one has written its memory: each writes
// one byte to it and closes it.

import BenchSupport
import Glibc
import MemPressureSystem

final class Population {
    /// How many process names the workers share (worker i is `xbench-(i % 40)`).
    static let names = 40

    /// The workers now running.
    private(set) var members: [ChildProcess] = []
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

    private func spawn(_ i: Int, readyFD: Int32) throws -> ChildProcess {
        let path = "\(links)/\(Self.name(i))"
        // The copy at 3 is not close-on-exec.
        return try ChildProcess(
            name: "population worker \(i)", tool: "export-bench", argv: [path, "\(Self.kibibytes(i))"], logPath: logPath,
            inheriting: [(parent: readyFD, child: 3)])
    }

    /// SIGKILL to every worker through its pidfd, then reaps them all. Idempotent.
    func kill() {
        for m in members {
            do {
                try m.signal(SIGKILL)
            } catch {
                log("export-bench", "SIGKILL to population worker \(m.pid): \(error)")  // exited already: reaped below
            }
        }
        for m in members { m.kill() }  // reaps (signalling again first, which a dead worker ignores)
        members = []
    }
}
