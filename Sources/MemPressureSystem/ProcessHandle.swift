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

    /// process_madvise(2) (Linux 5.10) with `advice` (`mp_MADV_PAGEOUT`, `mp_MADV_COLD`) over
    /// ranges of this process's address space, in as many calls as the kernel's limit on one
    /// call's ranges needs. Returns the bytes advised.
    public func advise(_ ranges: [(start: UInt64, end: UInt64)], _ advice: CInt, name: String) throws(SystemCallError) -> UInt64 {
        guard !ranges.isEmpty else { return 0 }
        let starts = ranges.map(\.start)
        let lengths = ranges.map { $0.end &- $0.start }
        let n = mp_process_madvise_ranges(descriptor, starts, lengths, ranges.count, advice)
        guard n >= 0 else { throw SystemCallError("process_madvise(\(name))", errno: Errno(rawValue: errno), subject: "pid \(pid)") }
        return UInt64(n)
    }

    /// waitid(2) on the pidfd (P_PIDFD, Linux 5.4; retrying EINTR): blocks until this process,
    /// which must be a child of the caller, changes as `options` asks (WEXITED, WSTOPPED,
    /// WCONTINUED; with WNOWAIT it is not reaped). ECHILD once it has been reaped.
    public func wait(for options: CInt) throws(SystemCallError) -> siginfo_t {
        var info = siginfo_t()
        guard retryOnInterrupt({ waitid(Self.pidfdIDType, id_t(descriptor), &info, options) }) == 0 else {
            throw SystemCallError("waitid", errno: Errno(rawValue: errno), subject: "pid \(pid)")
        }
        return info
    }

    /// P_PIDFD (linux/wait.h), which Glibc's `idtype_t` does not name.
    private static let pidfdIDType = idtype_t(rawValue: 3)
}
