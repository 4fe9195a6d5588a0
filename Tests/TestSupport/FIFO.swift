import Glibc
import MemPressureSystem

/// A FIFO the test reads and an app writes to: the app's words arrive as a real event (a read
/// that waits), not by polling a file.
public struct FIFO {
    public let path: String
    let reader: CInt
    /// The test's own writer, so that the reader never sees the end while the app is between writes.
    let keeper: CInt

    public init(_ path: String) throws {
        guard mkfifo(path, 0o600) == 0 else { throw TestFailure("mkfifo \(path): errno \(errno)") }
        self.path = path
        reader = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC)
        keeper = open(path, O_WRONLY | O_NONBLOCK | O_CLOEXEC)
        guard reader >= 0, keeper >= 0 else { throw TestFailure("open \(path): errno \(errno)") }
    }

    /// The next line written, waited for at most `timeout` seconds (on a thread of its own).
    public func line(within timeout: Double) async -> String? {
        let fd = reader
        return await within(timeout) {
            var bytes: [UInt8] = []
            while true {
                var p = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
                guard retryOnInterrupt({ poll(&p, 1, 100) }) >= 0 else { return nil }
                if Task.isCancelled { return nil }
                var b: UInt8 = 0
                while Glibc.read(fd, &b, 1) == 1 {
                    if b == 0x0a { return String(decoding: bytes, as: UTF8.self) }
                    bytes.append(b)
                }
            }
        }
    }

    public func close() {
        _ = Glibc.close(reader)
        _ = Glibc.close(keeper)
    }
}
