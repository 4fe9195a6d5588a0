/// `/proc/PID/io`: the I/O a process has done ("read_bytes: 4096" lines). Reading it needs
/// ptrace access to the process. A field missing or not a number reads as zero.
public struct ProcessIO: Sendable, Hashable, Codable {
    /// Bytes read and written through read(2), write(2) and the like, cached or not (rchar, wchar).
    public var readCharacters: UInt64 = 0
    public var writtenCharacters: UInt64 = 0
    /// Read and write system calls (syscr, syscw).
    public var readCalls: UInt64 = 0
    public var writeCalls: UInt64 = 0
    /// Bytes the process caused to be fetched from, and sent to, the storage layer.
    public var readBytes: UInt64 = 0
    public var writeBytes: UInt64 = 0
    /// Bytes it wrote that were truncated away before reaching storage.
    public var cancelledWriteBytes: UInt64 = 0

    public init() {}

    /// The fields, by their key in the file, each with how it is stored (closures, not key
    /// paths: `MemInfo.fields` says why).
    private static let fields: [(key: StaticString, field: @Sendable (inout ProcessIO, UInt64) -> Void)] = [
        ("rchar", { $0.readCharacters = $1 }), ("wchar", { $0.writtenCharacters = $1 }), ("syscr", { $0.readCalls = $1 }),
        ("syscw", { $0.writeCalls = $1 }), ("read_bytes", { $0.readBytes = $1 }), ("write_bytes", { $0.writeBytes = $1 }),
        ("cancelled_write_bytes", { $0.cancelledWriteBytes = $1 }),
    ]

    /// Parses the text of `/proc/PID/io`.
    public static func parse(_ bytes: UnsafeRawBufferPointer) -> ProcessIO {
        var io = ProcessIO()
        for line in ByteScanner.keyValueLines(bytes) {
            if let field = line.lookup(fields) { field(&io, line.leadingNumber ?? 0) }
        }
        return io
    }
}
