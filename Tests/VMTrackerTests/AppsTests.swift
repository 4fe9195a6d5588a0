import Glibc
import MemPressureSystem
import Testing
import MemPressureVMTracker

@Suite("apps")
struct AppsTests {
    func table(_ entries: [(pid: Int32, ppid: Int32, name: String)]) -> ProcessTable {
        var processes: [Int32: ProcessStat] = [:]
        for e in entries { processes[e.pid] = ProcessStat(pid: e.pid, name: PathBytes(stringLiteral: e.name), ppid: e.ppid) }
        return ProcessTable(processes: processes)
    }

    @Test("a name names one process, or one process and its descendants")
    func lookup() throws {
        let t = table([
            (1, 0, "init"), (10, 1, "postgres"), (11, 10, "postgres"), (12, 10, "postgres"), (13, 11, "postgres"),
            (20, 1, "worker"), (21, 1, "worker"), (30, 1, "a-very-long-program-name"),
        ])
        #expect(try t.lookup(name: "init") == 1)
        #expect(try t.lookup(name: "postgres") == 10, "a server and its workers are one app")
        #expect(throws: LookupError.ambiguousName("worker", candidates: [20, 21])) { try t.lookup(name: "worker") }
        #expect(throws: LookupError.noProcessNamed("nothing")) { try t.lookup(name: "nothing") }
        // comm holds the first 15 bytes only.
        let long = table([(30, 1, "a-very-long-pro")])
        #expect(try long.lookup(name: "a-very-long-program-name") == 30)
    }

    @Test("descendants, breadth first")
    func descendants() {
        let t = table([(1, 0, "init"), (10, 1, "a"), (11, 10, "b"), (12, 10, "c"), (13, 11, "d"), (20, 1, "e")])
        #expect(t.descendants(of: 10) == [11, 12, 13])
        #expect(t.children(of: 1) == [10, 20])
        #expect(t.isDescendant(13, of: 10))
        #expect(!t.isDescendant(20, of: 10))
    }

    @Test("the error messages say what to do")
    func messages() {
        #expect(LookupError.ambiguousName("w", candidates: [2, 3]).description == "'w' matches 2 unrelated processes (pids 2, 3); pass a pid instead")
        // Root is told that the refusal is not about its user (a test run as root sees that one).
        let denied = ProcError.permissionDenied(pid: 5, file: "/proc/5/smaps").description
        if geteuid() == 0 {
            #expect(denied.hasPrefix("pid 5: /proc/5/smaps: permission denied, to root as well (the process may not be dumpable"))
        } else {
            #expect(denied == "pid 5: /proc/5/smaps: permission denied (run as the process's user or as root)")
        }
    }

    @Test("whole-machine grouping: a process joins its parent's app when it runs the same program")
    func grouping() {
        func snap(_ pid: Int32, _ ppid: Int32, _ name: String, dirty: UInt64) -> ProcessSnapshot {
            var c = MemoryCounters()
            c.privateDirty = dirty
            return ProcessSnapshot(
                stat: ProcessStat(pid: pid, name: PathBytes(stringLiteral: name), ppid: ppid), regions: [], totals: c,
                detail: .rollup, capturedAt: Timestamp(secondsSinceEpoch: 0))
        }
        let machine = MachineSnapshot(
            capturedAt: Timestamp(secondsSinceEpoch: 0),
            processes: [snap(10, 1, "server", dirty: 100), snap(11, 10, "server", dirty: 50), snap(12, 10, "helper", dirty: 500), snap(13, 11, "server", dirty: 1)],
            skipped: [.zombie(pid: 99), .noSuchProcess(pid: 98)], kernelThreads: 3)
        let apps = machine.apps(grouping: .app)
        #expect(apps.map(\.rootPID) == [12, 10])
        #expect(apps[1].pids == [10, 11, 13])
        #expect(apps[1].totals.footprint == 151)
        #expect(machine.apps(grouping: .process).count == 4)
        #expect(machine.skipNotes.count == 2)
    }
}
