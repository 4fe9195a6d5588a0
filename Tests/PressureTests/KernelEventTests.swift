import Glibc
import MemPressureSystem
import MemPressureHogClient
import MemPressureMonitor
import MemPressureValues
import SystemPackage
import Testing
import MemPressureTestSupport

/// The monitor woken by the kernel, on a real cgroup v1 memory group and a real allocation by a
/// child process (mempressure-hog, started inside the group). The monitor's poll interval is an
/// hour: nothing it hears within a test can come from a timer, so each wake is the kernel's event.
/// Whether this machine has cgroup v1's memory controller, with its notifications, for root.
private let cgroupV1Events = getuid() == 0 && ProcFS.isFile("/sys/fs/cgroup/memory/cgroup.event_control")

@Suite("kernel events", .serialized, .enabled(if: cgroupV1Events, "needs root and the cgroup v1 memory controller"))
struct KernelEventTests {
    /// Runs `body` with a new memory group limited to `limitMB` (and `oom_kill_disable 1` if
    /// `holdOOMKiller`), a monitor of it that never polls (PSI left out: it is the whole
    /// machine's), subscribed to its wakes and changes of level, and then a process started
    /// inside the group that allocates as `hogArguments` say. Whatever happens, the process is
    /// killed and reaped, the monitor stopped and the group removed.
    func withGroup(
        _ label: String, limitMB: Int, holdOOMKiller: Bool = false, hogArguments: [String],
        _ body: (_ group: String, _ monitor: PressureMonitor, _ wakes: AsyncStream<PressureWake>, _ levels: AsyncStream<PressureEvent>, _ hog: ProcessHandle) async throws -> Void
    ) async throws {
        let group = "/sys/fs/cgroup/memory/mempressure-test-\(label)-\(getpid())"
        try ProcFS.makeDirectory(group)
        var monitor: PressureMonitor?
        var hog: ProcessHandle?
        try await withCleanup({
            if let hog {
                do throws(SystemCallError) {
                    try hog.signal(SIGKILL)
                } catch {
                    if error.errno != .noSuchProcess { Issue.record("cannot kill the hog: \(error)") }
                }
                var status: Int32 = 0
                _ = retryOnInterrupt { waitpid(hog.pid, &status, 0) }
            }
            monitor?.stop()
            if holdOOMKiller { _ = writeTextReportingFailure("0", to: "\(group)/memory.oom_control") }
            if rmdir(group) != 0 { Issue.record("cannot remove \(group): errno \(errno)") }
        }) {
            try ProcFS.writeFileInPlace("\(group)/memory.limit_in_bytes", Array("\(limitMB << 20)".utf8))
            if holdOOMKiller { try ProcFS.writeFileInPlace("\(group)/memory.oom_control", Array("1".utf8)) }
            var configuration = PressureConfiguration(cgroup: group)
            configuration.pollInterval = 3600
            configuration.usePSI = false
            let m = PressureMonitor(configuration: configuration)
            monitor = m
            let wakes = m.wakes()
            let levels = m.events()
            try await body(group, m, wakes, levels, try Self.spawnHog(in: group, hogArguments) { hog = $0 })
        }
    }

    /// Starts mempressure-hog inside `group` (a shell joins the group, then execs it), its
    /// standard output discarded; `started` gets its handle as soon as it exists.
    static func spawnHog(in group: String, _ arguments: [String], started: (ProcessHandle) -> Void) throws -> ProcessHandle {
        let hog = try Hog.executablePath()
        let argv = ["/bin/sh", "-c", "echo $$ > \(group)/cgroup.procs && exec \"$0\" \"$@\" > /dev/null", hog] + arguments
        let cArguments = argv.map { strdup($0) } + [nil]
        defer { for a in cArguments { free(a) } }
        var pid: pid_t = 0
        let rc = withShellSignals { attributes in posix_spawn(&pid, "/bin/sh", nil, attributes, cArguments, environ) }
        guard rc == 0 else { throw TestFailure("posix_spawn: errno \(rc)") }
        let handle = try ProcessHandle(pid: pid)
        started(handle)
        return handle
    }

    @Test("a usage threshold eventfd fires as a child's allocation crosses it: the monitor wakes on the kernel's event and judges the working set")
    func usageThreshold() async throws {
        // 108 MiB of 128 is 84%: past the lines at 75% and 80%.
        try await withGroup("threshold", limitMB: 128, hogArguments: ["--dirty", "108m", "--wait", "signal"]) { _, m, wakes, levels, _ in
            let status = try #require(m.sources.first { $0.name == "cgroup usage against its limit" })
            #expect(status.available && status.wakeup == .event && status.detail.contains("usage thresholds"), "\(status)")
            let wake = await first(of: wakes, within: 30) { $0.events.contains { $0.hasSuffix("usage threshold") } }
            let woken = try #require(wake, "no usage threshold event within 30 s")
            #expect(woken.wakeup == .event)
            let warning = try #require(await first(of: levels, within: 30) { $0.level >= .warning }, "the working set never judged warning")
            #expect(warning.source == "cgroup usage against its limit" && warning.wakeup == .event, "\(warning)")
            #expect(warning.detail.hasPrefix("working set "), "\(warning.detail)")
            #expect(m.history.allSatisfy { $0.wakeup == .event }, "no change came from a poll: \(m.history)")
        }
    }

    @Test("a memory.oom_control eventfd fires as a child hits the limit; with the kernel's killer held it waits, and the monitor judges it critical")
    func oomControl() async throws {
        try await withGroup("oom", limitMB: 64, holdOOMKiller: true, hogArguments: ["--dirty", "128m", "--wait", "signal"]) { group, m, wakes, _, hog in
            let wake = await first(of: wakes, within: 30) { $0.events.contains { $0.hasSuffix("a task at the limit (memory.oom_control)") } }
            let woken = try #require(wake, "no memory.oom_control event within 30 s")
            #expect(woken.wakeup == .event && woken.level == .critical, "\(woken)")
            // The child waits at the limit: the kernel's killer is held, nobody was killed.
            var buffer = ReadBuffer()
            let reading = try CgroupMemory(directory: group).read(&buffer)
            #expect(reading.taskWaitsAtLimit == true && reading.oomKills == 0, "\(reading)")
            #expect(try ChildSignals.isAlive(hog.pid), "the child is alive, waiting")
            #expect(m.level == .critical)
        }
    }
}
