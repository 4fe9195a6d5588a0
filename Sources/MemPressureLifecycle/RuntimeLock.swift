import FoundationEssentials
import Glibc
import MemPressureSystem
import SystemPackage

/// What a supervisor records about its run in its runtime directory's lock file
/// (`supervisor.lock`), so that the next supervisor started on the directory can tell a live one
/// (the file is locked: it refuses to start) from a dead one (unlocked, with this record: it
/// cleans up what that run left).
struct RunRecord: Sendable, Hashable, Codable {
    static let currentFormatVersion = 1
    var formatVersion = RunRecord.currentFormatVersion
    var pid: Int32
    var startTicks: UInt64?
    /// The device cgroups (each app's is a child of these).
    var groups: [Group] = []
    var guardian: Process?
    /// Apps running now without a cgroup (process-group containment): their main process.
    var apps: [Process] = []

    struct Group: Sendable, Hashable, Codable {
        var hierarchy: String
        var controller: String?
        var relativePath: String

        init(_ d: CgroupDirectory) {
            hierarchy = d.hierarchy
            controller = d.controller
            relativePath = d.relativePath
        }

        var directory: CgroupDirectory { CgroupDirectory(hierarchy: hierarchy, controller: controller, relativePath: relativePath) }
    }

    struct Process: Sendable, Hashable, Codable {
        var name: String
        var pid: Int32
        var startTicks: UInt64?
    }
}

/// The runtime directory held by one supervisor: opened by descriptor (never through a link,
/// checked as `RuntimeDirectory.verify` does), and locked with flock(2) on `supervisor.lock` for
/// as long as the supervisor lives. The kernel drops the lock when the process dies, however it
/// dies: a second supervisor refuses a live one's directory and recognises a dead one's.
final class RuntimeLock: @unchecked Sendable {
    static let fileName = "supervisor.lock"
    let directory: String
    /// The directory, opened O_DIRECTORY|O_NOFOLLOW (files in it are made through it).
    let directoryFD: CInt
    private let fd: CInt

    private init(directory: String, directoryFD: CInt, fd: CInt) {
        self.directory = directory
        self.directoryFD = directoryFD
        self.fd = fd
    }

    /// Opens (making it 0700 when missing) and verifies the directory, and takes its lock.
    /// Returns the lock, whether the directory was made now, and the record a previous
    /// supervisor left (one that died: its lock is free, its record still there).
    static func acquire(_ directory: String) throws(SetupError) -> (lock: RuntimeLock, made: Bool, previous: RunRecord?) {
        let made: Bool
        do {
            made = try RuntimeDirectory.prepare(directory)
        } catch {
            throw .runtimeDirectory(error)
        }
        func fail(_ error: SetupError) -> SetupError {
            if made { rmdir(directory) }
            return error
        }
        let dfd = open(directory, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
        guard dfd >= 0 else { throw fail(.system(SystemCallError("open", errno: Errno(rawValue: errno), subject: directory))) }
        do {
            try RuntimeDirectory.verify(descriptor: dfd, directory, owners: [geteuid()], expected: "this user (uid \(geteuid()))")
        } catch {
            close(dfd)
            throw fail(.runtimeDirectory(error))
        }
        for _ in 0..<8 {
            let fd = openat(dfd, fileName, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0o600)
            guard fd >= 0 else {
                let e = Errno(rawValue: errno)
                close(dfd)
                throw fail(.system(SystemCallError("openat", errno: e, subject: "\(directory)/\(fileName)")))
            }
            var st = stat()
            guard fstat(fd, &st) == 0, (st.st_mode & S_IFMT) == S_IFREG, st.st_uid == geteuid() else {
                close(fd)
                close(dfd)
                throw fail(.runtimeDirectory(.notADirectory("\(directory)/\(fileName) (not a regular file of this user)")))
            }
            if flock(fd, LOCK_EX | LOCK_NB) != 0 {
                let e = Errno(rawValue: errno)
                let holder = readRecord(fd)?.pid
                close(fd)
                close(dfd)
                if e == .wouldBlock { throw .busy(directory: directory, pid: holder) }
                throw .system(SystemCallError("flock", errno: e, subject: "\(directory)/\(fileName)"))
            }
            // A supervisor shutting down unlinks the file while holding the lock: the file locked
            // must still be the one at the path, or the lock is taken again on the new one.
            var now = stat()
            guard fstatat(dfd, fileName, &now, AT_SYMLINK_NOFOLLOW) == 0, now.st_ino == st.st_ino, now.st_dev == st.st_dev else {
                close(fd)
                continue
            }
            let previous = readRecord(fd)
            return (RuntimeLock(directory: directory, directoryFD: dfd, fd: fd), made, previous)
        }
        close(dfd)
        throw fail(.system(SystemCallError("flock", errno: .resourceBusy, subject: "\(directory)/\(fileName) (replaced eight times while locking)")))
    }

    private static func readRecord(_ fd: CInt) -> RunRecord? {
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 4096)
        var offset: off_t = 0
        while bytes.count < 1 << 20 {
            let n = chunk.withUnsafeMutableBytes { pread(fd, $0.baseAddress, $0.count, offset) }
            guard n > 0 else { break }
            bytes += chunk[0..<n]
            offset += off_t(n)
        }
        guard !bytes.isEmpty else { return nil }
        do {
            return try JSONDecoder().decode(RunRecord.self, from: Data(bytes))
        } catch {
            return nil  // not a record of this format: nothing to clean up from it
        }
    }

    /// Replaces the record in the lock file.
    func write(_ record: RunRecord) throws(SystemCallError) {
        let bytes: [UInt8]
        do {
            bytes = Array(try JSONEncoder().encode(record))
        } catch {
            throw SystemCallError("encode", errno: .invalidArgument, subject: "\(directory)/\(Self.fileName)")
        }
        guard ftruncate(fd, 0) == 0 else { throw SystemCallError("ftruncate", errno: Errno(rawValue: errno), subject: "\(directory)/\(Self.fileName)") }
        var written = 0
        while written < bytes.count {
            let n = bytes[written...].withUnsafeBytes { pwrite(fd, $0.baseAddress, $0.count, off_t(written)) }
            guard n > 0 else { throw SystemCallError("pwrite", errno: Errno(rawValue: n < 0 ? errno : EIO), subject: "\(directory)/\(Self.fileName)") }
            written += n
        }
    }

    /// Ends the run cleanly: the record and the file go (under the lock), then the lock.
    func release() {
        unlinkat(directoryFD, Self.fileName, 0)
        close(fd)
        close(directoryFD)
    }
}
