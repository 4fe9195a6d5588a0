/// `/proc/meminfo`: the machine's memory, in bytes ("MemTotal:  16318124 kB" lines). A field
/// the kernel did not print (or printed as something other than a number) is nil; fields this
/// type does not name are skipped.
public struct MemInfo: Sendable, Hashable, Codable {
    public var totalBytes: UInt64?
    public var freeBytes: UInt64?
    /// MemAvailable: what can be allocated without swapping, as the kernel estimates it.
    public var availableBytes: UInt64?
    public var buffersBytes: UInt64?
    public var cachedBytes: UInt64?
    public var swapCachedBytes: UInt64?
    public var activeBytes: UInt64?
    public var inactiveBytes: UInt64?
    public var shmemBytes: UInt64?
    public var swapTotalBytes: UInt64?
    public var swapFreeBytes: UInt64?
    public var dirtyBytes: UInt64?

    public init() {}

    /// The fields this type reads, by their key in the file, each with how it is stored.
    /// Closures, not key paths: the runtime builds a key path's object the first time it is used,
    /// a twelfth of a one-shot command's instructions (`mempressure top`) for this table and
    /// `ProcessStatus`'s.
    private static let fields: [(key: StaticString, field: @Sendable (inout MemInfo, UInt64) -> Void)] = [
        ("MemTotal", { $0.totalBytes = $1 }), ("MemFree", { $0.freeBytes = $1 }), ("MemAvailable", { $0.availableBytes = $1 }),
        ("Buffers", { $0.buffersBytes = $1 }), ("Cached", { $0.cachedBytes = $1 }), ("SwapCached", { $0.swapCachedBytes = $1 }),
        ("Active", { $0.activeBytes = $1 }), ("Inactive", { $0.inactiveBytes = $1 }), ("Shmem", { $0.shmemBytes = $1 }),
        ("SwapTotal", { $0.swapTotalBytes = $1 }), ("SwapFree", { $0.swapFreeBytes = $1 }), ("Dirty", { $0.dirtyBytes = $1 }),
    ]

    /// Parses the text of `/proc/meminfo`.
    public static func parse(_ bytes: UnsafeRawBufferPointer) -> MemInfo {
        var info = MemInfo()
        for line in ByteScanner.keyValueLines(bytes) {
            guard let field = line.lookup(fields) else { continue }
            do {
                field(&info, try line.byteCount())
            } catch {
                continue  // not a number: left out, as a field the kernel did not print
            }
        }
        return info
    }

    /// MemTotal and MemAvailable, in bytes.
    public static func totalAndAvailable(_ bytes: UnsafeRawBufferPointer) -> (total: UInt64?, available: UInt64?) {
        let info = parse(bytes)
        return (info.totalBytes, info.availableBytes)
    }
}
