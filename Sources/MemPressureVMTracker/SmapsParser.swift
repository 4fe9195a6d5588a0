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

import Glibc
import MemPressureSystem
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
        // The record being filled. It is mutated in place (never through an Optional, which
        // would copy the whole record for every field line) and moved into `regions` when the
        // next header or the end of the text arrives.
        var current = Region(start: 0, end: 0, permissions: Permissions(rawValue: 0))
        var inRecord = false
        var sawSize = false
        var sawFlags = false
        var i = 0
        while i < count {
            line += 1
            let end: Int
            if let newline = memchr(base + i, 0x0a, count - i) {
                end = base.distance(to: newline.assumingMemoryBound(to: UInt8.self))
            } else {
                throw fail("truncated: the last line has no newline")
            }
            let first = base[i]
            if isHexDigit(first) {
                if inRecord {
                    try finish(current, sawSize: sawSize, sawFlags: sawFlags)
                    regions.append(current)
                }
                current = try header(i, end)
                inRecord = true
                sawSize = false
                sawFlags = false
            } else if end == i {
                throw fail("empty line")
            } else {
                guard inRecord else {
                    throw fail("a field before any region header: \(snippet(i, end))")
                }
                let field = try fieldLine(i, end, into: &current)
                if field == .size { sawSize = true }
                if field == .vmFlags { sawFlags = true }
            }
            i = end + 1
        }
        if inRecord {
            line += 1
            try finish(current, sawSize: sawSize, sawFlags: sawFlags)
            regions.append(current)
        }
        return regions
    }

    /// Checks a complete record.
    func finish(_ region: Region, sawSize: Bool, sawFlags: Bool) throws(ProcError) {
        guard mode == .smaps else { return }
        var range: String { "\(hexString(region.start))-\(hexString(region.end))" }
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
            var d = c &- 0x30
            if d > 9 {
                d = (c | 0x20) &- 0x61  // a-f, A-F
                guard d < 6 else { throw fail("bad \(what): unexpected '\(escapedText([c]))'") }
                d += 10
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
        guard let found = memchr(base + lineStart, 0x3a, lineEnd - lineStart) else {
            throw fail("expected 'Name: value', got \(snippet(lineStart, lineEnd))")
        }
        let colon = base.distance(to: found.assumingMemoryBound(to: UInt8.self))
        guard colon > lineStart else {
            throw fail("expected 'Name: value', got \(snippet(lineStart, lineEnd))")
        }
        let key = lookup(base + lineStart, colon - lineStart)
        var i = skipSpaces(colon + 1, lineEnd)

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
        let rest = skipSpaces(i, lineEnd)
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
        case .anonHugePages:
            region.counters.anonHugePages = scaled
            region.counters.reported.insert(.anonHugePages)
        case .shmemPmdMapped:
            region.counters.shmemPmdMapped = scaled
            region.counters.reported.insert(.shmemPmdMapped)
        case .filePmdMapped:
            region.counters.filePmdMapped = scaled
            region.counters.reported.insert(.filePmdMapped)
        case .sharedHugetlb: region.counters.sharedHugetlb = scaled
        case .privateHugetlb: region.counters.privateHugetlb = scaled
        case .swap: region.counters.swap = scaled
        case .swapPss:
            region.counters.swapPss = scaled
            region.counters.reported.insert(.swapPss)
        case .locked:
            region.counters.locked = scaled
            region.counters.reported.insert(.locked)
        case .thpEligible: region.thpEligible = value != 0
        case .protectionKey: region.protectionKey = value
        case .vmFlags: break
        }
        return key
    }

    /// The first index at or after `i` that is not a space or a tab. The kernel pads values to
    /// a column, so runs of spaces are skipped eight bytes at a time.
    @inline(__always)
    func skipSpaces(_ start: Int, _ lineEnd: Int) -> Int {
        var i = start
        let spaces: UInt64 = 0x2020_2020_2020_2020
        while i + 8 <= lineEnd, UnsafeRawPointer(base + i).loadUnaligned(as: UInt64.self) == spaces { i += 8 }
        while i < lineEnd, base[i] == 0x20 || base[i] == 0x09 { i += 1 }
        return i
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
func hexString(_ value: UInt64) -> String {
    String(value, radix: 16)
}
