import MemPressureSystem

/// Keeps the kernel's memory-cgroup OOM killer from acting in the device cgroup while jetsam is
/// attached, so that the choice of victim is jetsam's, not "the largest task".
///
/// cgroup v1 offers this for user-space OOM handlers: with `oom_kill_disable 1` in
/// `memory.oom_control`, a task that cannot be charged at the limit is not killed; it waits in
/// the kernel (killable) until memory is freed, and the file reports `under_oom 1`. The kernel
/// says so as it happens: the pressure monitor's cgroup source listens on `memory.oom_control`
/// (an eventfd through `cgroup.event_control`), and jetsam, woken by it, reads the flag
/// (`isUnderOOM`) — there, and again before each decision, since nothing signals the end of a
/// wait: an allocation that outran its warnings is then a critical episode, decided by the
/// policy, and the waiting task goes on as soon as the victim's memory is back
/// (process_mrelease). When jetsam has nothing left to kill, it lets the kernel act
/// (`oom_kill_disable 0`) rather than leave tasks waiting, and holds it again once the device is
/// out of OOM.
///
/// cgroup v2 has no such switch (`memory.oom.group` and `memory.high` are other things): there
/// the kernel's killer stays in charge at the limit, and jetsam says so once.
///
/// The supervisor holds it for a policy (`SupervisedDevice.holdKernelOOMKiller()`): a policy
/// touches no cgroup file itself.
public struct KernelOOMHold: Sendable {
    public let file: String

    /// Why the kernel's killer cannot be held.
    public enum Unavailable: Error, Sendable, Hashable, Codable, CustomStringConvertible {
        case noCgroup
        case cgroupV2(String)
        case write(String, SystemCallError)

        public var description: String {
            switch self {
            case .noCgroup: "the device has no memory cgroup: the machine's OOM killer stays in charge"
            case .cgroupV2(let group): "\(group) is a cgroup v2 group, which cannot hold its OOM killer (no memory.oom_control): the kernel's killer stays in charge at the limit"
            case .write(let file, let error): "cannot write \(file): \(error); the kernel's OOM killer stays in charge at the limit"
            }
        }
    }

    /// Holds the kernel's killer of `cgroup` (a v1 memory cgroup directory).
    public static func engage(cgroup: String?) -> Result<KernelOOMHold, Unavailable> {
        guard let cgroup else { return .failure(.noCgroup) }
        let file = "\(cgroup)/memory.oom_control"
        guard ProcFS.isFile(file) else { return .failure(.cgroupV2(cgroup)) }
        let hold = KernelOOMHold(file: file)
        if let error = hold.set(disabled: true) { return .failure(.write(file, error)) }
        return .success(hold)
    }

    /// Writes `oom_kill_disable`; the error, if any.
    public func set(disabled: Bool) -> SystemCallError? {
        do {
            try ProcFS.writeFileInPlace(file, Array((disabled ? "1" : "0").utf8))
            return nil
        } catch {
            return error
        }
    }

    /// Why `under_oom` could not be read.
    public enum ReadFailure: Error, Sendable, Hashable, CustomStringConvertible {
        case read(String, SystemCallError)
        case noField(String)

        public var description: String {
            switch self {
            case .read(let file, let error): "cannot read \(file): \(error)"
            case .noField(let file): "\(file) has no under_oom line"
            }
        }
    }

    /// Whether a task of the group is waiting at the limit (`under_oom 1`).
    public func isUnderOOM() throws(ReadFailure) -> Bool {
        let bytes: [UInt8]
        do {
            bytes = try ProcFS.readBytes(file)
        } catch {
            throw .read(file, error)
        }
        guard let value = ByteScanner.value(of: "under_oom", inSpaceSeparatedLines: bytes) else { throw .noField(file) }
        return value != 0
    }
}
