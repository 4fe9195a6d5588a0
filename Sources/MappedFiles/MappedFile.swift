import CMemoryPressure
import Glibc
import LinuxSystem
import SystemPackage

/// Why a file could not be loaded or mapped. Each case prints as one line naming the file.
public enum MappedFileError: Error, Sendable, Hashable, CustomStringConvertible {
    case notFound(String)
    case permissionDenied(String)
    case isDirectory(String)
    /// A device, socket or FIFO: it has no pages to map (the loader reads FIFOs instead).
    case notRegularFile(String, kind: String)
    /// mmap of length 0 fails (EINVAL); there is nothing to map.
    case empty(String)
    /// The file is shorter now than when it was mapped: touching the pages past its new end
    /// would raise SIGBUS, so access is refused.
    case fileShrank(String, mappedBytes: Int, nowBytes: Int)
    case systemCall(SystemCallError)

    public var description: String {
        switch self {
        case .notFound(let p): "\(p): no such file"
        case .permissionDenied(let p): "\(p): permission denied"
        case .isDirectory(let p): "\(p): is a directory, not a file"
        case .notRegularFile(let p, let kind): "\(p): is a \(kind), not a regular file: nothing to map"
        case .empty(let p): "\(p): is empty: there is nothing to map"
        case .fileShrank(let p, let mapped, let now):
            "\(p): shrank from \(mapped) to \(now) bytes while mapped: access refused (it would raise SIGBUS past the new end)"
        case .systemCall(let e): "\(e)"
        }
    }
}

/// Access-pattern hints for the kernel (madvise).
public enum AccessHint: Sendable, Hashable {
    /// Read ahead aggressively, drop pages soon after they are read (MADV_SEQUENTIAL).
    case sequential
    /// Do not read ahead (MADV_RANDOM).
    case random
    /// Start reading these pages in now (MADV_WILLNEED).
    case willNeed
    /// Back to the default (MADV_NORMAL).
    case normal

    var advice: Int32 {
        switch self {
        case .sequential: MADV_SEQUENTIAL
        case .random: MADV_RANDOM
        case .willNeed: MADV_WILLNEED
        case .normal: MADV_NORMAL
        }
    }
}

/// A read-only mapping of a whole file, owned by this value and unmapped when it goes.
///
/// The pages are the page cache's own: clean, brought in when touched, dropped by the kernel
/// under pressure (even while the process is stopped) and read back from the file on the next
/// touch. Nothing here is charged as dirty memory.
///
/// ## A file that shrinks while mapped
///
/// Touching a mapped page past the file's current end raises SIGBUS, which kills the process.
/// `withUnsafeBytes` checks the file's size (fstat on the descriptor it keeps open) before every
/// access and refuses with `MappedFileError.fileShrank` if it shrank. What remains unsafe: a
/// truncation by another process *during* an access, between the check and the touch. For
/// files others may truncate, read with `copyBytes(in:)` (pread: a short read, never a signal).
public final class MappedFile: @unchecked Sendable {
    public let path: String
    /// The file's size when it was mapped (the mapping's length).
    public let count: Int
    private let fd: CInt
    /// The one raw pointer: `count` bytes, page-aligned, valid until deinit.
    private let base: UnsafeRawPointer

    public static let pageSize = Int(sysconf(Int32(_SC_PAGESIZE)))

    /// Maps `path` read-only.
    public init(path: String) throws(MappedFileError) {
        self.path = path
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw Self.openError(path, errno) }
        var st = stat()
        guard fstat(fd, &st) == 0 else {
            let e = errno
            close(fd)
            throw .systemCall(SystemCallError("fstat", errno: Errno(rawValue: e), subject: path))
        }
        if let kind = Self.notRegularKind(st.st_mode) {
            close(fd)
            throw kind == "directory" ? .isDirectory(path) : .notRegularFile(path, kind: kind)
        }
        guard st.st_size > 0 else {
            close(fd)
            throw .empty(path)
        }
        let length = Int(st.st_size)
        guard let p = mmap(nil, length, PROT_READ, MAP_PRIVATE, fd, 0), p != MAP_FAILED else {
            let e = errno
            close(fd)
            throw .systemCall(SystemCallError("mmap", errno: Errno(rawValue: e), subject: path))
        }
        self.fd = fd
        count = length
        base = UnsafeRawPointer(p)
    }

    deinit {
        munmap(UnsafeMutableRawPointer(mutating: base), count)
        close(fd)
    }

    /// The mapping's address range (for VM reports and demonstrations).
    public var addressRange: Range<UInt> {
        UInt(bitPattern: base)..<(UInt(bitPattern: base) + UInt(count))
    }

    var pageCount: Int { (count + Self.pageSize - 1) / Self.pageSize }

    /// The file's size now.
    public func currentSize() throws(MappedFileError) -> Int {
        var st = stat()
        guard fstat(fd, &st) == 0 else {
            throw .systemCall(SystemCallError("fstat", errno: Errno(rawValue: errno), subject: path))
        }
        return Int(st.st_size)
    }

    /// Calls `body` with the mapped bytes, after checking the file has not shrunk (see the type's
    /// documentation for what remains unsafe). Errors `body` throws are rethrown as they are.
    public func withUnsafeBytes<R>(_ body: (UnsafeRawBufferPointer) throws -> R) throws -> R {
        let now = try currentSize()
        guard now >= count else { throw MappedFileError.fileShrank(path, mappedBytes: count, nowBytes: now) }
        return try body(UnsafeRawBufferPointer(start: base, count: count))
    }

    /// Copies bytes with pread(2): safe against any concurrent truncation (a short read).
    public func copyBytes(in range: Range<Int>) throws(MappedFileError) -> [UInt8] {
        let lower = max(0, range.lowerBound), upper = min(count, range.upperBound)
        guard upper > lower else { return [] }
        var out = [UInt8](repeating: 0, count: upper - lower)
        var done = 0
        while done < out.count {
            let n = out.withUnsafeMutableBytes { raw in retryOnInterrupt { pread(fd, raw.baseAddress! + done, raw.count - done, off_t(lower + done)) } }
            if n < 0 {
                throw .systemCall(SystemCallError("pread", errno: Errno(rawValue: errno), subject: path))
            }
            if n == 0 { break }
            done += n
        }
        return Array(out.prefix(done))
    }

    /// Tells the kernel how the mapping will be read.
    public func advise(_ hint: AccessHint) throws(MappedFileError) {
        if madvise(UnsafeMutableRawPointer(mutating: base), count, hint.advice) != 0 {
            throw .systemCall(SystemCallError("madvise", errno: Errno(rawValue: errno), subject: path))
        }
    }

    /// Pages of `range` (bytes, default all) resident in this mapping's view (mincore).
    public func residency(of range: Range<Int>? = nil) throws(MappedFileError) -> (resident: Int, total: Int) {
        let r = range ?? 0..<count
        let page = Self.pageSize
        let first = max(0, r.lowerBound) / page * page
        let end = min(count, r.upperBound)
        guard end > first else { return (0, 0) }
        let pages = (end - first + page - 1) / page
        var vector = [UInt8](repeating: 0, count: pages)
        let rc = vector.withUnsafeMutableBufferPointer {
            mincore(UnsafeMutableRawPointer(mutating: base + first), end - first, $0.baseAddress)
        }
        guard rc == 0 else {
            throw .systemCall(SystemCallError("mincore", errno: Errno(rawValue: errno), subject: path))
        }
        return (vector.reduce(0) { $0 + Int($1 & 1) }, pages)
    }

    /// What `evict()` did.
    public struct Eviction: Sendable, Hashable, Codable {
        public var residentPagesBefore: Int
        public var residentPagesAfter: Int
        /// "MADV_PAGEOUT" or "posix_fadvise(POSIX_FADV_DONTNEED)".
        public var method: String
        public var pagesEvicted: Int { residentPagesBefore - residentPagesAfter }
    }

    /// Makes the kernel drop the mapping's clean pages now, as memory pressure would (for
    /// demonstrations): MADV_PAGEOUT (Linux 5.4), falling back to posix_fadvise DONTNEED on the
    /// file. Pages other processes also map, or that are dirty in the page cache, may stay.
    public func evict() throws(MappedFileError) -> Eviction {
        let before = try residency().resident
        var method = "MADV_PAGEOUT"
        _ = mp_drain_lru_batches()
        if madvise(UnsafeMutableRawPointer(mutating: base), count, mp_MADV_PAGEOUT) != 0 {
            method = "posix_fadvise(POSIX_FADV_DONTNEED)"
            let rc = posix_fadvise(fd, 0, off_t(count), POSIX_FADV_DONTNEED)
            guard rc == 0 else {
                throw .systemCall(SystemCallError("posix_fadvise", errno: Errno(rawValue: rc), subject: path))
            }
        }
        return Eviction(residentPagesBefore: before, residentPagesAfter: try residency().resident, method: method)
    }

    /// Reads one byte of every page (bringing the file in); returns a sum of them, so the reads
    /// cannot be optimized away.
    @discardableResult
    public func touchAllPages() throws -> UInt64 {
        try withUnsafeBytes { raw in
            var sum: UInt64 = 0
            var offset = 0
            while offset < raw.count {
                sum &+= UInt64(raw[offset])
                offset += Self.pageSize
            }
            return sum
        }
    }

    static func openError(_ path: String, _ code: Int32) -> MappedFileError {
        switch Errno(rawValue: code) {
        case .noSuchFileOrDirectory, .notDirectory: .notFound(path)
        case .permissionDenied, .notPermitted: .permissionDenied(path)
        default: .systemCall(SystemCallError("open", errno: Errno(rawValue: code), subject: path))
        }
    }

    static func notRegularKind(_ mode: mode_t) -> String? {
        switch mode & S_IFMT {
        case S_IFREG: nil
        case S_IFDIR: "directory"
        case S_IFCHR: "character device"
        case S_IFBLK: "block device"
        case S_IFIFO: "FIFO"
        case S_IFSOCK: "socket"
        case S_IFLNK: "symbolic link"
        default: "special file"
        }
    }
}
