/// One virtual memory area of a process: one record of `/proc/PID/smaps`, carrying every field
/// the kernel printed for it.

import MemPressureSystem
public struct Region: Sendable, Hashable {
    public var start: UInt64
    public var end: UInt64
    public var permissions: Permissions
    public var offset: UInt64
    public var device: DeviceNumber
    public var inode: UInt64
    /// The pathname column exactly as the kernel printed it (a file path, `[heap]`,
    /// `[anon:NAME]`, `/memfd:NAME (deleted)`, ...), without the padding before it. Empty for
    /// anonymous memory.
    public var path: PathBytes
    public var counters: MemoryCounters
    public var kernelPageSize: UInt64 = 0
    public var mmuPageSize: UInt64 = 0
    /// `THPeligible` (absent on old kernels).
    public var thpEligible: Bool?
    /// `ProtectionKey` (present only where memory protection keys are enabled).
    public var protectionKey: UInt64?
    public var vmFlags: VMFlags
    /// Fields this parser does not know, kept verbatim so that a newer kernel loses nothing.
    public var otherFields: [SmapsField]
    /// What the region is, filled in by `RegionClassifier`.
    public var type: RegionType
    /// For a region a library of this project registered: the call stack that created it.
    public var stack: [String]?

    public init(
        start: UInt64, end: UInt64, permissions: Permissions, offset: UInt64 = 0,
        device: DeviceNumber = DeviceNumber(major: 0, minor: 0), inode: UInt64 = 0, path: PathBytes = PathBytes(),
        counters: MemoryCounters = MemoryCounters(), vmFlags: VMFlags = VMFlags(), type: RegionType = .anonymous
    ) {
        self.start = start
        self.end = end
        self.permissions = permissions
        self.offset = offset
        self.device = device
        self.inode = inode
        self.path = path
        self.counters = counters
        self.vmFlags = vmFlags
        self.otherFields = []
        self.type = type
    }

    public var virtualSize: UInt64 { end &- start }
    public var isAnonymous: Bool { inode == 0 && path.isEmpty }

    public func contains(_ address: UInt64) -> Bool { address >= start && address < end }
}

/// A field of an smaps record that has no stored property in `Region`.
public struct SmapsField: Sendable, Hashable, Codable {
    public var name: String
    /// The value in bytes when it was a number (scaled from kB), else nil.
    public var value: UInt64?
    /// The value as printed.
    public var text: String

    public init(name: String, value: UInt64?, text: String) {
        self.name = name
        self.value = value
        self.text = text
    }
}

/// The `rwxp` / `rw-s` column.
public struct Permissions: Sendable, Hashable, Codable, CustomStringConvertible {
    public var rawValue: UInt8

    public static let read = Permissions(rawValue: 1)
    public static let write = Permissions(rawValue: 2)
    public static let execute = Permissions(rawValue: 4)
    public static let shared = Permissions(rawValue: 8)

    public init(rawValue: UInt8) { self.rawValue = rawValue }

    public init?(_ text: String) {
        let b = Array(text.utf8)
        guard b.count == 4 else { return nil }
        var raw: UInt8 = 0
        switch b[0] { case UInt8(ascii: "r"): raw |= 1; case UInt8(ascii: "-"): break; default: return nil }
        switch b[1] { case UInt8(ascii: "w"): raw |= 2; case UInt8(ascii: "-"): break; default: return nil }
        switch b[2] { case UInt8(ascii: "x"): raw |= 4; case UInt8(ascii: "-"): break; default: return nil }
        switch b[3] { case UInt8(ascii: "s"): raw |= 8; case UInt8(ascii: "p"): break; default: return nil }
        rawValue = raw
    }

    public var canRead: Bool { rawValue & 1 != 0 }
    public var canWrite: Bool { rawValue & 2 != 0 }
    public var canExecute: Bool { rawValue & 4 != 0 }
    public var isShared: Bool { rawValue & 8 != 0 }
    public var isNone: Bool { rawValue & 7 == 0 }

    /// `rw-p`, as in /proc/PID/maps.
    public var description: String {
        (canRead ? "r" : "-") + (canWrite ? "w" : "-") + (canExecute ? "x" : "-") + (isShared ? "s" : "p")
    }

    /// `rw-`, without the sharing letter (the VM Tracker "Protections" column).
    public var protection: String {
        (canRead ? "r" : "-") + (canWrite ? "w" : "-") + (canExecute ? "x" : "-")
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.singleValueContainer()
        try c.encode(description)
    }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.singleValueContainer()
        let text = try c.decode(String.self)
        guard let p = Permissions(text) else {
            throw DecodingError.dataCorruptedError(in: c, debugDescription: "permissions must look like 'rw-p', not '\(text)'")
        }
        self = p
    }
}

/// The `VmFlags` line: two-letter codes the kernel prints for each VMA.
public struct VMFlags: Sendable, Hashable {
    /// One bit per code in `VMFlags.codes`.
    public var bits: UInt64 = 0
    /// Codes this version does not know, packed as two ASCII bytes (kept, never dropped).
    public var unknown: [UInt16] = []

    public init() {}

    /// Every code of Linux 6.x's `show_smap_vma_flags`, in bit order.
    public static let codes: [String] = [
        "rd", "wr", "ex", "sh", "mr", "mw", "me", "ms", "gd", "pf", "dw", "lo", "io", "sr", "rr", "dc",
        "de", "ac", "nr", "ht", "sf", "nl", "ar", "wf", "dd", "mm", "hg", "nh", "mg", "um", "uw", "ss",
        "sl", "bt", "mt", "pp", "lf", "gu", "ui", "ob", "mp",
    ]

    static let packedCodes: [UInt16] = codes.map { code in
        let u = Array(code.utf8)
        return UInt16(u[0]) << 8 | UInt16(u[1])
    }

    public static let mayRead = bit("mr")
    public static let mayWrite = bit("mw")
    public static let mayExecute = bit("me")
    public static let growsDown = bit("gd")
    public static let accountable = bit("ac")
    public static let locked = bit("lo")

    static func bit(_ code: String) -> UInt64 {
        guard let i = codes.firstIndex(of: code) else { return 0 }
        return 1 << UInt64(i)
    }

    public func contains(_ bit: UInt64) -> Bool { bits & bit != 0 }

    mutating func insert(packed: UInt16) {
        if let i = Self.packedCodes.firstIndex(of: packed) {
            bits |= 1 << UInt64(i)
        } else if !unknown.contains(packed) {
            unknown.append(packed)
        }
    }

    /// The codes, space separated, as the kernel prints them.
    public var description: String {
        var parts: [String] = []
        for (i, code) in Self.codes.enumerated() where bits & (1 << UInt64(i)) != 0 { parts.append(code) }
        for u in unknown {
            parts.append(String(decoding: [UInt8(truncatingIfNeeded: u >> 8), UInt8(truncatingIfNeeded: u)], as: UTF8.self))
        }
        return parts.joined(separator: " ")
    }

    /// The maximum protection the mapping may be changed to (`mr mw me`), shown by VM Tracker
    /// as the second half of `rw-/rwx`.
    public var maximumProtection: String {
        (contains(Self.mayRead) ? "r" : "-") + (contains(Self.mayWrite) ? "w" : "-") + (contains(Self.mayExecute) ? "x" : "-")
    }
}

@inline(__always)
func memEqual(_ a: UnsafePointer<UInt8>, _ b: UnsafePointer<UInt8>, _ n: Int) -> Bool {
    var i = 0
    while i < n {
        if a[i] != b[i] { return false }
        i += 1
    }
    return true
}
