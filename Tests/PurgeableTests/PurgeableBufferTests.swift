import Glibc
import MemPressurePurgeable
import MemPressureRegionTags
import Synchronization
import Testing
import MemPressureTestSupport
import MemPressureVMTracker

/// A deterministic pattern: word `i` of buffer `id` at version `version`.
func word(_ id: Int, _ version: Int, _ i: Int) -> UInt64 {
    var z = UInt64(truncatingIfNeeded: id &* 1_000_003 &+ version &* 7919 &+ i) &+ 0x9E37_79B9_7F4A_7C15
    z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
    z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
    return (z ^ (z >> 31)) | 1  // never zero, so a page the kernel took cannot pass for content
}

func fill(_ buffer: PurgeableBuffer, id: Int, version: Int = 0) throws {
    try buffer.withUnsafeMutableBytes { raw in
        let words = raw.bindMemory(to: UInt64.self)
        for i in words.indices { words[i] = word(id, version, i) }
    }
}

/// Every word, or (with `sampled`) two words of every page.
func intact(_ buffer: PurgeableBuffer, id: Int, version: Int = 0, sampled: Bool = false) throws -> Bool {
    try buffer.withUnsafeMutableBytes { raw in
        let words = raw.bindMemory(to: UInt64.self)
        if sampled {
            let perPage = PurgeableArena.pageSize / 8
            var i = 0
            while i < words.count {
                if words[i] != word(id, version, i) { return false }
                let last = min(i + perPage - 1, words.count - 1)
                if words[last] != word(id, version, last) { return false }
                i += perPage
            }
            return true
        }
        return words.indices.allSatisfy { words[$0] == word(id, version, $0) }
    }
}

@Suite("purgeable buffers")
struct PurgeableBufferTests {
    @Test("begin, end and discard with NSPurgeableData's semantics")
    func semantics() throws {
        let b = try PurgeableBuffer(count: 10_000)
        #expect(b.accessCount == 1, "a new buffer starts with one access, like NSPurgeableData")
        #expect(b.allocatedBytes == 3 * PurgeableArena.pageSize)
        try fill(b, id: 1)
        try b.endContentAccess()
        #expect(throws: PurgeableError.accessNotHeld) { try b.withUnsafeMutableBytes { _ in } }
        #expect(throws: PurgeableError.unbalancedEndAccess) { try b.endContentAccess() }
        #expect(b.beginContentAccess())
        #expect(b.beginContentAccess())
        #expect(try intact(b, id: 1))
        try b.endContentAccess()
        b.discardContentIfPossible()
        #expect(!b.isContentDiscarded, "an access is still held")
        try b.endContentAccess()
        b.discardContentIfPossible()
        #expect(b.isContentDiscarded)
        #expect(!b.beginContentAccess())
        #expect(b.accessCount == 0, "a failed begin takes no access")
        #expect(throws: PurgeableError.discarded) { try b.withUnsafeMutableBytes { _ in } }
        #expect(b.copyContent() == nil)
    }

    @Test("zero-length buffers allocate nothing and are never discarded")
    func zeroLength() throws {
        let b = try PurgeableBuffer(count: 0)
        #expect(b.allocatedBytes == 0)
        try b.endContentAccess()
        b.discardContentIfPossible()
        #expect(!b.isContentDiscarded)
        #expect(b.beginContentAccess())
        #expect(try b.withUnsafeMutableBytes { $0.count } == 0)
        #expect(b.pageRange == nil)
    }

    @Test("sizes that cannot be had are clear errors")
    func badSizes() {
        #expect(throws: PurgeableError.invalidSize(-1)) { try PurgeableBuffer(count: -1) }
        #expect(throws: PurgeableError.invalidSize(Int.max)) { try PurgeableBuffer(count: Int.max) }
        let huge = 1 << 60
        #expect(throws: PurgeableError.allocationFailed(bytes: huge)) { try PurgeableBuffer(count: huge) }
    }

    @Test("a small buffer occupies a whole page and is as purgeable as a big one")
    func smallBuffer() throws {
        let arena = try PurgeableArena.named("test-small")
        let b = try PurgeableBuffer(copying: Array(repeating: UInt8(7), count: 100), arena: arena)
        #expect(b.allocatedBytes == PurgeableArena.pageSize)
        try b.endContentAccess()
        try Reclaim.pageOut(try #require(b.pageRange))
        #expect(!b.beginContentAccess(), "the kernel took its only page")
    }

    /// The proof the issue asks for: memory that was resident and LazyFree goes away under
    /// reclaim, and begin reports exactly which buffers lost pages.
    @Test("the kernel really takes idle buffers, and begin tells taken from intact")
    func realReclamation() throws {
        let arena = try PurgeableArena.named("test-reclaim")
        let size = 256 * 1024
        let buffers = try (0..<16).map { id -> PurgeableBuffer in
            let b = try PurgeableBuffer(count: size, arena: arena)
            try fill(b, id: id)
            try b.endContentAccess()
            return b
        }
        let tagged = { () throws -> MemoryCounters in
            let me = try Snapshotter().process(getpid(), options: SnapshotOptions(detail: .regions, tagSource: RegionRegistry()))
            return MemoryCounters.sum(me.regions.filter { $0.type == .tagged("test-reclaim") }.map(\.counters))
        }
        let before = try tagged()
        // MADV_FREE moves pages to the lazy-free list through per-CPU batches of up to 31 pages;
        // until a batch drains, smaps still counts its pages as ordinary anonymous memory.
        let batchSlack = UInt64(31 * PurgeableArena.pageSize * Int(sysconf(Int32(_SC_NPROCESSORS_ONLN))))
        #expect(before.resident >= UInt64(16 * size), "the arena's regions are attributed to it and resident")
        #expect(before.purgeable + batchSlack >= UInt64(16 * size), "and their idle pages are LazyFree")
        // Purgeable pages are not charged; what is (a few hundred KiB) is the arena's own metadata,
        // which jemalloc maps through the same hooks.
        #expect(before.footprint < UInt64(16 * size) / 4, "purgeable pages are not charged")

        for (id, b) in buffers.enumerated() where id % 2 == 0 {
            try Reclaim.pageOut(try #require(b.pageRange))
        }
        let after = try tagged()
        #expect(before.resident - after.resident >= UInt64(8 * size), "the kernel took the even buffers' pages")
        #expect(before.purgeable - after.purgeable + batchSlack >= UInt64(8 * size))

        for (id, b) in buffers.enumerated() {
            if id % 2 == 0 {
                #expect(!b.beginContentAccess(), "buffer \(id) lost its pages")
                #expect(b.isContentDiscarded)
            } else {
                #expect(b.beginContentAccess(), "buffer \(id) kept its pages")
                #expect(try intact(b, id: id), "buffer \(id)'s content is exactly what it was")
                try b.endContentAccess()
            }
        }
    }

    @Test("one lost page is enough to discard the whole buffer")
    func onePage() throws {
        let arena = try PurgeableArena.named("test-one-page")
        let b = try PurgeableBuffer(count: 8 * PurgeableArena.pageSize, arena: arena)
        try fill(b, id: 9)
        try b.endContentAccess()
        let range = try #require(b.pageRange)
        let page = UInt(PurgeableArena.pageSize)
        try Reclaim.pageOut((range.lowerBound + 5 * page)..<(range.lowerBound + 6 * page))
        #expect(b.hasLostPages, "mincore sees the missing page without touching anything")
        #expect(!b.beginContentAccess())
    }

    @Test("the arena's statistics, its decay, and mallctl errors that name the ctl")
    func arena() throws {
        let arena = try PurgeableArena.named("test-stats")
        let b = try PurgeableBuffer(count: 4 << 20, arena: arena)
        let held = try arena.statistics()
        #expect(held.activeBytes >= 4 << 20)
        #expect(held.mappedBytes >= 4 << 20)
        b.discardContentIfPossible()  // still accessed: no effect
        try b.endContentAccess()
        b.discardContentIfPossible()
        let freed = try arena.statistics()
        #expect(freed.activeBytes < held.activeBytes)
        #expect(freed.dirtyBytes == 0 && freed.muzzyBytes == 0, "decay 0: freed pages go straight back to the kernel")
        #expect(throws: MallctlError(ctl: "no.such.ctl", code: 2)) { try Mallctl.read("no.such.ctl", as: Int.self) }
        #expect(MallctlError(ctl: "arena.9999.purge", code: 2).description == "mallctl(\"arena.9999.purge\") failed: ENOENT: no such ctl")
        #expect(!(try Mallctl.version()).isEmpty)
    }

    /// Arenas made one after the other map their memory side by side; with the same VMA flags the
    /// kernel would merge two arenas' mappings into one VMA, which a report can name after only
    /// one of them. Each buffer must be found in a region named after its own arena.
    @Test("two arenas' mappings side by side stay apart: each buffer is in a region named after its own arena")
    func neighbouringArenasStayApart() throws {
        var buffers: [(name: String, buffer: PurgeableBuffer)] = []
        for i in 0..<6 {
            let name = "test-neighbour-\(getpid())-\(i)"
            let buffer = try PurgeableBuffer(count: 64 * 1024, arena: try PurgeableArena.named(name))
            _ = try buffer.withUnsafeMutableBytes { $0.initializeMemory(as: UInt8.self, repeating: UInt8(i)) }
            buffers.append((name, buffer))
        }
        defer { for (_, b) in buffers { b.discardContentIfPossible() } }
        let me = try Snapshotter().process(getpid(), options: SnapshotOptions(detail: .regions, tagSource: RegionRegistry()))
        for (name, buffer) in buffers {
            let range = try #require(buffer.pageRange)
            let holder = me.regions.first { UInt($0.start) <= range.lowerBound && range.upperBound <= UInt($0.end) }
            #expect(holder?.type == .tagged(name), "\(name)'s buffer is in a region of type \(String(describing: holder?.type))")
        }
    }

    @Test("the arena's regions are published with the call stack that mapped them")
    func registry() throws {
        let arena = try PurgeableArena.named("test-registry")
        let b = try PurgeableBuffer(count: 1 << 20, arena: arena)
        defer { b.discardContentIfPossible() }
        #expect(PurgeableArena.registryError == nil)
        let me = try Snapshotter().process(getpid(), options: SnapshotOptions(detail: .regions, tagSource: RegionRegistry()))
        let regions = me.regions.filter { $0.type == .tagged("test-registry") }
        let range = try #require(b.pageRange)
        #expect(regions.contains { UInt($0.start) <= range.lowerBound && range.upperBound <= UInt($0.end) })
        let stack = try #require(regions.first?.stack)
        #expect(stack.contains { $0.contains("PurgeableBuffer.init") }, "\(stack)")
        if PurgeableArena.kernelNamesRegions == true {
            #expect(me.regions.contains { $0.type == .anonNamed("test-registry") })
        }
    }

    @Test("deferred advice: idle buffers wait up to the limit, oldest advised first; a memory warning advises all")
    func deferredAdvice() throws {
        let arena = try PurgeableArena.named("test-deferred")
        let size = 256 * 1024
        arena.deferredAdviceLimit = 2 * size
        defer { arena.deferredAdviceLimit = 0 }
        let buffers = try (0..<4).map { id -> PurgeableBuffer in
            let b = try PurgeableBuffer(count: size, arena: arena)
            try fill(b, id: id)
            return b
        }
        for b in buffers { try b.endContentAccess() }
        // 0 and 1 were pushed out of the deferral and advised; 2 and 3 wait as ordinary memory,
        // which reclaim cannot take (without swap it keeps them; with swap they come back).
        for b in buffers { try Reclaim.pageOut(try #require(b.pageRange)) }
        #expect(!buffers[0].beginContentAccess())
        #expect(!buffers[1].beginContentAccess())
        for id in 2..<4 {
            #expect(buffers[id].beginContentAccess())
            #expect(try intact(buffers[id], id: id))
            try buffers[id].endContentAccess()
        }
        MemoryEvents().post(.memoryWarning)  // advises every arena's waiting buffers
        for id in 2..<4 { try Reclaim.pageOut(try #require(buffers[id].pageRange)) }
        #expect(!buffers[2].beginContentAccess(), "the memory warning advised the waiting buffers")
        #expect(!buffers[3].beginContentAccess())
    }

    /// Several threads read, write and verify entries while another keeps forcing reclamation.
    @Test("stress: no corrupted read over a million operations while the kernel reclaims")
    func stress() throws {
        let arena = try PurgeableArena.named("test-stress")
        let slots = 64
        let pages = 2
        struct Slot: Sendable {
            var buffer: PurgeableBuffer
            var version: Int
        }
        let table = Mutex<[Slot]>(try (0..<slots).map { id in
            let b = try PurgeableBuffer(count: pages * PurgeableArena.pageSize, arena: arena)
            try fill(b, id: id)
            try b.endContentAccess()
            return Slot(buffer: b, version: 0)
        })
        let operationsPerWorker = 250_000
        let workers = 4
        let stop = Atomic<Bool>(false)
        let reclaims = Atomic<Int>(0)
        let corrupted = Atomic<Int>(0)
        let discarded = Atomic<Int>(0)
        let verified = Atomic<Int>(0)

        let failures = Mutex<[String]>([])
        let reclaimer = TestThread {
            // MADV_PAGEOUT over the arena's whole address space, again and again.
            while !stop.load(ordering: .relaxed) {
                for extent in arena.extents {
                    do {
                        try Reclaim.pageOut(extent)
                    } catch {
                        failures.withLock { $0.append("reclaim: \(error)") }
                    }
                }
                reclaims.add(1, ordering: .relaxed)
            }
        }
        let threads = (0..<workers).map { w in
            TestThread {
                do {
                    var rng = SystemRandomNumberGenerator()
                    for op in 0..<operationsPerWorker {
                        let id = Int.random(in: 0..<slots, using: &rng)
                        if op % 10 == w % 10 {
                            // Write: a new version of the entry, in a new buffer.
                            let b = try PurgeableBuffer(count: pages * PurgeableArena.pageSize, arena: arena)
                            try fill(b, id: id, version: op)
                            try b.endContentAccess()
                            table.withLock { $0[id] = Slot(buffer: b, version: op) }
                            continue
                        }
                        let slot = table.withLock { $0[id] }
                        guard slot.buffer.beginContentAccess() else {
                            discarded.add(1, ordering: .relaxed)
                            // Recreate it, as a cache user would.
                            let b = try PurgeableBuffer(count: pages * PurgeableArena.pageSize, arena: arena)
                            try fill(b, id: id, version: slot.version)
                            try b.endContentAccess()
                            table.withLock { if $0[id].buffer === slot.buffer { $0[id] = Slot(buffer: b, version: slot.version) } }
                            continue
                        }
                        if try intact(slot.buffer, id: id, version: slot.version, sampled: true) {
                            verified.add(1, ordering: .relaxed)
                        } else {
                            corrupted.add(1, ordering: .relaxed)
                        }
                        try slot.buffer.endContentAccess()
                    }
                } catch {
                    failures.withLock { $0.append("worker \(w): \(error)") }
                }
            }
        }
        for t in threads { t.join() }
        stop.store(true, ordering: .relaxed)
        reclaimer.join()
        #expect(failures.withLock { $0 }.isEmpty, "\(failures.withLock { $0.prefix(5) })")
        let total = workers * operationsPerWorker
        print("stress: \(total) operations, \(verified.load(ordering: .relaxed)) verified reads, \(discarded.load(ordering: .relaxed)) discards detected, \(reclaims.load(ordering: .relaxed)) reclaim passes, \(corrupted.load(ordering: .relaxed)) corrupted")
        #expect(total >= 1_000_000)
        #expect(corrupted.load(ordering: .relaxed) == 0)
        #expect(discarded.load(ordering: .relaxed) > 0, "the kernel did take pages during the run")
        #expect(verified.load(ordering: .relaxed) > 0)
    }
}
