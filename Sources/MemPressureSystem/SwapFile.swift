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
        do {
            try writeAll(fd, swapHeader(bytes: size, page: page), subject: path)
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

    /// Turns the swap off (its pages come back into memory) and deletes the file; what failed,
    /// if anything (the swap then stays on, or the file stays: said, so that a caller can tell
    /// the machine's owner). Idempotent.
    @discardableResult
    public func remove() -> String? {
        guard active.exchange(false, ordering: .acquiringAndReleasing) else { return nil }
        if mp_swapoff(path) != 0 {
            let e = Errno(rawValue: errno)
            return "swapoff \(path): \(e.symbolicName) (\(e)): the swap file is still on; turn it off with swapoff and delete it"
        }
        if unlink(path) != 0 {
            let e = Errno(rawValue: errno)
            return "unlink \(path): \(e.symbolicName) (\(e))"
        }
        return nil
    }

    deinit { remove() }
}

/// The first page of a version-1 swap area of `bytes` (what mkswap writes): the version and the
/// last page's number at 1024, the signature SWAPSPACE2 at the end of the page.
func swapHeader(bytes: UInt64, page: UInt64) -> [UInt8] {
    var header = [UInt8](repeating: 0, count: Int(page))
    func put32(_ v: UInt32, at offset: Int) { withUnsafeBytes(of: v.littleEndian) { for (i, b) in $0.enumerated() { header[offset + i] = b } } }
    put32(1, at: 1024)  // version
    put32(UInt32(truncatingIfNeeded: bytes / page - 1), at: 1028)  // last_page
    for (i, b) in "SWAPSPACE2".utf8.enumerated() { header[Int(page) - 10 + i] = b }
    return header
}

/// Compressed swap in RAM, as Android and ChromeOS use it: a zram device this process sets up
/// (its compressor, its size), formats as swap and turns on; `remove()` (also run on deinit)
/// turns it off and resets the device (its memory freed, its size 0 again).
///
/// It takes only a device nobody uses: one whose `disksize` is 0 (not initialised) and that is
/// not in /proc/swaps; anything else is refused, never reset. Needs root and the zram module
/// (`/sys/block/zramN`). Like any swap, it changes how the kernel reclaims for every process on
/// the machine: run what uses it alone.
public final class TemporaryZramSwap: Sendable {
    public let device: String
    public let bytes: UInt64
    public let compressor: String
    private let sysfs: String
    private let active = Atomic<Bool>(false)

    /// Sets up `/dev/zramN` (N = `index`) with `compressor` (lz4, lzo-rle, ...) and `bytes` of
    /// uncompressed swap.
    public init(index: Int = 0, bytes: UInt64, compressor: String = "lz4") throws(SystemCallError) {
        device = "/dev/zram\(index)"
        sysfs = "/sys/block/zram\(index)"
        self.compressor = compressor
        let page = UInt64(sysconf(Int32(_SC_PAGESIZE)))
        let size = bytes / page * page
        guard size >= 16 * page else { throw SystemCallError("swapon", errno: .invalidArgument, subject: "\(device): \(bytes) bytes is too small for swap") }
        self.bytes = size
        guard ProcFS.isDirectory(sysfs) else { throw SystemCallError("open", errno: .noSuchFileOrDirectory, subject: "\(sysfs) (no zram device: modprobe zram)") }
        let current = try ProcFS.readBytes("\(sysfs)/disksize")
        let swaps = try ProcFS.readBytes("/proc/swaps")
        let inSwaps = String(decoding: swaps, as: UTF8.self).split(separator: "\n").contains { $0.hasPrefix(device + " ") }
        guard ByteScanner.singleNumber(current) == 0, !inSwaps else {
            throw SystemCallError("open", errno: .resourceBusy, subject: "\(device) is in use (disksize set or swapping): not touched")
        }
        let sysfs = self.sysfs
        // Reset only once our own disksize is in: a write refused before that (EBUSY: someone
        // set the device up meanwhile) leaves the device as that someone made it.
        func reset() {
            do {
                try ProcFS.writeFileInPlace("\(sysfs)/reset", Array("1".utf8))
            } catch {
                _ = error  // the error being thrown says what failed first
            }
        }
        try ProcFS.writeFileInPlace("\(sysfs)/comp_algorithm", Array(compressor.utf8))
        try ProcFS.writeFileInPlace("\(sysfs)/disksize", Array("\(size)".utf8))
        let fd = open(device, O_WRONLY | O_EXCL | O_CLOEXEC)
        guard fd >= 0 else {
            let e = errno
            reset()
            throw SystemCallError("open", errno: Errno(rawValue: e), subject: device)
        }
        do {
            try writeAll(fd, swapHeader(bytes: size, page: page), subject: device)
        } catch {
            close(fd)
            reset()
            throw SystemCallError("write", errno: error.errno, subject: device)
        }
        guard fsync(fd) == 0 else {
            let e = errno
            close(fd)
            reset()
            throw SystemCallError("fsync", errno: Errno(rawValue: e), subject: device)
        }
        close(fd)
        guard mp_swapon(device, 0) == 0 else {
            let e = errno
            reset()
            throw SystemCallError("swapon", errno: Errno(rawValue: e), subject: device)
        }
        active.store(true, ordering: .releasing)
    }

    /// Turns the swap off (its pages come back into memory) and resets the device; what failed,
    /// if anything (said, so that a caller can tell the machine's owner). Idempotent.
    @discardableResult
    public func remove() -> String? {
        guard active.exchange(false, ordering: .acquiringAndReleasing) else { return nil }
        if mp_swapoff(device) != 0 {
            let e = Errno(rawValue: errno)
            return "swapoff \(device): \(e.symbolicName) (\(e)): it is still swap; turn it off with swapoff and write 1 to \(sysfs)/reset"
        }
        do {
            try ProcFS.writeFileInPlace("\(sysfs)/reset", Array("1".utf8))
        } catch {
            return "\(error): \(device) is off but not reset; write 1 to \(sysfs)/reset"
        }
        return nil
    }

    /// The device's figures (its peak memory), for this process or another one.
    public var stats: ZramStats { ZramStats(sysfs: sysfs) }

    /// Resets the device's peak memory figure (`mem_used_max`) to what it uses now.
    public func resetPeak() { stats.resetPeak() }

    /// The most memory the device has taken since it was set up or `resetPeak()`; see
    /// `ZramStats.peakMemoryBytes()`.
    public func peakMemoryBytes() -> UInt64? { stats.peakMemoryBytes() }

    deinit { remove() }
}

/// A zram device's memory figures, read from sysfs: what a `TemporaryZramSwap` set up, seen by
/// whoever measures it (another process may, given the device's sysfs directory).
public struct ZramStats: Sendable, Hashable, Codable {
    /// `/sys/block/zramN`.
    public let sysfs: String

    public init(sysfs: String) { self.sysfs = sysfs }

    /// Resets the device's peak memory figure (`mem_used_max`) to what it uses now.
    public func resetPeak() {
        do {
            try ProcFS.writeFileInPlace("\(sysfs)/mem_used_max", Array("0".utf8))
        } catch {
            _ = error  // the peak then counts from the device's set-up: `peakMemoryBytes` says more, never less
        }
    }

    /// What the device holds now (mm_stat): the bytes of the pages stored in it, uncompressed
    /// (`orig_data_size`), and the memory it takes for them (`mem_used_total`, compressed pages
    /// and their overhead, which the kernel charges to no memory cgroup). Nil when unreadable.
    public func usage() -> (storedBytes: UInt64, memoryBytes: UInt64)? {
        do {
            let fields = ByteScanner.fields(try ProcFS.readBytes("\(sysfs)/mm_stat")).compactMap { ByteScanner.unsigned($0) }
            return fields.count >= 3 ? (fields[0], fields[2]) : nil
        } catch {
            return nil
        }
    }

    /// The most memory the device has taken since it was set up or `resetPeak()` (mm_stat's
    /// fifth field, `mem_used_max`): the compressed pages, which the kernel does not charge to
    /// any memory cgroup. Nil when it cannot be read.
    public func peakMemoryBytes() -> UInt64? {
        do {
            let fields = ByteScanner.fields(try ProcFS.readBytes("\(sysfs)/mm_stat")).compactMap { ByteScanner.unsigned($0) }
            return fields.count >= 5 ? fields[4] : nil
        } catch {
            return nil
        }
    }
}
