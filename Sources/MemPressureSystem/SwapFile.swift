import CMemoryPressure
import Glibc
import Synchronization
import SystemPackage

/// A swap file this process makes, turns on, and removes again: for tests and benchmarks that
/// need swap (freeze-dry writes to it) on a machine that has none. The file is created with
/// O_EXCL (never someone else's), fully allocated, given a version-1 swap header (what mkswap
/// writes: the signature SWAPSPACE2 at the end of the first page, the last page's number), and
/// enabled with swapon(2). `remove()` (also run on deinit) turns it off and deletes it.
///
/// Needs root (CAP_SYS_ADMIN) and a file system that can hold swap (ext4, xfs; not tmpfs or
/// overlayfs). Turning swap on changes how the kernel reclaims for every process on the machine:
/// run what uses it alone.
public final class TemporarySwapFile: Sendable {
    public let path: String
    public let bytes: UInt64
    private let active = Atomic<Bool>(false)

    public init(path: String, bytes: UInt64) throws(SystemCallError) {
        let page = UInt64(sysconf(Int32(_SC_PAGESIZE)))
        let size = bytes / page * page
        guard size >= 16 * page else { throw SystemCallError("swapon", errno: .invalidArgument, subject: "\(path): \(bytes) bytes is too small for swap") }
        self.path = path
        self.bytes = size
        let fd = open(path, O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw SystemCallError("open", errno: Errno(rawValue: errno), subject: path) }
        func fail(_ call: String, _ e: Int32) -> SystemCallError {
            close(fd)
            unlink(path)
            return SystemCallError(call, errno: Errno(rawValue: e), subject: path)
        }
        let rc = posix_fallocate(fd, 0, off_t(size))
        guard rc == 0 else { throw fail("posix_fallocate", rc) }
        var header = [UInt8](repeating: 0, count: Int(page))
        func put32(_ v: UInt32, at offset: Int) { withUnsafeBytes(of: v.littleEndian) { for (i, b) in $0.enumerated() { header[offset + i] = b } } }
        put32(1, at: 1024)  // version
        put32(UInt32(truncatingIfNeeded: size / page - 1), at: 1028)  // last_page
        for (i, b) in "SWAPSPACE2".utf8.enumerated() { header[Int(page) - 10 + i] = b }
        do {
            try writeAll(fd, header, subject: path)
        } catch {
            throw fail("write", error.errno.rawValue)
        }
        guard fsync(fd) == 0 else { throw fail("fsync", errno) }
        close(fd)
        guard mp_swapon(path, 0) == 0 else {
            let e = errno
            unlink(path)
            throw SystemCallError("swapon", errno: Errno(rawValue: e), subject: path)
        }
        active.store(true, ordering: .releasing)
    }

    /// Turns the swap off (its pages come back into memory) and deletes the file. Idempotent.
    public func remove() {
        guard active.exchange(false, ordering: .acquiringAndReleasing) else { return }
        mp_swapoff(path)
        unlink(path)
    }

    deinit { remove() }
}
