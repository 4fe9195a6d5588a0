import FoundationEssentials
import Glibc
import MemPressureSystem
import MemPressureHogClient
import Testing
import MemPressureTestSupport
import MemPressureVMTracker

/// `top --group-by cgroup`: apps named from their cgroup paths, with the cgroup's own usage,
/// limit and OOM kills beside the sum over its processes. On real v1 memory cgroups made by the
/// test, and on a v2 layout from fixtures.
@Suite("top --group-by cgroup", .serialized)
struct CgroupTopTests {
    static let v1Root = "/sys/fs/cgroup/memory"
    static var memoryCgroupsAvailable: Bool { getuid() == 0 && ProcFS.isFile("\(v1Root)/cgroup.procs") }

    static func decode(_ r: CommandResult) throws -> TopReport {
        try JSONDecoder().decode(TopReport.self, from: Data(r.standardOutput.utf8))
    }

    // MARK: v2, from fixtures

    static let v2 = Fixtures.directory + "/cgroup-v2"
    static let podUID = "9c1f6a5e-2b4d-4e8a-a6f1-3d2c8b7e5f10"
    static let containerID = "5b0c4a1e9f7d3c2b8a6e4d1f0c9b8a7e6d5c4b3a2f1e0d9c8b7a6f5e4d3c2b1a"
    static let containerPath =
        "/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod9c1f6a5e_2b4d_4e8a_a6f1_3d2c8b7e5f10.slice/cri-containerd-\(containerID).scope"

    @Test("v2: a Kubernetes container, a systemd service and the root cgroup, named, with their own figures")
    func v2Layout() async throws {
        let r = try await runMempressure(["top", "--group-by", "cgroup", "--json", "--proc-root", "\(Self.v2)/proc", "--cgroup-root", "\(Self.v2)/cgroup"])
        #expect(r.status == 0, "\(r.standardError)")
        let report = try Self.decode(r)
        #expect(report.grouping == "cgroup")
        // Footprint descending, then path ascending (the root and nginx have equal footprints).
        #expect(report.apps.map(\.key) == [Self.containerPath, "/", "/system.slice/nginx.service"])

        let pod = try #require(report.apps.first { $0.key == Self.containerPath })
        #expect(pod.name == "pod/\(Self.podUID)/5b0c4a1e9f7d")
        #expect(pod.cgroup?.pod == Self.podUID)
        #expect(pod.cgroup?.container == Self.containerID)
        #expect(pod.cgroup?.runtime == "containerd")
        #expect(pod.cgroup?.unit == "cri-containerd-\(Self.containerID).scope")
        #expect(pod.pids == [7981, 7992])
        // The sum over its processes: the captured smaps_rollup of 7981 (Rss 19308 kB, Pss 14456 kB)
        // and 7992 (Rss 19668 kB, Pss 17873 kB).
        #expect(pod.totals.residentBytes == (19308 + 19668) * 1024)
        #expect(pod.totals.pssBytes == (14456 + 17873) * 1024)
        // The cgroup's own figures, from its memory.current, memory.max, memory.events, memory.stat.
        let own = try #require(pod.cgroupMemory)
        #expect(own.directory == "\(Self.v2)/cgroup\(Self.containerPath)")
        #expect(own.usageBytes == 52_428_800)
        #expect(own.limitBytes == 134_217_728)
        #expect(own.oomKills == 2)
        #expect(own.anonBytes == 31_457_280 && own.fileBytes == 16_777_216 && own.shmemBytes == 1_048_576)

        let nginx = try #require(report.apps.first { $0.key == "/system.slice/nginx.service" })
        #expect(nginx.name == "nginx.service" && nginx.cgroup?.unit == "nginx.service" && nginx.cgroup?.container == nil)
        #expect(nginx.pids == [8062])
        #expect(nginx.cgroupMemory?.usageBytes == 8_388_608)
        #expect(nginx.cgroupMemory?.limitBytes == nil, "memory.max is max: no limit")
        #expect(nginx.cgroupMemory?.oomKills == 0)

        // v2's root cgroup has no memory files: no figures, and nothing to complain about.
        let root = try #require(report.apps.first { $0.key == "/" })
        #expect(root.name == "/" && root.pids == [8063] && root.cgroupMemory == nil)
        #expect(report.notes.isEmpty, "\(report.notes)")
    }

    @Test("v2: the text table names each app and shows the cgroup's usage, limit and OOM kills; CSV has the fields")
    func v2TextAndCSV() async throws {
        let args = ["top", "--group-by", "cgroup", "--proc-root", "\(Self.v2)/proc", "--cgroup-root", "\(Self.v2)/cgroup"]
        let text = try await runMempressure(args)
        #expect(text.status == 0, "\(text.standardError)")
        let lines = text.standardOutput.split(separator: "\n")
        // The machine header comes first, then the table's column titles.
        let header = try #require(lines.first { $0.hasPrefix("App ") })
        for title in ["App", "Unit", "Usage", "Limit", "OOM kills", "Cgroup"] { #expect(header.contains(title), "\(header)") }
        let podLine = try #require(lines.first { $0.hasPrefix("pod/\(Self.podUID)/5b0c4a1e9f7d ") })
        #expect(podLine.contains("cri-containerd-5b0c4a1e9f7d….scope"))
        #expect(podLine.contains("50.00 MiB") && podLine.contains("128.00 MiB"))
        #expect(podLine.hasSuffix(Self.containerPath))
        let nginxLine = try #require(lines.first { $0.hasPrefix("nginx.service ") })
        #expect(nginxLine.contains(" none "))

        let csv = try await runMempressure(args + ["--csv"])
        let rows = csv.standardOutput.split(separator: "\n")
        #expect(rows.first?.hasSuffix(",unit,pod,container,runtime,cgroupUsageBytes,cgroupLimitBytes,cgroupOomKills,cgroupAnonBytes,cgroupFileBytes,cgroupShmemBytes,supervisedApp,supervisorPid") == true)
        #expect(rows.contains {
            $0.hasPrefix(",pod/\(Self.podUID)/5b0c4a1e9f7d,\(Self.containerPath),2,")
                && $0.hasSuffix(",\(Self.podUID),\(Self.containerID),containerd,52428800,134217728,2,31457280,16777216,1048576,,")
        })
        #expect(rows.contains { $0.hasPrefix(",nginx.service,/system.slice/nginx.service,1,") && $0.hasSuffix(",nginx.service,,,,8388608,,0,4194304,3145728,0,,") })
        #expect(rows.contains { $0.hasPrefix(",/,/,1,") && $0.hasSuffix(",,,,,,,,,,") })
    }

    @Test("a cgroup whose memory files are malformed keeps its name, and a note says what was wrong")
    func malformedFigures() async throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let proc = "\(dir.path)/proc"
        #expect(mkdir(proc, 0o755) == 0)
        try copyTree("\(Self.v2)/proc/8062", to: "\(proc)/8062")
        let unit = "\(dir.path)/cgroup/system.slice/nginx.service"
        for d in ["\(dir.path)/cgroup", "\(dir.path)/cgroup/system.slice", unit] { #expect(mkdir(d, 0o755) == 0) }
        try writeText("8388608\n", to: "\(unit)/memory.current")
        try writeText("max\n", to: "\(unit)/memory.max")
        try writeText("anon lots\ninactive_file 0\n", to: "\(unit)/memory.stat")
        let r = try await runMempressure(["top", "--group-by", "cgroup", "--json", "--proc-root", proc, "--cgroup-root", "\(dir.path)/cgroup"])
        #expect(r.status == 0, "\(r.standardError)")
        let report = try Self.decode(r)
        let app = try #require(report.apps.first)
        #expect(app.name == "nginx.service" && app.cgroupMemory == nil)
        #expect(report.notes.contains("cgroup /system.slice/nginx.service: its own usage and limit could not be read: \(unit)/memory.stat: anon is not a number"), "\(report.notes)")
    }

    // MARK: v1, on real cgroups

    @Test(
        "v1: a cgroup made by the test is an app named by its path, with its own limit and usage, holding the child moved into it",
        .enabled(if: memoryCgroupsAvailable, "needs root and the cgroup v1 memory controller"))
    func realV1() async throws {
        let name = "mempressure-cgtop-\(getpid())"
        let group = try TestMemoryCgroups(top: name)
        defer { group.remove() }
        let path = "/\(name)"
        try group.make(path, limit: 256 << 20)
        try await Hog.session(["--dirty", "1m"]) { hog in
            try group.move(hog.pid, to: path)
            // Charged to the cgroup: pages written after the move.
            _ = try await hog.send("grow-heap \(32 << 20)")
            let before = try group.usage(path)
            let r = try await runMempressure(["top", "--group-by", "cgroup", "--json"])
            let after = try group.usage(path)
            #expect(r.status == 0, "\(r.standardError)")
            let report = try Self.decode(r)
            let app = try #require(report.apps.first { $0.key == path }, "\(report.apps.map(\.key))")
            #expect(app.name == name)
            #expect(app.cgroup?.unit == nil && app.cgroup?.container == nil)
            #expect(app.pids == [hog.pid])
            #expect(app.totals.dirtyBytes >= 33 << 20)
            let own = try #require(app.cgroupMemory)
            #expect(own.directory == "\(Self.v1Root)\(path)")
            #expect(own.limitBytes == 256 << 20)
            // The hog is idle while top reads: the cgroup's usage is what the test reads around it.
            #expect(own.usageBytes >= min(before, after) && own.usageBytes <= max(before, after), "\(before) \(own.usageBytes) \(after)")
            #expect(own.usageBytes >= 32 << 20)
            #expect((own.anonBytes ?? 0) >= 32 << 20, "the heap written in the cgroup is its anonymous memory")
            #expect(own.oomKills == 0)
        }
    }

    @Test(
        "v1: cgroups named like a Kubernetes container and a systemd unit meet the real reader",
        .enabled(if: memoryCgroupsAvailable, "needs root and the cgroup v1 memory controller"))
    func realV1Shapes() async throws {
        let top = "mempressure-cgshape-\(getpid())"
        let group = try TestMemoryCgroups(top: top)
        defer { group.remove() }
        let uid = "0f6b6d1c-4a59-4c1e-9d67-2f1f3b8c5a7e"
        let container = "d7dfb4a21fe1703a8537e60d5af248af729315d187b24a538102d14874c8117d"
        let podPath = "/\(top)/kubepods/burstable/pod\(uid)/\(container)"
        let unitPath = "/\(top)/system.slice/mempressure-test.service"
        try group.make(podPath, limit: 64 << 20)
        try group.make(unitPath, limit: nil)
        try await Hog.session(["--dirty", "1m"]) { podHog in
            try await Hog.session(["--dirty", "1m"]) { unitHog in
                try group.move(podHog.pid, to: podPath)
                try group.move(unitHog.pid, to: unitPath)
                let r = try await runMempressure(["top", "--group-by", "cgroup", "--json"])
                #expect(r.status == 0, "\(r.standardError)")
                let report = try Self.decode(r)
                let pod = try #require(report.apps.first { $0.key == podPath }, "\(report.apps.map(\.key))")
                #expect(pod.name == "pod/\(uid)/d7dfb4a21fe1")
                #expect(pod.cgroup?.pod == uid && pod.cgroup?.container == container && pod.cgroup?.runtime == "kubepods")
                #expect(pod.pids == [podHog.pid])
                #expect(pod.cgroupMemory?.limitBytes == 64 << 20)
                #expect(pod.cgroupMemory?.directory == "\(Self.v1Root)\(podPath)")
                let unit = try #require(report.apps.first { $0.key == unitPath })
                #expect(unit.name == "mempressure-test.service" && unit.cgroup?.unit == "mempressure-test.service")
                #expect(unit.pids == [unitHog.pid])
                #expect(unit.cgroupMemory != nil && unit.cgroupMemory?.limitBytes == nil)
            }
        }
    }

    @Test(
        "v1: the kernel's OOM kill in a cgroup shows in its app",
        .enabled(if: memoryCgroupsAvailable, "needs root and the cgroup v1 memory controller"))
    func realV1OOMKill() async throws {
        let name = "mempressure-cgoom-\(getpid())"
        let group = try TestMemoryCgroups(top: name)
        defer { group.remove() }
        let path = "/\(name)"
        try group.make(path, limit: 48 << 20)
        try await Hog.session(["--dirty", "1m"]) { survivor in
            try group.move(survivor.pid, to: path)
            // A second hog writes past the limit; the cgroup's OOM killer kills it (the largest),
            // and its session ends with it.
            await #expect(throws: HogError.self) {
                try await Hog.session(["--dirty", "1m"]) { grower in
                    try group.move(grower.pid, to: path)
                    _ = try await grower.send("grow-heap \(128 << 20)")
                }
            }
            let r = try await runMempressure(["top", "--group-by", "cgroup", "--json"])
            #expect(r.status == 0, "\(r.standardError)")
            let app = try #require(try Self.decode(r).apps.first { $0.key == path })
            #expect(app.pids == [survivor.pid])
            #expect(app.cgroupMemory?.oomKills == 1)
        }
    }
}

/// A tree of v1 memory cgroups under `/sys/fs/cgroup/memory/<top>`, made by a test and removed
/// with everything below it: any process still inside is first moved back to the test's own
/// memory cgroup (only the test's children are ever moved in), then the directories are removed
/// deepest first.
struct TestMemoryCgroups {
    let root = CgroupTopTests.v1Root
    let top: String
    /// The test process's own memory cgroup, where leftovers go back.
    let home: String

    init(top: String) throws {
        self.top = top
        let text = String(decoding: try ProcFS.readBytes("/proc/self/cgroup"), as: UTF8.self)
        // "hierarchy-ID:controller-list:path"
        let fields = text.split(separator: "\n").map { $0.split(separator: ":", maxSplits: 2, omittingEmptySubsequences: false) }
        guard let line = fields.first(where: { $0.count == 3 && $0[1].split(separator: ",").contains("memory") }) else {
            throw TestFailure("/proc/self/cgroup has no memory controller line")
        }
        let path = line[2]
        home = root + (path == "/" ? "" : path)
        guard mkdir("\(root)/\(top)", 0o755) == 0 else { throw TestFailure("mkdir \(root)/\(top): errno \(errno)") }
    }

    /// Makes `path` (starting with "/<top>") and its parents, with a memory limit on `path`.
    func make(_ path: String, limit: UInt64?) throws {
        var current = root
        for component in path.split(separator: "/") {
            current += "/\(component)"
            if !ProcFS.isDirectory(current) {
                guard mkdir(current, 0o755) == 0 else { throw TestFailure("mkdir \(current): errno \(errno)") }
            }
        }
        if let limit { try ProcFS.writeFileInPlace("\(current)/memory.limit_in_bytes", Array("\(limit)".utf8)) }
    }

    func move(_ pid: Int32, to path: String) throws {
        try ProcFS.writeFileInPlace("\(root)\(path)/cgroup.procs", Array("\(pid)".utf8))
    }

    /// `memory.usage_in_bytes` of `path`.
    func usage(_ path: String) throws -> UInt64 {
        let bytes = try ProcFS.readBytes("\(root)\(path)/memory.usage_in_bytes")
        guard let value = ByteScanner.singleNumber(bytes) else { throw TestFailure("\(root)\(path)/memory.usage_in_bytes: not a number") }
        return value
    }

    func remove() { remove("\(root)/\(top)") }

    private func remove(_ dir: String) {
        let names: [[UInt8]]
        do {
            names = try ProcFS.listDirectory(dir)
        } catch {
            Issue.record("cannot list \(dir) to remove it: \(error)")
            return
        }
        for name in names where ProcFS.isDirectory("\(dir)/\(String(decoding: name, as: UTF8.self))") {
            remove("\(dir)/\(String(decoding: name, as: UTF8.self))")
        }
        do {
            let procs = String(decoding: try ProcFS.readBytes("\(dir)/cgroup.procs"), as: UTF8.self)
            for pid in procs.split(separator: "\n") {
                try ProcFS.writeFileInPlace("\(home)/cgroup.procs", Array(pid.utf8))
            }
        } catch {
            Issue.record("cannot move the processes of \(dir) back to \(home): \(error)")
        }
        if rmdir(dir) != 0 { Issue.record("rmdir \(dir): errno \(errno)") }
    }
}
