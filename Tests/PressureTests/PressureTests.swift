import Glibc
import MemPressureSystem
import MemPressureHogClient
import MemPressureMonitor
import MemPressureValues
import Synchronization
import Testing
import MemPressureTestSupport

@Suite("pressure")
struct PressureTests {
    @Test("the machine's sources are detected and each says why it is or is not used")
    func detect() {
        let sources = PressureMonitor.detectSources()
        #expect(sources.contains { $0.name.hasPrefix("MemAvailable") && $0.available })
        #expect(sources.contains { $0.name.hasPrefix("psi") })
        for s in sources { #expect(!s.detail.isEmpty) }
    }

    @Test("the judgement of a cgroup's working set: thresholds with hysteresis")
    func hysteresis() {
        func thresholdLevelForTests(_ x: Double, _ current: PressureLevel) -> PressureLevel {
            let used = UInt64(x * 10_000)
            let status = MemoryStatus(budgetBytes: 10_000, usedBytes: used, availableBytes: 10_000 - used, source: "test")
            return PressureConfiguration().judge(MemoryEvidence(status: status), current: current).level
        }
        #expect(thresholdLevelForTests(0.79, .normal) == .normal)
        #expect(thresholdLevelForTests(0.80, .normal) == .warning)
        #expect(thresholdLevelForTests(0.77, .warning) == .warning, "stays until below 0.75")
        #expect(thresholdLevelForTests(0.74, .warning) == .normal)
        #expect(thresholdLevelForTests(0.96, .warning) == .critical)
        #expect(thresholdLevelForTests(0.92, .critical) == .critical)
        #expect(thresholdLevelForTests(0.89, .critical) == .warning)
    }

    @Test("/proc/meminfo")
    func meminfo() {
        let text = Array("MemTotal:       24000000 kB\nMemFree:  1 kB\nMemAvailable:    6000000 kB\n".utf8)
        let (total, available) = text.withUnsafeBytes { MemInfo.totalAndAvailable($0) }
        #expect(total == 24_000_000 * 1024)
        #expect(available == 6_000_000 * 1024)
    }

    @Test("a source that cannot be read says so in its status while it cannot, and not after")
    func unreadableSource() async throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let good = "MemTotal:       1000000 kB\nMemAvailable:    900000 kB\n"
        try writeText(good, to: "\(dir.path)/meminfo")
        var configuration = PressureConfiguration()
        configuration.procRoot = dir.path
        configuration.usePSI = false
        configuration.pollInterval = 0.02
        let monitor = PressureMonitor(configuration: configuration)
        defer { monitor.stop() }
        let changes = monitor.sourceChanges()
        try writeText("MemTotal: 1000000 kB\n", to: "\(dir.path)/meminfo")  // no MemAvailable
        let failing = await first(of: changes, within: 20) { $0.detail.contains("; note: cannot read it now") }
        #expect(failing?.available == true && failing?.detail.contains("no MemTotal or MemAvailable") == true, "\(failing.map(\.detail) ?? "no note")")
        try writeText(good, to: "\(dir.path)/meminfo")
        let working = await first(of: changes, within: 20) { !$0.detail.contains("note:") }
        #expect(working?.available == true && working?.wakeup == .poll, "\(working.map(\.description) ?? "the note stayed")")
        #expect(monitor.level == .normal)
    }

    static var memoryCgroupsAvailable: Bool { getuid() == 0 && ProcFS.isFile("/sys/fs/cgroup/memory/cgroup.procs") }

    /// Real pressure: a process inside a memory cgroup allocates towards the limit.
    @Test("allocating inside a cgroup near its limit raises warning, then critical, from the real source", .enabled(if: memoryCgroupsAvailable, "needs root and the cgroup v1 memory controller"))
    func cgroupPressure() async throws {
        let group = "/sys/fs/cgroup/memory/mempressure-test-\(getpid())"
        #expect(mkdir(group, 0o755) == 0)
        defer { rmdir(group) }
        try ProcFS.writeFileInPlace("\(group)/memory.limit_in_bytes", Array("\(96 << 20)".utf8))
        var configuration = PressureConfiguration(cgroup: group)
        configuration.pollInterval = 0.02
        configuration.usePSI = false
        configuration.usageWarningFraction = 0.5
        configuration.usageCriticalFraction = 0.75
        let monitor = PressureMonitor(configuration: configuration)
        defer { monitor.stop() }
        #expect(monitor.sources.contains { $0.name == "cgroup usage against its limit" && $0.available })
        #expect(monitor.sources.contains { $0.name == "cgroup v1 memory.pressure_level" && $0.available })
        // An in-process subscriber, as a cache would be.
        let heard = Mutex<[PressureLevel]>([])
        let subscription = monitor.subscribe { event in heard.withLock { $0.append(event.level) } }
        defer { subscription.cancel() }

        try await Hog.session(["--dirty", "1m"]) { hog in
            try ProcFS.writeFileInPlace("\(group)/cgroup.procs", Array("\(hog.pid)".utf8))
            defer { _ = writeTextReportingFailure("\(hog.pid)", to: "/sys/fs/cgroup/memory/cgroup.procs") }
            // The source reads the working set (usage − inactive file), as the kubelet counts it.
            var buffer = ReadBuffer(capacity: 16384)
            let memory = CgroupMemory(directory: group)
            func usage() throws -> Double {
                let r = try memory.read(&buffer)
                #expect(r.limitBytes == 96 << 20)
                return Double(r.workingSetBytes) / Double(96 << 20)
            }
            // Grow until past the warning threshold, then wait for the monitor to say so.
            while try usage() < 0.55 { _ = try await hog.send("grow-heap \(2 << 20)") }
            let first = try #require(await monitor.waitForLevel(atLeast: .warning, timeout: 20))
            #expect(first.level == .warning, "\(first)")
            #expect(first.source == "cgroup usage against its limit")
            while try usage() < 0.8 { _ = try await hog.send("grow-heap \(2 << 20)") }
            let second = try #require(await monitor.waitForLevel(atLeast: .critical, timeout: 20))
            #expect(second.level == .critical, "\(second)")
            #expect(monitor.level == .critical)
        }
        // The subscriber heard both, in order (it runs in a task of its own: wait for it).
        let deadline = monotonicSeconds() + 10
        while heard.withLock({ $0.count }) < 2, monotonicSeconds() < deadline { await Task.yield() }
        #expect(heard.withLock { Array($0.prefix(2)) } == [.warning, .critical])
    }

    @Test("a watched cgroup that is removed stops its sources, without a false alarm", .enabled(if: memoryCgroupsAvailable, "needs root and the cgroup v1 memory controller"))
    func removedCgroup() async throws {
        let group = "/sys/fs/cgroup/memory/mempressure-test-gone-\(getpid())"
        #expect(mkdir(group, 0o755) == 0)
        var configuration = PressureConfiguration(cgroup: group)
        configuration.pollInterval = 0.02
        configuration.usePSI = false
        let monitor = PressureMonitor(configuration: configuration)
        defer { monitor.stop() }
        let watched: Set<String> = ["cgroup v1 memory.pressure_level", "cgroup usage against its limit"]
        #expect(watched.allSatisfy { name in monitor.sources.contains { $0.name == name && $0.available } })
        let changes = monitor.sourceChanges()
        #expect(rmdir(group) == 0)
        // The kernel signals the pressure_level eventfds as the cgroup goes: not pressure.
        let stoppedNames = Mutex<Set<String>>([])
        let all = await first(of: changes, within: 20) { status in
            stoppedNames.withLock { names in
                if !status.available { names.insert(status.name) }
                return names == watched
            }
        }
        #expect(all != nil, "stopped: \(stoppedNames.withLock { $0 })")
        for name in watched {
            let status = try #require(monitor.sources.first { $0.name == name })
            #expect(!status.available && status.detail.hasPrefix("stopped:"), "\(status)")
        }
        #expect(monitor.history.isEmpty, "no level change: \(monitor.history)")
        #expect(monitor.level == .normal)
    }
}
