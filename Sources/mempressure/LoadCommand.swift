import ArgumentParser
import CMemoryPressure
import Glibc
import LinuxSystem
import MappedFiles
import VMTracker

struct Load: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Load a file by mapping it and by reading it into the heap, and show what the kernel can take back.",
        discussion: """
            Without --compare: loads FILE the way the loader chooses (mapped when it is a regular \
            file of at least 64 KiB, else read) and prints what it did. With --compare: loads it \
            both ways, touches every page, prints resident / dirty / clean of the heap copy and of \
            the mapping side by side from the VM Tracker, makes the kernel reclaim both \
            (MADV_PAGEOUT), prints them again (the heap copy is still dirty, the mapping's clean \
            pages are gone), then touches the mapping again, checks the content is intact and \
            times the refault per page. FILE must be a regular file (a FIFO, device, socket or \
            symbolic link is refused); if it is truncated while mapped, the command stops with \
            "FILE was truncated while mapped" and status 1.
            """
    )

    @Argument(help: "The file.") var file: String
    @Flag(help: "Load it both ways and compare.") var compare = false
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
            let result = try LoadComparison.run(path: path)
            output(json ? try encodeJSON(result) : result.renderText())
        } catch {
            throw fail(error)
        }
    }
}

/// The side-by-side comparison behind `mempressure load --compare`.
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
    var heap: Side
    var mapped: Side
    var contentIntact: Bool
    var refaultNanosPerPage: Double
    var pagesRefaulted: Int
    var evictionMethod: String
    var swapActive: Bool

    /// Every access to the mapping is guarded (`MappedFile.touchAllPages`, `contentEquals`): a
    /// truncation of the file by another process meanwhile ends the comparison with
    /// `MappedFileError.truncatedWhileMapped`, never with SIGBUS.
    static func run(path: PathBytes) throws -> LoadComparison {
        let mapping = try MappedFile(path: path)
        let size = mapping.count
        // The heap copy: a private anonymous mapping of its own, which is what malloc returns
        // for a block this large; it is made explicitly so the VM Tracker can point at it.
        let heap = try AnonymousBuffer(bytes: size)
        // read(2) of the mapped file's own descriptor (pread): a truncation is a short read.
        guard try mapping.readFile(into: heap.base, count: size) == size else { throw MappedFileError.truncatedWhileMapped(mapping.path, found: .beforeAccess) }
        try mapping.touchAllPages()

        let heapBefore = try figures(of: heap.addressRange)
        let mappedBefore = try figures(of: mapping.addressRange)

        // Reclaim, as memory pressure would: the kernel may drop clean pages and must keep (or
        // swap) dirty ones.
        _ = mp_drain_lru_batches()
        let heapRC = madvise(heap.base, heap.byteCount, mp_MADV_PAGEOUT)
        let eviction = try mapping.evict()
        _ = heapRC

        let heapAfter = try figures(of: heap.addressRange)
        let mappedAfter = try figures(of: mapping.addressRange)

        // Refault: touch every page again, timed, and compare the content with the heap copy.
        let missing = eviction.residentPagesAfter < mapping.residencyPages ? mapping.residencyPages - eviction.residentPagesAfter : 0
        let start = monotonicSeconds()
        try mapping.touchAllPages()
        let elapsed = monotonicSeconds() - start
        let intact = try mapping.contentEquals(heap.base)

        return LoadComparison(
            file: path.description, fileBytes: size, heap: Side(before: heapBefore, after: heapAfter),
            mapped: Side(before: mappedBefore, after: mappedAfter), contentIntact: intact,
            refaultNanosPerPage: missing > 0 ? elapsed * 1e9 / Double(missing) : 0, pagesRefaulted: missing,
            evictionMethod: eviction.method, swapActive: swapActive())
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
        var t = TextTable([.init("", .left), .init("Resident"), .init("Dirty"), .init("Clean")])
        func row(_ label: String, _ f: Figures) {
            t.append([label, ByteFormat.human(f.residentBytes), ByteFormat.human(f.dirtyBytes), ByteFormat.human(f.cleanBytes)])
        }
        row("heap copy, loaded", heap.before)
        row("mapping, touched", mapped.before)
        row("heap copy, after reclaim", heap.after)
        row("mapping, after reclaim", mapped.after)
        var out = "\(file): \(ByteFormat.human(UInt64(fileBytes))), loaded both ways (figures from the VM Tracker)\n\n"
        out += t.render()
        out += "\nThe kernel reclaimed (\(evictionMethod)): the heap copy's pages are dirty and stay"
        out += swapActive ? " (or go to swap)" : " (there is no swap)"
        out += "; the mapping's clean pages were dropped and come back from the file when touched.\n"
        out += "Touched the mapping again: \(pagesRefaulted) pages refaulted, \(ByteFormat.fixed(refaultNanosPerPage / 1000, 1)) µs a page; "
        out += "content \(contentIntact ? "intact" : "DIFFERENT from the heap copy")\n"
        return out
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
