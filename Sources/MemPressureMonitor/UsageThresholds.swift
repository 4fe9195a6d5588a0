import CMemoryPressure
import Glibc
import MemPressureSystem
import Synchronization
import SystemPackage

/// A cgroup v1's usage thresholds (`memory.usage_in_bytes` through `cgroup.event_control`),
/// armed where the judgement of its working set can change now.
///
/// The kernel's thresholds fire on the raw usage, page cache included; the judgement looks at
/// the working set (usage − inactive file). The working set reaches a share T of the limit when
/// the usage reaches T × limit + inactive file, so the thresholds are armed at the judgement's
/// lines — warning and critical, and each less the hysteresis, where a level is left — each
/// shifted by the inactive file pages of the latest reading (those below the limit), and armed
/// again when a reading finds them more than `slackBytes` off. (Where the usage stays at the
/// limit while the working set grows — reclaim replacing page cache with anonymous memory — no
/// threshold is crossed: that is reclaim in the cgroup, which the source hears through
/// `memory.pressure_level` "low".)
///
/// Registering a threshold costs the kernel an RCU grace period (`synchronize_rcu`: 5 to 25 ms
/// each on this machine's Linux 6.18). So the first set is armed where the source opens, and
/// later ones by a thread of their own, so that the monitor's poll thread never waits on it:
/// until a new set is armed, the old one stays; then `notify` wakes the poll thread, which takes
/// the new set (`takeArmed`) and reads the cgroup again — a line the usage passed while it was
/// being registered does not fire, and that reading sees it.
final class UsageThresholds: @unchecked Sendable {
    let cgroup: String
    /// The eventfd of the set armed now and its lines (the poll thread's).
    private(set) var armed: (fd: CInt, lines: [UInt64])
    /// Signalled by the armer thread when a set it was asked for is armed, or could not be.
    let notify: CInt
    /// The lines asked for last, armed or not yet: what a new reading is compared with.
    private var requested: [UInt64]
    private let armer: Armer
    private let thread: OSThread

    /// How far a line may be from where a reading puts it before the set is armed again: about
    /// what the kernel's own check lets the usage pass a line by (128 pages per CPU).
    static let slackBytes: UInt64 = 1 << 20

    /// What the poll thread and the armer thread share.
    private final class Armer: Sendable {
        struct State {
            var wanted: [UInt64]?
            var done: Result<(fd: CInt, lines: [UInt64]), SystemCallError>?
            var stop = false
        }
        let state = Mutex(State())
        /// Signalled to wake the armer thread.
        let wake: CInt
        init(wake: CInt) { self.wake = wake }
    }

    /// The usage lines for a cgroup with `limit` and `inactiveFile` bytes of inactive file
    /// pages, by `c`'s thresholds: ascending, below the limit.
    static func lines(limit: UInt64, inactiveFile: UInt64, _ c: PressureConfiguration) -> [UInt64] {
        let lines = c.workingSetLines.compactMap { share -> UInt64? in
            guard share > 0, share < 1 else { return nil }
            let line = UInt64(Double(limit) * share).saturatingAdd(inactiveFile)
            return line < limit ? line : nil
        }
        return Array(Set(lines)).sorted()
    }

    /// Arms `lines` on `cgroup` now and starts the thread that arms the later sets.
    init(cgroup: String, lines: [UInt64]) throws(SystemCallError) {
        self.cgroup = cgroup
        let first = try CgroupEventControl.register(cgroup: cgroup, file: "memory.usage_in_bytes", lines.map(String.init))
        let notify = mp_eventfd(0)
        let wake = mp_eventfd(0)
        guard notify >= 0, wake >= 0 else {
            let e = errno
            for fd in [first, notify, wake] where fd >= 0 { Glibc.close(fd) }
            throw SystemCallError("eventfd", errno: Errno(rawValue: e))
        }
        let armer = Armer(wake: wake)
        do {
            thread = try OSThread { Self.run(armer, cgroup: cgroup, notify: notify) }
        } catch {
            for fd in [first, notify, wake] { Glibc.close(fd) }
            throw error
        }
        self.armer = armer
        self.notify = notify
        armed = (first, lines)
        requested = lines
    }

    /// Asks for `lines` to be armed, unless they are within `slackBytes` of those asked for last.
    func want(_ lines: [UInt64]) {
        guard lines.count != requested.count || zip(lines, requested).contains(where: { max($0, $1) - min($0, $1) > Self.slackBytes }) else { return }
        requested = lines
        armer.state.withLock { $0.wanted = lines }
        CgroupEventControl.signal(armer.wake)
    }

    /// After `notify` fired: takes the set the armer armed (the old one is closed, which
    /// unregisters it), or says why it could not arm it (the set armed before stays, and the next
    /// reading asks again).
    func takeArmed() -> SystemCallError? {
        CgroupEventControl.drain(notify)
        guard let done = armer.state.withLock({ s in defer { s.done = nil }; return s.done }) else { return nil }
        switch done {
        case .success(let set):
            Glibc.close(armed.fd)
            armed = set
            return nil
        case .failure(let error):
            requested = armed.lines
            return error
        }
    }

    /// Stops the armer thread and closes every descriptor (which unregisters the thresholds).
    func close() {
        armer.state.withLock { $0.stop = true }
        CgroupEventControl.signal(armer.wake)
        thread.join()
        if case .success(let set)? = armer.state.withLock({ $0.done }) { Glibc.close(set.fd) }
        for fd in [armed.fd, notify, armer.wake] { Glibc.close(fd) }
    }

    /// The armer thread: waits to be asked, arms the newest set asked for, says so.
    private static func run(_ armer: Armer, cgroup: String, notify: CInt) {
        var wake = pollfd(fd: armer.wake, events: Int16(POLLIN), revents: 0)
        while true {
            _ = retryOnInterrupt { poll(&wake, 1, -1) }
            CgroupEventControl.drain(armer.wake)
            let job = armer.state.withLock { s -> (stop: Bool, lines: [UInt64]?) in
                defer { s.wanted = nil }
                return (s.stop, s.wanted)
            }
            if job.stop { return }
            guard let lines = job.lines else { continue }
            let result: Result<(fd: CInt, lines: [UInt64]), SystemCallError>
            do {
                result = .success((try CgroupEventControl.register(cgroup: cgroup, file: "memory.usage_in_bytes", lines.map(String.init)), lines))
            } catch {
                result = .failure(error)
            }
            // A set armed before and never taken is stale now: closed (unregistered).
            let stale = armer.state.withLock { s -> CInt? in
                defer { s.done = result }
                if case .success(let old)? = s.done { return old.fd }
                return nil
            }
            if let stale { Glibc.close(stale) }
            CgroupEventControl.signal(notify)
        }
    }
}
