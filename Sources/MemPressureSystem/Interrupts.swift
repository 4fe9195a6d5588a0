import Glibc
import SystemPackage

/// Calls `call` — one system call that returns a negative value and sets `errno` when it fails —
/// again for as long as it fails with EINTR (a signal arrived while it waited), and returns its
/// last result, with `errno` as that call left it.
///
/// The one EINTR loop of the project: every blocking call (read, write, send, accept, waitpid,
/// waitid, poll) goes through it.
///
///     let n = retryOnInterrupt { read(fd, buffer, count) }
///     if n < 0 { throw SystemCallError("read", errno: Errno(rawValue: errno), subject: path) }
@inlinable
public func retryOnInterrupt<Result: BinaryInteger>(_ call: () -> Result) -> Result {
    while true {
        let result = call()
        if result < 0 && errno == EINTR { continue }
        return result
    }
}

/// Writes all of `bytes` to `fd`, however many write(2) calls it takes (retrying EINTR).
/// `subject` names the file in the error.
public func writeAll(_ fd: CInt, _ bytes: UnsafeRawBufferPointer, subject: String? = nil) throws(SystemCallError) {
    guard let base = bytes.baseAddress else { return }
    var offset = 0
    while offset < bytes.count {
        let n = retryOnInterrupt { Glibc.write(fd, base + offset, bytes.count - offset) }
        guard n > 0 else {
            throw SystemCallError("write", errno: n < 0 ? Errno(rawValue: errno) : .ioError, subject: subject)
        }
        offset += n
    }
}

/// `writeAll(_:_:subject:)` for an array of bytes.
public func writeAll(_ fd: CInt, _ bytes: [UInt8], subject: String? = nil) throws(SystemCallError) {
    let failure = bytes.withUnsafeBytes { raw -> SystemCallError? in
        do throws(SystemCallError) {
            try writeAll(fd, raw, subject: subject)
            return nil
        } catch {
            return error
        }
    }
    if let failure { throw failure }
}
