import CMemoryPressure
import Glibc
import MemPressureSystem
import Synchronization
import SystemPackage

/// The supervisor's guardian: `mempressure-guard`, a small C process the supervisor starts first
/// and tells about every cgroup it makes (and every app without one). It waits on a socket pair
/// whose other end only the supervisor holds (close-on-exec: no app inherits it). If the
/// supervisor dies without shutting down (SIGKILL, a crash), the socket reports end of file and
/// the guardian gives back what the kernel holds for it: the kernel's OOM killer of the device
/// (held by jetsam) is let act again at once, every app is ended (thawed if frozen), the cgroups
/// are removed, and a report is written to `guardian-report.txt` in the runtime directory, which
/// the next supervisor started on it prints. At a clean shutdown the supervisor says `bye` and
/// the guardian exits doing nothing. So nothing the kernel holds for a supervisor outlives the
/// process that watches it.
final class Guardian: Sendable {
    let handle: ProcessHandle
    private let socket: CInt
    private let state = Mutex<(dismissed: Bool, failure: String?)>((false, nil))

    static let reportFileName = "guardian-report.txt"

    private init(handle: ProcessHandle, socket: CInt) {
        self.handle = handle
        self.socket = socket
    }

    deinit { close(socket) }

    /// Starts the guardian `executable` with the runtime directory `directoryFD`.
    static func start(executable: String, directoryFD: CInt) throws(SetupError) -> Guardian {
        guard access(executable, X_OK) == 0 else { throw .guardian("\(executable) is missing or not executable (build the package; it is started next to mempressure)") }
        var pair: [CInt] = [-1, -1]
        guard socketpair(AF_UNIX, Int32(SOCK_SEQPACKET.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0, &pair) == 0 else {
            throw .system(SystemCallError("socketpair", errno: Errno(rawValue: errno)))
        }
        var options = SpawnOptions([executable])
        options.standardInput = .null
        options.standardOutput = .null
        options.standardError = .inherit
        options.inheriting = [.init(parent: pair[1], child: 3), .init(parent: directoryFD, child: 4)]
        // It calls setsid(2) itself (a group leader could not): away from the terminal's signals.
        options.newProcessGroup = false
        let handle: ProcessHandle
        do {
            handle = try Spawn.start(options)
        } catch {
            close(pair[0])
            close(pair[1])
            throw .guardian("\(error)")
        }
        close(pair[1])
        return Guardian(handle: handle, socket: pair[0])
    }

    /// Tells the guardian about a device cgroup to clean up should the supervisor die.
    func watch(_ group: CgroupDirectory) {
        send("group \(group.controller ?? "-") \(group.hierarchy) \(group.relativePath)")
    }

    /// Tells it about an app without a cgroup: its process group, and a pidfd on its leader.
    func watch(processGroupOf handle: ProcessHandle) {
        send("app \(handle.pid)", passing: handle.descriptor)
    }

    /// The runtime directory was made for this run alone (no supervisor will start on it again):
    /// should the supervisor die, its files and itself are removed too.
    func ownsDirectory(_ path: String) {
        send("private \(path)")
    }

    /// That app has ended: the guardian closes its pidfd.
    func forget(processGroup pgid: Int32) {
        send("gone \(pgid)")
    }

    /// The first failure to reach the guardian (it died, or was killed): said once.
    var failure: String? { state.withLock { $0.failure } }

    private func send(_ text: String, passing fd: CInt = -1) {
        let bytes = Array(text.utf8)
        let n = bytes.withUnsafeBytes { mp_send_with_descriptor(socket, $0.baseAddress, $0.count, fd) }
        if n != bytes.count {
            let e = Errno(rawValue: n < 0 ? errno : EIO)
            state.withLock { if $0.failure == nil { $0.failure = "\(SystemCallError("sendmsg", errno: e, subject: "the guardian (pid \(handle.pid))"))" } }
        }
    }

    /// The clean end: `bye`, then the guardian exits and is reaped. Returns how it ended (a
    /// guardian that had died meanwhile is reported).
    @discardableResult
    func dismiss() -> String? {
        let first = state.withLock { s -> Bool in
            defer { s.dismissed = true }
            return !s.dismissed
        }
        guard first else { return nil }
        send("bye")
        shutdown(socket, Int32(SHUT_RDWR))
        do {
            switch try handle.waitForTermination(reap: true) {
            case .exited(0): return nil
            case let other: return "the guardian (pid \(handle.pid)) \(other)"
            }
        } catch {
            return "the guardian (pid \(handle.pid)): \(error)"
        }
    }
}
