/// A byte-level parser for `/proc/PID/smaps` and `/proc/PID/smaps_rollup`.
///
/// It never builds a `String` on the hot path, parses numbers by hand, keeps paths as bytes,
/// keeps fields it does not know, and never traps on its input: every malformed or truncated
/// text becomes a `ProcError.malformed` naming the file and the line.
///
/// The format (fs/proc/task_mmu.c): each region is a header line
///
///     start-end perms offset major:minor inode [padding path]
///
/// followed by `Name:   value kB` lines, `THPeligible: 0|1`, optionally `ProtectionKey: n`, and
/// finally `VmFlags: rd wr ...`, which every kernel since 3.8 prints last for every region. The
/// parser uses `VmFlags` as the record terminator and `Size` as a checksum of the header, which is
/// how a truncated or corrupted file is told apart from a good one.
public enum SmapsParser {
    public enum Mode: Sendable {
        /// `/proc/PID/smaps`: many records, each ending with `VmFlags`.
        case smaps
        /// `/proc/PID/smaps_rollup`: one `[rollup]` record without `Size` or `VmFlags`.
        case rollup
    }

    /// Parses a whole smaps file.
    public static func parse(_ bytes: UnsafeRawBufferPointer, pid: Int32? = nil, file: String = "smaps") throws(ProcError) -> [Region] {
        var parser = Parser(bytes: bytes, pid: pid, file: file, mode: .smaps)
        return try parser.run()
    }

    /// Parses a whole smaps file given as an array (fixtures, tests).
    public static func parse(_ bytes: [UInt8], pid: Int32? = nil, file: String = "smaps") throws(ProcError) -> [Region] {
        try bytes.withUnsafeBytes { raw in Result { () throws(ProcError) in try parse(raw, pid: pid, file: file) } }.get()
    }

    /// Parses `/proc/PID/smaps_rollup` into the counters of its single record.
    public static func parseRollup(_ bytes: UnsafeRawBufferPointer, pid: Int32? = nil, file: String = "smaps_rollup") throws(ProcError) -> MemoryCounters {
        var parser = Parser(bytes: bytes, pid: pid, file: file, mode: .rollup)
        let regions = try parser.run()
        guard let first = regions.first else {
            throw .malformed(pid: pid, file: file, line: 1, reason: "empty rollup (no [rollup] record)")
        }
        return first.counters
    }

    public static func parseRollup(_ bytes: [UInt8], pid: Int32? = nil, file: String = "smaps_rollup") throws(ProcError) -> MemoryCounters {
        try bytes.withUnsafeBytes { raw in Result { () throws(ProcError) in try parseRollup(raw, pid: pid, file: file) } }.get()
    }
}

/// The field names the parser knows. Anything else goes to `Region.otherFields`.
private enum Field {
    case size, kernelPageSize, mmuPageSize, rss, pss, pssDirty, pssAnon, pssFile, pssShmem
    case sharedClean, sharedDirty, privateClean, privateDirty, referenced, anonymous, ksm, lazyFree
    case anonHugePages, shmemPmdMapped, filePmdMapped, sharedHugetlb, privateHugetlb
    case swap, swapPss, locked, thpEligible, protectionKey, vmFlags
}

private struct Parser {
    let base: UnsafePointer<UInt8>
    let count: Int
    let pid: Int32?
    let file: String
    let mode: SmapsParser.Mode
    var line = 0

    init(bytes: UnsafeRawBufferPointer, pid: Int32?, file: String, mode: SmapsParser.Mode) {
        // An empty buffer may have a nil base address; point at a static byte instead.
        base = bytes.count > 0 ? bytes.baseAddress!.assumingMemoryBound(to: UInt8.self) : Parser.emptyPointer
        count = bytes.count
        self.pid = pid
        self.file = file
        self.mode = mode
    }

    nonisolated(unsafe) static let emptyPointer: UnsafePointer<UInt8> = {
        let p = UnsafeMutablePointer<UInt8>.allocate(capacity: 1)
        p.initialize(to: 0)
        return UnsafePointer(p)
    }()

    func fail(_ reason: String) -> ProcError {
        .malformed(pid: pid, file: file, line: line, reason: reason)
    }

    mutating func run() throws(ProcError) -> [Region] {
        var regions: [Region] = []
        regions.reserveCapacity(count / 700 + 1)
        var current: Region?
        var sawSize = false
        var sawFlags = false
        var i = 0
        while i < count {
            line += 1
            var end = i
            while end < count && base[end] != 0x0a { end += 1 }
            guard end < count else {
                throw fail("truncated: the last line has no newline")
            }
            let first = base[i]
            if isHexDigit(first) {
                if let previous = current {
                    try finish(previous, sawSize: sawSize, sawFlags: sawFlags)
                    regions.append(previous)
                }
                current = try header(i, end)
                sawSize = false
                sawFlags = false
            } else if end == i {
                throw fail("empty line")
            } else {
                guard current != nil else {
                    throw fail("a field before any region header: \(snippet(i, end))")
                }
                let field = try fieldLine(i, end, into: &current!)
                if field == .size { sawSize = true }
                if field == .vmFlags { sawFlags = true }
            }
            i = end + 1
        }
        if let last = current {
            line += 1
            try finish(last, sawSize: sawSize, sawFlags: sawFlags)
            regions.append(last)
        }
        return regions
    }

    /// Checks a complete record.
    func finish(_ region: Region, sawSize: Bool, sawFlags: Bool) throws(ProcError) {
        guard mode == .smaps else { return }
        let range = "\(hexString(region.start))-\(hexString(region.end))"
        guard sawFlags else {
            throw fail("region \(range) ends without its VmFlags line (truncated or corrupted)")
        }
        guard sawSize else {
            throw fail("region \(range) has no Size line")
        }
        guard region.counters.size == region.end &- region.start else {
            throw fail("region \(range) spans \(region.end &- region.start) bytes but its Size says \(region.counters.size)")
        }
    }

    // MARK: Header

    mutating func header(_ lineStart: Int, _ lineEnd: Int) throws(ProcError) -> Region {
        var i = lineStart
        let start = try hex(&i, lineEnd, until: 0x2d, what: "start address")  // '-'
        let end = try hex(&i, lineEnd, until: 0x20, what: "end address")
        guard end >= start else {
            throw fail("region end \(hexString(end)) is below its start \(hexString(start))")
        }
        guard i + 4 < lineEnd else { throw fail("header cut short: \(snippet(lineStart, lineEnd))") }
        var raw: UInt8 = 0
        let r = base[i], w = base[i + 1], x = base[i + 2], s = base[i + 3]
        switch r { case 0x72: raw |= 1; case 0x2d: break; default: throw fail("bad permissions: \(snippet(lineStart, lineEnd))") }
        switch w { case 0x77: raw |= 2; case 0x2d: break; default: throw fail("bad permissions: \(snippet(lineStart, lineEnd))") }
        switch x { case 0x78: raw |= 4; case 0x2d: break; default: throw fail("bad permissions: \(snippet(lineStart, lineEnd))") }
        switch s { case 0x73: raw |= 8; case 0x70: break; default: throw fail("bad permissions: \(snippet(lineStart, lineEnd))") }
        i += 4
        guard i < lineEnd, base[i] == 0x20 else { throw fail("header cut short after permissions") }
        i += 1
        let offset = try hex(&i, lineEnd, until: 0x20, what: "offset")
        let major = try hex(&i, lineEnd, until: 0x3a, what: "device major")  // ':'
        let minor = try hex(&i, lineEnd, until: 0x20, what: "device minor")
        // inode: decimal, ended by a space or the end of the line.
        var inode: UInt64 = 0
        var digits = 0
        while i < lineEnd, base[i] != 0x20 {
            let d = base[i] &- 0x30
            guard d < 10, digits < 19 else { throw fail("bad inode: \(snippet(lineStart, lineEnd))") }
            inode = inode * 10 + UInt64(d)
            digits += 1
            i += 1
        }
        guard digits > 0 else { throw fail("missing inode: \(snippet(lineStart, lineEnd))") }
        while i < lineEnd, base[i] == 0x20 { i += 1 }
        let path = i < lineEnd ? PathBytes(UnsafeBufferPointer(start: base + i, count: lineEnd - i)) : PathBytes()
        guard major <= UInt64(UInt32.max), minor <= UInt64(UInt32.max) else {
            throw fail("device number out of range: \(snippet(lineStart, lineEnd))")
        }
        return Region(
            start: start, end: end, permissions: Permissions(rawValue: raw), offset: offset,
            device: DeviceNumber(major: UInt32(major), minor: UInt32(minor)), inode: inode, path: path)
    }

    /// Parses hexadecimal digits up to `terminator` and steps over it.
    func hex(_ i: inout Int, _ lineEnd: Int, until terminator: UInt8, what: String) throws(ProcError) -> UInt64 {
        var value: UInt64 = 0
        var digits = 0
        while i < lineEnd, base[i] != terminator {
            let c = base[i]
            let d: UInt8
            if c >= 0x30 && c <= 0x39 {
                d = c - 0x30
            } else if c >= 0x61 && c <= 0x66 {
                d = c - 0x61 + 10
            } else if c >= 0x41 && c <= 0x46 {
                d = c - 0x41 + 10
            } else {
                throw fail("bad \(what): unexpected '\(escapedText([c]))'")
            }
            guard value >> 60 == 0 else { throw fail("\(what) does not fit in 64 bits") }
            value = value << 4 | UInt64(d)
            digits += 1
            i += 1
        }
        guard digits > 0 else { throw fail("missing \(what)") }
        guard i < lineEnd else { throw fail("header cut short after \(what)") }
        i += 1  // the terminator
        return value
    }

    // MARK: Fields

    mutating func fieldLine(_ lineStart: Int, _ lineEnd: Int, into region: inout Region) throws(ProcError) -> Field? {
        var colon = lineStart
        while colon < lineEnd, base[colon] != 0x3a { colon += 1 }
        guard colon < lineEnd, colon > lineStart else {
            throw fail("expected 'Name: value', got \(snippet(lineStart, lineEnd))")
        }
        let key = lookup(base + lineStart, colon - lineStart)
        var i = colon + 1
        while i < lineEnd, base[i] == 0x20 || base[i] == 0x09 { i += 1 }

        if key == .vmFlags {
            while i < lineEnd {
                while i < lineEnd, base[i] == 0x20 { i += 1 }
                guard i < lineEnd else { break }
                guard i + 1 < lineEnd, base[i + 1] != 0x20 else {
                    throw fail("bad VmFlags code: \(snippet(lineStart, lineEnd))")
                }
                region.vmFlags.insert(packed: UInt16(base[i]) << 8 | UInt16(base[i + 1]))
                i += 2
                guard i == lineEnd || base[i] == 0x20 else {
                    throw fail("bad VmFlags code: \(snippet(lineStart, lineEnd))")
                }
            }
            return key
        }

        // A decimal number, optionally followed by " kB".
        let numberStart = i
        var value: UInt64 = 0
        var digits = 0
        while i < lineEnd {
            let d = base[i] &- 0x30
            guard d < 10 else { break }
            guard digits < 19 else { throw fail("number too large: \(snippet(lineStart, lineEnd))") }
            value = value * 10 + UInt64(d)
            digits += 1
            i += 1
        }
        var scaled = value
        var rest = i
        while rest < lineEnd, base[rest] == 0x20 { rest += 1 }
        let tail = lineEnd - rest
        if digits > 0 && tail == 2 && base[rest] == 0x6b && base[rest + 1] == 0x42 {  // "kB"
            guard value <= UInt64.max / 1024 else { throw fail("value too large: \(snippet(lineStart, lineEnd))") }
            scaled = value * 1024
        } else if digits == 0 || tail != 0 {
            // Not a number (with or without kB).
            guard key == nil else { throw fail("bad value: \(snippet(lineStart, lineEnd))") }
            region.otherFields.append(SmapsField(
                name: escapedText(UnsafeBufferPointer(start: base + lineStart, count: colon - lineStart)),
                value: nil,
                text: escapedText(UnsafeBufferPointer(start: base + numberStart, count: lineEnd - numberStart))))
            return nil
        }

        guard let key else {
            region.otherFields.append(SmapsField(
                name: escapedText(UnsafeBufferPointer(start: base + lineStart, count: colon - lineStart)),
                value: scaled,
                text: escapedText(UnsafeBufferPointer(start: base + numberStart, count: lineEnd - numberStart))))
            return nil
        }
        switch key {
        case .size: region.counters.size = scaled
        case .kernelPageSize: region.kernelPageSize = scaled
        case .mmuPageSize: region.mmuPageSize = scaled
        case .rss: region.counters.rss = scaled
        case .pss: region.counters.pss = scaled
        case .pssDirty: region.counters.pssDirty = scaled
        case .pssAnon: region.counters.pssAnon = scaled
        case .pssFile: region.counters.pssFile = scaled
        case .pssShmem: region.counters.pssShmem = scaled
        case .sharedClean: region.counters.sharedClean = scaled
        case .sharedDirty: region.counters.sharedDirty = scaled
        case .privateClean: region.counters.privateClean = scaled
        case .privateDirty: region.counters.privateDirty = scaled
        case .referenced: region.counters.referenced = scaled
        case .anonymous: region.counters.anonymous = scaled
        case .ksm: region.counters.ksm = scaled
        case .lazyFree: region.counters.lazyFree = scaled
        case .anonHugePages: region.counters.anonHugePages = scaled
        case .shmemPmdMapped: region.counters.shmemPmdMapped = scaled
        case .filePmdMapped: region.counters.filePmdMapped = scaled
        case .sharedHugetlb: region.counters.sharedHugetlb = scaled
        case .privateHugetlb: region.counters.privateHugetlb = scaled
        case .swap: region.counters.swap = scaled
        case .swapPss: region.counters.swapPss = scaled
        case .locked: region.counters.locked = scaled
        case .thpEligible: region.thpEligible = value != 0
        case .protectionKey: region.protectionKey = value
        case .vmFlags: break
        }
        return key
    }

    func lookup(_ p: UnsafePointer<UInt8>, _ n: Int) -> Field? {
        @inline(__always) func eq(_ s: StaticString) -> Bool {
            memEqual(p, s.utf8Start, n)
        }
        switch n {
        case 3:
            if eq("Rss") { return .rss }
            if eq("Pss") { return .pss }
            if eq("KSM") { return .ksm }
        case 4:
            if eq("Size") { return .size }
            if eq("Swap") { return .swap }
        case 6:
            if eq("Locked") { return .locked }
        case 7:
            if eq("VmFlags") { return .vmFlags }
            if eq("SwapPss") { return .swapPss }
        case 8:
            if eq("LazyFree") { return .lazyFree }
            if eq("Pss_Anon") { return .pssAnon }
            if eq("Pss_File") { return .pssFile }
        case 9:
            if eq("Pss_Dirty") { return .pssDirty }
            if eq("Anonymous") { return .anonymous }
            if eq("Pss_Shmem") { return .pssShmem }
        case 10:
            if eq("Referenced") { return .referenced }
        case 11:
            if eq("MMUPageSize") { return .mmuPageSize }
            if eq("THPeligible") { return .thpEligible }
        case 12:
            if eq("Shared_Clean") { return .sharedClean }
            if eq("Shared_Dirty") { return .sharedDirty }
        case 13:
            if eq("Private_Clean") { return .privateClean }
            if eq("Private_Dirty") { return .privateDirty }
            if eq("AnonHugePages") { return .anonHugePages }
            if eq("FilePmdMapped") { return .filePmdMapped }
            if eq("ProtectionKey") { return .protectionKey }
        case 14:
            if eq("KernelPageSize") { return .kernelPageSize }
            if eq("ShmemPmdMapped") { return .shmemPmdMapped }
            if eq("Shared_Hugetlb") { return .sharedHugetlb }
        case 15:
            if eq("Private_Hugetlb") { return .privateHugetlb }
        default:
            break
        }
        return nil
    }

    func snippet(_ start: Int, _ end: Int) -> String {
        let n = min(end - start, 60)
        let text = escapedText(UnsafeBufferPointer(start: base + start, count: n))
        return "'" + text + (end - start > n ? "...'" : "'")
    }
}

@inline(__always)
private func isHexDigit(_ c: UInt8) -> Bool {
    (c >= 0x30 && c <= 0x39) || (c >= 0x61 && c <= 0x66)
}

/// `7f12ab340000`: an address as the kernel prints it.
public func hexString(_ value: UInt64) -> String {
    String(value, radix: 16)
}
