import CMemoryPressure
import Glibc
import MemPressureSystem
import Synchronization
import SystemPackage

/// The apps' standard output and error: each run writes into a pipe, and one thread of the
/// supervisor's copies what comes out into the run's file in the runtime directory
/// (`NAME-RUN.log`, readable while the app runs) and keeps its last bytes in memory (a crash is
/// logged with them).
///
/// Bounded, and outside the device's budget: the file is written by the supervisor, so its
/// pages (the runtime directory is usually a tmpfs) are charged to the supervisor's cgroup, not
/// to the app's or the device's; it is cut back to nothing, with a line saying so, whenever it
/// passes `fileLimit`; and it is removed when the run ends.
final class AppOutput: Sendable {
    /// How large a run's file grows before it is cut.
    static let fileLimit = 1 << 20
    /// How many of the last bytes are kept in memory.
    static let tailLimit = 4096

    private struct Run {
        var file: CInt
        var name: String
        var written = 0
        var tail: [UInt8] = []
        var finished = false
    }

    private struct State {
        var runs: [CInt: Run] = [:]  // by the pipe's read end
        var stopped = false
    }

    private let state = Mutex(State())
    private let directoryFD: CInt
    private let wake: CInt
    private let thread = Mutex<OSThread?>(nil)

    init(directoryFD: CInt) throws(SystemCallError) {
        self.directoryFD = directoryFD
        wake = mp_eventfd(0)
        guard wake >= 0 else { throw SystemCallError("eventfd", errno: Errno(rawValue: errno)) }
        let t = try OSThread { [self] in run() }
        thread.withLock { $0 = t }
    }

    deinit { close(wake) }

    /// A new run's output: its file (`fileName` in the runtime directory, made through the
    /// directory's descriptor: never through a link, a leftover of the same name replaced, mode
    /// 0600) and a pipe. Returns the pipe's write end, for the app's standard output and error
    /// (the caller closes it once the app is started) and the read end, which names the run.
    func open(_ fileName: String) throws(SystemCallError) -> (write: CInt, run: CInt) {
        unlinkat(directoryFD, fileName, 0)
        let file = openat(directoryFD, fileName, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC | O_APPEND, 0o600)
        guard file >= 0 else { throw SystemCallError("openat", errno: Errno(rawValue: errno), subject: fileName) }
        var fds: [CInt] = [-1, -1]
        // The read end does not block: the thread and `finish` read it under the lock.
        guard mp_pipe_cloexec(&fds) == 0, fcntl(fds[0], F_SETFL, O_NONBLOCK) == 0 else {
            let e = Errno(rawValue: errno)
            close(file)
            unlinkat(directoryFD, fileName, 0)
            throw SystemCallError("pipe2", errno: e)
        }
        state.withLock { $0.runs[fds[0]] = Run(file: file, name: fileName) }
        poke()
        return (fds[1], fds[0])
    }

    /// The run is over: what is left in the pipe is read, the file removed, and its last bytes
    /// returned (on one line, at most 400 bytes).
    func finish(_ run: CInt) -> String {
        let tail = state.withLock { s -> [UInt8] in
            // Everything the app wrote before it ended is in the pipe already.
            Self.drain(run, &s)
            guard let r = s.runs.removeValue(forKey: run) else { return [] }
            close(r.file)
            unlinkat(directoryFD, r.name, 0)
            close(run)
            return r.tail
        }
        poke()
        let last = String(decoding: tail.suffix(400), as: UTF8.self)
        return last.split(whereSeparator: { $0 == "\n" }).joined(separator: " | ")
    }

    /// Stops the thread; every run still open is finished (its file removed).
    func stop() {
        state.withLock { $0.stopped = true }
        poke()
        thread.withLock { t -> OSThread? in defer { t = nil }; return t }?.join()
        let left = state.withLock { s -> [CInt] in Array(s.runs.keys) }
        for run in left { _ = finish(run) }
    }

    private func poke() {
        var one: UInt64 = 1
        _ = write(wake, &one, 8)
    }

    private func run() {
        while true {
            let (stopped, runs) = state.withLock { s in (s.stopped, s.runs.filter { !$0.value.finished }.map(\.key)) }
            if stopped { return }
            var fds = runs.map { pollfd(fd: $0, events: Int16(POLLIN), revents: 0) }
            fds.append(pollfd(fd: wake, events: Int16(POLLIN), revents: 0))
            let n = fds.withUnsafeMutableBufferPointer { p in retryOnInterrupt { poll(p.baseAddress, nfds_t(p.count), -1) } }
            guard n >= 0 else { return }
            if fds.last!.revents != 0 {
                var counter: UInt64 = 0
                _ = read(wake, &counter, 8)
            }
            for p in fds.dropLast() where p.revents != 0 { state.withLock { Self.drain(p.fd, &$0) } }
        }
    }

    /// Copies what the pipe holds now into the run's file and tail (reads that do not block,
    /// under the lock: nobody else reads the pipe meanwhile). At end of file (the app and every
    /// process it started have closed it) the run is marked finished.
    private static func drain(_ run: CInt, _ s: inout State) {
        guard var r = s.runs[run], !r.finished else { return }
        defer { s.runs[run] = r }
        var buffer = [UInt8](repeating: 0, count: 65536)
        while true {
            let n = buffer.withUnsafeMutableBytes { raw in retryOnInterrupt { read(run, raw.baseAddress, raw.count) } }
            if n == 0 { r.finished = true }
            guard n > 0 else { return }  // end of file, or EAGAIN: nothing more now
            if r.written + n > fileLimit {
                // Cut: the file starts again, saying so (its last bytes are in the tail).
                _ = ftruncate(r.file, 0)
                let note = Array("[mempressure: more than \(fileLimit >> 20) MiB of output: what came before was dropped]\n".utf8)
                _ = note.withUnsafeBytes { write(r.file, $0.baseAddress, $0.count) }
                r.written = note.count
            }
            _ = buffer.withUnsafeBytes { write(r.file, $0.baseAddress, n) }
            r.written += n
            r.tail += buffer[0..<n]
            if r.tail.count > tailLimit { r.tail.removeFirst(r.tail.count - tailLimit) }
        }
    }
}
