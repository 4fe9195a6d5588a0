import CMemoryPressure
import Glibc
import MemPressureSystem
import SystemPackage

/// Asks the kernel to reclaim memory now, as memory pressure would: for demonstrations and
/// tests, which need the kernel to really take pages rather than pretend it did.
package enum Reclaim {
    /// `madvise(MADV_PAGEOUT)` on `range` of this process (page-aligned). The kernel reclaims the
    /// pages at once: clean and lazy-free (MADV_FREE'd) pages are discarded, dirty anonymous
    /// pages are swapped out if there is swap and kept otherwise. Needs Linux 5.4.
    ///
    /// The kernel's per-CPU LRU batches are drained first: pages marked MADV_FREE moments ago
    /// may still sit in another CPU's batch, where reclaim cannot see them yet. Pages still
    /// resident afterwards (mincore) are asked for again, up to `attempts` times in all: reclaim
    /// passes over a page that someone else holds at that instant (locked, or isolated from the
    /// LRU lists, as the kernel's DAMON reclaim on this machine's host does to cold pages), and a
    /// page it cannot reclaim at all (dirty anonymous memory without swap) just stays.
    package static func pageOut(_ range: Range<UInt>, attempts: Int = 4) throws(SystemCallError) {
        guard let start = UnsafeMutableRawPointer(bitPattern: range.lowerBound), !range.isEmpty else { return }
        let length = Int(range.upperBound - range.lowerBound)
        for attempt in 1...max(1, attempts) {
            if mp_drain_lru_batches() != 0 {
                throw SystemCallError("sched_setaffinity", errno: Errno(rawValue: errno), subject: "draining LRU batches")
            }
            if madvise(start, length, mp_MADV_PAGEOUT) != 0 {
                throw SystemCallError("madvise(MADV_PAGEOUT)", errno: Errno(rawValue: errno), subject: "\(range)")
            }
            guard attempt < attempts, anyResident(start, length) else { return }
        }
    }

    /// Whether any page of the range is resident (mincore); true when it cannot be told.
    static func anyResident(_ start: UnsafeMutableRawPointer, _ length: Int) -> Bool {
        let pages = (length + PurgeableArena.pageSize - 1) / PurgeableArena.pageSize
        var vector = [UInt8](repeating: 0, count: pages)
        guard mincore(start, length, &vector) == 0 else { return true }
        return vector.contains { $0 & 1 != 0 }
    }
}
