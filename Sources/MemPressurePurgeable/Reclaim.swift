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
    /// may still sit in another CPU's batch, where reclaim cannot see them yet.
    package static func pageOut(_ range: Range<UInt>) throws(SystemCallError) {
        guard let start = UnsafeMutableRawPointer(bitPattern: range.lowerBound), !range.isEmpty else { return }
        if mp_drain_lru_batches() != 0 {
            throw SystemCallError("sched_setaffinity", errno: Errno(rawValue: errno), subject: "draining LRU batches")
        }
        if madvise(start, Int(range.upperBound - range.lowerBound), mp_MADV_PAGEOUT) != 0 {
            throw SystemCallError("madvise(MADV_PAGEOUT)", errno: Errno(rawValue: errno), subject: "\(range)")
        }
    }
}
