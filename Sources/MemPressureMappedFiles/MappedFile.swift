import CMemoryPressure
import Glibc
import MemPressureSystem
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
    /// The file was truncated (by another process) while mapped: found shorter than the mapping
    /// before an access (`during: .check`, or a short pread), or an access met SIGBUS past its
    /// new end (`during: .access`) and was stopped. Either way the process goes on.
    case truncatedWhileMapped(String, found: TruncationFound)
    /// Opening refused for another reason (too large, a symbolic link, ...).
    case file(FileOpenError)
    case systemCall(SystemCallError)

    public var description: String {
        switch self {
        case .notFound(let p): "\(p): no such file"
        case .permissionDenied(let p): "\(p): permission denied"
        case .isDirectory(let p): "\(p): is a directory, not a regular file"
        case .notRegularFile(let p, let kind): "\(p): is a \(kind), not a regular file"
        case .empty(let p): "\(p): is empty: there is nothing to map"
        case .fileShrank(let p, let mapped, let now):
            "\(p): shrank from \(mapped) to \(now) bytes while mapped: access refused (it would raise SIGBUS past the new end)"
        case .truncatedWhileMapped(let p, .beforeAccess): "\(p) was truncated while mapped: it is shorter than the mapping, access refused"
        case .truncatedWhileMapped(let p, .duringAccess): "\(p) was truncated while mapped: the access past its new end was stopped (SIGBUS)"
        case .file(let e): "\(e)"
        case .systemCall(let e): "\(e)"
        }
    }
}

/// How a truncation of a mapped file was noticed (`MappedFileError.truncatedWhileMapped`).
public enum TruncationFound: Sendable, Hashable {
    /// The file was found shorter than the mapping before the access (fstat, or a short read).
    case beforeAccess
    /// The access met SIGBUS and was stopped by the guard.
    case duringAccess
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
/// `touchAllPages`, `contentEquals` and `copy(into:)` run their access under a SIGBUS guard
/// (CMemoryPressure's `mp_guarded_*`: a fault inside this mapping, on this thread, ends the
/// access with `MappedFileError.truncatedWhileMapped`; any other SIGBUS is left as it was).
/// `withUnsafeBytes` hands out the raw bytes, so it can only check the file's size (fstat on
/// the descriptor it keeps open) before the access and refuse with `fileShrank`: a truncation
/// during `body` is not caught there. For files others may truncate, use the guarded accessors
/// or `copyBytes(in:)` (pread: a short read, never a signal).
public final class MappedFile: @unchecked Sendable {
    /// The path, printable (bytes that are not UTF-8 escaped as `\xNN`).
    public let path: String
    /// The path's exact bytes.
    public let pathBytes: PathBytes
    /// The file's size when it was mapped (the mapping's length).
    public let count: Int
    private let file: RegularFile
    private var fd: CInt { file.descriptor }
    /// The one raw pointer: `count` bytes, page-aligned, valid until deinit.
    private let base: UnsafeRawPointer

    public static let pageSize = Int(sysconf(Int32(_SC_PAGESIZE)))

    /// The largest file mapped (the address space, not memory, is what it costs).
    public static let maximumBytes = 1 << 40

    /// Maps `path` read-only. The file is opened safely (`RegularFile`: a symbolic link, FIFO,
    /// device or socket is refused without waiting or reading).
    public convenience init(path: String) throws(MappedFileError) {
        try self.init(path: PathBytes(path.utf8))
    }

    /// Maps the file at exactly these path bytes (they need not be UTF-8) read-only.
    public convenience init(path: PathBytes) throws(MappedFileError) {
        let file: RegularFile
        do {
            file = try RegularFile.open(path, maxBytes: Self.maximumBytes)
        } catch {
            throw Self.openError(error)
        }
        try self.init(file: file)
    }

    /// Maps an opened file read-only; the mapping owns it from now on.
    public init(file: consuming RegularFile) throws(MappedFileError) {
        let path = file.path.description
        guard file.size > 0 else { throw .empty(path) }
        let length = file.size
        guard let p = mmap(nil, length, PROT_READ, MAP_PRIVATE, file.descriptor, 0), p != MAP_FAILED else {
            throw .systemCall(SystemCallError("mmap", errno: Errno(rawValue: errno), subject: path))
        }
        self.path = path
        pathBytes = file.path
        self.file = file
        count = length
        base = UnsafeRawPointer(p)
    }

    deinit {
        munmap(UnsafeMutableRawPointer(mutating: base), count)
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
        let result = out.withUnsafeMutableBytes { raw in
            Result { () throws(MappedFileError) in try readFile(into: raw.baseAddress!, from: lower, count: raw.count) }
        }
        return Array(out.prefix(try result.get()))
    }

    /// Reads `count` bytes of the file from `offset` into `destination` with pread(2) on the
    /// mapping's own descriptor; returns how many there were (fewer if the file was truncated).
    public func readFile(into destination: UnsafeMutableRawPointer, from offset: Int = 0, count: Int) throws(MappedFileError) -> Int {
        var done = 0
        while done < count {
            let n = retryOnInterrupt { pread(fd, destination + done, count - done, off_t(offset + done)) }
            if n < 0 {
                throw .systemCall(SystemCallError("pread", errno: Errno(rawValue: errno), subject: path))
            }
            if n == 0 { break }
            done += n
        }
        return done
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

    /// The file system the file lives on (fstatfs on the mapping's descriptor).
    public func fileSystem() throws(MappedFileError) -> FileSystemKind {
        var type: UInt64 = 0
        guard mp_fstatfs_type(fd, &type) == 0 else {
            throw .systemCall(SystemCallError("fstatfs", errno: Errno(rawValue: errno), subject: path))
        }
        return FileSystemKind(magic: type)
    }

    /// Writes the file's dirty page-cache pages back to it and waits (fdatasync), so that the
    /// kernel may drop them: dirty pages of a file cannot be dropped until they are written.
    /// Changes nothing in the file's content (the pages hold what was already written).
    public func flushDirtyPages() throws(MappedFileError) {
        guard retryOnInterrupt({ fdatasync(fd) }) == 0 else {
            throw .systemCall(SystemCallError("fdatasync", errno: Errno(rawValue: errno), subject: path))
        }
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
    /// cannot be optimized away. Guarded: a truncation meanwhile is `truncatedWhileMapped`.
    @discardableResult
    public func touchAllPages() throws(MappedFileError) -> UInt64 {
        var sum: UInt64 = 0
        try guarded { mp_guarded_touch(base, count, Self.pageSize, &sum) }
        return sum
    }

    /// Whether the mapping's bytes equal the `count` bytes at `other`. Guarded like
    /// `touchAllPages`.
    public func contentEquals(_ other: UnsafeRawPointer) throws(MappedFileError) -> Bool {
        var result: CInt = 0
        try guarded { mp_guarded_compare(base, count, other, &result) }
        return result == 0
    }

    /// Copies the mapping's `count` bytes to `destination`. Guarded like `touchAllPages`.
    public func copy(into destination: UnsafeMutableRawPointer) throws(MappedFileError) {
        try guarded { mp_guarded_copy(destination, base, count) }
    }

    /// Runs one guarded access (see the type's documentation), after checking the file's size.
    private func guarded(_ access: () -> CInt) throws(MappedFileError) {
        guard try currentSize() >= count else { throw .truncatedWhileMapped(path, found: .beforeAccess) }
        switch access() {
        case 0: return
        case 1: throw .truncatedWhileMapped(path, found: .duringAccess)
        default: throw .systemCall(SystemCallError("sigaction(SIGBUS)", errno: Errno(rawValue: errno), subject: path))
        }
    }

    static func openError(_ error: FileOpenError) -> MappedFileError {
        let path = error.path.description
        switch error {
        case .systemCall(_, "open", .noSuchFileOrDirectory), .systemCall(_, "open", .notDirectory): return .notFound(path)
        case .systemCall(_, "open", .permissionDenied), .systemCall(_, "open", .notPermitted): return .permissionDenied(path)
        case .notRegularFile(_, .directory): return .isDirectory(path)
        case .notRegularFile(_, let kind): return .notRegularFile(path, kind: kind.description)
        default: return .file(error)
        }
    }
}

/// The file system under a file, as far as reclaim cares: whether its page cache is a cache of
/// something else (a disk, the network), which the kernel can drop once clean, or the memory
/// itself (tmpfs, ramfs, hugetlbfs), which only swap can take (ramfs and hugetlbfs: nothing).
public struct FileSystemKind: Sendable, Hashable, Codable, CustomStringConvertible {
    /// statfs's f_type.
    public var magic: UInt64
    /// A name for the known magic numbers ("ext4", "tmpfs", ...), else the number in hex.
    public var name: String
    /// Whether the file's pages are memory rather than a cache of storage.
    public var isMemoryBacked: Bool

    public init(magic: UInt64) {
        self.magic = magic
        let known: [UInt64: (String, Bool)] = [
            0xEF53: ("ext4", false), 0x5846_5342: ("xfs", false), 0x9123_683E: ("btrfs", false),
            0x794C_7630: ("overlayfs", false), 0x6969: ("nfs", false), 0xFF53_4D42: ("cifs", false),
            0x2FC1_2FC1: ("zfs", false), 0xF2F5_2010: ("f2fs", false), 0x4D44: ("vfat", false),
            0x6573_5546: ("fuse", false), 0x0102_1994: ("tmpfs", true), 0x8584_58F6: ("ramfs", true),
            0x9584_58F6: ("hugetlbfs", true),
        ]
        if let (name, memory) = known[magic] {
            self.name = name
            isMemoryBacked = memory
        } else {
            name = "0x" + String(magic, radix: 16)
            isMemoryBacked = false
        }
    }

    public var description: String { name }
}
