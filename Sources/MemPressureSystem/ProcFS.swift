import Glibc
import SystemPackage

/// The /proc file system, rooted at `root` so that tests can point it at golden fixtures
/// captured from real processes; and the plain file operations /proc, /sys and cgroup files need.
public struct ProcFS: Sendable, Hashable {
    public var root: String

    public init(root: String = "/proc") {
        self.root = root
    }

    public func path(_ pid: Int32, _ file: String) -> String {
        "\(root)/\(pid)/\(file)"
    }

    /// The PIDs of every process (thread-group leader) present now, in ascending order.
    public func pids() throws(ProcError) -> [Int32] {
        guard let dir = opendir(root) else {
            throw .systemCall(pid: nil, SystemCallError("opendir", errno: Errno(rawValue: errno), subject: root))
        }
        defer { closedir(dir) }
        var result: [Int32] = []
        while let entry = readdir(dir) {
            let pid: UInt64? = withUnsafeBytes(of: entry.pointee.d_name) { raw in ByteScanner.unsigned(raw.prefix { $0 != 0 }) }
            if let pid, pid <= UInt64(Int32.max) { result.append(Int32(pid)) }
        }
        // The kernel lists /proc's processes in ascending PID order; sorted only if it did not
        // (a sort's first use instantiates the runtime metadata of its scratch buffer, 6% of a
        // one-shot `mempressure top`).
        if zip(result, result.dropFirst()).contains(where: { $0 >= $1 }) { result.sort() }
        return result
    }

    /// Opens `/proc/PID` as a directory. Every file read through the returned handle belongs to
    /// that one process: if the process exits and its PID is reused, reads fail instead of
    /// silently describing the new process.
    public func open(_ pid: Int32) throws(ProcError) -> ProcessDirectory {
        let dirPath = "\(root)/\(pid)"
        let fd = Glibc.open(dirPath, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        if fd < 0 { throw ProcError.classify(Errno(rawValue: errno), pid: pid, call: "open", file: dirPath, missing: .noSuchProcess(pid: pid)) }
        return ProcessDirectory(fd: fd, pid: pid, path: dirPath)
    }

    /// Reads `/proc/PID/stat` entirely into `buffer` by its path, without opening the process's
    /// directory: what tells a kernel thread or a zombie, which a whole-machine snapshot then
    /// leaves, at two system calls less each. What is read afterwards through the directory
    /// (`open`) is of the same process if a second stat read there shows the same start time.
    /// Returns the path read (for the parser's errors).
    @discardableResult
    public func readStat(_ pid: Int32, into buffer: inout ReadBuffer) throws(ProcError) -> String {
        let file = "\(root)/\(pid)/stat"
        let fd = Glibc.open(file, O_RDONLY | O_CLOEXEC | O_NOFOLLOW)
        if fd < 0 { throw ProcError.classify(Errno(rawValue: errno), pid: pid, call: "open", file: file, missing: .noSuchProcess(pid: pid)) }
        defer { close(fd) }
        do {
            try buffer.readAll(from: fd, subject: file, oneRecord: true)
        } catch {
            throw ProcError.classify(error.errno, pid: pid, call: "read", file: file, missing: .processExited(pid: pid, file: file))
        }
        return file
    }

    /// Reads a whole file that does not belong to one process (`/proc/meminfo`, cgroup files).
    public static func readFile(_ path: String, into buffer: inout ReadBuffer) throws(SystemCallError) {
        // O_NOFOLLOW: a link planted as the file itself is refused (ELOOP), not followed.
        let fd = Glibc.open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW)
        guard fd >= 0 else { throw SystemCallError("open", errno: Errno(rawValue: errno), subject: path) }
        defer { close(fd) }
        try buffer.readAll(from: fd, subject: path)
    }

    /// Reads a whole file into a new array.
    public static func readBytes(_ path: String) throws(SystemCallError) -> [UInt8] {
        var buffer = ReadBuffer(capacity: 64 * 1024)
        try readFile(path, into: &buffer)
        return buffer.withBytes { Array($0) }
    }

    /// Writes to an existing file without creating or truncating it: for the kernel's control
    /// files only (cgroup, /proc and /sys files, which take one write each). Every other file is
    /// written through `CheckedDirectory`.
    public static func writeFileInPlace(_ path: String, _ bytes: [UInt8]) throws(SystemCallError) {
        let fd = Glibc.open(path, O_WRONLY | O_CLOEXEC)
        guard fd >= 0 else { throw SystemCallError("open", errno: Errno(rawValue: errno), subject: path) }
        defer { close(fd) }
        let n = bytes.withUnsafeBytes { Glibc.write(fd, $0.baseAddress!, bytes.count) }
        guard n == bytes.count else { throw SystemCallError("write", errno: Errno(rawValue: n < 0 ? errno : EIO), subject: path) }
    }

    /// Creates a directory (mode 0755); an existing one is fine, whoever owns it: for cgroup
    /// directories. A directory files are written in is made and checked by `CheckedDirectory`.
    public static func makeDirectory(_ path: String) throws(SystemCallError) {
        if mkdir(path, 0o755) != 0 && errno != EEXIST {
            throw SystemCallError("mkdir", errno: Errno(rawValue: errno), subject: path)
        }
    }

    /// The entries of a directory, without "." and "..". Names are returned as raw bytes.
    public static func listDirectory(_ path: String) throws(SystemCallError) -> [[UInt8]] {
        guard let dir = opendir(path) else {
            throw SystemCallError("opendir", errno: Errno(rawValue: errno), subject: path)
        }
        defer { closedir(dir) }
        var names: [[UInt8]] = []
        while let entry = readdir(dir) {
            let name: [UInt8] = withUnsafeBytes(of: entry.pointee.d_name) { raw in
                Array(raw.prefix { $0 != 0 })
            }
            if name == [0x2e] || name == [0x2e, 0x2e] { continue }
            names.append(name)
        }
        return names
    }

    /// The device and inode of the file at `path` (raw bytes, need not be UTF-8), or nil if
    /// there is none.
    package static func fileIdentity(_ path: [UInt8]) -> FileIdentity? {
        guard !path.contains(0) else { return nil }
        var st = stat()
        let found = (path + [0]).withUnsafeBufferPointer { buf in
            buf.withMemoryRebound(to: CChar.self) { stat($0.baseAddress!, &st) == 0 }
        }
        return found ? FileIdentity(st) : nil
    }

    /// The path of the running executable (`/proc/self/exe`), or nil when it cannot be read.
    public static func ownExecutablePath() -> String? {
        var buffer = [UInt8](repeating: 0, count: 4096)
        let n = buffer.withUnsafeMutableBufferPointer { buf in
            buf.withMemoryRebound(to: CChar.self) { readlink("/proc/self/exe", $0.baseAddress!, $0.count - 1) }
        }
        return n > 0 ? String(decoding: buffer[0..<n], as: UTF8.self) : nil
    }

    /// The directory of the running executable, where SwiftPM puts every product of a build: for
    /// a test bundle (`NAME.xctest`, a directory on some layouts) the directory holding it. Nil
    /// when `/proc/self/exe` cannot be read.
    public static func ownExecutableDirectory() -> String? {
        guard let exe = ownExecutablePath() else { return nil }
        var directory = Substring(exe[..<(exe.lastIndex(of: "/") ?? exe.endIndex)])
        if directory.hasSuffix(".xctest") { directory = directory[..<(directory.lastIndex(of: "/") ?? directory.endIndex)] }
        return String(directory)
    }

    /// Whether `path` names a directory.
    public static func isDirectory(_ path: String) -> Bool {
        var st = stat()
        return stat(path, &st) == 0 && (st.st_mode & S_IFMT) == S_IFDIR
    }

    /// Whether `path` names a regular file.
    public static func isFile(_ path: String) -> Bool {
        var st = stat()
        return stat(path, &st) == 0 && (st.st_mode & S_IFMT) == S_IFREG
    }
}

/// Which file a mapping is of: the device and inode smaps prints.
public struct FileIdentity: Sendable, Hashable {
    public var device: DeviceNumber
    public var inode: UInt64

    public init(device: DeviceNumber, inode: UInt64) {
        self.device = device
        self.inode = inode
    }
}

/// A device number, split as the kernel prints it (`fd:01`).
public struct DeviceNumber: Sendable, Hashable, Codable {
    public var major: UInt32
    public var minor: UInt32
    public init(major: UInt32, minor: UInt32) {
        self.major = major
        self.minor = minor
    }
}

/// An open `/proc/PID` directory, owned by this value and closed when it goes away.
public struct ProcessDirectory: ~Copyable {
    private let fd: CInt
    public let pid: Int32
    public let path: String

    init(fd: CInt, pid: Int32, path: String) {
        self.fd = fd
        self.pid = pid
        self.path = path
    }

    deinit { close(fd) }

    /// Reads `/proc/PID/<name>` entirely into `buffer`; `oneRecord` as `ReadBuffer.readAll`
    /// says (for stat, status, cgroup and smaps_rollup, never smaps or maps).
    public func read(_ name: String, into buffer: inout ReadBuffer, oneRecord: Bool = false) throws(ProcError) {
        let file = "\(path)/\(name)"
        let fileFD = openat(fd, name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW)  // the files read are never links
        if fileFD < 0 {
            throw classify(Errno(rawValue: errno), call: "open", file: file)
        }
        defer { close(fileFD) }
        do {
            try buffer.readAll(from: fileFD, subject: file, oneRecord: oneRecord)
        } catch {
            throw classify(error.errno, call: "read", file: file)
        }
    }

    /// Writes `bytes` to the existing file `/proc/PID/<name>` in one write (`oom_score_adj`):
    /// through this directory, so that a PID reused since it was opened is never written to.
    public func write(_ name: String, _ bytes: [UInt8]) throws(ProcError) {
        let file = "\(path)/\(name)"
        let fileFD = openat(fd, name, O_WRONLY | O_CLOEXEC | O_NOFOLLOW)
        if fileFD < 0 { throw classify(Errno(rawValue: errno), call: "open", file: file) }
        defer { close(fileFD) }
        let n = bytes.withUnsafeBytes { Glibc.write(fileFD, $0.baseAddress!, $0.count) }
        if n != bytes.count { throw classify(Errno(rawValue: n < 0 ? errno : EIO), call: "write", file: file) }
    }

    /// The target of the symbolic link `/proc/PID/<name>` (for example `exe`), as bytes.
    func readLink(_ name: String) throws(ProcError) -> [UInt8] {
        var bytes = [UInt8](repeating: 0, count: 4096)
        let n = bytes.withUnsafeMutableBufferPointer { buf in
            buf.withMemoryRebound(to: CChar.self) { readlinkat(fd, name, $0.baseAddress!, $0.count) }
        }
        if n < 0 { throw classify(Errno(rawValue: errno), call: "readlink", file: "\(path)/\(name)") }
        return Array(bytes[0..<n])
    }

    /// The real user id that owns the process (the owner of `/proc/PID`).
    public func ownerUID() throws(ProcError) -> UInt32 {
        var st = stat()
        if fstat(fd, &st) != 0 { throw classify(Errno(rawValue: errno), call: "fstat", file: path) }
        return st.st_uid
    }

    private func classify(_ err: Errno, call: String, file: String) -> ProcError {
        // The directory handle is still valid, so a missing entry means the process is gone.
        ProcError.classify(err, pid: pid, call: call, file: file, missing: .processExited(pid: pid, file: file))
    }
}

extension ProcError {
    /// What a failed open or read of a process's file under /proc means: `missing` when the
    /// process (or its file) is not there, permission denied, or the system call's own error.
    static func classify(_ err: Errno, pid: Int32, call: String, file: String, missing: ProcError) -> ProcError {
        switch err {
        case .noSuchProcess, .noSuchFileOrDirectory: missing
        case .permissionDenied, .notPermitted: .permissionDenied(pid: pid, file: file)
        default: .systemCall(pid: pid, SystemCallError(call, errno: err, subject: file))
        }
    }
}
