// redis-server as a child of the benchmark (a BenchSupport.ChildProcess: posix_spawn in a process
// group of its own, signalled only through its pidfd, reaped by the benchmark), and what the
// benchmark reads from its log.

import BenchSupport
import Glibc
import MemPressureSystem

/// A redis-server the benchmark started.
final class RedisServer {
    let process: ChildProcess
    let socketPath: String
    var pid: Int32 { process.pid }
    var handle: ProcessHandle { process.handle }
    var logPath: String { process.logPath }
    /// When posix_spawn was called (monotonic seconds).
    var spawnedAt: Double { process.spawnedAt }

    /// Starts `executable ARGS` with stdout and stderr appended to `logPath`. With `cgroupProcs`
    /// (a `cgroup.procs` file) redis is in that cgroup from its first allocation.
    init(executable: String, arguments: [String], socketPath: String, logPath: String, cgroupProcs: String?) throws {
        process = try ChildProcess(
            name: "redis-server", tool: "redis-bench", argv: [executable] + arguments, logPath: logPath,
            cgroupProcs: cgroupProcs.map { [$0] } ?? [])
        self.socketPath = socketPath
    }

    /// Throws if it has exited (and reaps it), with the end of its log.
    func checkAlive(_ during: String) throws { try process.checkAlive(during) }

    func logTail(lines: Int = 15) -> String { process.logTail(lines: lines) }

    /// How long the latest load of the RDB file took, as redis logged it ("DB loaded from
    /// disk: 1.234 seconds"); nil if the log has no such line.
    func lastLoadSeconds() throws -> Double? {
        let text = String(decoding: try ProcFS.readBytes(logPath), as: UTF8.self)
        guard let line = text.split(separator: "\n").last(where: { $0.contains("DB loaded from disk: ") }),
              let range = line.range(of: "DB loaded from disk: ") else { return nil }
        return Double(line[range.upperBound...].prefix { $0.isNumber || $0 == "." })
    }

    /// SIGSTOP, and waits until the kernel shows it stopped (state T).
    func stop() throws { try process.stop() }

    func resume() throws { try process.signal(SIGCONT) }

    /// SIGKILL through the pidfd, and reaps it. Idempotent.
    func kill() { process.kill() }

    func stat() throws -> ProcessStat { try process.stat() }

    func status() throws -> ProcessStatus { try process.status() }

    /// Its memory cgroup, from /proc/PID/cgroup.
    func memoryCgroup() throws -> String? { try process.memoryCgroup() }
}
