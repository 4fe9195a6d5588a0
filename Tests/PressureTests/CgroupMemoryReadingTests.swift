import Glibc
import MemPressureSystem
import MemPressureMonitor
import Testing
import MemPressureTestSupport

/// `CgroupMemory.read` over cgroup directories written by the test: OOM kills and memory.stat's
/// anonymous, file and shared memory on v1 and v2, nil where the kernel does not say, an error
/// where it says something that is not a number.
@Suite("cgroup memory reading")
struct CgroupMemoryReadingTests {
    /// A v2 cgroup directory as the kernel writes one (values from a real v2 layout).
    func v2(_ dir: String, events: String? = "low 0\nhigh 0\nmax 12\noom 2\noom_kill 2\noom_group_kill 0\n", stat: String? = nil) throws {
        try writeText("268435456\n", to: "\(dir)/memory.current")
        try writeText("536870912\n", to: "\(dir)/memory.max")
        try writeText(stat ?? "anon 201326592\nfile 62914560\nkernel 4194304\nshmem 8388608\ninactive_file 41943040\nactive_file 20971520\n", to: "\(dir)/memory.stat")
        if let events { try writeText(events, to: "\(dir)/memory.events") }
    }

    /// A v1 memory cgroup directory (keys as Linux 6.18 writes them).
    func v1(_ dir: String, oomControl: String? = "oom_kill_disable 0\nunder_oom 0\noom_kill 3\n", stat: String? = nil) throws {
        try writeText("104857600\n", to: "\(dir)/memory.usage_in_bytes")
        try writeText("9223372036854771712\n", to: "\(dir)/memory.limit_in_bytes")
        try writeText(
            stat ?? "cache 9220096\nrss 9891840\nrss_huge 2097152\nshmem 4096\ninactive_file 4096\ntotal_cache 580497408\ntotal_rss 18223104\ntotal_shmem 9068544\ntotal_inactive_file 491528192\n",
            to: "\(dir)/memory.stat")
        if let oomControl { try writeText(oomControl, to: "\(dir)/memory.oom_control") }
    }

    func read(_ dir: String) throws(CgroupMemory.ReadError) -> CgroupMemory.Reading {
        var buffer = ReadBuffer()
        return try CgroupMemory(directory: dir).read(&buffer)
    }

    @Test("v2: memory.events' oom_kill and memory.stat's anon, file, shmem")
    func readsV2() throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        try v2(dir.path)
        let r = try read(dir.path)
        #expect(r.usageBytes == 268_435_456 && r.limitBytes == 536_870_912 && r.inactiveFileBytes == 41_943_040)
        #expect(r.oomKills == 2)
        #expect(r.anonBytes == 201_326_592 && r.fileBytes == 62_914_560 && r.shmemBytes == 8_388_608)
        #expect(r.taskWaitsAtLimit == nil, "v2 does not say whether a task waits at the limit")
    }

    @Test("v1: memory.oom_control's oom_kill and the cgroup's own rss, cache, shmem (not total_, not + rss_huge)")
    func readsV1() throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        try v1(dir.path)
        let r = try read(dir.path)
        #expect(r.usageBytes == 104_857_600 && r.limitBytes == nil)
        #expect(r.inactiveFileBytes == 491_528_192, "the working set still counts the subtree (total_inactive_file)")
        #expect(r.oomKills == 3)
        #expect(r.anonBytes == 9_891_840 && r.fileBytes == 9_220_096 && r.shmemBytes == 4096)
        #expect(r.taskWaitsAtLimit == false)
        try v1(dir.path, oomControl: "oom_kill_disable 1\nunder_oom 1\noom_kill 3\n")
        #expect(try read(dir.path).taskWaitsAtLimit == true, "under_oom 1: a task waits at the limit")
    }

    @Test("missing files and keys are nil, never zero")
    func missingIsNil() throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        // v1 before Linux 4.13: no oom_kill line; no shmem key.
        try v1(dir.path, oomControl: "oom_kill_disable 0\nunder_oom 0\n", stat: "cache 1\nrss 2\ntotal_inactive_file 0\n")
        let r = try read(dir.path)
        #expect(r.oomKills == nil && r.shmemBytes == nil)
        #expect(r.anonBytes == 2 && r.fileBytes == 1)
        let v2dir = try TemporaryDirectory()
        defer { v2dir.remove() }
        try v2(v2dir.path, events: nil, stat: "inactive_file 0\n")
        let r2 = try read(v2dir.path)
        #expect(r2.oomKills == nil && r2.anonBytes == nil && r2.fileBytes == nil && r2.shmemBytes == nil)
    }

    @Test("a value that is not a number is an error naming the file and key")
    func malformed() throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        try v2(dir.path, events: "oom 1\noom_kill many\n")
        #expect(throws: CgroupMemory.ReadError.malformed(file: "\(dir.path)/memory.events", reason: "oom_kill is not a number")) { try read(dir.path) }
        try v2(dir.path, stat: "anon -5\ninactive_file 0\n")
        #expect(throws: CgroupMemory.ReadError.malformed(file: "\(dir.path)/memory.stat", reason: "anon is not a number")) { try read(dir.path) }
        try v2(dir.path, stat: "anon 5\nshmem\ninactive_file 0\n")
        #expect(throws: CgroupMemory.ReadError.malformed(file: "\(dir.path)/memory.stat", reason: "shmem is not a number")) { try read(dir.path) }
        try v2(dir.path, stat: "anon 5\n")
        #expect(throws: CgroupMemory.ReadError.malformed(file: "\(dir.path)/memory.stat", reason: "no inactive_file")) { try read(dir.path) }
        let v1dir = try TemporaryDirectory()
        defer { v1dir.remove() }
        try v1(v1dir.path, oomControl: "oom_kill_disable 1\nunder_oom yes\n")
        #expect(throws: CgroupMemory.ReadError.malformed(file: "\(v1dir.path)/memory.oom_control", reason: "under_oom is not a number")) { try read(v1dir.path) }
    }

    static var memoryCgroupsAvailable: Bool { getuid() == 0 && ProcFS.isFile("/sys/fs/cgroup/memory/cgroup.procs") }

    @Test("a real v1 memory cgroup has the keys read here", .enabled(if: memoryCgroupsAvailable, "needs root and the cgroup v1 memory controller"))
    func realV1() throws {
        let group = "/sys/fs/cgroup/memory/mempressure-reading-test-\(getpid())"
        try #require(mkdir(group, 0o755) == 0)
        defer { rmdir(group) }
        try ProcFS.writeFileInPlace("\(group)/memory.limit_in_bytes", Array("\(64 << 20)".utf8))
        let r = try read(group)
        #expect(r.limitBytes == 64 << 20)
        #expect(r.oomKills == 0, "Linux >= 4.13 counts OOM kills in memory.oom_control")
        #expect(r.taskWaitsAtLimit == false)
        #expect(r.anonBytes != nil && r.fileBytes != nil && r.shmemBytes != nil)
    }
}
