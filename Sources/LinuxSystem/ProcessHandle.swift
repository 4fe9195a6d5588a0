import CMemoryPressure
import Glibc
import SystemPackage

/// A pidfd: a handle on one process that a reused PID can never be mistaken for. Signals sent
/// through it reach that process or fail (ESRCH once it has exited); it is closed on deinit.
public final class ProcessHandle: Sendable {
    public let pid: Int32
    public let descriptor: CInt

    /// Opens a pidfd for `pid` (pidfds need Linux 5.3). Safe against reuse only for a child not
    /// yet reaped, or a process whose identity was checked after opening.
    public init(pid: Int32) throws(SystemCallError) {
        let fd = mp_pidfd_open(pid, 0)
        guard fd >= 0 else { throw SystemCallError("pidfd_open", errno: Errno(rawValue: errno), subject: "pid \(pid)") }
        self.pid = pid
        descriptor = fd
    }

    deinit { close(descriptor) }

    /// pidfd_send_signal(2).
    public func signal(_ sig: Int32) throws(SystemCallError) {
        guard mp_pidfd_send_signal(descriptor, sig) == 0 else {
            throw SystemCallError("pidfd_send_signal", errno: Errno(rawValue: errno), subject: "pid \(pid)")
        }
    }

    /// process_mrelease(2) (Linux 5.15): frees the memory of this process, which is being killed,
    /// now, rather than when it gets to run its exit.
    public func releaseMemory() throws(SystemCallError) {
        guard mp_process_mrelease(descriptor, 0) == 0 else {
            throw SystemCallError("process_mrelease", errno: Errno(rawValue: errno), subject: "pid \(pid)")
        }
    }
}
