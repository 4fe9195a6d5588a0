import MemPressureSystem
import Testing
import MemPressureVMTracker

/// A record as the kernel prints it, with `path` placed after the padding.
func smapsRecord(
    _ range: String, _ perms: String = "rw-p", inode: Int = 0, path: [UInt8] = [], size: Int? = nil,
    rss: Int = 0, privateDirty: Int = 0, privateClean: Int = 0, lazyFree: Int = 0, swap: Int = 0,
    extra: String = "", flags: String = "rd wr mr mw me ac"
) -> [UInt8] {
    let parts = range.split(separator: "-")
    let span = Int(parts[1], radix: 16)! - Int(parts[0], radix: 16)!
    var header = Array("\(range) \(perms) 00000000 \(inode == 0 ? "00:00" : "fe:00") \(inode)".utf8)
    if !path.isEmpty {
        header += [UInt8](repeating: 0x20, count: max(1, 73 - header.count)) + path
    } else {
        header += [0x20]
    }
    let kb = { (v: Int) in "\(v / 1024) kB" }
    let body = """
        Size:           \(kb(size ?? span))
        KernelPageSize:        4 kB
        MMUPageSize:           4 kB
        Rss:            \(kb(rss))
        Pss:            \(kb(rss))
        Pss_Dirty:      \(kb(privateDirty))
        Shared_Clean:          0 kB
        Shared_Dirty:          0 kB
        Private_Clean:  \(kb(privateClean))
        Private_Dirty:  \(kb(privateDirty))
        Referenced:     \(kb(rss))
        Anonymous:      \(kb(inode == 0 ? rss : 0))
        KSM:                   0 kB
        LazyFree:       \(kb(lazyFree))
        AnonHugePages:         0 kB
        ShmemPmdMapped:        0 kB
        FilePmdMapped:         0 kB
        Shared_Hugetlb:        0 kB
        Private_Hugetlb:       0 kB
        Swap:           \(kb(swap))
        SwapPss:        \(kb(swap))
        Locked:                0 kB
        THPeligible:           0
        \(extra)VmFlags: \(flags)

        """
    return header + [0x0a] + Array(body.utf8)
}

@Suite("smaps parser")
struct ParserTests {
    /// (bytes, text, whether the bytes hold the text): at the start, at the very end, after a
    /// partial match, in bytes that are not UTF-8, and the near misses.
    static let containsCases: [([UInt8], String, Bool)] = [
        (Array("0::/mempressure-1-a/Photos\n".utf8), "mempressure-", true),
        (Array("mempressure-".utf8), "mempressure-", true),
        (Array("12:memory:/x/mempressure-".utf8), "mempressure-", true),
        (Array("mempressuRe-mempressure".utf8), "mempressure-", false),
        (Array("memmempressure-".utf8), "mempressure-", true),
        (Array("mempressure".utf8), "mempressure-", false),
        ([0xFF, 0xFE, 0x6D, 0x2D], "m-", true),
        ([0xFF, 0xFE, 0x6D], "m-", false),
        ([], "m", false),
        ([], "", true),
    ]

    @Test("ByteScanner.contains: the text anywhere in the bytes, and nowhere else", arguments: containsCases)
    func containsText(_ bytes: [UInt8], _ text: String, _ expected: Bool) {
        #expect(bytes.withUnsafeBytes { ByteScanner.contains($0, text) } == expected)
    }

    @Test("every field of a record, in bytes")
    func parsesFields() throws {
        let text = smapsRecord("7f0000000000-7f0000400000", rss: 4 << 20, privateDirty: 3 << 20, privateClean: 1 << 20, lazyFree: 1 << 20, swap: 8192)
        let regions = try SmapsParser.parse(text)
        try #require(regions.count == 1)
        let r = regions[0]
        #expect(r.start == 0x7f00_0000_0000)
        #expect(r.end == 0x7f00_0040_0000)
        #expect(r.permissions.description == "rw-p")
        #expect(r.counters.size == 4 << 20)
        #expect(r.counters.rss == 4 << 20)
        #expect(r.counters.privateDirty == 3 << 20)
        #expect(r.counters.lazyFree == 1 << 20)
        #expect(r.counters.swap == 8192)
        #expect(r.kernelPageSize == 4096)
        #expect(r.thpEligible == false)
        #expect(r.vmFlags.description == "rd wr mr mw me ac")
        #expect(r.vmFlags.maximumProtection == "rwx")
        // The project's quantities.
        #expect(r.counters.dirty == 3 << 20)
        #expect(r.counters.clean == 1 << 20)
        #expect(r.counters.purgeable == 1 << 20)
        #expect(r.counters.footprint == (3 << 20) + 8192)
    }

    @Test("paths are bytes: spaces, non-UTF-8, (deleted), kept exactly")
    func oddPaths() throws {
        let spaced = Array("/tmp/a dir/file with spaces".utf8)
        let notUTF8: [UInt8] = Array("/tmp/bad-".utf8) + [0xff, 0xfe, 0x80] + Array("-name".utf8)
        let deleted = Array("/tmp/gone (deleted)".utf8)
        var text = smapsRecord("1000-2000", "r--p", inode: 12, path: spaced)
        text += smapsRecord("2000-3000", "r--p", inode: 13, path: notUTF8)
        text += smapsRecord("3000-4000", "r--p", inode: 14, path: deleted)
        let regions = try SmapsParser.parse(text)
        #expect(regions.map(\.path.bytes) == [spaced, notUTF8, deleted])
        #expect(regions[1].path.description == "/tmp/bad-\\xff\\xfe\\x80-name")
        #expect(regions[2].path.hasSuffix(" (deleted)"))
        #expect(regions[0].inode == 12)
    }

    @Test("fields this parser does not know are kept, not dropped")
    func unknownFields() throws {
        let text = smapsRecord("1000-2000", extra: "Brand_New_Counter:    8 kB\nSomething:   text value\nProtectionKey:   3\n")
        let r = try #require(try SmapsParser.parse(text).first)
        #expect(r.otherFields.contains(SmapsField(name: "Brand_New_Counter", value: 8192, text: "8 kB")))
        #expect(r.otherFields.contains { $0.name == "Something" && $0.value == nil && $0.text == "text value" })
        #expect(r.protectionKey == 3)
    }

    @Test("unknown VmFlags codes are kept")
    func unknownFlags() throws {
        let r = try #require(try SmapsParser.parse(smapsRecord("1000-2000", flags: "rd zz wr")).first)
        #expect(r.vmFlags.description == "rd wr zz")
    }

    @Test("smaps_rollup")
    func rollup() throws {
        let text = """
            55d0c0a3f000-7ffd1b3f4000 ---p 00000000 00:00 0                          [rollup]
            Rss:                1740 kB
            Pss:                 716 kB
            Pss_Dirty:           116 kB
            Pss_Anon:            116 kB
            Pss_File:            600 kB
            Pss_Shmem:             0 kB
            Private_Dirty:       116 kB
            LazyFree:             12 kB
            Swap:                  4 kB

            """
        let c = try SmapsParser.parseRollup(Array(text.utf8))
        #expect(c.rss == 1740 * 1024)
        #expect(c.pssFile == 600 * 1024)
        #expect(c.lazyFree == 12 * 1024)
        #expect(c.footprint == (116 + 4) * 1024)
    }

    @Test("an empty file is no regions (a process without memory)")
    func empty() throws {
        #expect(try SmapsParser.parse([UInt8]()).isEmpty)
    }

    /// Each malformed input gives a one-line error naming the file and the line.
    @Test(arguments: [
        ("cut in the middle of a line", Array(smapsRecord("1000-2000").dropLast(5)), 25, "no newline"),
        ("cut after a complete line, before VmFlags", Array(String(decoding: smapsRecord("1000-2000"), as: UTF8.self).split(separator: "\n").prefix(10).joined(separator: "\n").utf8) + [0x0a], 11, "VmFlags"),
        ("Size disagrees with the header", smapsRecord("1000-2000", size: 8192), 26, "Size says"),
        ("bad permissions", Array("1000-2000 rq-p 00000000 00:00 0 \n".utf8), 1, "permissions"),
        ("end below start", Array("2000-1000 rw-p 00000000 00:00 0 \n".utf8), 1, "below its start"),
        ("a field before any header", Array("Rss: 4 kB\n".utf8), 1, "before any region"),
        ("a number too large", smapsRecord("1000-2000", extra: "Swap: 99999999999999999999999 kB\n"), 25, "too large"),
        ("kB overflow", smapsRecord("1000-2000", extra: "Swap: 9999999999999999999 kB\n"), 25, "too large"),
        ("not a number", smapsRecord("1000-2000", extra: "Rss: lots kB\n"), 25, "bad value"),
        ("address wider than 64 bits", Array("10000000000000000-10000000000000001 rw-p 00000000 00:00 0 \n".utf8), 1, "64 bits"),
        ("empty line", Array("\n".utf8), 1, "empty line"),
    ] as [(String, [UInt8], Int, String)])
    func malformed(_ label: String, _ text: [UInt8], _ line: Int, _ words: String) throws {
        do {
            _ = try SmapsParser.parse(text, pid: 42, file: "/proc/42/smaps")
            Issue.record("\(label): parsed without error")
        } catch {
            guard case .malformed(let pid, let file, let at, _) = error else {
                Issue.record("\(label): \(error)")
                return
            }
            #expect(pid == 42)
            #expect(file == "/proc/42/smaps")
            #expect(at == line, "\(label): \(error)")
            #expect(error.description.contains(words), "\(label): \(error)")
            #expect(!error.description.contains("\n"))
            #expect(error.description.hasPrefix("pid 42: /proc/42/smaps: line"))
        }
    }

    @Test("tens of thousands of regions")
    func manyRegions() throws {
        var text: [UInt8] = []
        for i in 0..<30_000 {
            let start = 0x1000_0000 + i * 0x2000
            text += smapsRecord("\(String(start, radix: 16))-\(String(start + 0x1000, radix: 16))", rss: 4096, privateDirty: 4096)
        }
        let regions = try SmapsParser.parse(text)
        #expect(regions.count == 30_000)
        #expect(MemoryCounters.sum(regions.map(\.counters)).privateDirty == 30_000 * 4096)
    }

    @Test("/proc/PID/stat with spaces and parentheses in the name")
    func statLine() throws {
        let text = Array("1234 (a (weird) name) S 1 1234 1234 0 -1 4194560 100 0 5 0 7 3 0 0 20 0 2 0 12345 1000000 250 18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17 1 0 0 0 0 0\n".utf8)
        let stat = try text.withUnsafeBytes { try ProcessStat.parse($0, pid: 1234) }
        #expect(stat.pid == 1234)
        #expect(stat.name.description == "a (weird) name")
        #expect(stat.state == UInt8(ascii: "S"))
        #expect(stat.ppid == 1)
        #expect(stat.minorFaults == 100)
        #expect(stat.majorFaults == 5)
        #expect(stat.userTicks == 7)
        #expect(stat.threads == 2)
        #expect(stat.startTicks == 12345)
        #expect(stat.residentPages == 250)
        #expect(!stat.isKernelThread)
    }

    @Test("a truncated stat line is an error, not a crash")
    func truncatedStat() {
        let text = Array("1234 (name) S 1 1234".utf8)
        #expect(throws: ProcError.self) { try text.withUnsafeBytes { try ProcessStat.parse($0, pid: 1234) } }
    }

    @Test("/proc/PID/status")
    func status() throws {
        let text = Array("Name:\thog\nUid:\t1000\t1000\t1000\t1000\nVmHWM:\t  2048 kB\nVmRSS:\t  1024 kB\nRssAnon:\t 512 kB\nThreads:\t3\nNewKey:\twhatever\n".utf8)
        let s = try text.withUnsafeBytes { try ProcessStatus.parse($0, pid: 1) }
        #expect(s.name == "hog")
        #expect(s.uid == 1000)
        #expect(s.peakResidentBytes == 2 << 20)
        #expect(s.residentAnonBytes == 512 << 10)
        #expect(s.threads == 3)
    }

    @Test("timestamps print and parse as ISO 8601")
    func timestamps() throws {
        let t = Timestamp(secondsSinceEpoch: 1_795_000_000, nanoseconds: 123_000_000)
        #expect(t.description == "2026-11-18T11:06:40.123000Z")
        #expect(Timestamp(iso8601: t.description) == t)
        #expect(Timestamp(iso8601: "2026-11-18T11:06:40.5Z") == Timestamp(secondsSinceEpoch: 1_795_000_000, nanoseconds: 500_000_000))
        #expect(Timestamp(iso8601: "yesterday") == nil)
    }
}
