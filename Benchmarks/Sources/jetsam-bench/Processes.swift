import BenchSupport
import Glibc
import MemPressureJetsam
import MemPressureSystem
import MemPressureMonitor
import Synchronization

/// A child process the benchmark started, with pipes to its standard input and output and a
/// pidfd: the only processes the benchmark ever signals.
final class Child: @unchecked Sendable {
    let pid: Int32
    let handle: ProcessHandle
    let input: Int32
    let output: Int32
    private var pending: [UInt8] = []

    /// Starts `argv` with its stdin on a pipe, and its stdout on a pipe, or (with `logPath`) its
    /// stdout and stderr appended to that file. Without `logPath` stderr is inherited.
    init(_ argv: [String], logPath: String? = nil) throws {
        var inPipe: [Int32] = [0, 0]
        var outPipe: [Int32] = [0, 0]
        guard pipe(&inPipe) == 0, pipe(&outPipe) == 0 else { throw BenchError("pipe: errno \(errno)") }
        for fd in inPipe + outPipe { _ = fcntl(fd, F_SETFD, FD_CLOEXEC) }  // the child gets only what dup2 gives it
        var options = SpawnOptions(argv)
        options.standardInput = .descriptor(inPipe[0])
        options.newProcessGroup = false
        options.defaultSignals = []
        var log: Int32 = -1
        if let logPath {
            log = open(logPath, O_WRONLY | O_CREAT | O_APPEND | O_NOFOLLOW | O_CLOEXEC, 0o600)
            guard log >= 0 else { throw BenchError("open \(logPath): \(String(cString: strerror(errno)))") }
            options.standardOutput = .descriptor(log)
            options.standardError = .output
        } else {
            options.standardOutput = .descriptor(outPipe[1])
        }
        let started: ProcessHandle
        do {
            started = try Spawn.start(options)
        } catch {
            for fd in inPipe + outPipe { close(fd) }
            if log >= 0 { close(log) }
            throw error
        }
        if log >= 0 { close(log) }
        close(inPipe[0])
        close(outPipe[1])
        handle = started
        pid = started.pid
        input = inPipe[1]
        output = outPipe[0]
    }

    deinit {
        close(input)
        close(output)
    }

    /// The next line it writes, or nil at end of file or after `timeout` seconds.
    func readLine(timeout: Double) -> String? {
        let deadline = monotonicSeconds() + timeout
        while true {
            if let nl = pending.firstIndex(of: 0x0a) {
                let line = String(decoding: pending[..<nl], as: UTF8.self)
                pending.removeFirst(nl + 1)
                return line
            }
            let left = deadline - monotonicSeconds()
            guard left > 0 else { return nil }
            var p = pollfd(fd: output, events: Int16(POLLIN), revents: 0)
            guard retryOnInterrupt({ poll(&p, 1, Int32(left * 1000) + 1) }) > 0 else { continue }
            var buffer = [UInt8](repeating: 0, count: 4096)
            let n = buffer.withUnsafeMutableBytes { raw in retryOnInterrupt { read(output, raw.baseAddress!, raw.count) } }
            guard n > 0 else { return nil }
            pending += buffer[0..<n]
        }
    }

    func send(_ line: String) throws {
        try writeAll(input, Array((line + "\n").utf8), subject: "stdin of pid \(pid)")
    }

    func signal(_ sig: Int32) {
        do { try handle.signal(sig) } catch { log("jetsam-bench", "\(error)") }
    }

    /// Kills and reaps it (if not already reaped by a `waitid(P_ALL)` loop).
    func killAndReap() {
        signal(SIGKILL)
        var status: Int32 = 0
        _ = retryOnInterrupt { waitpid(pid, &status, 0) }
    }
}

/// A memory cgroup (v1) of the benchmark's own, removed when done.
struct BenchCgroup {
    let path: String

    init(name: String, limitBytes: UInt64) throws {
        let base = "/sys/fs/cgroup/memory"
        guard ProcFS.isFile("\(base)/cgroup.procs") else { throw BenchError("no cgroup v1 memory controller at \(base)") }
        path = "\(base)/\(name)"
        try ProcFS.makeDirectory(path)
        try ProcFS.writeFileInPlace("\(path)/memory.limit_in_bytes", Array("\(limitBytes)".utf8))
    }

    /// Its kernel OOM kill count (memory.oom_control `oom_kill`).
    /// The kernel's OOM kills in the group (`memory.oom_control` `oom_kill`): an error, never a
    /// guess, when it cannot be read.
    func oomKills() throws -> UInt64 {
        let file = "\(path)/memory.oom_control"
        guard let n = ByteScanner.value(of: "oom_kill", inSpaceSeparatedLines: try ProcFS.readBytes(file)) else {
            throw BenchFailure("\(file) has no oom_kill line")
        }
        return n
    }

    /// rmdir, once its processes are gone (waits up to 5 s for them to be reaped and uncharged).
    func remove() {
        let deadline = monotonicSeconds() + 5
        while rmdir(path) != 0 && errno == EBUSY && monotonicSeconds() < deadline {
            var ts = timespec(tv_sec: 0, tv_nsec: 20_000_000)
            nanosleep(&ts, nil)  // the kernel frees a dead task's cgroup asynchronously; retry briefly
        }
    }
}

/// Samples a cgroup's working set (usage − inactive_file, as Jetsam's MemoryStatus reads it)
/// every `interval` seconds on a thread of its own, until stopped.
final class WorkingSetSampler: @unchecked Sendable {
    struct Point: Codable, Sendable { var t: Double; var usedBytes: UInt64 }
    private final class Shared: Sendable {
        let points = Mutex<[Point]>([])
        let stop = Atomic<Bool>(false)
        let failure = Mutex<String?>(nil)
    }

    /// Why sampling stopped early, if it did.
    var failure: String? { shared.failure.withLock { $0 } }
    private let shared = Shared()
    private var thread: OSThread?
    let start: Double

    init(cgroup: String, interval: Double = 0.01, start: Double = monotonicSeconds()) throws {
        self.start = start
        let reader = MemoryStatusReader(cgroup: cgroup)  // v1 or v2
        thread = try OSThread { [shared] in
            while !shared.stop.load(ordering: .relaxed) {
                do {
                    let p = Point(t: monotonicSeconds() - start, usedBytes: try reader.read().usedBytes)
                    shared.points.withLock { $0.append(p) }
                } catch {
                    shared.failure.withLock { $0 = "\(error)" }
                    return  // the cgroup is gone, or unreadable: the series ends here, and says why
                }
                var ts = timespec(tv_sec: 0, tv_nsec: Int(interval * 1e9))
                nanosleep(&ts, nil)  // the sampling period
            }
        }
    }

    func stop() -> [Point] {
        shared.stop.store(true, ordering: .relaxed)
        thread?.join()
        return shared.points.withLock { $0 }
    }
}
