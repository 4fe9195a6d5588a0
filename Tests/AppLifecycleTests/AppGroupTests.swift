import MemPressureLifecycle
import Glibc
import MemPressureLifecycleProtocol
import MemPressureSystem
import Testing
import MemPressureTestSupport

/// Whether apps can be cgroups here (root, and a cgroup controller).
let canContain = Supervisor.canContainInCgroups()

/// A shell app whose helper ignores SIGTERM and leaves the process tree (double fork: it is
/// reparented away from the app), while the app itself waits in `sleep` (it ignores SIGTERM too).
let doubleForking = ["/bin/sh", "-c", "trap '' TERM; (sleep 31998 &); exec sleep 31998"]

/// The app's processes other than its main one whose command line starts with `marker` (the
/// long-lived helper: not a short `sleep` the app's shell forks meanwhile, nor the subshell that
/// forks the helper, whose command line is the shell's), each watched through
/// a pidfd (checked to be in the app's cgroup, or its process group, after the pidfd was opened);
/// waited for until `count` of them are found.
func helpers(of s: Supervisor, _ name: String, count: Int = 1, marker: String = "sleep 31998", within timeout: Double = 10) async throws -> [WatchedProcess] {
    let main = try #require(try await s.pid(of: name))
    let groups = try await s.cgroups(of: name)
    let found = await within(timeout) { () async -> [WatchedProcess]? in
        while !Task.isCancelled {
            let pids: [Int32]
            do {
                pids = try await s.processes(of: name).filter { $0 != main }
            } catch {
                return nil
            }
            let watched = pids.compactMap { pid in
                WatchedProcess(pid) { pid in
                    let inApp: Bool
                    if let memory = groups.first {
                        let relative = "/" + memory.split(separator: "/").suffix(2).joined(separator: "/")
                        inApp = cgroupLines(of: pid).contains { $0.hasSuffix(":" + relative) }
                    } else {
                        inApp = AppGroupTests.processGroup(of: pid) == main
                    }
                    return inApp && commandLine(of: pid).hasPrefix(marker)
                }
            }
            if watched.count >= count { return watched }
            // No kernel event says a process joined a cgroup: look again shortly.
            do { try await Task.sleep(for: .milliseconds(5)) } catch { return nil }
        }
        return nil
    }
    return try #require(found, "\(name) did not have \(count) helper(s) running \(marker) within \(timeout) s")
}

/// The process's command line, its arguments joined by spaces ("" once it is gone).
func commandLine(of pid: Int32) -> String {
    do {
        return String(decoding: try ProcFS.readBytes("/proc/\(pid)/cmdline").map { $0 == 0 ? 0x20 : $0 }, as: UTF8.self)
    } catch {
        return ""
    }
}

@Suite("an app is all of its processes", .serialized)
struct AppGroupTests {
    static func processGroup(of pid: Int32) -> Int32? {
        do {
            let bytes = try ProcFS.readBytes("/proc/\(pid)/stat")
            return try bytes.withUnsafeBytes { (b) throws(ProcError) in try ProcessStat.parse(b, pid: pid) }.processGroup
        } catch {
            return nil
        }
    }

    static let containments: [AppContainment] = canContain ? [.cgroup, .processGroup] : [.processGroup]

    @Test("terminate ends every process of the app, a helper that ignores SIGTERM and left the process tree included; its cgroup and the device's are removed", arguments: containments)
    func terminateEndsHelpers(_ containment: AppContainment) async throws {
        let s = try Supervisor(configuration: supervisorConfiguration {
            $0.containment = containment
            if containment == .cgroup { $0.budgetBytes = 64 << 20 }
            $0.terminateGrace = 0.2
        })
        try await withCleanup({ await s.shutdown() }) {
            try await s.register(AppSpec(name: "A", command: doubleForking, client: false))
            try await s.launch("A")
            let helper = try #require(try await helpers(of: s, "A").first, "the helper is watched")
            let groups = try await s.cgroups(of: "A")
            #expect(groups.isEmpty == (containment == .processGroup))
            try await s.terminate("A")
            #expect(await helper.waitForExit(timeout: 10), "the helper (pid \(helper.pid)) ended with the app")
            #expect(try await s.state(of: "A") == .notRunning)
            #expect(try await s.processes(of: "A").isEmpty)
            for g in groups { #expect(!ProcFS.isDirectory(g), "\(g) removed") }
            let log = await s.log
            #expect(log.contains { if case .othersEnded = $0.payload { $0.app == "A" } else { false } })
            #expect(!log.contains { $0.kind == .error }, "\(log.filter { $0.kind == .error })")
        }
        let leftovers = await s.leftovers
        #expect(leftovers.isEmpty, "\(leftovers)")
        if let device = s.deviceMemoryCgroup { #expect(!ProcFS.isDirectory(device), "the device cgroup is removed") }
    }

    @Test("an app whose main process crashes takes its helpers with it: they are ended before it is not running, and a relaunch starts clean", arguments: containments)
    func crashEndsHelpers(_ containment: AppContainment) async throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let go = "\(dir.path)/go"
        // The app forks a helper, then crashes (SIGSEGV) once the test has watched the helper
        // and made the file `go`.
        let script = "(sleep 31998 &); while [ ! -e \"$0\" ]; do sleep 0.01; done; kill -SEGV $$"
        let s = try Supervisor(configuration: supervisorConfiguration { $0.containment = containment })
        try await withCleanup({ await s.shutdown() }) {
            try await s.register(AppSpec(name: "C", command: ["/bin/sh", "-c", script, go], client: false))
            try await s.launch("C")
            let helper = try #require(try await helpers(of: s, "C").first)
            let crashes = await s.logStream()
            #expect(creat(go, 0o600) >= 0)
            let crash = await first(of: crashes, within: 10) { $0.app == "C" && ($0.kind == .crash || $0.kind == .exit) }
            #expect(crash?.kind == .crash, "\(String(describing: crash))")
            // By the time the app is not running, its helper is gone.
            try await s.waitForState("C", .notRunning, timeout: 10)
            #expect(!helper.isAlive, "the helper (pid \(helper.pid)) ended with the app")
            #expect(await s.log.contains { if case .othersEnded = $0.payload { $0.app == "C" } else { false } })
            unlink(go)
            try await s.launch("C")
            let fresh = try await s.processes(of: "C")
            #expect(!fresh.contains(helper.pid))
        }
        let leftovers = await s.leftovers
        #expect(leftovers.isEmpty, "\(leftovers)")
    }

    @Test("a second supervisor on a live one's runtime directory refuses to start and touches nothing; once the first has shut down, a new one starts")
    func oneSupervisorPerDirectory() async throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let runtime = "\(dir.path)/run"
        let first = try Supervisor(configuration: supervisorConfiguration { $0.runtimeDirectory = runtime })
        try await withCleanup({ await first.shutdown() }) {
            let socket = await first.socketPath
            let before = ProcFS.fileIdentity(Array(socket.utf8))
            #expect(throws: SupervisorError.setup(.busy(directory: runtime, pid: getpid()))) {
                _ = try Supervisor(configuration: supervisorConfiguration { $0.runtimeDirectory = runtime })
            }
            #expect(ProcFS.fileIdentity(Array(socket.utf8)) == before, "the live supervisor's socket is untouched")
            try await first.register(AppSpec(name: "P", command: ["/bin/sleep", "60"], client: false))
            try await first.launch("P")
            #expect(try await first.state(of: "P") == .inactive)
        }
        let second = try Supervisor(configuration: supervisorConfiguration { $0.runtimeDirectory = runtime })
        #expect(second.recovered.isEmpty, "a clean shutdown leaves nothing to recover")
        await second.shutdown()
    }
}
