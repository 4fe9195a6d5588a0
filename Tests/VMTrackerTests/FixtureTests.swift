import FoundationEssentials
import MemPressureSystem
import MemPressureHogClient
import Testing
import MemPressureTestSupport
import MemPressureVMTracker

/// Golden fixtures: /proc files of real processes captured on this machine by
/// Fixtures/capture.sh while each process was stopped, with the totals the kernel computed.
@Suite("golden fixtures")
struct FixtureTests {
    let snapshotter = Snapshotter(proc: ProcFS(root: Fixtures.procRoot), cgroupRoot: "/nonexistent")

    @Test("the fixtures are there")
    func present() throws {
        let labels = Set(try Fixtures.processes().map(\.label))
        #expect(labels == ["hog", "python3", "sleep"])
    }

    @Test("region sums equal the kernel's smaps_rollup for every captured process")
    func totalsMatchRollup() throws {
        for expected in try Fixtures.processes() {
            let snapshot = try snapshotter.process(expected.pid, options: SnapshotOptions(detail: .regions, status: true))
            let c = snapshot.totals
            let r = expected.rollup
            let label = expected.label
            #expect(snapshot.regions.count == expected.regionCount, "\(label)")
            #expect(c.rss == r["Rss"], "\(label)")
            #expect(c.privateDirty == r["Private_Dirty"], "\(label)")
            #expect(c.privateClean == r["Private_Clean"], "\(label)")
            #expect(c.sharedDirty == r["Shared_Dirty"], "\(label)")
            #expect(c.sharedClean == r["Shared_Clean"], "\(label)")
            #expect(c.anonymous == r["Anonymous"], "\(label)")
            #expect(c.referenced == r["Referenced"], "\(label)")
            #expect(c.lazyFree == r["LazyFree"], "\(label)")
            #expect(c.swap == r["Swap"], "\(label)")
            // PSS is truncated to whole kB per region in smaps and once in the rollup.
            let pss = try #require(r["Pss"])
            #expect(c.pss <= pss && pss - c.pss < UInt64(expected.regionCount) * 1024, "\(label)")
            #expect(snapshot.status?.residentBytes == r["Rss"], "\(label): status VmRSS agrees")
        }
    }

    @Test("smaps_rollup parses to the same numbers awk read")
    func rollupFile() throws {
        for expected in try Fixtures.processes() {
            let c = try SmapsParser.parseRollup(try Fixtures.bytes("\(Fixtures.procRoot)/\(expected.pid)/smaps_rollup"))
            #expect(c.rss == expected.rollup["Rss"])
            #expect(c.pss == expected.rollup["Pss"])
            #expect(c.pssAnon == expected.rollup["Pss_Anon"])
            #expect(c.pssFile == expected.rollup["Pss_File"])
            #expect(c.privateDirty == expected.rollup["Private_Dirty"])
            #expect(c.lazyFree == expected.rollup["LazyFree"])
        }
    }

    @Test("the hog's memory is attributed to the right type and column, to the page")
    func hogAttribution() throws {
        let expected = try Fixtures.process(labelled: "hog")
        let info = try #require(expected.info)
        let snapshot = try snapshotter.process(expected.pid)
        func region(at start: UInt64) throws -> Region {
            try #require(snapshot.regions.first { $0.start == start })
        }
        let dirty = try region(at: try #require(info.dirty).start)
        #expect(dirty.type == .anonymous)
        #expect(dirty.counters.privateDirty == 4 << 20)
        #expect(dirty.counters.rss == 4 << 20)
        #expect(dirty.counters.footprint == 4 << 20)

        let file = try region(at: try #require(info.file).start)
        #expect(file.type == .mappedFile)
        #expect(file.path.description.hasSuffix("/data.bin"))
        #expect(file.counters.clean == 2 << 20)
        #expect(file.counters.dirty == 0)
        #expect(file.counters.footprint == 0)

        let purgeable = try region(at: try #require(info.purgeable).start)
        #expect(purgeable.type == .anonymous)
        #expect(purgeable.counters.purgeable == 3 << 20)
        #expect(purgeable.counters.clean == 3 << 20)
        #expect(purgeable.counters.dirty == 0)
        #expect(purgeable.counters.footprint == 0)

        let odd = try #require(info.oddFiles)
        #expect(odd.count == 4)
        for (i, file) in odd.enumerated() {
            let r = try region(at: file.start)
            // The last file was unlinked after mapping; the kernel appends " (deleted)" to it.
            let shown = i == 3 ? r.path.withoutDeletedSuffix.bytes : r.path.bytes
            #expect(Array(shown.suffix(file.nameBytes.count)) == file.nameBytes, "path bytes kept exactly")
            #expect(r.counters.clean == 4096)
        }
        // Mapped and then unlinked: the kernel appends " (deleted)".
        let unlinked = try region(at: odd[3].start)
        #expect(unlinked.type == .deletedFile)
        #expect(unlinked.path.hasSuffix("unlinked after mapping (deleted)"))
        // Not UTF-8: printed with \x escapes, never lost.
        let notUTF8 = try region(at: odd[1].start)
        #expect(notUTF8.path.description.hasSuffix("not-\\xff\\xfe-utf8"))
    }

    @Test("types of a Python process")
    func pythonTypes() throws {
        let expected = try Fixtures.process(labelled: "python3")
        let snapshot = try snapshotter.process(expected.pid)
        let types = Set(snapshot.regions.map(\.type))
        for t: RegionType in [.heap, .stack, .code, .data, .readOnlyData, .anonymous, .vdso, .vvar] {
            #expect(types.contains(t), "\(t.name)")
        }
        // Every executable file mapping is code and every image's data is data.
        for r in snapshot.regions where r.permissions.canExecute && r.inode != 0 {
            #expect(r.type == .code)
        }
        let libc = snapshot.regions.filter { $0.path.description.hasSuffix("/libc.so.6") }
        #expect(Set(libc.map(\.type)).isSuperset(of: [.code, .data, .readOnlyData]))
    }

    @Test("the report's JSON has the documented keys and reads back the same")
    func jsonContract() throws {
        let expected = try Fixtures.process(labelled: "hog")
        let app = try snapshotter.app(.process(expected.pid))
        let report = VMReport(app, includeRegions: true)
        let data = try JSONEncoder().encode(report)
        #expect(try JSONDecoder().decode(VMReport.self, from: data) == report)
        let text = String(decoding: data, as: UTF8.self)
        for key in [
            "formatVersion", "pid", "name", "capturedAt", "totals", "virtualBytes", "residentBytes", "pssBytes",
            "dirtyBytes", "cleanBytes", "purgeableBytes", "swappedBytes", "footprintBytes", "types", "type", "regionCount",
            "regions", "start", "end", "permissions", "offset", "path",
        ] {
            #expect(text.contains("\"\(key)\":"), "\(key)")
        }
        #expect(report.totals.footprintBytes == report.types.reduce(0) { $0 + $1.footprintBytes })
        #expect(report.regions?.count == expected.regionCount)
    }

    @Test("an app by name pattern gathers every matching process")
    func patternApp() throws {
        let app = try snapshotter.app(.namePattern("*"))
        #expect(app.processes.count == 3)
        #expect(app.totals == MemoryCounters.sum(app.processes.map(\.totals)))
        let sleepOnly = try snapshotter.app(.namePattern("sl??p"))
        #expect(sleepOnly.processes.map(\.name) == ["sleep"])
    }

    @Test("one vanished or corrupt process never spoils a whole-machine snapshot")
    func machineWithBrokenProcesses() throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let procs = try Fixtures.processes()
        for p in procs {
            try copyTree("\(Fixtures.procRoot)/\(p.pid)", to: "\(dir.path)/\(p.pid)")
        }
        let (vanished, corrupt) = (procs[0].pid, procs[1].pid)
        #expect(unlinkFile("\(dir.path)/\(vanished)/smaps"))
        #expect(unlinkFile("\(dir.path)/\(vanished)/smaps_rollup"))
        var smaps = try Fixtures.bytes("\(dir.path)/\(corrupt)/smaps")
        smaps.removeLast(100)
        try writeBytes(smaps, to: "\(dir.path)/\(corrupt)/smaps")

        let machine = try Snapshotter(proc: ProcFS(root: dir.path)).machine(options: SnapshotOptions(detail: .regions), workers: 2)
        #expect(machine.processes.map(\.pid) == [procs[2].pid])
        #expect(machine.skipped.count == 2)
        let messages = machine.skipped.map(\.description).joined(separator: "\n")
        #expect(messages.contains("pid \(vanished): \(dir.path)/\(vanished)/smaps: the process exited"))
        #expect(messages.contains("pid \(corrupt): \(dir.path)/\(corrupt)/smaps: line"))
    }
}
