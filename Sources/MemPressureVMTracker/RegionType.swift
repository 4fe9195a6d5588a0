/// What a region is, as VM Tracker's "Type" column shows it.

import MemPressureSystem
import MemPressureRegionTags
public enum RegionType: Sendable, Hashable {
    /// `[heap]`: the brk heap.
    case heap
    /// `[stack]`: the main thread's stack.
    case stack
    /// An anonymous region holding a thread's stack pointer.
    case threadStack
    /// Private anonymous memory (malloc arenas, mmap(MAP_ANONYMOUS)), and the .bss of images:
    /// the kernel merges a .bss with adjacent anonymous mappings, so it cannot be told apart.
    case anonymous
    /// Anonymous memory named with `prctl(PR_SET_VMA_ANON_NAME)`, shown as `[anon:NAME]`.
    case anonNamed(String)
    /// Executable mapping of a file (an image's text).
    case code
    /// Writable private mapping of an image (relocated data).
    case data
    /// Read-only mapping of an image (rodata, relro, headers).
    case readOnlyData
    /// A private mapping of a file that is not an image (mmap'd data, fonts, locale archives).
    case mappedFile
    /// A MAP_SHARED mapping of a file.
    case sharedMappedFile
    /// Shared memory: MAP_SHARED|MAP_ANONYMOUS, POSIX (/dev/shm) and System V segments.
    case sharedMemory
    /// A memfd, by its name.
    case memfd(String)
    /// A mapping of a file that has since been deleted (and is not an image).
    case deletedFile
    /// No-access pages up to 1 MiB (thread stack guards, gaps inside images).
    case guardPage
    /// No-access address space over 1 MiB (reservations by allocators and runtimes).
    case reserved
    case vdso
    case vvar
    case vsyscall
    /// Another `[name]` region of the kernel (`[uprobes]`, `[vectors]`, ...).
    case kernel(String)
    /// A region this project's libraries allocated and registered (for example
    /// "purgeable cache: images").
    case tagged(String)

    /// The name used in tables and in JSON (`type`).
    public var name: String {
        switch self {
        case .heap: "heap"
        case .stack: "stack"
        case .threadStack: "thread stack"
        case .anonymous: "anonymous"
        case .anonNamed(let n): "anon:\(n)"
        case .code: "code"
        case .data: "data"
        case .readOnlyData: "read-only data"
        case .mappedFile: "mapped file"
        case .sharedMappedFile: "shared mapped file"
        case .sharedMemory: "shared memory"
        case .memfd(let n): "memfd:\(n)"
        case .deletedFile: "deleted file"
        case .guardPage: "guard"
        case .reserved: "reserved"
        case .vdso: "vdso"
        case .vvar: "vvar"
        case .vsyscall: "vsyscall"
        case .kernel(let n): "[\(n)]"
        case .tagged(let n): n
        }
    }

    /// Reads back a `name` (from a JSON report).
    public init(name: String) {
        switch name {
        case "heap": self = .heap
        case "stack": self = .stack
        case "thread stack": self = .threadStack
        case "anonymous": self = .anonymous
        case "code": self = .code
        case "data": self = .data
        case "read-only data": self = .readOnlyData
        case "mapped file": self = .mappedFile
        case "shared mapped file": self = .sharedMappedFile
        case "shared memory": self = .sharedMemory
        case "deleted file": self = .deletedFile
        case "guard": self = .guardPage
        case "reserved": self = .reserved
        case "vdso": self = .vdso
        case "vvar": self = .vvar
        case "vsyscall": self = .vsyscall
        default:
            if name.hasPrefix("anon:") {
                self = .anonNamed(String(name.dropFirst(5)))
            } else if name.hasPrefix("memfd:") {
                self = .memfd(String(name.dropFirst(6)))
            } else if name.hasPrefix("["), name.hasSuffix("]"), name.count >= 2 {
                self = .kernel(String(name.dropFirst().dropLast()))
            } else {
                self = .tagged(name)
            }
        }
    }

    /// Whether the region's pages come from a file (and are clean unless written).
    public var isFileBacked: Bool {
        switch self {
        case .code, .data, .readOnlyData, .mappedFile, .sharedMappedFile, .deletedFile: true
        default: false
        }
    }
}

extension RegionType: Codable {
    public func encode(to encoder: any Encoder) throws {
        var c = encoder.singleValueContainer()
        try c.encode(name)
    }

    public init(from decoder: any Decoder) throws {
        self.init(name: try decoder.singleValueContainer().decode(String.self))
    }
}

/// Assigns a `RegionType` to every region of one process.
public enum RegionClassifier {
    /// No-access regions larger than this are address-space reservations, not guards.
    static let guardLimit: UInt64 = 1 << 20

    /// Classifies `regions` (one process, ascending addresses, as smaps lists them).
    ///
    /// - Parameters:
    ///   - regions: the process's regions; each one's `type` is set in place.
    ///   - threadStackPointers: stack pointers of the process's threads (from
    ///     `/proc/PID/task/TID/syscall`); an anonymous region holding one is a thread stack.
    ///   - tags: ranges registered by this project's libraries.
    ///   - fileExists: answers whether a file whose path ends in " (deleted)" still exists under
    ///     that very name with the region's inode (a file may be named "x (deleted)"); without
    ///     it, the suffix is taken at its word.
    public static func classify(
        _ regions: inout [Region], threadStackPointers: [UInt64] = [], tags: [RegionTag] = [],
        fileExists: ((Region) -> Bool)? = nil
    ) {
        // Files with an executable mapping are images (the program and its shared libraries):
        // their other mappings are data and read-only data, not "mapped files".
        var images = Set<ImageKey>()
        for r in regions where r.permissions.canExecute && r.inode != 0 && !r.path.isEmpty {
            images.insert(ImageKey(device: r.device, inode: r.inode))
        }
        for i in regions.indices {
            regions[i].type = type(
                of: regions[i], images: images, stackPointers: threadStackPointers, tags: tags, fileExists: fileExists)
            if case .tagged = regions[i].type {
                let r = regions[i]
                let stack = tags.first { $0.start < r.end && r.start < $0.end && !$0.stack.isEmpty }?.stack
                regions[i].stack = stack
            }
        }
    }

    struct ImageKey: Hashable {
        var device: DeviceNumber
        var inode: UInt64
    }

    static func type(
        of r: Region, images: Set<ImageKey>, stackPointers: [UInt64], tags: [RegionTag],
        fileExists: ((Region) -> Bool)?
    ) -> RegionType {
        for tag in tags where tag.start < r.end && r.start < tag.end {
            return .tagged(tag.name)
        }
        let path = r.path
        if path.isEmpty {
            if r.permissions.isNone {
                return r.virtualSize <= guardLimit ? .guardPage : .reserved
            }
            if stackPointers.contains(where: { r.contains($0) }) {
                return .threadStack
            }
            if r.permissions.isShared {
                return .sharedMemory
            }
            return .anonymous
        }
        if path.bytes.first == UInt8(ascii: "[") {
            if path == "[heap]" { return .heap }
            if path == "[stack]" { return .stack }
            if path == "[vdso]" { return .vdso }
            if path == "[vvar]" || path == "[vvar_vclock]" { return .vvar }
            if path == "[vsyscall]" { return .vsyscall }
            if path.hasPrefix("[anon:"), path.hasSuffix("]") {
                return .anonNamed(escapedText(path.bytes.dropFirst(6).dropLast()))
            }
            if path.hasPrefix("[anon_shmem:") {
                return .sharedMemory
            }
            if path.hasSuffix("]") {
                return .kernel(escapedText(path.bytes.dropFirst().dropLast()))
            }
        }
        if path.hasPrefix("/memfd:") {
            return .memfd(escapedText(path.withoutDeletedSuffix.bytes.dropFirst(7)))
        }
        if path.hasPrefix("/dev/shm/") || path.hasPrefix("/SYSV") || path == "/dev/zero (deleted)" {
            return .sharedMemory
        }
        if r.permissions.isNone {
            return r.virtualSize <= guardLimit ? .guardPage : .reserved
        }
        if r.inode != 0, images.contains(ImageKey(device: r.device, inode: r.inode)) {
            if r.permissions.canExecute { return .code }
            if r.permissions.canWrite { return .data }
            return .readOnlyData
        }
        if path.hasSuffix(" (deleted)") && !(fileExists?(r) ?? false) {
            return .deletedFile
        }
        if r.permissions.isShared {
            return .sharedMappedFile
        }
        return .mappedFile
    }
}
