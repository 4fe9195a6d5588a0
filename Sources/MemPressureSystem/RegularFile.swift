import Glibc
import SystemPackage

/// What kind of file a `stat` mode names, in the words an error message uses.
public enum FileKind: Sendable, Hashable, CustomStringConvertible {
    case regular, directory, characterDevice, blockDevice, fifo, socket, symbolicLink, other

    public init(mode: mode_t) {
        switch mode & S_IFMT {
        case S_IFREG: self = .regular
        case S_IFDIR: self = .directory
        case S_IFCHR: self = .characterDevice
        case S_IFBLK: self = .blockDevice
        case S_IFIFO: self = .fifo
        case S_IFSOCK: self = .socket
        case S_IFLNK: self = .symbolicLink
        default: self = .other
        }
    }

    public var description: String {
        switch self {
        case .regular: "regular file"
        case .directory: "directory"
        case .characterDevice: "character device"
        case .blockDevice: "block device"
        case .fifo: "FIFO"
        case .socket: "socket"
        case .symbolicLink: "symbolic link"
        case .other: "special file"
        }
    }
}

/// Why a file from outside (a report, a trace, a scenario, a registry entry) was not read.
/// Each case prints as one line that starts with the path (escaped: it need not be UTF-8).
public enum FileOpenError: Error, Sendable, Hashable, CustomStringConvertible {
    /// A call failed: open(2) (the file is missing, not readable, ...), fstat, read.
    case systemCall(path: PathBytes, call: String, errno: Errno)
    /// Not a regular file: a FIFO (opening it for reading would wait for a writer), a device
    /// (/dev/zero never ends), a socket, a directory, or a symbolic link (never followed).
    case notRegularFile(path: PathBytes, kind: FileKind)
    /// Larger than the cap the caller documents for this kind of file.
    case tooLarge(path: PathBytes, limit: Int)
    /// Owned by neither the expected user nor root.
    case wrongOwner(path: PathBytes, uid: UInt32, expected: UInt32)

    public var path: PathBytes {
        switch self {
        case .systemCall(let p, _, _), .notRegularFile(let p, _), .tooLarge(let p, _), .wrongOwner(let p, _, _): p
        }
    }

    /// The errno of a failed call, if that is what happened.
    public var errno: Errno? {
        if case .systemCall(_, _, let e) = self { return e }
        return nil
    }

    /// Whether there was no such file (ENOENT): nothing saved yet, as a rule.
    public var isMissing: Bool { errno == .noSuchFileOrDirectory }

    public var description: String {
        switch self {
        case .systemCall(let p, let call, let e):
            call == "open" ? "\(p): \(e.symbolicName) (\(e))" : "\(p): \(call): \(e.symbolicName) (\(e))"
        case .notRegularFile(let p, let kind):
            "\(p): is a \(kind), not a regular file"
        case .tooLarge(let p, let limit):
            "\(p): larger than \(limit) bytes, the most read from a file of this kind"
        case .wrongOwner(let p, let uid, let expected):
            "\(p): owned by uid \(uid), not by uid \(expected) or root"
        }
    }
}

/// A regular file opened safely, owned by this value and closed when it goes.
///
/// The one way this project opens a file it did not create itself: with O_NOFOLLOW (a symbolic
/// link is refused, never followed), O_NONBLOCK (opening a FIFO does not wait for a writer) and
/// O_CLOEXEC; then everything is checked on the descriptor, not the path (no window for the
/// file to be swapped in between): it must be a regular file, owned by the expected user when
/// the caller asks, and no larger than the caller's documented cap. Only then is O_NONBLOCK
/// cleared and the file read. Reading never trusts `st_size` (it is 0 for /proc and /sys
/// files) and stops with `tooLarge` if a file that grows passes the cap.
public struct RegularFile: ~Copyable {
    public let descriptor: CInt
    public let path: PathBytes
    /// `st_size` when opened.
    public let size: Int
    /// The owner's user id.
    public let ownerUID: UInt32
    public let identity: FileIdentity

    /// Opens `path` (its exact bytes) for reading. `ownedBy`: when given, the file must belong
    /// to this user or to root. `maxBytes`: the largest file accepted.
    public static func open(_ path: PathBytes, maxBytes: Int, ownedBy expected: UInt32? = nil) throws(FileOpenError) -> RegularFile {
        try open(at: AT_FDCWD, path, shown: path, maxBytes: maxBytes, ownedBy: expected)
    }

    /// `open(_:maxBytes:ownedBy:)` for `path` relative to the directory `base` (openat);
    /// `shown` names the file in errors.
    static func open(at base: CInt, _ path: PathBytes, shown: PathBytes, maxBytes: Int, ownedBy expected: UInt32?) throws(FileOpenError) -> RegularFile {
        guard !path.bytes.contains(0), !path.isEmpty else {
            throw .systemCall(path: shown, call: "open", errno: path.isEmpty ? .noSuchFileOrDirectory : .invalidArgument)
        }
        let fd = (path.bytes + [0]).withUnsafeBufferPointer { buf in
            buf.withMemoryRebound(to: CChar.self) { p in
                retryOnInterrupt { openat(base, p.baseAddress!, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC) }
            }
        }
        guard fd >= 0 else {
            let e = Errno(rawValue: Glibc.errno)
            // O_NOFOLLOW fails with ELOOP on a symbolic link (and ELOOP also means too many links
            // among the directories): say which.
            if e == .tooManySymbolicLinkLevels, Self.lstatKind(at: base, path) == .symbolicLink {
                throw .notRegularFile(path: shown, kind: .symbolicLink)
            }
            throw .systemCall(path: shown, call: "open", errno: e)
        }
        return try RegularFile(adopting: fd, path: shown, maxBytes: maxBytes, ownedBy: expected)
    }

    /// `open(_:maxBytes:ownedBy:)` for a path given as text.
    public static func open(_ path: String, maxBytes: Int, ownedBy expected: UInt32? = nil) throws(FileOpenError) -> RegularFile {
        try open(PathBytes(path.utf8), maxBytes: maxBytes, ownedBy: expected)
    }

    /// Opens and reads a whole regular file of at most `maxBytes` (see the type).
    public static func read(_ path: PathBytes, maxBytes: Int, ownedBy expected: UInt32? = nil) throws(FileOpenError) -> [UInt8] {
        let file = try open(path, maxBytes: maxBytes, ownedBy: expected)
        return try file.readToEnd(maxBytes: maxBytes)
    }

    /// `read(_:maxBytes:ownedBy:)` for a path given as text.
    public static func read(_ path: String, maxBytes: Int, ownedBy expected: UInt32? = nil) throws(FileOpenError) -> [UInt8] {
        try read(PathBytes(path.utf8), maxBytes: maxBytes, ownedBy: expected)
    }

    /// Takes `fd` (closed here on any failure) and checks it as `open` does.
    public init(adopting fd: CInt, path: PathBytes, maxBytes: Int, ownedBy expected: UInt32? = nil) throws(FileOpenError) {
        var st = stat()
        guard fstat(fd, &st) == 0 else {
            let e = Errno(rawValue: Glibc.errno)
            close(fd)
            throw .systemCall(path: path, call: "fstat", errno: e)
        }
        let kind = FileKind(mode: st.st_mode)
        guard kind == .regular else {
            close(fd)
            throw .notRegularFile(path: path, kind: kind)
        }
        if let expected, st.st_uid != 0, st.st_uid != expected {
            close(fd)
            throw .wrongOwner(path: path, uid: st.st_uid, expected: expected)
        }
        guard st.st_size <= maxBytes else {
            close(fd)
            throw .tooLarge(path: path, limit: maxBytes)
        }
        // A regular file: reads would not block anyway, but the descriptor may be handed on.
        let flags = fcntl(fd, F_GETFL)
        if flags >= 0 && flags & O_NONBLOCK != 0 { _ = fcntl(fd, F_SETFL, flags & ~O_NONBLOCK) }
        descriptor = fd
        self.path = path
        size = Int(st.st_size)
        ownerUID = st.st_uid
        identity = FileIdentity(st)
    }

    deinit { close(descriptor) }

    /// Reads from the current offset to end of file; `tooLarge` past `maxBytes`.
    public func readToEnd(maxBytes: Int) throws(FileOpenError) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(min(size, maxBytes) + 1)
        var chunk = [UInt8](repeating: 0, count: 64 * 1024)
        while true {
            let n = chunk.withUnsafeMutableBytes { raw in retryOnInterrupt { Glibc.read(descriptor, raw.baseAddress!, raw.count) } }
            if n < 0 { throw .systemCall(path: path, call: "read", errno: Errno(rawValue: Glibc.errno)) }
            if n == 0 { return out }
            guard out.count + n <= maxBytes else { throw .tooLarge(path: path, limit: maxBytes) }
            out.append(contentsOf: chunk[0..<n])
        }
    }

    /// The kind of the file at `path` itself (not following a final symbolic link), if any.
    static func lstatKind(at base: CInt = AT_FDCWD, _ path: PathBytes) -> FileKind? {
        var st = stat()
        let ok = (path.bytes + [0]).withUnsafeBufferPointer { buf in
            buf.withMemoryRebound(to: CChar.self) { fstatat(base, $0.baseAddress!, &st, AT_SYMLINK_NOFOLLOW) == 0 }
        }
        return ok ? FileKind(mode: st.st_mode) : nil
    }
}

extension FileIdentity {
    /// The device and inode of a `stat` result.
    public init(_ st: stat) {
        let dev = UInt64(st.st_dev)
        let major = UInt32(truncatingIfNeeded: ((dev >> 8) & 0xfff) | ((dev >> 32) & ~UInt64(0xfff)))
        let minor = UInt32(truncatingIfNeeded: (dev & 0xff) | ((dev >> 12) & ~UInt64(0xff)))
        self.init(device: DeviceNumber(major: major, minor: minor), inode: UInt64(st.st_ino))
    }
}
