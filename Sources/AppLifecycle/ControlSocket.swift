import CMemoryPressure
import Glibc
import LifecycleProtocol
import SystemPackage
import VMTracker

/// The credentials of the process at the other end of a UNIX socket (SO_PEERCRED), taken by
/// the kernel at connect time: they cannot be forged by the peer.
struct PeerCredentials: Sendable, Hashable {
    var pid: Int32
    var uid: UInt32
    var gid: UInt32
}

/// Events the socket threads feed to the supervisor.
enum SocketEvent: Sendable {
    case accepted(connection: Int32, peer: PeerCredentials)
    case lines(connection: Int32, [String])
    case closed(connection: Int32, reason: String?)
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
    static let maximumLinesPerSecond = 1000

    init(directory: String, name: String = "control.sock", emit: @escaping @Sendable (SocketEvent) -> Void) throws(LaunchError) {
        self.directory = directory
        path = "\(directory)/\(name)"
        self.emit = emit
        if mkdir(directory, 0o700) != 0 && errno != EEXIST {
            throw .setup(SystemCallError("mkdir", errno: Errno(rawValue: errno), subject: directory))
        }
        // Only this user may enter: whatever the umask did, and whoever made it before.
        var st = stat()
        guard stat(directory, &st) == 0, st.st_uid == getuid(), (st.st_mode & S_IFMT) == S_IFDIR else {
            throw .notADirectoryOfThisUser(directory)
        }
        chmod(directory, 0o700)
        unlink(path)
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw .setup(SystemCallError("socket", errno: Errno(rawValue: errno))) }
        func closeSocket() { Glibc.close(fd) }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(path.utf8)
        guard bytes.count < MemoryLayout.size(ofValue: address.sun_path) else {
            closeSocket()
            throw .socketPathTooLong(path)
        }
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            for (i, b) in bytes.enumerated() { raw[i] = b }
        }
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        guard bound == 0, listen(fd, 64) == 0 else {
            let e = errno
            closeSocket()
            throw .setup(SystemCallError("listen", errno: Errno(rawValue: e), subject: path))
        }
        listener = fd
        startThread { [self] in acceptLoop() }
    }

    /// Stops accepting (the accept thread ends) and removes the socket file.
    func close() {
        shutdown(listener, Int32(SHUT_RDWR))
        Glibc.close(listener)
        unlink(path)
    }

    private func acceptLoop() {
        while true {
            let fd = mp_accept_cloexec(listener)
            if fd < 0 {
                if errno == EINTR || errno == ECONNABORTED { continue }
                return  // closed
            }
            var pid: Int32 = 0
            var uid: UInt32 = 0
            var gid: UInt32 = 0
            guard mp_peer_credentials(fd, &pid, &uid, &gid) == 0 else {
                Glibc.close(fd)
                continue
            }
            emit(.accepted(connection: fd, peer: PeerCredentials(pid: pid, uid: uid, gid: gid)))
        }
    }

    /// Starts the reader thread of an accepted connection (lines of at most `maximumLineBytes`).
    func startReading(_ fd: Int32) {
        startThread { [emit] in
            var splitter = LineSplitter()
            var buffer = [UInt8](repeating: 0, count: 8192)
            var windowStart = monotonicSeconds()
            var linesInWindow = 0
            while true {
                let n = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress!, $0.count) }
                if n < 0 && errno == EINTR { continue }
                if n <= 0 {
                    emit(.closed(connection: fd, reason: nil))
                    return
                }
                let lines: [Substring]
                do {
                    lines = try buffer.withUnsafeBytes { raw in try splitter.feed(UnsafeRawBufferPointer(rebasing: raw[0..<n])) }
                } catch {
                    emit(.closed(connection: fd, reason: "protocol error: \(error)"))
                    return
                }
                let now = monotonicSeconds()
                if now - windowStart >= 1 {
                    windowStart = now
                    linesInWindow = 0
                }
                linesInWindow += lines.count
                if linesInWindow > Self.maximumLinesPerSecond {
                    emit(.closed(connection: fd, reason: "flood: more than \(Self.maximumLinesPerSecond) lines in a second"))
                    return
                }
                if !lines.isEmpty { emit(.lines(connection: fd, lines.map(String.init))) }
            }
        }
    }

    /// Writes one line without blocking; false if the peer is gone or not reading.
    static func send(_ line: String, to fd: Int32) -> Bool {
        let bytes = Array((line + "\n").utf8)
        let n = bytes.withUnsafeBytes { Glibc.send(fd, $0.baseAddress!, bytes.count, Int32(MSG_DONTWAIT) | Int32(MSG_NOSIGNAL)) }
        return n == bytes.count
    }

    static func disconnect(_ fd: Int32) {
        shutdown(fd, Int32(SHUT_RDWR))
    }
}

/// Runs `body` on a detached OS thread.
func startThread(_ body: @escaping @Sendable () -> Void) {
    OSThread.detached(body)
}
