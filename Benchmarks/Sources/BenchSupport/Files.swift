// Files the benchmarks measure against: sizes, reading a file into the page cache, how much of
// it is there, and dropping a whole directory's files from it (a cold cache for those files
// alone, never the machine's).

import Glibc
import MemPressureSystem
import MemPressureMappedFiles
import SystemPackage

public func fileSize(_ path: String) throws -> UInt64 {
    var st = Glibc.stat()
    guard lstat(path, &st) == 0 else { throw SystemCallError("stat", errno: Errno(rawValue: errno), subject: path) }
    return UInt64(st.st_size)
}

/// Opens a regular file to read, never through a link at its last component, never blocking on
/// a FIFO or a device: the benchmarks run as root over directories other users own (postgres's
/// data, chromium's profile), where any of those could be put in a file's place.
public func openRegularFile(_ path: String) throws(SystemCallError) -> CInt {
    let fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK)
    guard fd >= 0 else { throw SystemCallError("open", errno: Errno(rawValue: errno), subject: path) }
    var st = Glibc.stat()
    guard fstat(fd, &st) == 0, st.st_mode & S_IFMT == S_IFREG else {
        close(fd)
        throw SystemCallError("open (not a regular file)", errno: Errno(rawValue: EINVAL), subject: path)
    }
    return fd
}

/// `openRegularFile`, or nil if the file no longer exists.
func openUnlessGone(_ path: String) throws(SystemCallError) -> CInt? {
    do {
        return try openRegularFile(path)
    } catch {
        if error.errno == .noSuchFileOrDirectory { return nil }
        throw error
    }
}

/// Reads the whole file, so its pages are in the page cache.
public func readWhole(_ path: String) throws {
    let fd = try openRegularFile(path)
    defer { close(fd) }
    var chunk = [UInt8](repeating: 0, count: 1 << 20)
    while true {
        let n = chunk.withUnsafeMutableBytes { raw in retryOnInterrupt { read(fd, raw.baseAddress!, raw.count) } }
        guard n >= 0 else { throw SystemCallError("read", errno: Errno(rawValue: errno), subject: path) }
        if n == 0 { return }
    }
}

/// The share of the file's pages in the page cache (mincore on a mapping of it, which
/// faults nothing in; unmapped at once).
public func residentPercent(_ path: String) throws -> Double {
    let (resident, total) = try residentPages(path)
    return total > 0 ? Double(resident) * 100 / Double(total) : 0
}

/// The file's pages in the page cache, and all its pages (mincore; an empty file has none).
public func residentPages(_ path: String) throws -> (resident: Int, total: Int) {
    guard try fileSize(path) > 0 else { return (0, 0) }
    let file = try MappedFile(path: path)
    return try file.residency()
}

/// The regular files below `directory` (not following links), depth first.
public func regularFiles(under directory: String) throws -> [String] {
    var out: [String] = []
    for name in try ProcFS.listDirectory(directory) {
        let child = "\(directory)/\(String(decoding: name, as: UTF8.self))"
        var st = Glibc.stat()
        guard lstat(child, &st) == 0 else { continue }  // removed meanwhile
        switch st.st_mode & S_IFMT {
        case S_IFDIR: out += try regularFiles(under: child)
        case S_IFREG: out.append(child)
        default: break
        }
    }
    return out
}

/// Drops the pages of every regular file below `directory` from the page cache: each file is
/// fsynced first (only clean pages can be dropped), then posix_fadvise DONTNEED. Nothing else
/// leaves the cache. Returns the number of files.
@discardableResult
public func dropPageCache(tree directory: String) throws -> Int {
    let files = try regularFiles(under: directory)
    for path in files {
        guard let fd = try openUnlessGone(path) else { continue }  // removed since it was listed
        defer { close(fd) }
        guard fsync(fd) == 0 else { throw SystemCallError("fsync", errno: Errno(rawValue: errno), subject: path) }
        let rc = posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED)
        guard rc == 0 else { throw SystemCallError("posix_fadvise(POSIX_FADV_DONTNEED)", errno: Errno(rawValue: rc), subject: path) }
    }
    return files.count
}

/// Reads every regular file below `directory`, so that all of them are in the page cache.
/// Returns the bytes read.
@discardableResult
public func readWhole(tree directory: String) throws -> UInt64 {
    var total: UInt64 = 0
    for path in try regularFiles(under: directory) {
        try readWhole(path)
        total += try fileSize(path)
    }
    return total
}
