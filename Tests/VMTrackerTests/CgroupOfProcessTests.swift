import Glibc
import MemPressureSystem
import Testing
import MemPressureTestSupport

/// Which cgroup a process is in (`CgroupDirectory.of`, from `/proc/PID/cgroup`) and the group
/// above one: read from fake roots, so that both hierarchies' shapes are checked on any machine.
@Suite("the cgroup of a process")
struct CgroupOfProcessTests {
    static let hybrid = "12:pids:/\n4:memory:/mempressure-7-a/Photos\n1:name=systemd:/user.slice\n0::/user.slice/x.scope\n"

    @Test("the memory hierarchy's path is found, else the unified one; a line that is not three fields is skipped")
    func paths() {
        func path(_ text: String, _ controller: String) -> String? {
            Array(text.utf8).withUnsafeBytes { CgroupDirectory.relativePath(inProcCgroup: $0, controller: controller) }
        }
        #expect(path(Self.hybrid, "memory") == "/mempressure-7-a/Photos")
        #expect(path(Self.hybrid, "freezer") == "/user.slice/x.scope")
        #expect(path("3:cpu,cpuacct,memory:/a\n", "memory") == "/a")
        #expect(path("garbage\n4:memory\n", "memory") == nil)
        #expect(path("", "memory") == nil)
    }

    @Test("the group above: one component less, the root above a top group, none above the root")
    func parent() {
        let hierarchy = "/sys/fs/cgroup/memory"
        #expect(CgroupDirectory(hierarchy: hierarchy, controller: "memory", relativePath: "/d/app").parent?.path == "\(hierarchy)/d")
        #expect(CgroupDirectory(hierarchy: hierarchy, controller: "memory", relativePath: "/d").parent?.relativePath == "/")
        #expect(CgroupDirectory(hierarchy: hierarchy, controller: "memory", relativePath: "/").parent == nil)
    }

    @Test("a process's cgroup under a v1 root, and under a v2 one; a process in neither has none; one that cannot be read is an error")
    func of() throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let proc = "\(dir.path)/proc", v1 = "\(dir.path)/v1", v2 = "\(dir.path)/v2"
        for d in [proc, "\(proc)/42", "\(proc)/43", v1, "\(v1)/memory", v2] { #expect(mkdir(d, 0o755) == 0, "\(d)") }
        try writeText("", to: "\(v1)/memory/cgroup.procs")
        try writeText("", to: "\(v2)/cgroup.procs")
        try writeText("", to: "\(v2)/cgroup.controllers")
        try writeText(Self.hybrid, to: "\(proc)/42/cgroup")
        try writeText("1:name=systemd:/\n", to: "\(proc)/43/cgroup")
        let own = try #require(try CgroupDirectory.of(process: "42", controller: "memory", root: v1, procRoot: proc))
        #expect(own.path == "\(v1)/memory/mempressure-7-a/Photos" && own.controller == "memory")
        #expect(own.parent?.path == "\(v1)/memory/mempressure-7-a")
        let unified = try #require(try CgroupDirectory.of(process: "42", controller: "memory", root: v2, procRoot: proc))
        #expect(unified.path == "\(v2)/user.slice/x.scope" && unified.isV2)
        #expect(try CgroupDirectory.of(process: "43", controller: "memory", root: v1, procRoot: proc) == nil)
        #expect(throws: CgroupError.self) { try CgroupDirectory.of(process: "44", controller: "memory", root: v1, procRoot: proc) }
    }
}
