import MemPressureSystem
import MemPressureMonitor
import MemPressureVMTracker

/// What one app holds — all of its processes, not only its main one — as its footprint
/// samples record it.
///
/// - An app in a memory cgroup: the cgroup's own figures (`CgroupMemory.readApp`: footprint =
///   anonymous LRU + swap, charged to whichever of its processes made them, helpers, children
///   and its tmpfs files included), and purgeable memory as the sum of its processes' `LazyFree`
///   (which memory.stat does not count).
/// - Otherwise (a process group, or only a freezer group): the sum of its processes'
///   smaps_rollup figures (`MemoryCounters`: footprint = Private_Dirty + Private_Hugetlb + Swap).
struct AppMemory: Sendable, Hashable {
    var footprint: UInt64 = 0
    var resident: UInt64 = 0
    var dirty: UInt64 = 0
    var purgeable: UInt64 = 0
    var swapped: UInt64 = 0
    /// How many processes the app had.
    var processes = 0

    /// Reads the app's memory now; nil once its main process has exited (its memory is gone or
    /// going, and its cgroup may be removed).
    static func read(_ process: AppProcess) -> AppMemory? {
        var pids: [Int32]
        switch process.members {
        case .cgroup(let group):
            do {
                pids = try group.members.processes()
            } catch {
                return nil  // the cgroup is gone: the app has ended
            }
        case .processGroup:
            pids = [process.pid] + AppProcess.processes(inGroup: process.pid)
        }
        guard pids.contains(process.pid) else { return nil }
        var m = AppMemory(processes: pids.count)
        let snapshotter = Snapshotter()
        for pid in pids {
            do {
                let c = try snapshotter.process(pid, options: .totalsOnly).totals
                m.footprint = m.footprint.saturatingAdd(c.footprint)
                m.resident = m.resident.saturatingAdd(c.resident)
                m.dirty = m.dirty.saturatingAdd(c.dirty)
                m.purgeable = m.purgeable.saturatingAdd(c.purgeable)
                m.swapped = m.swapped.saturatingAdd(c.swapped)
            } catch {
                if pid == process.pid { return nil }  // the main process is gone or going
                continue  // a helper that exited meanwhile holds nothing
            }
        }
        if case .cgroup(let group) = process.members, let memory = group.memory {
            var buffer = ReadBuffer(capacity: 8192)
            do {
                let r = try CgroupMemory(directory: memory.path).readApp(&buffer)
                m.footprint = r.footprintBytes
                m.resident = r.residentBytes
                m.dirty = r.dirtyBytes
                m.swapped = r.swappedBytes
            } catch {
                return nil  // removed meanwhile: the app has ended
            }
        }
        return m
    }
}
