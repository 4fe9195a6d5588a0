import Glibc
import MemPressureLifecycleProtocol
import MemPressureSystem
import Synchronization
import SystemPackage

/// The credentials of the process at the other end of a UNIX socket (SO_PEERCRED), taken by
/// the kernel at connect time: they cannot be forged by the peer.
typealias PeerCredentials = UnixSocket.PeerCredentials

/// Events the socket threads feed to the supervisor.
enum SocketEvent: Sendable {
    case accepted(connection: Int32, peer: PeerCredentials)
    case lines(connection: Int32, [String])
    /// The peer closed its end (`reason` nil), or the connection was closed for a reason.
    case closed(connection: Int32, reason: ChannelFailure?)
}

/// The supervisor's listening socket, in a directory only its user can enter, and the threads
/// that accept connections and read lines from them.
///
/// Each connection gets a reader thread that splits lines (refusing over-long, non-UTF-8 or NUL
/// bytes) and limits its rate: more than `maximumLinesPerSecond` lines within a second is a
/// flood, and the connection is closed with that reason. Writes never block: a peer that does not
/// read its messages loses the connection.
final class ControlSocket: @unchecked Sendable {
    let directory: String
    let path: String
    private let listener: Int32
    private let emit: @Sendable (SocketEvent) -> Void
    /// Set by `close()`: the accept loop ends at its next failure.
    private let closed = Atomic(false)
    static let maximumLinesPerSecond = 1000

    init(directory: String, name: String = "control.sock", emit: @escaping @Sendable (SocketEvent) -> Void) throws(SetupError) {
        self.directory = directory
        path = "\(directory)/\(name)"
        self.emit = emit
        // Made 0700, or verified by descriptor: a link, another user's directory or one others
        // may write in is refused, and nothing is changed on it.
        let made: Bool
        do {
            made = try RuntimeDirectory.prepare(directory)
        } catch {
            throw .runtimeDirectory(error)
        }
        unlink(path)
        do {
            listener = try UnixSocket.listen(at: path, backlog: 64).releaseDescriptor()
        } catch {
            if made { rmdir(directory) }  // made for this setup, which failed: gone again
            if error.errno == .fileNameTooLong { throw .socketPathTooLong(path) }
            throw .system(error)
        }
        do {
            try startThread { [self] in acceptLoop() }
        } catch {
            Glibc.close(listener)
            unlink(path)
            if made { rmdir(directory) }
            throw .system(error)
        }
    }

    /// Stops accepting (the accept thread ends) and removes the socket file.
    func close() {
        closed.store(true, ordering: .releasing)
        shutdown(listener, Int32(SHUT_RDWR))
        Glibc.close(listener)
        unlink(path)
    }

    /// Accepts until `close()`. Running out of descriptors or kernel memory (EMFILE, ENFILE,
    /// ENOBUFS, ENOMEM) does not end it: it backs off briefly and goes on, the waiting
    /// connections staying in the backlog meanwhile (EINTR and ECONNABORTED are retried at once
    /// by `UnixSocket.accept`).
    private func acceptLoop() {
        while !closed.load(ordering: .acquiring) {
            // The descriptor accept would take is the lowest free one: probed first, so that a
            // connection arriving while connections hold the descriptors waits in the backlog
            // (and is served once they close) rather than being accepted only to be closed.
            let probe = fcntl(listener, F_DUPFD_CLOEXEC, 0)
            if probe >= 0 { Glibc.close(probe) }
            if probe < 0 || Int(probe) >= Self.acceptLimit() {
                if closed.load(ordering: .acquiring) { return }
                Self.backOff()
                continue
            }
            let fd: Int32
            let peer: UnixSocket.PeerCredentials
            do {
                (fd, peer) = try UnixSocket.accept(on: listener)
            } catch {
                guard !closed.load(ordering: .acquiring), Self.isTransient(error.errno) else { return }  // closed
                Self.backOff()
                continue
            }
            // Descriptors are handed out lowest first: every one below `fd` is in use. Should
            // another thread have taken descriptors since the probe, a connection that leaves
            // fewer than the reserve free is closed at once (its peer reads the end of the
            // connection), and accepting pauses: the rest wait in the backlog.
            guard Int(fd) < Self.acceptLimit() else {
                Glibc.close(fd)
                Self.backOff()
                continue
            }
            emit(.accepted(connection: fd, peer: peer))
        }
    }

    /// The lowest descriptor the accept loop does not keep: the soft RLIMIT_NOFILE (read at each
    /// accept, as `prlimit` may change it) less a reserve that connections never take. Out of
    /// descriptors, the process fails wherever it opens one next, and not only where it can
    /// recover: libdispatch, under Swift's executor, opens /proc/TID/stat of its worker threads
    /// every second while work waits for them, and traps (SIGILL) when it cannot — a supervisor
    /// flooded with connections died so.
    static func acceptLimit() -> Int {
        var limit = rlimit()
        guard getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0, limit.rlim_cur < UInt(Int32.max) else { return Int(Int32.max) }
        let soft = Int(limit.rlim_cur)
        return soft - descriptorReserve(soft)
    }

    /// Descriptors kept free of connections, of a limit of `soft`: a sixteenth, at least 8 and
    /// at most 256, never more than half.
    static func descriptorReserve(_ soft: Int) -> Int {
        min(soft / 2, max(8, min(256, soft / 16)))
    }

    /// Failures of accept that pass: resources that come back when connections close.
    static func isTransient(_ e: Errno) -> Bool {
        e == .tooManyOpenFiles || e == .tooManyOpenFilesInSystem || e == .noBufferSpace || e == .noMemory
            || e == .interrupted || e == .connectionAbort
    }

    /// How long the accept loop waits after a transient failure before it tries again.
    static let acceptBackOffMilliseconds: Int32 = 50

    private static func backOff() {
        _ = poll(nil, 0, acceptBackOffMilliseconds)
    }

    /// Starts the reader thread of an accepted connection (lines of at most `maximumLineBytes`).
    func startReading(_ fd: Int32) {
        let reader: @Sendable () -> Void = { [emit] in
            var splitter = LineSplitter()
            var buffer = [UInt8](repeating: 0, count: 8192)
            var windowStart = monotonicSeconds()
            var linesInWindow = 0
            while true {
                let n = buffer.withUnsafeMutableBytes { raw in retryOnInterrupt { read(fd, raw.baseAddress!, raw.count) } }
                if n <= 0 {
                    emit(.closed(connection: fd, reason: nil))
                    return
                }
                let lines: [Substring]
                do throws(ProtocolError) {
                    lines = try buffer.withUnsafeBytes { raw in
                        Result { () throws(ProtocolError) in try splitter.feed(UnsafeRawBufferPointer(rebasing: raw[0..<n])) }
                    }.get()
                } catch {
                    emit(.closed(connection: fd, reason: .protocolError(error)))
                    return
                }
                let now = monotonicSeconds()
                if now - windowStart >= 1 {
                    windowStart = now
                    linesInWindow = 0
                }
                linesInWindow += lines.count
                if linesInWindow > Self.maximumLinesPerSecond {
                    emit(.closed(connection: fd, reason: .flood(limit: Self.maximumLinesPerSecond)))
                    return
                }
                if !lines.isEmpty { emit(.lines(connection: fd, lines.map(String.init))) }
            }
        }
        do {
            try startThread(reader)
        } catch {
            // Without a reader the connection cannot be served: it closes, saying why.
            emit(.closed(connection: fd, reason: .noReader(error)))
        }
    }

    /// Writes one line without blocking; false if the peer is gone or not reading.
    static func send(_ line: String, to fd: Int32) -> Bool {
        UnixSocket.sendWithoutBlocking(Array((line + "\n").utf8), on: fd)
    }

    static func disconnect(_ fd: Int32) {
        UnixSocket.shutdown(fd)
    }

    /// Writes one line, waiting (up to 10 s) while the peer's buffer is full.
    static func sendBlocking(_ line: String, to fd: Int32) -> Bool {
        do {
            try UnixSocket.sendAll(Array((line + "\n").utf8), on: fd, deadline: monotonicSeconds() + 10)
            return true
        } catch {
            return false
        }
    }
}

/// Runs `body` on a detached OS thread; throws (and `body` never runs) when there is none to be had.
func startThread(_ body: @escaping @Sendable () -> Void) throws(SystemCallError) {
    try OSThread.detached(body)
}
