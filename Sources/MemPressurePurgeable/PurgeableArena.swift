import MemPressureBacktrace
import CMemPressureJemalloc
import CMemoryPressure
import CMemPressurePurgeable
import Glibc
import MemPressureSystem
import MemPressureRegionTags
import Synchronization

/// Why purgeable memory could not be had or used. Each case is a clear, one-line message.
public enum PurgeableError: Error, Sendable, Hashable, CustomStringConvertible {
    case mallctl(MallctlError)
    /// jemalloc could not give this many bytes (the arena, or the machine, is out of memory).
    case allocationFailed(bytes: Int)
    /// A size that is negative or too large to round up to whole pages.
    case invalidSize(Int)
    /// `endContentAccess()` without a matching successful `beginContentAccess()`.
    case unbalancedEndAccess
    /// The bytes were asked for while no content access was held.
    case accessNotHeld
    /// The content was discarded (by the kernel or by `discardContentIfPossible()`).
    case discarded

    public var description: String {
        switch self {
        case .mallctl(let e): "\(e)"
        case .allocationFailed(let bytes): "the purgeable arena could not allocate \(bytes) bytes"
        case .invalidSize(let n): "\(n) is not a size a purgeable buffer can have"
        case .unbalancedEndAccess: "endContentAccess() without a matching beginContentAccess()"
        case .accessNotHeld: "the content was used without beginContentAccess() (or after the matching endContentAccess())"
        case .discarded: "the content was discarded"
        }
    }
}

/// A jemalloc arena of its own for purgeable memory.
///
/// - Created with `arenas.create` and extent hooks (CPurgeable) that keep its memory in VMAs
///   of its own (MADV_NOHUGEPAGE: a VMA flag neighbouring mappings lack, so the kernel does not
///   merge them; it also keeps transparent huge pages out of the way of page-by-page
///   MADV_FREE), name them with PR_SET_VMA_ANON_NAME where the kernel supports it, and record
///   them so they can be published in the `RegionRegistry` with the call stack that mapped them.
/// - Allocations bypass the thread cache (`MALLOCX_TCACHE_NONE`), so freed memory goes straight
///   back to the arena, and are page-aligned whole pages, so pages can be advised one entry at a
///   time.
/// - Decay: `dirty_decay_ms` and `muzzy_decay_ms` are 0 by default, so the pages of an evicted or
///   discarded entry are returned to the kernel (MADV_DONTNEED) as soon as it is freed, not
///   seconds later. A cache that frees and refills entries constantly can raise them to trade
///   resident memory for fewer page faults.
///
/// Arenas cannot be destroyed while memory is allocated from them, so they live as long as the
/// process; `named(_:)` returns the existing arena for a name.
public final class PurgeableArena: Sendable {
    public let name: String
    /// jemalloc's arena index.
    public let index: UInt32

    public static let pageSize = Int(sysconf(Int32(_SC_PAGESIZE)))

    private static let arenas = Mutex<[String: PurgeableArena]>([:])

    /// How many bytes of idle buffers may wait before their pages are advised (MADV_FREE). 0 (the
    /// default): every buffer is advised as its last access ends. Above 0, idle buffers queue up
    /// to this many bytes, oldest advised first; `adviseIdleBuffers()` (called on memory warnings
    /// and on entering the background) advises them all. Idle memory waiting here is not
    /// reclaimable until it is advised: it trades a bounded amount of memory for end/begin round
    /// trips that make no system call.
    public var deferredAdviceLimit: Int {
        get { pending.withLock { $0.limit } }
        set {
            // Lowering the limit advises what no longer fits, now.
            let overflow = pending.withLock { p -> [Pending.Item] in
                p.limit = max(0, newValue)
                return Self.popOverflow(&p)
            }
            for item in overflow { item.buffer?.adviseIfStillIdle(generation: item.generation) }
        }
    }

    private struct Pending {
        struct Item {
            weak var buffer: PurgeableBuffer?
            var bytes: Int
            var generation: UInt64
        }
        var limit = 0
        var queue: [Item] = []
        var head = 0
        var bytes = 0
    }

    private let pending = Mutex(Pending())

    /// Queues an idle buffer's advice; advises the oldest queued beyond the limit.
    func deferAdvice(_ buffer: PurgeableBuffer, bytes: Int, generation: UInt64) {
        let overflow: [Pending.Item] = pending.withLock { p in
            p.queue.append(Pending.Item(buffer: buffer, bytes: bytes, generation: generation))
            p.bytes += bytes
            return Self.popOverflow(&p)
        }
        // Stale items (the buffer was accessed again, or freed) are skipped by the buffer itself.
        for item in overflow { item.buffer?.adviseIfStillIdle(generation: item.generation) }
    }

    /// Takes the oldest queued items beyond the limit off the queue.
    private static func popOverflow(_ p: inout Pending) -> [Pending.Item] {
        var out: [Pending.Item] = []
        while p.bytes > p.limit, p.head < p.queue.count {
            let item = p.queue[p.head]
            p.head += 1
            p.bytes -= item.bytes
            out.append(item)
        }
        if p.head > 64 && p.head * 2 > p.queue.count {
            p.queue.removeFirst(p.head)
            p.head = 0
        }
        return out
    }

    /// Advises every idle buffer whose advice is deferred. Returns how many were advised.
    @discardableResult
    public func adviseIdleBuffers() -> Int {
        let all: [Pending.Item] = pending.withLock { p in
            let items = Array(p.queue[p.head...])
            p.queue.removeAll()
            p.head = 0
            p.bytes = 0
            return items
        }
        return all.reduce(0) { $0 + (($1.buffer?.adviseIfStillIdle(generation: $1.generation) ?? false) ? 1 : 0) }
    }

    /// `adviseIdleBuffers()` on every arena of the process.
    @discardableResult
    package static func adviseIdleBuffersEverywhere() -> Int {
        allArenas().values.reduce(0) { $0 + $1.adviseIdleBuffers() }
    }

    /// The arena called `name` ("purgeable cache: images"), created on first use.
    public static func named(_ name: String, dirtyDecayMilliseconds: Int = 0, muzzyDecayMilliseconds: Int = 0) throws(PurgeableError) -> PurgeableArena {
        try arenas.withLock { (table) throws(PurgeableError) -> PurgeableArena in
            if let existing = table[name] { return existing }
            let arena = try PurgeableArena(name: name, dirtyDecayMilliseconds: dirtyDecayMilliseconds, muzzyDecayMilliseconds: muzzyDecayMilliseconds)
            table[name] = arena
            return arena
        }
    }

    /// The default arena, "purgeable".
    public static func shared() throws(PurgeableError) -> PurgeableArena { try named("purgeable") }

    private init(name: String, dirtyDecayMilliseconds: Int, muzzyDecayMilliseconds: Int) throws(PurgeableError) {
        var index: UInt32 = 0
        let rc = mp_arena_create(name, &index)
        guard rc == 0 else { throw .mallctl(MallctlError(ctl: "arenas.create", code: rc)) }
        self.name = name
        self.index = index
        do {
            try Mallctl.write("arena.\(index).dirty_decay_ms", Int(dirtyDecayMilliseconds))
            try Mallctl.write("arena.\(index).muzzy_decay_ms", Int(muzzyDecayMilliseconds))
        } catch {
            throw .mallctl(error)
        }
    }

    /// `byteCount` bytes (a positive multiple of the page size), page-aligned, from this arena.
    func allocate(byteCount: Int, zeroed: Bool) throws(PurgeableError) -> UnsafeMutableRawPointer {
        precondition(byteCount > 0 && byteCount % Self.pageSize == 0, "internal: whole pages only")
        guard let p = mallocx(byteCount, mp_mallocx_flags(index, Self.pageSize, zeroed)) else {
            throw .allocationFailed(bytes: byteCount)
        }
        RegionPublisher.shared.publishIfChanged()
        return p
    }

    func deallocate(_ pointer: UnsafeMutableRawPointer, byteCount: Int) {
        sdallocx(pointer, byteCount, mp_mallocx_flags(index, Self.pageSize, false))
        RegionPublisher.shared.publishIfChanged()  // jemalloc may have unmapped an extent
    }

    /// `stats.arenas.<i>.*`, in bytes.
    public struct Statistics: Sendable, Hashable, Codable {
        /// Pages in live allocations.
        public var activeBytes: Int
        /// Freed pages jemalloc still holds, not yet returned (dirty).
        public var dirtyBytes: Int
        /// Freed pages advised MADV_FREE by jemalloc, not yet forced out (muzzy).
        public var muzzyBytes: Int
        /// Mapped address space of the arena.
        public var mappedBytes: Int
        /// Address space retained (unmapped from use, kept for reuse).
        public var retainedBytes: Int
        /// Resident pages of the arena by jemalloc's own count (an upper bound: it does not know
        /// which of our MADV_FREE'd pages the kernel took).
        public var residentBytes: Int
    }

    public func statistics() throws(MallctlError) -> Statistics {
        try Mallctl.refreshStatistics()
        let p = "stats.arenas.\(index)"
        let page = Self.pageSize
        return Statistics(
            activeBytes: try Mallctl.read("\(p).pactive", as: Int.self) * page,
            dirtyBytes: try Mallctl.read("\(p).pdirty", as: Int.self) * page,
            muzzyBytes: try Mallctl.read("\(p).pmuzzy", as: Int.self) * page,
            mappedBytes: try Mallctl.read("\(p).mapped", as: Int.self),
            retainedBytes: try Mallctl.read("\(p).retained", as: Int.self),
            residentBytes: try Mallctl.read("\(p).resident", as: Int.self))
    }

    /// Returns every unused dirty and muzzy page to the kernel now (`arena.<i>.purge`).
    public func purge() throws(MallctlError) {
        try Mallctl.run("arena.\(index).purge")
    }

    /// The address ranges this arena has mapped.
    package var extents: [Range<UInt>] {
        RegionPublisher.liveExtents().filter { $0.arena == index }.map { UInt($0.start)..<UInt($0.end) }
    }

    /// Whether the kernel accepted PR_SET_VMA_ANON_NAME for this process's arenas (nil: no
    /// arena has mapped memory yet). Without it, regions are attributed through the registry.
    package static var kernelNamesRegions: Bool? {
        switch mp_anon_names_supported() {
        case 1: true
        case 0: false
        default: nil
        }
    }
}

/// Publishes the extents of every purgeable arena of this process in the `RegionRegistry`,
/// with the call stack that caused each to be mapped.
final class RegionPublisher: Sendable {
    static let shared = RegionPublisher()

    private struct State {
        var generation: UInt64 = 0
        var lastSerial: UInt64 = 0
        var stacks: [UInt64: [String]] = [:]  // by extent serial
        var lastError: String?
        var registered = false
    }

    private let state = Mutex(State())
    let registry = RegionRegistry()

    /// The last error publishing met (the registry directory not writable, ...), if any.
    var lastError: String? { state.withLock { $0.lastError } }

    static func liveExtents() -> [mp_extent] {
        var buffer = [mp_extent](repeating: mp_extent(), count: 256)
        while true {
            let n = Int(buffer.withUnsafeMutableBufferPointer { mp_extent_list($0.baseAddress, Int32($0.count)) })
            if n <= buffer.count { return Array(buffer.prefix(n)) }
            buffer = [mp_extent](repeating: mp_extent(), count: n * 2)
        }
    }

    /// Called after every allocation and free: cheap unless an arena mapped or unmapped an
    /// extent, or mapped one for this thread whose stack is not recorded yet.
    func publishIfChanged() {
        let generation = mp_extent_generation()
        let mine = mp_extents_pending_for_this_thread()
        guard mine || state.withLock({ $0.generation < generation }) else { return }
        // The stack now is the one that made the arena map memory (this runs right after
        // mallocx): it belongs to the extents mapped for this thread.
        let stack = mine ? Backtrace.capture(skip: 2, maxFrames: 24).map(\.description) : []
        let me = Int32(mp_gettid())
        let names = arenaNames()
        state.withLock { s in
            guard mine || s.generation < generation else { return }
            s.generation = max(s.generation, generation)
            let extents = Self.liveExtents()
            if mine {
                for e in extents where e.tid == me && s.stacks[e.serial] == nil { s.stacks[e.serial] = stack }
            }
            s.lastSerial = max(s.lastSerial, extents.map(\.serial).max() ?? 0)
            let live = Set(extents.map(\.serial))
            s.stacks = s.stacks.filter { live.contains($0.key) }
            let tags = extents.sorted { $0.start < $1.start }.map { e in
                RegionTag(start: UInt64(e.start), end: UInt64(e.end), name: names[e.arena] ?? "purgeable", stack: s.stacks[e.serial] ?? [])
            }
            do {
                let me = try Self.selfStat()
                try registry.publish(RegionRegistry.Entry(pid: me.pid, startTicks: me.startTicks, tags: tags))
                s.lastError = nil
                if !s.registered {
                    s.registered = true
                    // Files of processes that are gone (ended by a signal, they could not withdraw).
                    registry.removeStale()
                    atexit { RegionPublisher.shared.registry.withdraw(pid: getpid()) }
                }
            } catch {
                s.lastError = "publishing purgeable regions in \(registry.directory): \(error)"
            }
        }
    }

    private func arenaNames() -> [UInt32: String] {
        var names: [UInt32: String] = [:]
        for (name, arena) in PurgeableArena.allArenas() { names[arena.index] = name }
        return names
    }

    static func selfStat() throws -> ProcessStat {
        let bytes = try ProcFS.readBytes("/proc/self/stat")
        return try bytes.withUnsafeBytes { raw in try ProcessStat.parse(raw, pid: nil) }
    }
}

extension PurgeableArena {
    static func allArenas() -> [String: PurgeableArena] { arenas.withLock { $0 } }

    /// Why the last attempt to publish this process's purgeable regions failed, if it did.
    package static var registryError: String? { RegionPublisher.shared.lastError }
}
