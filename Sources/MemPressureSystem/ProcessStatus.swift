/// The fields of `/proc/PID/status` a report shows (sizes in bytes).
public struct ProcessStatus: Sendable, Hashable, Codable {
    public var name: String = ""
    public var uid: UInt32?
    public var peakVirtualBytes: UInt64?
    public var peakResidentBytes: UInt64?
    public var residentBytes: UInt64?
    public var residentAnonBytes: UInt64?
    public var residentFileBytes: UInt64?
    public var residentShmemBytes: UInt64?
    public var swapBytes: UInt64?
    public var threads: Int?

    public init() {}

    /// The sizes this type reads, by their key in the file, each with how it is stored (closures,
    /// not key paths: `MemInfo.fields` says why).
    private static let sizes: [(key: StaticString, field: @Sendable (inout ProcessStatus, UInt64) -> Void)] = [
        ("VmPeak", { $0.peakVirtualBytes = $1 }), ("VmHWM", { $0.peakResidentBytes = $1 }), ("VmRSS", { $0.residentBytes = $1 }),
        ("RssAnon", { $0.residentAnonBytes = $1 }), ("RssFile", { $0.residentFileBytes = $1 }), ("RssShmem", { $0.residentShmemBytes = $1 }),
        ("VmSwap", { $0.swapBytes = $1 }),
    ]

    /// Parses `Key:\tvalue` lines; unknown keys are skipped, and a known key with a value that
    /// is not a number is an error.
    public static func parse(_ bytes: UnsafeRawBufferPointer, pid: Int32?, file: String = "status") throws(ProcError) -> ProcessStatus {
        var status = ProcessStatus()
        for line in ByteScanner.keyValueLines(bytes) {
            func number() throws(ProcError) -> UInt64 {
                // "1234 kB" or "1234"
                do {
                    return try line.byteCount()
                } catch .tooLarge {
                    throw .malformed(pid: pid, file: file, line: line.number, reason: "\(escapedText(line.key)) is too large")
                } catch {
                    throw .malformed(pid: pid, file: file, line: line.number, reason: "\(escapedText(line.key)) is not a number")
                }
            }
            if line.keyIs("Name") {
                status.name = escapedText(line.value)
            } else if line.keyIs("Uid") {
                // "real effective saved filesystem"
                guard let uid = line.leadingNumber, uid <= UInt64(UInt32.max) else {
                    throw .malformed(pid: pid, file: file, line: line.number, reason: "Uid is not a number")
                }
                status.uid = UInt32(uid)
            } else if let field = line.lookup(sizes) {
                field(&status, try number())
            } else if line.keyIs("Threads") {
                let n = try number()
                status.threads = n <= UInt64(Int.max) ? Int(n) : nil
            }
        }
        return status
    }
}
