import MemPressureOneShot
import ArgumentParser
import CMemoryPressure
import Glibc
import MemPressureSystem
import MemPressureMappedFiles
import SystemPackage
import MemPressureVMTracker

struct Load: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "load",
        abstract: "Load a file by mapping it and by reading it into the heap, and show what the kernel can take back.",
        discussion: """
            Without --compare: loads FILE the way the loader chooses (mapped when it is a regular \
            file of at least 64 KiB, else read) and prints what it did. With --compare: loads it \
            both ways, touches every page, prints resident / dirty / clean of the heap copy and of \
            the mapping side by side from the VM Tracker, makes the kernel reclaim both \
            (MADV_PAGEOUT), prints them again with the page cache's residency (mincore), says \
            what happened to each (the heap copy's dirty pages stay without swap; the mapping's \
            clean pages leave memory), then touches the mapping again, checks the content is \
            intact and times the refault per page. A file just written still has dirty pages in \
            the page cache, which the kernel cannot drop: they are flushed first (fdatasync; \
            --no-flush keeps them dirty), and the output says so. On tmpfs the pages are memory \
            themselves: only swap can take them, and the output says that too. FILE must be a regular file (a FIFO, device, socket or \
            symbolic link is refused); if it is truncated while mapped, the command stops with \
            "FILE was truncated while mapped" and status 1.
            """
    )

    @Argument(help: "The file.", completion: .file()) var file: String
    @Flag(help: "Load it both ways and compare.") var compare = false
    @Flag(inversion: .prefixedNo, help: "With --compare: write the file's dirty page-cache pages back (fdatasync) before reclaim, so that they can be dropped.")
    var flush = true
    @Flag(help: "Print JSON.") var json = false

    func run() async throws {
        do {
            // The argument's exact bytes: the name need not be UTF-8.
            let path = PathBytes.argument(file)
            if !compare {
                let loaded = try FileLoader.load(path)
                let how = loaded.isMapped ? "mapped (clean page-cache pages, reclaimable)" : "read into memory (dirty, not reclaimable)"
                output("\(path): \(loaded.count) bytes, \(how)\n")
                return
            }
            let result = try LoadComparison.run(path: path, flush: flush)
            output(json ? try encodeJSON(result) : result.renderText())
        } catch {
            throw fail(error)
        }
    }
}

/// The side-by-side comparison behind `mempressure load --compare`.
///
/// Every sentence it prints is derived from what it measured, so the text cannot contradict the
/// table: the VM Tracker says what this process has mapped (Resident, Dirty, Clean), mincore says
/// what is still in the page cache, and getrusage counts the faults of the second touch.
struct LoadComparison: Codable {
    struct Figures: Codable {
        var residentBytes: UInt64
        var dirtyBytes: UInt64
        var cleanBytes: UInt64
    }

    struct Side: Codable {
        var before: Figures
        var after: Figures
    }

    var file: String
    var fileBytes: Int
    /// The file system's name ("ext4", "tmpfs", ...).
    var fileSystem: String
    /// Whether the file's pages are memory (tmpfs, ramfs): nothing to drop them back to.
    var memoryBacked: Bool
    /// Bytes of the file's pages that were dirty in the page cache after loading (written by
    /// someone, not yet on disk).
    var dirtyInPageCacheBytes: UInt64
    /// Bytes of those written back with fdatasync before reclaim (0 with --no-flush, on tmpfs, or
    /// when none were dirty).
    var flushedBytes: UInt64
    var heap: Side
    var mapped: Side
    /// The mapping's pages in the page cache (mincore) before and after reclaim.
    var pageCacheBytesBefore: UInt64
    var pageCacheBytesAfter: UInt64
    var contentIntact: Bool
    /// Pages that left the page cache in reclaim and were read back by the second touch.
    var pagesRefaulted: Int
    /// The second touch's time per refaulted page; absent when no page had left.
    var refaultNanosPerPage: Double?
    /// Faults of the second touch (getrusage): major ones read from the file or swap, minor ones
    /// only mapped a page still in memory again.
    var majorFaults: Int
    var minorFaults: Int
    var evictionMethod: String
    var swapActive: Bool
    /// What happened, in words derived from the figures above (the text output's sentences).
    var explanation: [String] = []

    /// Every access to the mapping is guarded (`MappedFile.touchAllPages`, `contentEquals`): a
    /// truncation of the file by another process meanwhile ends the comparison with
    /// `MappedFileError.truncatedWhileMapped`, never with SIGBUS.
    static func run(path: PathBytes, flush: Bool) throws -> LoadComparison {
        let mapping = try MappedFile(path: path)
        let size = mapping.count
        let fileSystem = try mapping.fileSystem()
        // The heap copy: a private anonymous mapping of its own, which is what malloc returns
        // for a block this large; it is made explicitly so the VM Tracker can point at it.
        let heap = try AnonymousBuffer(bytes: size)
        // read(2) of the mapped file's own descriptor (pread): a truncation is a short read.
        guard try mapping.readFile(into: heap.base, count: size) == size else { throw MappedFileError.truncatedWhileMapped(mapping.path, found: .beforeAccess) }
        try mapping.touchAllPages()

        // A file just written has dirty pages in the page cache, which the kernel cannot drop
        // before writing them back: flush them first (unless asked not to), and say so.
        let loaded = try figures(of: mapping.addressRange)
        var flushed: UInt64 = 0
        if flush, loaded.dirtyBytes > 0, !fileSystem.isMemoryBacked {
            try mapping.flushDirtyPages()
            flushed = loaded.dirtyBytes
        }
        let heapBefore = try figures(of: heap.addressRange)
        let mappedBefore = flushed > 0 ? try figures(of: mapping.addressRange) : loaded
        let page = UInt64(MappedFile.pageSize)

        // Reclaim, as memory pressure would: the kernel may drop clean pages and must keep (or
        // swap) dirty ones.
        _ = mp_drain_lru_batches()  // a hint: whatever it did, reclaim below is measured
        if madvise(heap.base, heap.byteCount, mp_MADV_PAGEOUT) != 0 {
            throw CLIError("madvise(MADV_PAGEOUT) of the heap copy failed: \(SystemCallError("madvise", errno: Errno(rawValue: errno)))")
        }
        let eviction = try mapping.evict()

        let heapAfter = try figures(of: heap.addressRange)
        let mappedAfter = try figures(of: mapping.addressRange)

        // Refault: touch every page again, timed and counted, and compare the content with the
        // heap copy.
        let missing = max(0, eviction.residentPagesBefore - eviction.residentPagesAfter)
        let faultsBefore = faultCounts()
        let start = monotonicSeconds()
        try mapping.touchAllPages()
        let elapsed = monotonicSeconds() - start
        let faultsAfter = faultCounts()
        let intact = try mapping.contentEquals(heap.base)

        var result = LoadComparison(
            file: path.description, fileBytes: size, fileSystem: fileSystem.name, memoryBacked: fileSystem.isMemoryBacked,
            dirtyInPageCacheBytes: loaded.dirtyBytes, flushedBytes: flushed,
            heap: Side(before: heapBefore, after: heapAfter), mapped: Side(before: mappedBefore, after: mappedAfter),
            pageCacheBytesBefore: UInt64(eviction.residentPagesBefore) * page, pageCacheBytesAfter: UInt64(eviction.residentPagesAfter) * page,
            contentIntact: intact, pagesRefaulted: missing, refaultNanosPerPage: missing > 0 ? elapsed * 1e9 / Double(missing) : nil,
            majorFaults: faultsAfter.major - faultsBefore.major, minorFaults: faultsAfter.minor - faultsBefore.minor,
            evictionMethod: eviction.method, swapActive: swapActive())
        result.explanation = result.explain()
        return result
    }

    /// This process's major and minor faults so far.
    static func faultCounts() -> (major: Int, minor: Int) {
        var usage = rusage()
        getrusage(__rusage_who_t(RUSAGE_SELF.rawValue), &usage)  // cannot fail for RUSAGE_SELF with a valid pointer
        return (Int(usage.ru_majflt), Int(usage.ru_minflt))
    }

    /// The VM Tracker's figures for the regions of this process inside `range`.
    static func figures(of range: Range<UInt>) throws -> Figures {
        let me = try Snapshotter().process(getpid(), options: SnapshotOptions(detail: .regions))
        let inside = me.regions.filter { UInt($0.start) >= range.lowerBound && UInt($0.end) <= range.upperBound }
        let c = MemoryCounters.sum(of: inside)
        return Figures(residentBytes: c.resident, dirtyBytes: c.dirty, cleanBytes: c.clean)
    }

    /// Whether any swap is in use (a header line only in /proc/swaps: none).
    static func swapActive() -> Bool {
        do {
            return try ProcFS.readBytes("/proc/swaps").split(separator: 0x0a).count > 1
        } catch {
            return false  // no /proc/swaps: no swap support at all
        }
    }

    func renderText() -> String {
        func human(_ v: UInt64) -> String { ByteFormat.human(v) }
        var t = TextTable([.init("", .left), .init("Resident"), .init("Dirty"), .init("Clean"), .init("In page cache")])
        func row(_ label: String, _ f: Figures, _ cache: UInt64?) {
            t.append([label, human(f.residentBytes), human(f.dirtyBytes), human(f.cleanBytes), cache.map(human) ?? "-"])
        }
        row("heap copy, loaded", heap.before, nil)
        row("mapping, touched", mapped.before, pageCacheBytesBefore)
        row("heap copy, after reclaim", heap.after, nil)
        row("mapping, after reclaim", mapped.after, pageCacheBytesAfter)
        var out = "\(file): \(human(UInt64(fileBytes))) on \(fileSystem), loaded both ways "
        out += "(Resident, Dirty, Clean: this process's mappings, from the VM Tracker; In page cache: mincore)\n"
        let notes = explanation.prefix { !$0.hasPrefix("The kernel reclaimed") }
        for line in notes { out += line + "\n" }
        out += "\n" + t.render() + "\n"
        for line in explanation.dropFirst(notes.count) { out += line + "\n" }
        return out
    }

    /// The sentences: notes on the file (before the table), then what reclaim did and what the
    /// second touch found (after it). Each is derived from the measured figures.
    func explain() -> [String] {
        func human(_ v: UInt64) -> String { ByteFormat.human(v) }
        var lines: [String] = []
        if memoryBacked {
            lines.append("The file is on \(fileSystem): its pages are memory, not a cache of a disk, so they count as dirty and there is nothing to flush them to; only swap can take them.")
        } else if flushedBytes > 0 {
            lines.append("\(human(dirtyInPageCacheBytes)) of the file's pages were dirty in the page cache (written, not yet on disk): "
                + "flushed them first (fdatasync), since the kernel cannot drop a dirty page before writing it back. --no-flush keeps them dirty.")
        } else if dirtyInPageCacheBytes > 0 {
            lines.append("\(human(dirtyInPageCacheBytes)) of the file's pages were dirty in the page cache (written, not yet on disk) and were not flushed (--no-flush).")
        }
        lines.append("The kernel reclaimed (\(evictionMethod) on both):")
        lines.append("- heap copy: " + heapSentence())
        lines.append("- mapping: " + mappingSentence())
        var touch = "Touched the mapping again: "
        if pagesRefaulted > 0, let perPage = refaultNanosPerPage {
            touch += "\(pagesRefaulted) pages came back (\(majorFaults) major \(majorFaults == 1 ? "fault" : "faults")), \(ByteFormat.fixed(perPage / 1000, 1)) µs a page"
        } else {
            touch += "no page had left memory, so nothing was read back (\(majorFaults) major, \(minorFaults) minor faults)"
        }
        touch += "; content \(contentIntact ? "intact" : "DIFFERENT from the heap copy")"
        lines.append(touch)
        return lines
    }

    private func heapSentence() -> String {
        let before = heap.before.residentBytes, after = heap.after.residentBytes
        if after >= before {
            return "its \(ByteFormat.human(before)) of dirty anonymous pages stayed resident: only swap can take them, "
                + (swapActive ? "and the kernel kept them." : "and there is no swap.")
        }
        return "\(ByteFormat.human(before - after)) of its dirty pages went to swap; \(ByteFormat.human(after)) stayed resident."
    }

    private func mappingSentence() -> String {
        let dropped = pageCacheBytesBefore > pageCacheBytesAfter ? pageCacheBytesBefore - pageCacheBytesAfter : 0
        let stayed = pageCacheBytesAfter
        var parts: [String] = []
        if mapped.after.residentBytes < mapped.before.residentBytes {
            parts.append("\(ByteFormat.human(mapped.before.residentBytes - mapped.after.residentBytes)) unmapped from this process")
        }
        if dropped > 0 {
            parts.append("\(ByteFormat.human(dropped)) left memory" + (memoryBacked ? " (to swap)" : " (clean pages, dropped: the file still has them)"))
        }
        if stayed > 0 {
            var reason: String
            if memoryBacked {
                reason = swapActive ? "the kernel kept them" : "\(fileSystem) pages can only go to swap, and there is no swap"
            } else if mapped.before.dirtyBytes > 0 {
                reason = "dirty pages must be written back before the kernel can drop them"
            } else {
                reason = "the kernel kept them (pages other processes map, or that are under writeback, stay)"
            }
            parts.append("\(ByteFormat.human(stayed)) stayed in the page cache: " + reason)
        }
        return parts.isEmpty ? "nothing changed." : parts.joined(separator: "; ") + "."
    }
}

extension MappedFile {
    var residencyPages: Int { (count + MappedFile.pageSize - 1) / MappedFile.pageSize }
}

/// A private anonymous mapping between guard pages, unmapped on deinit.
final class AnonymousBuffer {
    let base: UnsafeMutableRawPointer
    let byteCount: Int
    private let mapping: UnsafeMutableRawPointer
    private let mappingBytes: Int

    init(bytes: Int) throws {
        let page = MappedFile.pageSize
        byteCount = (bytes + page - 1) / page * page
        mappingBytes = byteCount + 2 * page
        guard let p = mmap(nil, mappingBytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0), p != MAP_FAILED else {
            throw CLIError("mmap of \(bytes) bytes failed: errno \(errno)")
        }
        mapping = p
        mprotect(p, page, PROT_NONE)
        mprotect(p + page + byteCount, page, PROT_NONE)
        base = p + page
        _ = madvise(base, byteCount, MADV_NOHUGEPAGE)
    }

    var addressRange: Range<UInt> { UInt(bitPattern: base)..<(UInt(bitPattern: base) + UInt(byteCount)) }

    deinit { munmap(mapping, mappingBytes) }
}
