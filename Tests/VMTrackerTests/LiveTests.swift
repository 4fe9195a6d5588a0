import Glibc
import MemPressureSystem
import MemPressureHogClient
import Testing
import MemPressureTestSupport
import MemPressureVMTracker

/// Real processes, real /proc.
@Suite("live processes")
struct LiveTests {
    let snapshotter = Snapshotter()

    @Test("dirty, clean file-backed and purgeable memory land in the right type and column, to the page")
    func attribution() async throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        try await Hog.with(["--dirty", "8m", "--file", "\(dir.path)/data", "--file-bytes", "4m", "--purgeable", "6m"]) { hog in
            let snapshot = try snapshotter.process(hog.pid)
            func region(_ block: HogInfo.Block?) throws -> Region {
                let block = try #require(block)
                let r = try #require(snapshot.regions.first { $0.start == block.start })
                #expect(r.end == block.end, "the block is one region of its own (guard pages around it)")
                return r
            }
            let dirty = try region(hog.dirty)
            #expect(dirty.type == .anonymous)
            #expect(dirty.counters.privateDirty == 8 << 20)
            #expect(dirty.counters.dirty == 8 << 20)
            #expect(dirty.counters.clean == 0)
            #expect(dirty.counters.purgeable == 0)
            #expect(dirty.counters.footprint == 8 << 20)

            let file = try region(hog.file)
            #expect(file.type == .mappedFile)
            #expect(file.path.description == "\(dir.path)/data")
            #expect(file.counters.resident == 4 << 20)
            #expect(file.counters.clean == 4 << 20)
            #expect(file.counters.dirty == 0)
            #expect(file.counters.anonymous == 0)
            #expect(file.counters.footprint == 0)

            let purgeable = try region(hog.purgeable)
            #expect(purgeable.type == .anonymous)
            #expect(purgeable.counters.resident == 6 << 20)
            #expect(purgeable.counters.purgeable == 6 << 20)
            #expect(purgeable.counters.clean == 6 << 20)
            #expect(purgeable.counters.dirty == 0)
            #expect(purgeable.counters.footprint == 0)

            // The summary by type carries the same bytes.
            let report = VMReport(try snapshotter.app(.process(hog.pid)), includeRegions: false)
            let mapped = try #require(report.types.first { $0.type == "mapped file" })
            #expect(mapped.cleanBytes == 4 << 20)
            #expect(mapped.regionCount == 1)
            #expect(mapped.path == "\(dir.path)/data")
            #expect(report.totals.purgeableBytes == 6 << 20)
            #expect(report.totals.footprintBytes >= 8 << 20)
        }
    }

    @Test("awkward file names: bytes kept, a literal ' (deleted)' told apart from a deleted file")
    func oddNames() async throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        try await Hog.with(["--odd-files", dir.path]) { hog in
            let snapshot = try snapshotter.process(hog.pid)
            let odd = try #require(hog.oddFiles)
            let regions = try odd.map { f in try #require(snapshot.regions.first { $0.start == f.start }) }
            #expect(regions[0].path.bytes == Array("\(dir.path)/with space".utf8))
            #expect(regions[1].path.bytes == Array("\(dir.path)/".utf8) + odd[1].nameBytes)
            #expect(regions[1].path.description == "\(dir.path)/not-\\xff\\xfe-utf8")
            #expect(regions[2].path.bytes == Array("\(dir.path)/literal (deleted)".utf8))
            #expect(regions[2].type == .mappedFile, "the file named '... (deleted)' still exists")
            #expect(regions[3].path.bytes == Array("\(dir.path)/unlinked after mapping (deleted)".utf8))
            #expect(regions[3].type == .deletedFile)
        }
    }

    @Test("an app is a process and its descendants")
    func appTree() async throws {
        try await Hog.with(["--dirty", "1m", "--children", "2"]) { hog in
            let children = try #require(hog.children)
            let tree = try snapshotter.app(.tree(hog.pid))
            #expect(Set(tree.processes.map(\.pid)) == Set([hog.pid] + children))
            #expect(tree.totals.privateDirty >= 3 << 20)
            let report = VMReport(tree, includeRegions: true)
            #expect(report.scope == "app")
            #expect(Set(report.regions!.map(\.pid)) == Set([hog.pid] + children))
            let alone = try snapshotter.app(.process(hog.pid))
            #expect(alone.processes.map(\.pid) == [hog.pid])
            #expect(VMReport(alone, includeRegions: false).scope == "process")
        }
    }

    @Test("a zombie and a missing PID give clear errors; the machine view skips them with a note")
    func zombieAndMissing() async throws {
        try await Hog.with(["--zombie"]) { hog in
            let zombie = try #require(hog.zombie)
            #expect(throws: ProcError.zombie(pid: zombie)) { try snapshotter.process(zombie) }
            let machine = try snapshotter.machine()
            #expect(machine.skipped.contains(.zombie(pid: zombie)))
            #expect(machine.skipNotes.contains { $0.contains("zombie") })
            #expect(machine.processes.contains { $0.pid == hog.pid })
        }
        #expect(throws: ProcError.noSuchProcess(pid: 0x7fff_fff0)) { try snapshotter.process(0x7fff_fff0) }
    }

    @Test("a file the kernel writes as one record (single_open) reads whole as one record, also into a buffer smaller than it")
    func oneRecordReads() throws {
        // Files that do not change while read (limits is one record of about 1.3 KB): what one
        // read gives, growing the buffer each time the kernel fills it, is what reading to the
        // end gives.
        for path in ["/proc/self/limits", "/proc/self/cgroup", "/proc/1/limits"] {
            var whole = ReadBuffer()
            try ProcFS.readFile(path, into: &whole)
            var once = ReadBuffer(exactCapacity: 8)
            let fd = open(path, O_RDONLY | O_CLOEXEC)
            try #require(fd >= 0)
            defer { close(fd) }
            try once.readAll(from: fd, subject: path, oneRecord: true)
            #expect(once.withBytes { Array($0) } == whole.withBytes { Array($0) }, "\(path)")
            if path.hasSuffix("limits") { #expect(once.capacity > 8, "\(path): the buffer never grew") }
        }
    }

    @Test("stat read by its path tells a kernel thread and a missing PID without opening their directories")
    func statByPath() throws {
        var buffer = ReadBuffer()
        try ProcFS().readStat(getpid(), into: &buffer)
        let own = try buffer.withBytes { (b) throws(ProcError) in try ProcessStat.parse(b, pid: getpid()) }
        #expect(!own.isKernelThread && own.pid == getpid())
        #expect(throws: ProcError.noSuchProcess(pid: 0x7fff_fff0)) { try ProcFS().readStat(0x7fff_fff0, into: &buffer) }
        // A kernel thread, if this PID namespace shows one (a container's may not).
        let kernelThread = try ProcFS().pids().first { pid in
            do {
                try ProcFS().readStat(pid, into: &buffer)
                return try buffer.withBytes { (b) throws(ProcError) in try ProcessStat.parse(b, pid: pid) }.isKernelThread
            } catch {
                return false
            }
        }
        guard let kernelThread else { return }
        #expect(throws: ProcError.kernelThread(pid: kernelThread)) { try snapshotter.process(kernelThread) }
    }

    @Test("a process with tens of thousands of regions")
    func manyRegions() async throws {
        try await Hog.with(["--regions", "15000"]) { hog in
            let block = try #require(hog.regions)
            let snapshot = try snapshotter.process(hog.pid, options: SnapshotOptions(detail: .regions))
            let inBlock = snapshot.regions.filter { $0.start >= block.start && $0.end <= block.end }
            #expect(inBlock.count == 30_000)
            #expect(inBlock.allSatisfy { $0.counters.privateDirty == 4096 })
            #expect(snapshot.regions.count > 30_000)
        }
    }

    @Test("for every process on the machine, the sum over its regions equals smaps_rollup")
    func rollupEveryProcess() throws {
        let result = try snapshotter.checkAgainstRollup()
        #expect(result.checked > 0)
        #expect(result.mismatches.isEmpty, "\(result.mismatches)")
        print("rollup check: \(result.checked) processes, \(result.agreed) agreed, \(result.changed.count) changed while read, \(result.skipped.count) skipped")
    }

    @Test("watch: markers for a new child, stopped, continued and exited")
    func watchMarkers() async throws {
        try await Hog.session(["--dirty", "1m"]) { hog in
            var watcher = Watcher(definition: .tree(hog.pid))
            let first = try #require(try watcher.step())
            #expect(first.entry.markers.isEmpty)
            #expect(first.entry.processCount == 1)

            let answer = try await hog.send("spawn")
            let child = try #require(Int32(answer.split(separator: " ").last ?? ""))
            let second = try #require(try watcher.step())
            #expect(second.entry.markers == [Marker(kind: .newChild, pid: child, name: "mempressure-hog", detail: "parent \(hog.pid)")])

            try ChildSignals.send(SIGSTOP, to: hog.pid)
            try ChildSignals.waitUntil(WSTOPPED, pid: hog.pid)
            let third = try #require(try watcher.step())
            #expect(third.entry.markers.map(\.kind) == [.stopped])
            #expect(third.entry.markers.first?.pid == hog.pid)

            try ChildSignals.send(SIGCONT, to: hog.pid)
            try ChildSignals.waitUntil(WCONTINUED, pid: hog.pid)
            let fourth = try #require(try watcher.step())
            #expect(fourth.entry.markers.map(\.kind) == [.continued])

            #expect(try await hog.send("end-children") == "ended 1")
            let fifth = try #require(try watcher.step())
            #expect(fifth.entry.markers == [Marker(kind: .exited, pid: child, name: "mempressure-hog")])
            #expect(fifth.entry.t >= fourth.entry.t)
        }
    }

    static let freezer = "/sys/fs/cgroup/freezer"
    static var freezerAvailable: Bool { getuid() == 0 && ProcFS.isFile("\(freezer)/cgroup.procs") }

    @Test("watch: frozen and thawed by the cgroup v1 freezer", .enabled(if: freezerAvailable, "needs root and the cgroup v1 freezer"))
    func freezerMarkers() async throws {
        try await Hog.with(["--dirty", "1m"]) { hog in
            let group = "\(Self.freezer)/mempressure-test-\(getpid())-\(hog.pid)"
            #expect(mkdir(group, 0o755) == 0)
            defer {
                // Cleanup: thaw, move the hog back to the root group, remove the group.
                _ = writeTextReportingFailure("THAWED", to: "\(group)/freezer.state")
                _ = writeTextReportingFailure("\(hog.pid)", to: "\(Self.freezer)/cgroup.procs")
                rmdir(group)
            }
            try ProcFS.writeFileInPlace("\(group)/cgroup.procs", Array("\(hog.pid)".utf8))
            var watcher = Watcher(definition: .process(hog.pid))
            _ = try watcher.step()
            try ProcFS.writeFileInPlace("\(group)/freezer.state", Array("FROZEN".utf8))
            let frozen = try #require(try watcher.step())
            #expect(frozen.entry.markers.map(\.kind) == [.frozen])
            try ProcFS.writeFileInPlace("\(group)/freezer.state", Array("THAWED".utf8))
            let thawed = try #require(try watcher.step())
            #expect(thawed.entry.markers.map(\.kind) == [.thawed])
        }
    }
}
