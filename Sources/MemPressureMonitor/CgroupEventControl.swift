import CMemoryPressure
import Glibc
import MemPressureSystem
import SystemPackage

/// cgroup v1's notifications: an eventfd registered through the cgroup's `cgroup.event_control`
/// against one of its files, which the kernel signals —
///
/// - `memory.usage_in_bytes` with a byte count: when the usage crosses it, up or down (checked
///   every 128 page charges or uncharges per CPU, so up to about 512 KiB per CPU late);
/// - `memory.pressure_level` with "low", "medium" or "critical": when reclaim in the cgroup
///   reaches that pressure (vmpressure; "low" is any reclaim);
/// - `memory.oom_control` with nothing: when a task of the cgroup hits the limit and reclaim
///   cannot make room (with `oom_kill_disable 1` the task then waits, `under_oom 1`).
///
/// The kernel also signals every eventfd once as the cgroup is removed. Closing the eventfd
/// unregisters it. Public for what watches a cgroup's usage from outside the monitor (a benchmark
/// timing when memory is back below a line).
public enum CgroupEventControl {
    /// Registers a new eventfd (non-blocking, close-on-exec) against `file` of `cgroup` once per
    /// entry of `arguments` ("" for none). Returns the eventfd; on an error nothing stays
    /// registered and no descriptor stays open.
    public static func register(cgroup: String, file: String, _ arguments: [String]) throws(SystemCallError) -> CInt {
        let efd = mp_eventfd(0)
        guard efd >= 0 else { throw SystemCallError("eventfd", errno: Errno(rawValue: errno)) }
        do throws(SystemCallError) {
            // The kernel keeps a reference to the cgroup, not to these files: both close here.
            let target = try open("\(cgroup)/\(file)", O_RDONLY)
            defer { Glibc.close(target) }
            let controlPath = "\(cgroup)/cgroup.event_control"
            let control = try open(controlPath, O_WRONLY)
            defer { Glibc.close(control) }
            for argument in arguments {
                let line = argument.isEmpty ? "\(efd) \(target)" : "\(efd) \(target) \(argument)"
                guard line.withCString({ write(control, $0, strlen($0)) }) >= 0 else {
                    throw SystemCallError("write", errno: Errno(rawValue: errno), subject: "\(controlPath) '\(line)'")
                }
            }
            return efd
        } catch {
            Glibc.close(efd)  // unregisters the lines written before the failure
            throw error
        }
    }

    private static func open(_ path: String, _ flags: CInt) throws(SystemCallError) -> CInt {
        let fd = Glibc.open(path, flags | O_CLOEXEC)
        guard fd >= 0 else { throw SystemCallError("open", errno: Errno(rawValue: errno), subject: path) }
        return fd
    }

    /// Reads and clears the count of an eventfd (non-blocking): how often it was signalled since
    /// the last drain, 0 if not at all.
    @discardableResult
    public static func drain(_ fd: CInt) -> UInt64 {
        var count: UInt64 = 0
        return read(fd, &count, 8) == 8 ? count : 0
    }

    /// Signals an eventfd of our own.
    public static func signal(_ fd: CInt) {
        var one: UInt64 = 1
        _ = write(fd, &one, 8)
    }
}
