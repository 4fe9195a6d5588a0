import Glibc
import MemPressureSystem
import MemPressureRegionTags
import SystemPackage

/// What a supervisor does on a runtime directory a dead supervisor left (its lock free, its
/// `RunRecord` still in the lock file): it waits for the dead run's guardian to finish, reads
/// the guardian's report, then releases, thaws, ends and removes whatever is still there — the
/// kernel's OOM killer held for a device cgroup, frozen or stopped apps, the processes of every
/// app (through their cgroups, or the process group of an app without one, checked through a
/// pidfd), the cgroups, the sockets, the apps' output files, the region registry files of dead
/// processes — and says what it did, one line each.
enum Recovery {
    static func cleanUp(after record: RunRecord, lock: RuntimeLock) -> [String] {
        var said: [String] = ["a supervisor (pid \(record.pid)) died on \(lock.directory) without shutting down; cleaning up after it"]
        if let g = record.guardian, let handle = Self.open(g, expectedName: "mempressure-gua") {
            // Its guardian is at work (or stuck): give it time to finish before doing it again.
            var p = pollfd(fd: handle.descriptor, events: Int16(POLLIN), revents: 0)
            if retryOnInterrupt({ poll(&p, 1, 15_000) }) == 0 {
                said.append("its guardian (pid \(g.pid)) is still running 15 s later: cleaning up beside it")
            }
        }
        said += readGuardianReport(lock)
        for group in record.groups.map(\.directory) where group.exists {
            if group.controller == "memory" {
                do {
                    let text = String(decoding: try group.read("memory.oom_control"), as: UTF8.self)
                    if text.contains("oom_kill_disable 1") {
                        try group.write("0", to: "memory.oom_control")
                        said.append("released the kernel's OOM killer of \(group.path) (it was held with nobody watching)")
                    }
                } catch {
                    said.append("could not release the kernel's OOM killer of \(group.path): \(error)")
                }
            }
        }
        // Kill through the memory groups where there are (the freezer's hold the same
        // processes), then thaw what is frozen (a frozen process dies only once thawed), then
        // end what is left, wait, and remove every app group.
        let groups = record.groups.map(\.directory).filter(\.exists)
        let killing = groups.contains { $0.controller == "memory" } ? groups.filter { $0.controller != "freezer" } : groups
        var ended: [String: Int] = [:]
        for group in killing {
            for app in group.children() {
                do {
                    ended[app.path, default: 0] += try app.killAll(rounds: 1).signalled
                } catch {
                    said.append("\(error)")
                }
            }
        }
        for group in groups where group.isV2 || group.controller == "freezer" {
            for app in group.children() where app.isFreezeRequested() {
                do {
                    try app.thaw()
                    said.append("thawed \(app.path)")
                } catch {
                    said.append("\(error)")
                }
            }
        }
        for group in groups {
            for app in group.children() {
                do {
                    if killing.contains(group) {
                        ended[app.path, default: 0] += try app.end(timeout: 10).signalled
                        if let n = ended[app.path], n > 0 { said.append("ended \(n) process(es) in \(app.path)") }
                    } else if try !app.waitUntilEmpty(timeout: 10) {
                        said.append("processes are still in \(app.path) 10 s later")
                        continue
                    }
                    try app.remove()
                    said.append("removed cgroup \(app.path)")
                } catch {
                    said.append("\(error)")
                }
            }
        }
        for group in groups {
            do {
                try group.remove()
                said.append("removed cgroup \(group.path)")
            } catch {
                said.append("\(error)")
            }
        }
        // Apps without a cgroup: their process group, while its leader (checked to be the
        // process recorded, through a pidfd) keeps the group's number from reuse.
        for app in record.apps {
            guard let handle = Self.open(app, expectedName: nil) else { continue }
            do {
                try handle.signal(0)
                kill(-app.pid, SIGKILL)
                try handle.signal(SIGKILL)
                said.append("ended app \(app.name) (process group \(app.pid))")
            } catch {
                continue  // exited meanwhile
            }
        }
        said += removeFiles(lock)
        let stale = RegionRegistry().removeStale()
        if stale > 0 { said.append("removed \(stale) region registry file(s) of processes that have exited") }
        return said
    }

    /// A pidfd on the recorded process, if it is still that process (its start time matches, and
    /// its name when given), checked after the pidfd was opened.
    private static func open(_ p: RunRecord.Process, expectedName: String?) -> ProcessHandle? {
        guard let ticks = p.startTicks else { return nil }
        let handle: ProcessHandle
        do {
            handle = try ProcessHandle(pid: p.pid)
            let bytes = try ProcFS.readBytes("/proc/\(p.pid)/stat")
            let stat = try bytes.withUnsafeBytes { (b) throws(ProcError) in try ProcessStat.parse(b, pid: p.pid) }
            guard stat.startTicks == ticks, !stat.isZombie else { return nil }
            if let expectedName, String(decoding: stat.name.bytes, as: UTF8.self) != expectedName { return nil }
        } catch {
            return nil  // gone, or not ours to know
        }
        return handle
    }

    private static func readGuardianReport(_ lock: RuntimeLock) -> [String] {
        let fd = openat(lock.directoryFD, Guardian.reportFileName, O_RDONLY | O_NOFOLLOW | O_CLOEXEC)
        guard fd >= 0 else { return [] }
        defer {
            close(fd)
            unlinkat(lock.directoryFD, Guardian.reportFileName, 0)
        }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 8192)
        while bytes.count < 1 << 20 {
            let n = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            guard n > 0 else { break }
            bytes += chunk[0..<n]
        }
        return String(decoding: bytes, as: UTF8.self).split(separator: "\n").map { "its guardian: \($0)" }
    }

    /// The sockets and output files a run makes in its directory.
    private static func removeFiles(_ lock: RuntimeLock) -> [String] {
        let names: [[UInt8]]
        do {
            names = try ProcFS.listDirectory(lock.directory)
        } catch {
            return ["cannot list \(lock.directory): \(error)"]
        }
        var removed: [String] = []
        for raw in names {
            let name = String(decoding: raw, as: UTF8.self)
            guard name == "control.sock" || name == "admin.sock" || name.hasSuffix(".log") else { continue }
            if unlinkat(lock.directoryFD, name, 0) == 0 { removed.append(name) }
        }
        return removed.isEmpty ? [] : ["removed \(removed.sorted().joined(separator: ", ")) from \(lock.directory)"]
    }
}
