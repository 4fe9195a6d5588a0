import CMemoryPressure
import CMemPressurePurgeable
import Glibc
import Synchronization

/// Content that can be thrown away while no one uses it: NSDiscardableContent for Swift.
///
/// Accesses nest: every `beginContentAccess()` that returns true must be balanced by one
/// `endContentAccess()`. While at least one access is held the content is stable; once the last
/// one ends, the owner may lose it, and the next `beginContentAccess()` says so by returning
/// false.
public protocol DiscardableContent: AnyObject, Sendable {
    /// Takes an access; false (and no access taken) when the content was discarded.
    func beginContentAccess() -> Bool
    /// Gives an access back. Throws `PurgeableError.unbalancedEndAccess` without a matching begin.
    func endContentAccess() throws(PurgeableError)
    /// Discards the content now if no access is held.
    func discardContentIfPossible()
    /// Whether the content is known to be discarded.
    var isContentDiscarded: Bool { get }
}

/// Bytes the kernel may take back while no one is using them: NSPurgeableData on Linux.
///
/// By default the pages become reclaimable the moment the last access ends. An arena with a
/// `deferredAdviceLimit` instead lets that many bytes of idle buffers wait, most recently idle
/// last, and advises the oldest beyond it, or all of them on a memory warning or when the app
/// enters the background: an access that ends and begins again soon then costs nothing.
///
/// ## The technique
///
/// The memory is whole pages from a `PurgeableArena`. When the last access ends, the buffer
/// saves the first 8 bytes of every page aside, writes a canary (a fixed non-zero word) in their
/// place, and marks the pages `MADV_FREE`. From then on the kernel may, under memory pressure,
/// free any of those pages without writing them anywhere; a freed page reads back as zeros.
/// When access begins again, the buffer atomically exchanges each page's first word with the
/// saved original (`lock xchg`). If every exchange returns the canary, every page is intact and
/// the content is exactly what it was; if any returns something else (zero), that page was
/// taken and the content is discarded: the memory is freed and `beginContentAccess()` returns
/// false. Content is never handed back with a page the kernel took.
///
/// ## Why the exchange is race-free
///
/// The kernel frees a lazy-free page in `try_to_unmap_one()`: it atomically clears the page's
/// page-table entry, flushes the TLBs, and only then looks at the entry's dirty bit. If the
/// page was written after MADV_FREE (dirty bit set) it is put back and kept; if not, it is
/// discarded. The exchange is a single atomic read-modify-write that writes, so it sets the
/// dirty bit as part of the same instruction that reads the old word. Either the exchange's
/// write lands before the entry is cleared — then the entry the kernel clears is dirty, the
/// page is kept, and the exchange read the canary from the real page — or it comes after — then
/// the access faults on a cleared entry and is served by a fresh zero page, so the exchange reads
/// zero and the buffer reports the discard. There is no instant at which the exchange can read
/// the canary from a page that is then discarded: after a successful exchange the page is dirty
/// and the kernel keeps it for as long as it is mapped. (MADV_FREE itself clears the dirty bits
/// and flushes the TLBs, so no stale writable-dirty TLB entry lets a write skip setting it.)
///
/// ## Small buffers
///
/// The kernel reclaims whole pages, so a buffer is always whole pages: one of 100 bytes occupies
/// a full page (4 KiB here) and is as purgeable as a large one. `allocatedBytes` says what a
/// buffer really occupies; pack many small objects into one buffer where that waste matters. A
/// zero-length buffer allocates nothing and can never be discarded (there is nothing to lose).
///
/// ## Thread safety
///
/// Begin, end and discard may be called from any thread. The bytes may be read and written by
/// any thread that holds an access; the buffer does not order those reads and writes.
public final class PurgeableBuffer: DiscardableContent, Sendable {
    /// The canary written into the first word of every page while the pages are advised.
    static let canary: UInt64 = 0x5055_5247_4541_4231  // "PURGEAB1"

    public let arena: PurgeableArena
    /// The length of the content in bytes.
    public let count: Int
    /// What the buffer occupies: `count` rounded up to whole pages.
    public let allocatedBytes: Int

    private struct State: ~Copyable {
        var storage: PageStorage?
        var accessCount: Int
        var discarded = false
        /// The pages are MADV_FREE'd with canaries in place (no access held since).
        var advised = false
        /// No access is held but the advice is deferred (the arena's `deferredAdviceLimit`):
        /// the pages are still ordinary memory until the arena advises them.
        var idleUnadvised = false
        /// Changes whenever an access begins or ends, so a deferred advice queued earlier can
        /// tell it is stale.
        var generation: UInt64 = 0
    }

    private let state: Mutex<State>

    /// A zero-filled buffer of `count` bytes, with one content access held (as
    /// NSPurgeableData starts): fill it, then call `endContentAccess()`.
    public init(count: Int, arena: PurgeableArena? = nil) throws(PurgeableError) {
        let arena: PurgeableArena = if let arena { arena } else { try PurgeableArena.shared() }
        self.arena = arena
        self.count = count
        let page = PurgeableArena.pageSize
        guard count >= 0, count <= Int.max - page else { throw .invalidSize(count) }
        allocatedBytes = (count + page - 1) / page * page
        let storage: PageStorage? = if allocatedBytes == 0 { nil } else { try PageStorage(arena: arena, byteCount: allocatedBytes) }
        state = Mutex(State(storage: storage, accessCount: 1))
    }

    /// A buffer holding a copy of `bytes`, with one content access held.
    public convenience init(copying bytes: some Collection<UInt8>, arena: PurgeableArena? = nil) throws(PurgeableError) {
        try self.init(count: bytes.count, arena: arena)
        state.withLock { s in
            guard let base = s.storage?.base else { return }
            // Contiguous bytes (an Array, a buffer) are copied at once; this generic function is
            // not specialized for its callers, and byte by byte through the Collection witness
            // costs about 50 ms a MiB.
            let copied = bytes.withContiguousStorageIfAvailable { source -> Bool in
                if let from = source.baseAddress { base.copyMemory(from: from, byteCount: source.count) }
                return true
            }
            if copied != true {
                _ = UnsafeMutableRawBufferPointer(start: base, count: bytes.count).initializeMemory(as: UInt8.self, from: bytes)
            }
        }
    }

    deinit {
        state.withLock { s in s.storage?.free() }
    }

    public func beginContentAccess() -> Bool {
        state.withLock { s in
            if s.discarded { return false }
            s.generation &+= 1
            s.idleUnadvised = false
            if s.advised {
                s.advised = false
                if let storage = s.storage, !storage.reclaimCanaries() {
                    // A page was taken: the content is gone. Give the rest back too.
                    storage.free()
                    s.storage = nil
                    s.discarded = true
                    return false
                }
            }
            s.accessCount += 1
            return true
        }
    }

    public func endContentAccess() throws(PurgeableError) {
        let deferred: UInt64? = try state.withLock { (s) throws(PurgeableError) -> UInt64? in
            guard s.accessCount > 0 else { throw .unbalancedEndAccess }
            s.accessCount -= 1
            guard s.accessCount == 0, let storage = s.storage else { return nil }
            s.generation &+= 1
            if arena.deferredAdviceLimit > 0 {
                s.idleUnadvised = true
                return s.generation
            }
            storage.plantCanariesAndAdvise()
            s.advised = true
            return nil
        }
        if let generation = deferred {
            // Outside the buffer's lock: the arena may advise other buffers (taking their locks).
            arena.deferAdvice(self, bytes: allocatedBytes, generation: generation)
        }
    }

    /// Advises the pages now if the buffer is still idle since `generation` (called by the
    /// arena for deferred advice). Returns whether it did.
    @discardableResult
    func adviseIfStillIdle(generation: UInt64) -> Bool {
        state.withLock { s in
            guard s.idleUnadvised, s.generation == generation, s.accessCount == 0, let storage = s.storage else { return false }
            storage.plantCanariesAndAdvise()
            s.idleUnadvised = false
            s.advised = true
            return true
        }
    }

    public func discardContentIfPossible() {
        state.withLock { s in
            guard s.accessCount == 0, !s.discarded else { return }
            s.storage?.free()
            s.storage = nil
            s.discarded = count > 0  // a zero-length buffer has nothing to lose
            s.advised = false
            s.idleUnadvised = false
            s.generation &+= 1
        }
    }

    public var isContentDiscarded: Bool { state.withLock { $0.discarded } }

    /// Content accesses held now.
    public var accessCount: Int { state.withLock { $0.accessCount } }

    /// The address range of the buffer's pages (nil when empty or discarded): for tools, tests
    /// and demonstrations that make the kernel reclaim particular buffers.
    package var pageRange: Range<UInt>? {
        state.withLock { s in
            guard let storage = s.storage else { return nil }
            let start = UInt(bitPattern: storage.base)
            return start..<(start + UInt(storage.byteCount))
        }
    }

    /// Whether, while no access is held, the kernel has already taken any page (mincore: an
    /// advised page that is not resident was discarded). Does not disturb the pages and takes
    /// no access: a cache uses it to count discards early. A false answer can be overtaken by the
    /// kernel at any moment; only `beginContentAccess()` decides.
    package var hasLostPages: Bool {
        state.withLock { s in
            if s.discarded { return true }
            guard s.advised, let storage = s.storage else { return false }
            return !storage.allResident()
        }
    }

    /// Calls `body` with the content's bytes. An access must be held: without one this throws
    /// `PurgeableError.accessNotHeld`, after a discard `PurgeableError.discarded`. Errors `body`
    /// throws are rethrown as they are.
    public func withUnsafeMutableBytes<R>(_ body: (UnsafeMutableRawBufferPointer) throws -> R) throws -> R {
        let pointer: UnsafeMutableRawPointer? = try state.withLock { (s) throws(PurgeableError) in
            if s.discarded { throw .discarded }
            guard s.accessCount > 0 else { throw .accessNotHeld }
            return s.storage?.base
        }
        return try body(UnsafeMutableRawBufferPointer(start: pointer, count: pointer == nil ? 0 : count))
    }

    /// A copy of the content, taking and giving back an access; nil if it was discarded.
    public func copyContent() -> [UInt8]? {
        guard beginContentAccess() else { return nil }
        defer {
            do { try endContentAccess() } catch { preconditionFailure("internal: balanced access failed to end") }
        }
        return state.withLock { s in
            guard let base = s.storage?.base else { return [] }
            return Array(UnsafeRawBufferPointer(start: base, count: count))
        }
    }
}

/// The pages of one buffer: the one type that holds the raw pointer. Invariants (checked in
/// debug builds): `base` is page-aligned, `byteCount` a positive multiple of the page size, and
/// `saved` has one word per page.
final class PageStorage: @unchecked Sendable {
    let arena: PurgeableArena
    let base: UnsafeMutableRawPointer
    let byteCount: Int
    /// The first word of each page, kept aside while the canaries stand in for them.
    private var saved: [UInt64]
    private var freed = false

    var pageCount: Int { byteCount / PurgeableArena.pageSize }

    init(arena: PurgeableArena, byteCount: Int) throws(PurgeableError) {
        self.arena = arena
        self.byteCount = byteCount
        base = try arena.allocate(byteCount: byteCount, zeroed: true)
        saved = [UInt64](repeating: 0, count: byteCount / PurgeableArena.pageSize)
        assert(Int(bitPattern: base) % PurgeableArena.pageSize == 0, "purgeable storage must be page-aligned")
    }

    /// Called with the buffer's lock held, when its last access ends.
    func plantCanariesAndAdvise() {
        assert(!freed)
        let page = PurgeableArena.pageSize
        for i in 0..<pageCount {
            let word = base + i * page
            saved[i] = mp_load_u64(word)
            mp_store_u64(word, PurgeableBuffer.canary)
        }
        // MADV_FREE cannot fail on a private anonymous mapping the arena owns (it returns EINVAL
        // only for locked or shared mappings); if it ever did, the pages would simply stay
        // resident and every canary would be read back intact.
        _ = madvise(base, byteCount, mp_MADV_FREE)
    }

    /// Called with the buffer's lock held, when an access begins after the pages were advised.
    /// Returns false if any page was taken by the kernel.
    func reclaimCanaries() -> Bool {
        assert(!freed)
        let page = PurgeableArena.pageSize
        var intact = true
        for i in 0..<pageCount {
            let old = mp_atomic_exchange_u64(base + i * page, saved[i])
            if old != PurgeableBuffer.canary { intact = false }
        }
        return intact
    }

    /// Whether every page is resident (mincore).
    func allResident() -> Bool {
        var vector = [UInt8](repeating: 0, count: pageCount)
        let rc = vector.withUnsafeMutableBufferPointer { mincore(base, byteCount, $0.baseAddress) }
        guard rc == 0 else { return true }  // cannot tell: begin decides
        return vector.allSatisfy { $0 & 1 == 1 }
    }

    func free() {
        guard !freed else { return }
        freed = true
        arena.deallocate(base, byteCount: byteCount)
    }

    deinit { free() }
}
