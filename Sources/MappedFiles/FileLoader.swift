import Glibc
import LinuxSystem
import SystemPackage

/// A file's bytes, however they were loaded.
public enum LoadedFile: Sendable {
    /// Mapped: clean page-cache pages the kernel can drop and reload.
    case mapped(MappedFile)
    /// Read into this process's memory: dirty pages the kernel can never drop.
    case read([UInt8], path: String)

    public var count: Int {
        switch self {
        case .mapped(let m): m.count
        case .read(let bytes, _): bytes.count
        }
    }

    public var isMapped: Bool {
        if case .mapped = self { return true }
        return false
    }

    /// Calls `body` with the bytes (for a mapping, after checking the file did not shrink).
    public func withUnsafeBytes<R>(_ body: (UnsafeRawBufferPointer) throws -> R) throws -> R {
        switch self {
        case .mapped(let m): try m.withUnsafeBytes(body)
        case .read(let bytes, _): try bytes.withUnsafeBytes(body)
        }
    }
}

/// Chooses between mapping and reading, like Foundation's `dataWithContentsOfMappedFile:`:
/// regular files of at least `mappingThreshold` bytes are mapped; smaller files, files whose size
/// the kernel does not know (/proc, /sys: st_size 0), pipes, FIFOs and character devices are read
/// to their end (at most `maximumReadBytes`).
public enum FileLoader {
    /// Below this, a mapping costs more (a VMA, page faults) than it saves.
    public static let defaultMappingThreshold = 64 * 1024
    public static let maximumReadBytes = 1 << 30

    public static func load(_ path: String, mappingThreshold: Int = defaultMappingThreshold) throws(MappedFileError) -> LoadedFile {
        var st = stat()
        guard stat(path, &st) == 0 else { throw MappedFile.openError(path, errno) }
        let kind = MappedFile.notRegularKind(st.st_mode)
        if kind == "directory" { throw .isDirectory(path) }
        if kind == nil, st.st_size >= mappingThreshold, st.st_size > 0 {
            return .mapped(try MappedFile(path: path))
        }
        if kind == "socket" || kind == "block device" { throw .notRegularFile(path, kind: kind!) }
        return .read(try readToEnd(path), path: path)
    }

    /// Reads until end of file (never trusting st_size, which is 0 for /proc files and pipes).
    static func readToEnd(_ path: String) throws(MappedFileError) -> [UInt8] {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw MappedFile.openError(path, errno) }
        defer { close(fd) }
        var out: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 64 * 1024)
        while true {
            let n = chunk.withUnsafeMutableBytes { raw in retryOnInterrupt { read(fd, raw.baseAddress!, raw.count) } }
            if n < 0 {
                throw .systemCall(SystemCallError("read", errno: Errno(rawValue: errno), subject: path))
            }
            if n == 0 { return out }
            guard out.count + n <= maximumReadBytes else {
                throw .systemCall(SystemCallError("read", errno: .fileTooLarge, subject: "\(path) (over \(maximumReadBytes) bytes)"))
            }
            out.append(contentsOf: chunk[0..<n])
        }
    }
}
