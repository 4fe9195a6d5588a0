import MemPressureSystem
import Testing
import MemPressureTestSupport
import MemPressureVMTracker

@Suite("diff")
struct DiffTests {
    func row(_ start: UInt64, _ end: UInt64, _ type: String, path: String = "", dirty: UInt64 = 0, pid: Int32 = 1) -> VMReport.RegionRow {
        VMReport.RegionRow(
            pid: pid, start: "0x" + String(start, radix: 16), end: "0x" + String(end, radix: 16), permissions: "rw-p", offset: 0,
            path: path, type: type, virtualBytes: end - start, residentBytes: dirty, pssBytes: dirty, dirtyBytes: dirty,
            cleanBytes: 0, purgeableBytes: 0, swappedBytes: 0, footprintBytes: dirty, maxProtection: "rwx")
    }

    func report(_ regions: [VMReport.RegionRow], at seconds: Int64) -> VMReport {
        var app = VMReport(
            AppSnapshot(definition: .process(1), name: "app", rootPID: 1, capturedAt: Timestamp(secondsSinceEpoch: seconds), processes: [], skipped: []),
            includeRegions: true)
        app.regions = regions
        var byType: [String: VMReport.TypeRow] = [:]
        for r in regions {
            var t = byType[r.type] ?? VMReport.TypeRow(
                type: r.type, regionCount: 0, virtualBytes: 0, residentBytes: 0, dirtyBytes: 0, swappedBytes: 0, purgeableBytes: 0,
                cleanBytes: 0, pssBytes: 0, footprintBytes: 0, path: nil, protections: nil)
            t.regionCount += 1
            t.virtualBytes += r.virtualBytes
            t.dirtyBytes += r.dirtyBytes
            t.residentBytes += r.residentBytes
            t.footprintBytes += r.footprintBytes
            byType[r.type] = t
        }
        app.types = Array(byType.values)
        app.totals = Totals(
            virtualBytes: regions.reduce(0) { $0 + $1.virtualBytes }, residentBytes: regions.reduce(0) { $0 + $1.residentBytes },
            dirtyBytes: regions.reduce(0) { $0 + $1.dirtyBytes }, footprintBytes: regions.reduce(0) { $0 + $1.footprintBytes })
        return app
    }

    @Test("a region that grew is matched, not removed and added")
    func growth() {
        let before = report([
            row(0x1000, 0x5000, "heap", path: "[heap]", dirty: 0x4000),
            row(0x7000_0000, 0x7000_1000, "stack", path: "[stack]", dirty: 0x1000),
            row(0x9000, 0xa000, "anonymous", dirty: 0x1000),
            row(0xb000, 0xc000, "anonymous", dirty: 0x1000),
        ], at: 100)
        let after = report([
            row(0x1000, 0x9000, "heap", path: "[heap]", dirty: 0x8000),  // grew up
            row(0x6fff_e000, 0x7000_1000, "stack", path: "[stack]", dirty: 0x3000),  // grew down
            row(0xb000, 0xc000, "anonymous", dirty: 0x1000),  // unchanged
            row(0xd000, 0xf000, "anonymous", dirty: 0x2000),  // new
        ], at: 102)
        let diff = ReportDiff(from: before, to: after)
        #expect(diff.elapsedSeconds == 2)
        let changes = try! #require(diff.regions)
        #expect(changes.count == 4)
        #expect(changes.contains { $0.change == .grew && $0.type == "heap" && $0.delta.virtualBytes == 0x4000 })
        #expect(changes.contains { $0.change == .grew && $0.type == "stack" && $0.delta.dirtyBytes == 0x2000 })
        #expect(changes.contains { $0.change == .removed && $0.before == "0x9000-0xa000" })
        #expect(changes.contains { $0.change == .added && $0.after == "0xd000-0xf000" })
        #expect(!changes.contains { $0.before == "0xb000-0xc000" })
        #expect(diff.totals.dirtyBytes == 0xe000 - 0x7000)
        let heap = try! #require(diff.types.first { $0.type == "heap" })
        #expect(heap.delta.footprintBytes == 0x4000)
        let anon = try! #require(diff.types.first { $0.type == "anonymous" })
        #expect(anon.regionCountBefore == 2 && anon.regionCountAfter == 2)
        #expect(anon.delta.dirtyBytes == 0x1000)
    }

    @Test("regions of different processes are never matched")
    func perProcess() {
        let before = report([row(0x1000, 0x2000, "anonymous", dirty: 0x1000, pid: 1)], at: 0)
        let after = report([row(0x1000, 0x2000, "anonymous", dirty: 0x1000, pid: 2)], at: 1)
        let changes = ReportDiff(from: before, to: after).regions ?? []
        #expect(Set(changes.map(\.change)) == [.added, .removed])
    }

    @Test("without regions, a diff by type with a note")
    func typesOnly() {
        var a = report([row(0x1000, 0x2000, "anonymous", dirty: 0x1000)], at: 0)
        var b = report([row(0x1000, 0x3000, "anonymous", dirty: 0x2000)], at: 1)
        a.regions = nil
        b.regions = nil
        let diff = ReportDiff(from: a, to: b)
        #expect(diff.regions == nil)
        #expect(diff.types.first?.delta.dirtyBytes == 0x1000)
        #expect(diff.notes.contains { $0.contains("--regions") })
    }

    @Test("the captured before/after reports: the heap grew by what the hog added")
    func fixtureReports() throws {
        let decode = { (name: String) throws -> VMReport in
            try JSONDecoderForTests.decode(VMReport.self, from: try Fixtures.readFile("\(Fixtures.directory)/reports/\(name)"))
        }
        let diff = ReportDiff(from: try decode("before.json"), to: try decode("after.json"))
        let heap = try #require(diff.regions?.first { $0.type == "heap" })
        #expect(heap.change == .grew)
        #expect(heap.delta.virtualBytes >= 1 << 20)
        #expect(heap.delta.dirtyBytes >= 1 << 20)
    }
}
