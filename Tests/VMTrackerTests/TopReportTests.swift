import Glibc
import MemPressureSystem
import MemPressureValues
import Testing
import MemPressureTestSupport
import MemPressureVMTracker

@Suite("top report: sorting, filters, the machine header, USS/SwapPss/THP/Locked")
struct TopReportTests {
    static let time = Timestamp(secondsSinceEpoch: 1_700_000_000)

    func snap(_ pid: Int32, _ name: String, uid: UInt32 = 0, _ set: (inout MemoryCounters) -> Void) -> ProcessSnapshot {
        var c = MemoryCounters()
        set(&c)
        var status = ProcessStatus()
        status.uid = uid
        return ProcessSnapshot(
            stat: ProcessStat(pid: pid, name: PathBytes(stringLiteral: name), ppid: 1), status: status, regions: [], totals: c,
            detail: .rollup, capturedAt: Self.time)
    }

    /// Four unrelated processes whose columns order them differently.
    var machine: MachineSnapshot {
        MachineSnapshot(
            capturedAt: Self.time,
            processes: [
                snap(10, "bravo", uid: 1000) { $0.privateDirty = 300; $0.privateClean = 5; $0.rss = 305; $0.reported = [.locked]; $0.locked = 7 },
                snap(20, "alpha", uid: 0) { $0.privateDirty = 100; $0.privateClean = 900; $0.rss = 1000; $0.reported = [.locked] },
                snap(30, "charlie", uid: 1000) { $0.privateDirty = 300; $0.swap = 0; $0.rss = 300; $0.reported = [.locked] },
                snap(5, "delta", uid: 0) { $0.privateDirty = 50; $0.swap = 500; $0.rss = 50 },
            ],
            skipped: [], kernelThreads: 0)
    }

    @Test("--sort orders by the column, largest first (name and pid ascending), ties by PID")
    func sorting() {
        func order(_ key: TopSortKey) -> [Int32?] {
            TopReport(machine, grouping: .process, sort: key).apps.map(\.pid)
        }
        // footprint = Private_Dirty + Swap: delta 550, bravo and charlie 300 (tie: lower PID first), alpha 100.
        #expect(order(.footprint) == [5, 10, 30, 20])
        #expect(order(.resident) == [20, 10, 30, 5])
        #expect(order(.uss) == [20, 10, 30, 5])
        #expect(order(.swapped) == [5, 10, 20, 30])
        #expect(order(.name) == [20, 10, 30, 5])
        #expect(order(.pid) == [5, 10, 20, 30])
        // Locked is unknown for delta (its kernel "did not print it"): last, after the known zeros.
        #expect(order(.locked) == [10, 20, 30, 5])
        let report = TopReport(machine, grouping: .process, limit: 2, sort: .name)
        #expect(report.apps.map(\.name) == ["alpha", "bravo"])
        #expect(report.sortedBy == "name")
        #expect(report.notes.first == "showing the first 2 of 4 apps by name")
    }

    @Test("the order does not depend on the order of the processes")
    func deterministic() {
        var shuffled = machine
        shuffled.processes.reverse()
        for key in TopSortKey.allCases {
            #expect(
                TopReport(shuffled, grouping: .process, sort: key).apps == TopReport(machine, grouping: .process, sort: key).apps,
                "\(key)")
        }
    }

    @Test("--match filters apps by name (fnmatch), --user processes by real UID")
    func filters() {
        let matched = TopReport(machine, grouping: .process, filter: TopFilter(namePattern: "[ab]*"))
        #expect(matched.apps.map(\.name).sorted() == ["alpha", "bravo"])
        #expect(matched.totals.footprintBytes == 400, "totals are over the apps shown")
        let user = TopReport(machine, grouping: .process, filter: TopFilter(uid: 1000))
        #expect(user.apps.map(\.pid) == [10, 30])
        let nobody = TopReport(machine, grouping: .process, filter: TopFilter(namePattern: "*", uid: 4242))
        #expect(nobody.apps.isEmpty)
        #expect(nobody.notes == ["no app matches --match '*' --user 4242"])
        #expect(nobody.renderText().contains("note: no app matches --match '*' --user 4242"))
    }

    @Test("unknown SwapPss, THP and Locked are n/a in text and absent in JSON, never 0")
    func unknownFields() throws {
        let report = TopReport(machine, grouping: .process, sort: .pid)
        let delta = try #require(report.apps.first)
        #expect(delta.name == "delta")
        #expect(delta.totals.lockedBytes == nil && delta.totals.swapPssBytes == nil && delta.totals.thpBytes == nil)
        #expect(delta.totals.ussBytes == 50)
        let row = try #require(report.renderText().split(separator: "\n").first { $0.contains("delta") })
        #expect(row.split(separator: " ").suffix(3) == ["n/a", "n/a", "n/a"])
        let bravo = try #require(report.apps.first { $0.name == "bravo" })
        #expect(bravo.totals.lockedBytes == 7)
        #expect(report.renderCSV().split(separator: "\n").first?.hasSuffix("ussBytes,swapPssBytes,thpBytes,lockedBytes") == true)
    }

    @Test("--bytes: exact integers in the text table")
    func exactBytes() throws {
        let report = TopReport(machine, grouping: .process, sort: .pid)
        let row = try #require(report.renderText(exactBytes: true).split(separator: "\n").first { $0.contains("alpha") })
        #expect(row.split(separator: " ").dropFirst(2).prefix(8) == ["1", "100", "100", "900", "0", "0", "1000", "0"])
        #expect(!report.renderText(exactBytes: true).contains(" B "))
    }

    @Test("THP = AnonHugePages + ShmemPmdMapped + FilePmdMapped, parsed from smaps_rollup")
    func thp() throws {
        let rollup = """
            00400000-7ffc00000000 ---p 00000000 00:00 0                          [rollup]
            Rss:                1752 kB
            Private_Clean:        56 kB
            Private_Dirty:       112 kB
            AnonHugePages:      2048 kB
            ShmemPmdMapped:     4096 kB
            FilePmdMapped:      8192 kB
            Private_Hugetlb:       0 kB
            Swap:                 12 kB
            SwapPss:               6 kB
            Locked:               16 kB

            """
        let c = try SmapsParser.parseRollup(Array(rollup.utf8))
        #expect(c.thp == 14336 * 1024)
        #expect(c.swapPssIfReported == 6 * 1024)
        #expect(c.lockedIfReported == 16 * 1024)
        #expect(c.uss == 168 * 1024)
        // An older kernel's rollup without those fields: unknown, not 0.
        let old = try SmapsParser.parseRollup(Array(rollup.split(separator: "\n").filter { !$0.hasPrefix("FilePmd") && !$0.hasPrefix("SwapPss") && !$0.hasPrefix("Locked") }.joined(separator: "\n").utf8) + [0x0a])
        #expect(old.thp == nil)
        #expect(old.swapPssIfReported == nil)
        #expect(old.lockedIfReported == nil)
        #expect(Totals(old).thpBytes == nil)
    }

    @Test("the machine header shows meminfo and PSI, and says when PSI is missing")
    func header() throws {
        // Read by the MemPressureMonitor module (`MachineMemory.read`, tested in PressureTests); rendered here.
        let noPSI = MachineMemory(
            memTotalBytes: 16_318_124 * 1024, memAvailableBytes: 8_000_000 * 1024, swapTotalBytes: 1024 * 1024, swapFreeBytes: 512 * 1024,
            notes: ["PSI unavailable: open /proc/pressure/memory: No such file or directory"])
        let text = TopReport(machine, grouping: .process, memory: noPSI).renderText()
        #expect(text.hasPrefix("\(Self.time)  memory: total 15.56 GiB, available 7.63 GiB  swap: total 1.00 MiB, free 512.00 KiB\nPSI unavailable: "))

        var withPSI = noPSI
        withPSI.notes = []
        withPSI.psi = PressureStall(
            some: .init(avg10: 2, avg60: 0, avg300: 0, totalMicroseconds: 5_000_000), full: .init(avg10: 1, avg60: 0, avg300: 0, totalMicroseconds: 1_000_000))
        let header = TopReport(machine, grouping: .process, memory: withPSI).renderText().split(separator: "\n")[1]
        #expect(header == "PSI memory: some avg10 2.00%, full avg10 1.00%; stalled some 5.000 s, full 1.000 s in total")
    }
}
