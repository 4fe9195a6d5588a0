import Glibc
import SystemPackage

/// A system call that failed: which call, on what, and the errno it returned.
///
/// Modelled on swift-nio's `SystemCallError { systemCall, errno }`; `subject` names the file
/// or object the call was made on so that one line says everything.
public struct SystemCallError: Error, Sendable, Hashable, CustomStringConvertible {
    public var systemCall: String
    public var errno: Errno
    public var subject: String?

    public init(_ systemCall: String, errno: Errno, subject: String? = nil) {
        self.systemCall = systemCall
        self.errno = errno
        self.subject = subject
    }

    public var description: String {
        let on = subject.map { " \($0)" } ?? ""
        return "\(systemCall)\(on): \(errno.symbolicName) (\(errno))"
    }
}

/// As JSON (in the supervisor's log): `{"systemCall": "read", "errno": 5, "subject": "/x"}`.
extension SystemCallError: Codable {
    private enum CodingKeys: String, CodingKey { case systemCall, errno, subject }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        self.init(
            try c.decode(String.self, forKey: .systemCall), errno: Errno(rawValue: try c.decode(Int32.self, forKey: .errno)),
            subject: try c.decodeIfPresent(String.self, forKey: .subject))
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(systemCall, forKey: .systemCall)
        try c.encode(errno.rawValue, forKey: .errno)
        try c.encodeIfPresent(subject, forKey: .subject)
    }
}

extension Errno {
    /// The C name of the errno value (`ENOENT`), for messages a systems engineer can grep.
    public var symbolicName: String {
        switch self {
        case .noSuchFileOrDirectory: "ENOENT"
        case .noSuchProcess: "ESRCH"
        case .permissionDenied: "EACCES"
        case .notPermitted: "EPERM"
        case .invalidArgument: "EINVAL"
        case .interrupted: "EINTR"
        case .ioError: "EIO"
        case .noMemory: "ENOMEM"
        case .badFileDescriptor: "EBADF"
        case .notDirectory: "ENOTDIR"
        case .isDirectory: "EISDIR"
        case .tooManyOpenFiles: "EMFILE"
        case .resourceBusy: "EBUSY"
        case .fileExists: "EEXIST"
        case .noSpace: "ENOSPC"
        case .resourceTemporarilyUnavailable: "EAGAIN"
        case .notSupported: "ENOTSUP"
        case .readOnlyFileSystem: "EROFS"
        case .addressInUse: "EADDRINUSE"
        case .addressNotAvailable: "EADDRNOTAVAIL"
        case .connectionRefused: "ECONNREFUSED"
        default: "errno \(rawValue)"
        }
    }
}

/// Why a process's memory could not be read. Each case prints as one line naming the PID and
/// the file, so whole-machine views can list what they skipped and single-process commands can
/// fail with a message a user can act on.
public enum ProcError: Error, Sendable, Hashable, CustomStringConvertible {
    /// There is no such process (it never existed or has already been reaped).
    case noSuchProcess(pid: Int32)
    /// The process exited (or became a zombie) while or before its files were read.
    case processExited(pid: Int32, file: String)
    /// The process has exited but its parent has not reaped it yet: it has no memory left.
    case zombie(pid: Int32)
    /// The process is a kernel thread: it has no user address space.
    case kernelThread(pid: Int32)
    /// Reading the file is not allowed (another user's process without privileges).
    case permissionDenied(pid: Int32, file: String)
    /// The kernel's text could not be parsed. `line` is 1-based.
    case malformed(pid: Int32?, file: String, line: Int, reason: String)
    /// Any other failed call.
    case systemCall(pid: Int32?, SystemCallError)

    public var pid: Int32? {
        switch self {
        case .noSuchProcess(let pid), .processExited(let pid, _), .kernelThread(let pid), .zombie(let pid),
            .permissionDenied(let pid, _):
            pid
        case .malformed(let pid, _, _, _), .systemCall(let pid, _):
            pid
        }
    }

    public var description: String {
        switch self {
        case .noSuchProcess(let pid):
            "pid \(pid): no such process"
        case .processExited(let pid, let file):
            "pid \(pid): \(file): the process exited while it was being read"
        case .zombie(let pid):
            "pid \(pid): zombie (exited, not yet reaped by its parent), it has no memory left"
        case .kernelThread(let pid):
            "pid \(pid): kernel thread, it has no user memory to report"
        case .permissionDenied(let pid, let file):
            // Root is refused too where the kernel's ptrace check says no for other reasons.
            geteuid() == 0
                ? "pid \(pid): \(file): permission denied, to root as well (the process may not be dumpable, run in another user namespace, or be protected by Yama's ptrace_scope or a security module)"
                : "pid \(pid): \(file): permission denied (run as the process's user or as root)"
        case .malformed(let pid, let file, let line, let reason):
            "\(pid.map { "pid \($0): " } ?? "")\(file): line \(line): \(reason)"
        case .systemCall(let pid, let error):
            "\(pid.map { "pid \($0): " } ?? "")\(error)"
        }
    }
}
