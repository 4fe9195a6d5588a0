import Glibc
import MemPressureSystem
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
/// regular files of at least `mappingThreshold` bytes are mapped; smaller ones, and files whose
/// size the kernel does not know (/proc, /sys: st_size 0), are read to their end (at most
/// `maximumReadBytes`). The file is opened safely (`RegularFile`): a FIFO, device, socket,
/// directory or symbolic link is refused at once with an error naming it, never waited on or
/// read without end.
public enum FileLoader {
    /// Below this, a mapping costs more (a VMA, page faults) than it saves.
    public static let defaultMappingThreshold = 64 * 1024
    public static let maximumReadBytes = 1 << 30

    public static func load(_ path: String, mappingThreshold: Int = defaultMappingThreshold) throws(MappedFileError) -> LoadedFile {
        try load(PathBytes(path.utf8), mappingThreshold: mappingThreshold)
    }

    /// `load(_:mappingThreshold:)` for a path given as its exact bytes (they need not be UTF-8).
    public static func load(_ path: PathBytes, mappingThreshold: Int = defaultMappingThreshold) throws(MappedFileError) -> LoadedFile {
        let file: RegularFile
        do {
            file = try RegularFile.open(path, maxBytes: MappedFile.maximumBytes)
        } catch {
            throw MappedFile.openError(error)
        }
        if file.size >= mappingThreshold, file.size > 0 {
            return .mapped(try MappedFile(file: file))
        }
        do {
            return .read(try file.readToEnd(maxBytes: maximumReadBytes), path: path.description)
        } catch {
            throw MappedFile.openError(error)
        }
    }
}
