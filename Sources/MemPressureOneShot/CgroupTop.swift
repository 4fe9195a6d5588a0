import MemPressureSystem
import MemPressureMonitor
import MemPressureVMTracker

extension TopReport {
    /// Fills each app's `cgroupMemory` with its cgroup's own figures (`--group-by cgroup`),
    /// read below `cgroupRoot`. A cgroup with no memory files (v2's root, a path outside this
    /// cgroup namespace) keeps nil; one whose files cannot be read or parsed (removed since the
    /// snapshot, a malformed value) keeps nil with a note that says why.
    mutating func readCgroupMemory(cgroupRoot: String) {
        var buffer = ReadBuffer(capacity: 16384)
        var problems: [String] = []
        for i in apps.indices {
            guard let path = apps[i].cgroup?.path, let memory = CgroupMemory.locate(path: path, cgroupRoot: cgroupRoot) else { continue }
            do {
                let r = try memory.read(&buffer)
                apps[i].cgroupMemory = CgroupFigures(
                    directory: memory.directory, usageBytes: r.usageBytes, limitBytes: r.limitBytes, oomKills: r.oomKills,
                    anonBytes: r.anonBytes, fileBytes: r.fileBytes, shmemBytes: r.shmemBytes)
            } catch {
                problems.append("cgroup \(path): its own usage and limit could not be read: \(error)")
            }
        }
        notes.append(contentsOf: problems)
    }
}
