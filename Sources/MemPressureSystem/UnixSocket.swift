import CMemoryPressure
import Glibc
import Synchronization
import SystemPackage

/// A UNIX stream socket: listening at a path, connected to one, or accepted. It owns its
/// descriptor (close-on-exec) and closes it in `close()` or when it goes away, unless the
/// descriptor was handed on with `releaseDescriptor()`.
///
/// The operations also exist as static functions on a bare descriptor, for code that keeps
/// connections by number (a supervisor's table of accepted connections).
public final class UnixSocket: Sendable {
    /// The credentials of the process at the other end (SO_PEERCRED), taken by the kernel when
    /// it connected: the peer cannot forge them.
    public struct PeerCredentials: Sendable, Hashable {
        public var pid: Int32
        public var uid: UInt32
        public var gid: UInt32

        public init(pid: Int32, uid: UInt32, gid: UInt32) {
            self.pid = pid
            self.uid = uid
            self.gid = gid
        }
    }

    /// -1 once closed or released.
    private let fd: Atomic<CInt>

    /// Takes ownership of `descriptor`, a connected or listening UNIX socket.
    public init(adopting descriptor: CInt) {
        fd = Atomic(descriptor)
    }

    deinit { close() }

    /// The descriptor, or -1 once closed or released.
    public var descriptor: CInt { fd.load(ordering: .acquiring) }

    /// Hands the descriptor on: the caller closes it from now on.
    public func releaseDescriptor() -> CInt {
        fd.exchange(-1, ordering: .acquiringAndReleasing)
    }

    /// Closes the descriptor (once; later calls do nothing).
    public func close() {
        let d = fd.exchange(-1, ordering: .acquiringAndReleasing)
        if d >= 0 { Glibc.close(d) }
    }

    // MARK: Opening

    /// A socket listening at `path` (bind + listen). A file already at `path` is an error
    /// (EADDRINUSE): remove a stale one first.
    public static func listen(at path: String, backlog: CInt = 64) throws(SystemCallError) -> UnixSocket {
        try open(path) { fd, address, length in
            if Glibc.bind(fd, address, length) != 0 { return "bind" }
            if Glibc.listen(fd, backlog) != 0 { return "listen" }
            return nil
        }
    }

    /// A socket connected to the listener at `path`. With a `timeout` (seconds), a connect that
    /// waits for room in a full backlog gives up after it (EAGAIN).
    public static func connect(to path: String, timeout: Double? = nil) throws(SystemCallError) -> UnixSocket {
        try open(path) { fd, address, length in
            if let timeout {
                let whole = timeout > 0.001 ? min(timeout, Seconds.maximum) : 0.001  // NaN too
                var t = timeval(tv_sec: Int(whole), tv_usec: Int((whole - whole.rounded(.down)) * 1e6))
                if t.tv_sec == 0 && t.tv_usec == 0 { t.tv_usec = 1000 }
                if setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &t, socklen_t(MemoryLayout<timeval>.size)) != 0 { return "setsockopt(SO_SNDTIMEO)" }
            }
            return Glibc.connect(fd, address, length) == 0 ? nil : "connect"
        }
    }

    /// Makes a socket and runs `operation` on it with the address of `path`: the one place a
    /// `sockaddr_un` is built. `operation` returns the name of the call that failed (with errno
    /// set), or nil.
    private static func open(
        _ path: String, _ operation: (CInt, UnsafePointer<sockaddr>, socklen_t) -> String?
    ) throws(SystemCallError) -> UnixSocket {
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(path.utf8)
        guard bytes.count < MemoryLayout.size(ofValue: address.sun_path) else {
            throw SystemCallError("sockaddr_un", errno: .fileNameTooLong, subject: path)
        }
        guard !bytes.contains(0) else { throw SystemCallError("sockaddr_un", errno: .invalidArgument, subject: path) }
        withUnsafeMutableBytes(of: &address.sun_path) { raw in raw.copyBytes(from: bytes) }

        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw SystemCallError("socket", errno: Errno(rawValue: errno), subject: path) }
        let result = UnixSocket(adopting: fd)
        let failure: (call: String, errno: CInt)? = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { address in
                operation(fd, address, socklen_t(MemoryLayout<sockaddr_un>.size)).map { ($0, errno) }
            }
        }
        if let failure {
            result.close()
            throw SystemCallError(failure.call, errno: Errno(rawValue: failure.errno), subject: path)
        }
        return result
    }

    // MARK: Accepting

    /// Waits for the next connection (retrying EINTR and connections aborted before they were
    /// accepted); returns it with its peer's credentials. A connection whose credentials cannot
    /// be read is closed and not returned: nothing could vouch for it.
    public func accept() throws(SystemCallError) -> (connection: UnixSocket, peer: PeerCredentials) {
        let (connection, peer) = try Self.accept(on: descriptor)
        return (UnixSocket(adopting: connection), peer)
    }

    /// `accept()` on the listening descriptor `listener`; the caller owns the returned one.
    public static func accept(on listener: CInt) throws(SystemCallError) -> (descriptor: CInt, peer: PeerCredentials) {
        while true {
            let connection = retryOnInterrupt { mp_accept_cloexec(listener) }
            if connection < 0 {
                let err = Errno(rawValue: errno)
                if err == .connectionAbort { continue }
                throw SystemCallError("accept4", errno: err)
            }
            var pid: Int32 = 0
            var uid: UInt32 = 0
            var gid: UInt32 = 0
            guard mp_peer_credentials(connection, &pid, &uid, &gid) == 0 else {
                Glibc.close(connection)
                continue
            }
            return (connection, PeerCredentials(pid: pid, uid: uid, gid: gid))
        }
    }

    /// The credentials of the process at the other end of the connected socket (SO_PEERCRED:
    /// for a connection to a listener, whoever called listen()).
    public func peerCredentials() throws(SystemCallError) -> PeerCredentials {
        try Self.peerCredentials(of: descriptor)
    }

    /// `peerCredentials()` of the connected descriptor `fd`.
    public static func peerCredentials(of fd: CInt) throws(SystemCallError) -> PeerCredentials {
        var pid: Int32 = 0
        var uid: UInt32 = 0
        var gid: UInt32 = 0
        guard mp_peer_credentials(fd, &pid, &uid, &gid) == 0 else { throw SystemCallError("getsockopt(SO_PEERCRED)", errno: Errno(rawValue: errno)) }
        return PeerCredentials(pid: pid, uid: uid, gid: gid)
    }

    // MARK: Sending and receiving

    /// Sends all of `bytes` (never raising SIGPIPE). Without a deadline it blocks while the
    /// peer's buffer is full; with one (in `monotonicSeconds()`), it waits until then at most
    /// and throws ETIMEDOUT.
    public func sendAll(_ bytes: [UInt8], deadline: Double? = nil) throws(SystemCallError) {
        try Self.sendAll(bytes, on: descriptor, deadline: deadline)
    }

    /// `sendAll(_:deadline:)` on the connected descriptor `fd`.
    public static func sendAll(_ bytes: [UInt8], on fd: CInt, deadline: Double? = nil) throws(SystemCallError) {
        let flags = Int32(MSG_NOSIGNAL) | (deadline == nil ? 0 : Int32(MSG_DONTWAIT))
        var offset = 0
        while offset < bytes.count {
            let n = bytes.withUnsafeBytes { raw in retryOnInterrupt { Glibc.send(fd, raw.baseAddress! + offset, raw.count - offset, flags) } }
            if n > 0 {
                offset += n
                continue
            }
            let err = n < 0 ? Errno(rawValue: errno) : Errno.brokenPipe
            guard let deadline, err == .wouldBlock else { throw SystemCallError("send", errno: err) }
            guard monotonicSeconds() < deadline else { throw SystemCallError("send", errno: .timedOut) }
            var p = pollfd(fd: fd, events: Int16(POLLOUT), revents: 0)
            _ = poll(&p, 1, 100)  // then try again: the deadline is checked before each wait
        }
    }

    /// Sends `bytes` without blocking: true if all of them went out; false if the peer is gone,
    /// or does not read and its buffer is full.
    public func sendWithoutBlocking(_ bytes: [UInt8]) -> Bool {
        Self.sendWithoutBlocking(bytes, on: descriptor)
    }

    /// `sendWithoutBlocking(_:)` on the connected descriptor `fd`.
    public static func sendWithoutBlocking(_ bytes: [UInt8], on fd: CInt) -> Bool {
        let n = bytes.withUnsafeBytes { raw in
            retryOnInterrupt { Glibc.send(fd, raw.baseAddress!, raw.count, Int32(MSG_DONTWAIT) | Int32(MSG_NOSIGNAL)) }
        }
        return n == bytes.count
    }

    /// Reads what has arrived into `buffer` (waiting for something, retrying EINTR); 0 at the
    /// end of the stream.
    public func read(into buffer: UnsafeMutableRawBufferPointer) throws(SystemCallError) -> Int {
        try Self.read(descriptor, into: buffer)
    }

    /// `read(into:)` on the descriptor `fd`.
    public static func read(_ fd: CInt, into buffer: UnsafeMutableRawBufferPointer) throws(SystemCallError) -> Int {
        let n = retryOnInterrupt { Glibc.read(fd, buffer.baseAddress, buffer.count) }
        guard n >= 0 else { throw SystemCallError("read", errno: Errno(rawValue: errno)) }
        return n
    }

    /// Shuts both directions down: a thread blocked reading or accepting on the socket returns.
    public func shutdown() {
        Self.shutdown(descriptor)
    }

    /// `shutdown()` on the descriptor `fd`.
    public static func shutdown(_ fd: CInt) {
        _ = Glibc.shutdown(fd, Int32(SHUT_RDWR))
    }
}
