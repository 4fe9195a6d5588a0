import MemPressureSystem

/// The additive memory counters of a region, a process or an app, in bytes, exactly as the
/// kernel's smaps reports them (one stored property per smaps field), plus the quantities the
/// whole project uses, each derived here and nowhere else.
public struct MemoryCounters: Sendable, Hashable, Codable {
    public var size: UInt64 = 0
    public var rss: UInt64 = 0
    public var pss: UInt64 = 0
    public var pssDirty: UInt64 = 0
    /// `Pss_Anon`, `Pss_File`, `Pss_Shmem`: printed by smaps_rollup only.
    public var pssAnon: UInt64 = 0
    public var pssFile: UInt64 = 0
    public var pssShmem: UInt64 = 0
    public var sharedClean: UInt64 = 0
    public var sharedDirty: UInt64 = 0
    public var privateClean: UInt64 = 0
    public var privateDirty: UInt64 = 0
    public var referenced: UInt64 = 0
    public var anonymous: UInt64 = 0
    public var ksm: UInt64 = 0
    public var lazyFree: UInt64 = 0
    public var anonHugePages: UInt64 = 0
    public var shmemPmdMapped: UInt64 = 0
    public var filePmdMapped: UInt64 = 0
    public var sharedHugetlb: UInt64 = 0
    public var privateHugetlb: UInt64 = 0
    public var swap: UInt64 = 0
    public var swapPss: UInt64 = 0
    public var locked: UInt64 = 0
    /// Which of the fields that not every kernel prints were printed (`SwapPss` since Linux 4.3,
    /// `ShmemPmdMapped` 4.8, `FilePmdMapped` 5.4, ...): such a field left at 0 because the kernel
    /// did not print it is unknown, not zero, and the quantities below built on it are nil.
    /// A sum knows a field when any of its parts did (one kernel prints the same fields for every
    /// region and process).
    public var reported: ReportedFields = []

    public init() {}

    /// Fields of smaps that a kernel may not print (see `reported`).
    public struct ReportedFields: OptionSet, Sendable, Hashable, Codable {
        public let rawValue: UInt8
        public init(rawValue: UInt8) { self.rawValue = rawValue }
        public static let swapPss = ReportedFields(rawValue: 1 << 0)
        public static let locked = ReportedFields(rawValue: 1 << 1)
        public static let anonHugePages = ReportedFields(rawValue: 1 << 2)
        public static let shmemPmdMapped = ReportedFields(rawValue: 1 << 3)
        public static let filePmdMapped = ReportedFields(rawValue: 1 << 4)
        /// The three parts of `thp`.
        public static let transparentHugePages: ReportedFields = [.anonHugePages, .shmemPmdMapped, .filePmdMapped]
    }

    // MARK: The project's quantities (../shared/design.md), defined once.

    /// Address space the region spans (`Size`).
    public var virtual: UInt64 { size }
    /// Pages present in RAM (`Rss`).
    public var resident: UInt64 { rss }
    /// Modified pages that cannot be dropped without saving them (`Private_Dirty + Shared_Dirty`).
    public var dirty: UInt64 { privateDirty.saturatingAdd(sharedDirty) }
    /// Unmodified pages the kernel can drop and read back from their backing store
    /// (`Private_Clean + Shared_Clean`). Pages marked MADV_FREE are clean (the kernel clears
    /// their dirty bit) and are counted here as well as in `purgeable`.
    public var clean: UInt64 { privateClean.saturatingAdd(sharedClean) }
    /// Anonymous pages marked MADV_FREE that the kernel may take without asking (`LazyFree`).
    public var purgeable: UInt64 { lazyFree }
    /// Pages written out to swap (`Swap`).
    public var swapped: UInt64 { swap }

    /// What memory pressure charges this memory to its owner, in the spirit of Apple's
    /// `phys_footprint`: the dirty pages it alone holds plus its swapped pages.
    ///
    ///     footprint = Private_Dirty + Private_Hugetlb + Swap
    ///
    /// - Purgeable pages are not charged: MADV_FREE clears their dirty bit, so they appear in
    ///   `Private_Clean`, not `Private_Dirty`. A purgeable page written again is dirty again and
    ///   the kernel will no longer drop it, so it is charged.
    /// - Clean file-backed pages are not charged: the page cache can drop and refault them.
    /// - `Shared_Dirty` is not charged: those pages are held by several processes (COW pages after
    ///   fork, shared memory); their fair share is in `pssDirty`.
    /// - Hugetlb pages are never reclaimable and smaps reports them outside `Private_Dirty`, so
    ///   private ones are added explicitly.
    public var footprint: UInt64 { privateDirty.saturatingAdd(privateHugetlb).saturatingAdd(swap) }

    /// Unique set size: the resident pages this process alone maps, what it would give back if
    /// it exited (smem's USS, with private hugetlb pages added as in `footprint`).
    ///
    ///     uss = Private_Clean + Private_Dirty + Private_Hugetlb
    ///
    /// Unlike `footprint` it counts private clean pages (they are resident, though droppable)
    /// and not swapped ones (they are not resident).
    public var uss: UInt64 { privateClean.saturatingAdd(privateDirty).saturatingAdd(privateHugetlb) }

    /// The proportional share of swapped pages (`SwapPss`): swapped pages shared by several
    /// processes (after fork) divided among them, as `pss` divides resident ones. Nil when the
    /// kernel does not print it (before Linux 4.3).
    public var swapPssIfReported: UInt64? { reported.contains(.swapPss) ? swapPss : nil }

    /// Memory mapped with transparent huge pages:
    ///
    ///     thp = AnonHugePages + ShmemPmdMapped + FilePmdMapped
    ///
    /// (anonymous THPs, shmem/tmpfs huge pages and file pages mapped by a PMD). Hugetlb pages are
    /// not transparent and are not counted. Nil unless the kernel printed all three fields.
    public var thp: UInt64? {
        guard reported.isSuperset(of: .transparentHugePages) else { return nil }
        return anonHugePages.saturatingAdd(shmemPmdMapped).saturatingAdd(filePmdMapped)
    }

    /// Pages locked in memory (`Locked`: mlock, VM_LOCKED mappings), or nil when not printed.
    public var lockedIfReported: UInt64? { reported.contains(.locked) ? locked : nil }

    // MARK: Arithmetic

    /// Adds every counter of `other`, saturating at UInt64.max: sums of kernel counters cannot
    /// realistically reach it, and a corrupt input must neither trap nor wrap to a small number.
    public static func += (lhs: inout MemoryCounters, rhs: MemoryCounters) {
        lhs.size = lhs.size.saturatingAdd(rhs.size)
        lhs.rss = lhs.rss.saturatingAdd(rhs.rss)
        lhs.pss = lhs.pss.saturatingAdd(rhs.pss)
        lhs.pssDirty = lhs.pssDirty.saturatingAdd(rhs.pssDirty)
        lhs.pssAnon = lhs.pssAnon.saturatingAdd(rhs.pssAnon)
        lhs.pssFile = lhs.pssFile.saturatingAdd(rhs.pssFile)
        lhs.pssShmem = lhs.pssShmem.saturatingAdd(rhs.pssShmem)
        lhs.sharedClean = lhs.sharedClean.saturatingAdd(rhs.sharedClean)
        lhs.sharedDirty = lhs.sharedDirty.saturatingAdd(rhs.sharedDirty)
        lhs.privateClean = lhs.privateClean.saturatingAdd(rhs.privateClean)
        lhs.privateDirty = lhs.privateDirty.saturatingAdd(rhs.privateDirty)
        lhs.referenced = lhs.referenced.saturatingAdd(rhs.referenced)
        lhs.anonymous = lhs.anonymous.saturatingAdd(rhs.anonymous)
        lhs.ksm = lhs.ksm.saturatingAdd(rhs.ksm)
        lhs.lazyFree = lhs.lazyFree.saturatingAdd(rhs.lazyFree)
        lhs.anonHugePages = lhs.anonHugePages.saturatingAdd(rhs.anonHugePages)
        lhs.shmemPmdMapped = lhs.shmemPmdMapped.saturatingAdd(rhs.shmemPmdMapped)
        lhs.filePmdMapped = lhs.filePmdMapped.saturatingAdd(rhs.filePmdMapped)
        lhs.sharedHugetlb = lhs.sharedHugetlb.saturatingAdd(rhs.sharedHugetlb)
        lhs.privateHugetlb = lhs.privateHugetlb.saturatingAdd(rhs.privateHugetlb)
        lhs.swap = lhs.swap.saturatingAdd(rhs.swap)
        lhs.swapPss = lhs.swapPss.saturatingAdd(rhs.swapPss)
        lhs.locked = lhs.locked.saturatingAdd(rhs.locked)
        lhs.reported.formUnion(rhs.reported)
    }

    public static func + (lhs: MemoryCounters, rhs: MemoryCounters) -> MemoryCounters {
        var sum = lhs
        sum += rhs
        return sum
    }

    /// The sum over regions (the hot path of every snapshot: a plain loop, no key paths).
    public static func sum(of regions: [Region]) -> MemoryCounters {
        var total = MemoryCounters()
        for r in regions { total += r.counters }
        return total
    }

    /// Sums a sequence of counters.
    public static func sum<S: Sequence>(_ items: S) -> MemoryCounters where S.Element == MemoryCounters {
        var total = MemoryCounters()
        for item in items { total += item }
        return total
    }
}

/// The totals a report shows, in bytes: the stable JSON contract's `totals` object.
public struct Totals: Sendable, Hashable, Codable {
    public var virtualBytes: UInt64
    public var residentBytes: UInt64
    public var pssBytes: UInt64
    public var dirtyBytes: UInt64
    public var cleanBytes: UInt64
    public var purgeableBytes: UInt64
    public var swappedBytes: UInt64
    public var footprintBytes: UInt64
    /// `MemoryCounters.uss`. Optional only so that reports written before it existed still read.
    public var ussBytes: UInt64?
    /// `SwapPss`, THP (`MemoryCounters.thp`) and `Locked`: absent when the kernel does not print
    /// the fields they come from (unknown, not 0).
    public var swapPssBytes: UInt64?
    public var thpBytes: UInt64?
    public var lockedBytes: UInt64?

    public init(_ c: MemoryCounters) {
        virtualBytes = c.virtual
        residentBytes = c.resident
        pssBytes = c.pss
        dirtyBytes = c.dirty
        cleanBytes = c.clean
        purgeableBytes = c.purgeable
        swappedBytes = c.swapped
        footprintBytes = c.footprint
        ussBytes = c.uss
        swapPssBytes = c.swapPssIfReported
        thpBytes = c.thp
        lockedBytes = c.lockedIfReported
    }

    public init(
        virtualBytes: UInt64 = 0, residentBytes: UInt64 = 0, pssBytes: UInt64 = 0, dirtyBytes: UInt64 = 0,
        cleanBytes: UInt64 = 0, purgeableBytes: UInt64 = 0, swappedBytes: UInt64 = 0, footprintBytes: UInt64 = 0
    ) {
        self.virtualBytes = virtualBytes
        self.residentBytes = residentBytes
        self.pssBytes = pssBytes
        self.dirtyBytes = dirtyBytes
        self.cleanBytes = cleanBytes
        self.purgeableBytes = purgeableBytes
        self.swappedBytes = swappedBytes
        self.footprintBytes = footprintBytes
    }
}
