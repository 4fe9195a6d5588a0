import FoundationEssentials
import Glibc
import MemPressureLifecycleProtocol
import MemPressureSystem
import Testing
import MemPressureTestSupport
import MemPressureVMTracker

/// A supervised app is its cgroup (`/mempressure-<supervisor PID>-<random>/<APP>`): the path's
/// shapes, `/proc/PID/cgroup` read from golden fixtures (Fixtures/supervised, captured from a
/// real app whose helper double-forked), and the grouping and app snapshots built on them.
@Suite("supervised apps")
struct SupervisedAppTests {
    static let fixture = Fixtures.directory + "/supervised"
    static let device = "mempressure-17658-95703012"
    static let photos = SupervisedAppCgroup(app: "Photos", supervisorPID: 17658, deviceGroup: device, path: "/\(device)/Photos")
    /// The app's main process (the supervisor's child) and its helper (reparented to PID 1).
    static let (main, helper, supervisor): (Int32, Int32, Int32) = (17665, 17667, 17658)

    static let shapes: [(String, SupervisedAppCgroup?)] = [
        ("/mempressure-17658-95703012/Photos", photos),
        ("/mempressure-17658-95703012/Photos/", photos),
        // Cgroups the app made below its own are the app's.
        ("/mempressure-17658-95703012/Photos/worker", photos),
        // A device group below the hierarchy's top (a cgroup namespace, a delegated subtree).
        ("/../../mempressure-1-a/Maps", SupervisedAppCgroup(app: "Maps", supervisorPID: 1, deviceGroup: "mempressure-1-a", path: "/../../mempressure-1-a/Maps")),
        ("/system.slice/x.service/mempressure-2147483647-Zz9/A_b.c-1", SupervisedAppCgroup(
            app: "A_b.c-1", supervisorPID: Int32.max, deviceGroup: "mempressure-2147483647-Zz9", path: "/system.slice/x.service/mempressure-2147483647-Zz9/A_b.c-1")),
        // Not an app's: the device group itself, other names, PIDs that are not PIDs, app names
        // that are not app names.
        ("/mempressure-17658-95703012", nil),
        ("/", nil), ("", nil),
        ("/mempressure-17658/Photos", nil),
        ("/mempressure--1/Photos", nil),
        ("/mempressure-0-1/Photos", nil),
        ("/mempressure-0123-1/Photos", nil),
        ("/mempressure-2147483648-1/Photos", nil),
        ("/mempressure-99999999999999999999-1/Photos", nil),
        ("/mempressure-12-/Photos", nil),
        ("/mempressure-12-a.b/Photos", nil),
        ("/mempressure-12-\(String(repeating: "a", count: 33))/Photos", nil),
        ("/mempressure-12-1/.hidden", nil),
        ("/mempressure-12-1/-dash", nil),
        ("/mempressure-12-1/sp ace", nil),
        ("/mempressure-12-1/\(String(repeating: "a", count: 65))", nil),
        ("/Mempressure-12-1/Photos", nil),
        ("/mempressure-12-1\u{FFFD}/Photos", nil),
    ]

    @Test("the cgroup path of a supervised app, and nothing else, is recognised", arguments: shapes)
    func shape(_ path: String, _ expected: SupervisedAppCgroup?) {
        #expect(SupervisedAppCgroup(path: path) == expected)
        #expect(CgroupIdentity(path: path).supervised == expected)
        if let expected { #expect(CgroupIdentity(path: path).name == expected.app) }
    }

    @Test("a device group's name holds the supervisor's PID")
    func deviceGroupName() {
        let name = SupervisedAppCgroup.deviceGroupName(supervisorPID: 4242, random: 17)
        #expect(name == "mempressure-4242-17")
        #expect(SupervisedAppCgroup(path: "/\(name)/Photos")?.supervisorPID == 4242)
    }

    /// A /proc tree of one process: the main process's captured files with `cgroup` replaced.
    func procWith(cgroup file: String) throws -> (TemporaryDirectory, Snapshotter) {
        let dir = try TemporaryDirectory()
        try copyTree("\(Self.fixture)/proc/\(Self.main)", to: "\(dir.path)/\(Self.main)")
        try writeBytes(try Fixtures.bytes("\(Self.fixture)/\(file)"), to: "\(dir.path)/\(Self.main)/cgroup")
        return (dir, Snapshotter(proc: ProcFS(root: dir.path), cgroupRoot: "/nonexistent"))
    }

    static let procCgroupFiles: [(String, SupervisedAppCgroup?, String)] = [
        // file, the app, the cgroup --group-by cgroup uses (v1 memory, else v2)
        ("v1-memory-and-freezer", photos, "/\(device)/Photos"),
        ("v1-freezer-only", photos, "/process_api/4d8befedb09e8f612d5c23fc04c2c316"),
        ("v1-device-group", nil, "/\(device)"),
        ("v2", photos, "/\(device)/Photos"),
    ]

    @Test("/proc/PID/cgroup: the app from the memory, freezer or unified hierarchy", arguments: procCgroupFiles)
    func procCgroup(_ file: String, _ expected: SupervisedAppCgroup?, _ path: String) throws {
        let (dir, snapshotter) = try procWith(cgroup: file)
        defer { dir.remove() }
        let p = try snapshotter.process(Self.main, options: SnapshotOptions(detail: .rollup, cgroup: true))
        #expect(p.supervisedApp == expected)
        #expect(p.cgroup == path)
        // Without its cgroup read, a process is in no app.
        #expect(try snapshotter.process(Self.main, options: SnapshotOptions(detail: .rollup)).supervisedApp == nil)
    }

    @Test("top's grouping: the main process and its double-forked helper are one app, named by the app")
    func grouping() throws {
        let snapshotter = Snapshotter(proc: ProcFS(root: "\(Self.fixture)/proc"), cgroupRoot: "/nonexistent")
        let machine = try snapshotter.machine(options: SnapshotOptions(detail: .rollup, cgroup: true), workers: 1)
        let byPID = Dictionary(uniqueKeysWithValues: machine.processes.map { ($0.pid, $0) })
        let apps = machine.apps(grouping: .app)
        #expect(apps.count == 2, "\(apps.map(\.name))")
        let app = try #require(apps.first { $0.name == "Photos" })
        #expect(app.key == "/\(Self.device)/Photos")
        #expect(app.pids == [Self.main, Self.helper])
        #expect(app.rootPID == Self.main, "the process the supervisor started heads the app")
        #expect(app.cgroup?.supervised == Self.photos)
        let both = try #require(byPID[Self.main]).totals + (try #require(byPID[Self.helper]).totals)
        #expect(app.totals == both)
        #expect(app.totals.privateDirty == (3296 + 7392) * 1024, "the two captured smaps_rollup's Private_Dirty")
        #expect(apps.first { $0.name == "bash" }?.pids == [Self.supervisor])

        // Without the cgroups, the process tree splits the app in two: the helper's parent is init.
        let trees = try snapshotter.machine(options: SnapshotOptions(detail: .rollup), workers: 1).apps(grouping: .app)
        #expect(trees.filter { $0.name == "mempressure-hog" }.map(\.pids).sorted { $0[0] < $1[0] } == [[Self.main], [Self.helper]])
        // By cgroup, the app's cgroup is named by the app too.
        let byCgroup = try #require(machine.apps(grouping: .cgroup).first { $0.key == "/\(Self.device)/Photos" })
        #expect(byCgroup.name == "Photos" && byCgroup.pids == [Self.main, Self.helper])
    }

    @Test("an app snapshot by the supervised app's name holds every process in its cgroup")
    func appByName() throws {
        let snapshotter = Snapshotter(proc: ProcFS(root: "\(Self.fixture)/proc"), cgroupRoot: "/nonexistent")
        #expect(try snapshotter.supervisedApp(named: "Photos").map { [$0.app.path] + $0.pids.map(String.init) } == ["/\(Self.device)/Photos", "17665", "17667"])
        let app = try snapshotter.app(.supervisedApp("Photos"), options: SnapshotOptions(detail: .regions, status: true))
        #expect(app.name == "Photos")
        #expect(app.processes.map(\.pid) == [Self.main, Self.helper])
        #expect(app.supervisedApp == Self.photos)
        #expect(app.rootPID == nil && app.mainPID == Self.main)
        let report = VMReport(app, includeRegions: false)
        #expect(report.pid == Self.main && report.scope == "app" && report.supervisedApp == Self.photos)
        #expect(report.processes.map(\.pid) == [Self.main, Self.helper])
        #expect(report.renderText().hasPrefix("Photos [17665]  app of 2 processes, supervised: cgroup /\(Self.device)/Photos of supervisor 17658\n"))

        #expect(throws: LookupError.noSupervisedApp("Maps")) { try snapshotter.app(.supervisedApp("Maps")) }
        // A process tree of the main process is not the app: its helper is not a descendant.
        let tree = try snapshotter.app(.tree(Self.main), options: SnapshotOptions(detail: .rollup))
        #expect(tree.processes.map(\.pid) == [Self.main] && tree.supervisedApp == nil)
    }

    @Test("two supervisors with an app of one name: the name is ambiguous, and the error lists both cgroups")
    func ambiguous() throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        try copyTree("\(Self.fixture)/proc/\(Self.main)", to: "\(dir.path)/\(Self.main)")
        try copyTree("\(Self.fixture)/proc/\(Self.helper)", to: "\(dir.path)/\(Self.helper)")
        try writeText("0::/mempressure-77-1/Photos\n", to: "\(dir.path)/\(Self.helper)/cgroup")
        let snapshotter = Snapshotter(proc: ProcFS(root: dir.path), cgroupRoot: "/nonexistent")
        let expected = LookupError.ambiguousSupervisedApp("Photos", cgroups: ["/mempressure-17658-95703012/Photos", "/mempressure-77-1/Photos"])
        #expect(throws: expected) { try snapshotter.supervisedApp(named: "Photos") }
        #expect(expected.description.hasSuffix("pass --cgroup PATH instead"))
    }
}
