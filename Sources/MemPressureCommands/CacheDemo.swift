import MemPressureOneShot
import ArgumentParser
import Glibc
import MemPressureSystem
import MemPressurePurgeable
import MemPressureVMTracker

struct CacheDemo: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "demo",
        abstract: "Fill a purgeable cache, let the kernel reclaim part of it, and count what survived.",
        discussion: """
            Fills a PurgeableCache with entries of known content, ends access to all of them, shows \
            the VM Tracker view of this process (the cache's regions resident and purgeable), makes \
            the kernel reclaim every other entry (MADV_PAGEOUT, as memory pressure would), shows the \
            view again, then begins access to every entry and counts the discarded, the intact and \
            the corrupted (always zero: a page the kernel took is never handed back as content).
            """
    )

    @Option(help: "Bytes to fill the cache with (k, m, g suffixes).") var size = "64m"
    @Option(name: .customLong("entry-size"), help: "Bytes per entry.") var entrySize = "1m"
    @Option(name: .customLong("reclaim-every"), help: "Make the kernel reclaim every Nth entry (1: all).") var reclaimEvery = 2
    @Flag(help: "Print JSON.") var json = false

    struct Result: Codable {
        var filledBytes: Int
        var entries: Int
        var entrySize: Int
        var purgeableBytesBefore: UInt64
        var residentBytesBefore: UInt64
        var purgeableBytesAfter: UInt64
        var residentBytesAfter: UInt64
        var reclaimedEntries: Int
        var discarded: Int
        var intact: Int
        var corrupted: Int
        var regionType: String
        var registryError: String?
    }

    func run() async throws {
        do {
            let total = try parseBytesInMemory(size, flag: "--size")
            let each = try parseBytes(entrySize, flag: "--entry-size")
            guard each > 0, total >= each else { throw CLIError("--entry-size must be positive and at most --size") }
            guard reclaimEvery >= 1 else { throw CLIError("--reclaim-every must be at least 1") }
            let count = total / each

            let cache = PurgeableCache<Int, PurgeableBuffer>(name: "demo")
            let typeName = try cache.arena().name
            for id in 0..<count {
                try cache.setContent(DemoContent.bytes(id: id, count: each), forKey: id)
            }
            let before = try Self.view(typeName)
            var text = "Filled a purgeable cache with \(count) entries of \(ByteFormat.human(UInt64(each))) and ended access to each.\n\n"
            text += before.report.renderText() + "\n"

            // The kernel reclaims every Nth entry, as it would under memory pressure.
            var reclaimed = 0
            for id in stride(from: 0, to: count, by: reclaimEvery) {
                guard let range = cache.object(forKey: id)?.pageRange else { continue }
                try Reclaim.pageOut(range)
                reclaimed += 1
            }
            let after = try Self.view(typeName)
            text += "Made the kernel reclaim \(reclaimed) of them (MADV_PAGEOUT on their pages).\n\n"
            text += after.report.renderText() + "\n"

            var discarded = 0, intact = 0, corrupted = 0
            for id in 0..<count {
                let outcome = try cache.withContent(forKey: id) { bytes in DemoContent.verify(bytes, id: id) }
                switch outcome {
                case nil: discarded += 1
                case true?: intact += 1
                case false?: corrupted += 1
                }
            }
            let result = Result(
                filledBytes: count * each, entries: count, entrySize: each,
                purgeableBytesBefore: before.counters.purgeable, residentBytesBefore: before.counters.resident,
                purgeableBytesAfter: after.counters.purgeable, residentBytesAfter: after.counters.resident,
                reclaimedEntries: reclaimed, discarded: discarded, intact: intact, corrupted: corrupted,
                regionType: typeName, registryError: PurgeableArena.registryError)
            if json {
                output(try encodeJSON(result))
                return
            }
            text += "Began access to every entry: \(discarded) discarded by the kernel, \(intact) intact, \(corrupted) corrupted.\n"
            text += "The cache counted \(cache.statistics.discards) discards and \(cache.statistics.evictions) policy evictions.\n"
            text += "\"\(typeName)\" regions: resident \(ByteFormat.human(before.counters.resident)) -> \(ByteFormat.human(after.counters.resident)), "
            text += "purgeable \(ByteFormat.human(before.counters.purgeable)) -> \(ByteFormat.human(after.counters.purgeable)).\n"
            if let e = PurgeableArena.registryError { text += "note: \(e)\n" }
            output(text)
        } catch {
            throw fail(error)
        }
    }

    /// This process's VM report, and the totals of the cache's own regions.
    static func view(_ typeName: String) throws -> (report: VMReport, counters: MemoryCounters) {
        let app = try Snapshotter().app(.process(getpid()), options: .detailed)
        let regions = app.processes.flatMap(\.regions).filter { $0.type == .tagged(typeName) }
        return (VMReport(app, includeRegions: false), MemoryCounters.sum(of: regions))
    }
}

/// The demo's content: a pattern that depends on the entry and never contains a zero word, so a
/// page the kernel took (all zeros) can never pass for it.
enum DemoContent {
    static func word(_ id: Int, _ i: Int) -> UInt64 {
        var z = UInt64(truncatingIfNeeded: id &* 0x1000_0001 &+ i) &+ 0x9E37_79B9_7F4A_7C15
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return (z ^ (z >> 31)) | 1
    }

    static func bytes(id: Int, count: Int) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: count)
        out.withUnsafeMutableBytes { raw in
            let words = count / 8
            for i in 0..<words { raw.storeBytes(of: word(id, i), toByteOffset: i * 8, as: UInt64.self) }
            for j in (words * 8)..<count { raw[j] = UInt8(truncatingIfNeeded: word(id, words) >> (8 * (j % 8))) }
        }
        return out
    }

    static func verify(_ raw: UnsafeMutableRawBufferPointer, id: Int) -> Bool {
        let words = raw.count / 8
        for i in 0..<words where raw.loadUnaligned(fromByteOffset: i * 8, as: UInt64.self) != word(id, i) { return false }
        for j in (words * 8)..<raw.count where raw[j] != UInt8(truncatingIfNeeded: word(id, words) >> (8 * (j % 8))) { return false }
        return true
    }
}

/// "64m" -> 67108864.
func parseBytes(_ text: String, flag: String) throws -> Int {
    var digits = Substring(text)
    var multiplier = 1
    switch text.last {
    case "k", "K": multiplier = 1 << 10; digits = digits.dropLast()
    case "m", "M": multiplier = 1 << 20; digits = digits.dropLast()
    case "g", "G": multiplier = 1 << 30; digits = digits.dropLast()
    default: break
    }
    guard let n = Int(digits), n >= 0, n <= Int.max / multiplier else {
        throw CLIError("\(flag) takes a number of bytes (with k, m or g), not '\(text)'")
    }
    return n * multiplier
}

/// `parseBytes`, for memory the command will hold: at most the machine's memory (MemTotal),
/// else refused at once (filling a cache larger than the machine never ends).
func parseBytesInMemory(_ text: String, flag: String) throws -> Int {
    let n = try parseBytes(text, flag: flag)
    let memory = try ProcFS.readBytes("/proc/meminfo").withUnsafeBytes { MemInfo.parse($0) }.totalBytes
    guard let memory else { throw CLIError("/proc/meminfo: no MemTotal, so \(flag) cannot be checked against the machine's memory") }
    guard UInt64(n) <= memory else {
        throw CLIError("\(flag) \(text) (\(ByteFormat.human(UInt64(n)))) is more than this machine's memory (\(ByteFormat.human(memory)), MemTotal): it could never be held")
    }
    return n
}
