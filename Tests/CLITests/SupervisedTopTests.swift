import FoundationEssentials
import Glibc
import MemPressureLifecycleProtocol
import MemPressureSystem
import Synchronization
import SystemPackage
import Testing
import MemPressureTestSupport
import MemPressureVMTracker

/// `top` and `vm` show a supervised app (every process in its cgroup
/// `/mempressure-<supervisor PID>-<random>/<APP>`) as one app named APP, also when a helper of it
/// double-forked and was reparented to init. From the golden fixture (Fixtures/supervised), and
/// with real processes in a real v1 layout the test makes.
@Suite("top and vm: a supervised app is one app", .serialized)
struct SupervisedTopTests {
    static let fixture = Fixtures.directory + "/supervised/proc"
    static let fixtureArguments = ["--proc-root", fixture, "--cgroup-root", "/nonexistent"]
    static let fixtureKey = "/mempressure-17658-95703012/Photos"

    static func decode<T: Decodable>(_ type: T.Type, _ r: CommandResult) throws -> T {
        try JSONDecoder().decode(type, from: Data(r.standardOutput.utf8))
    }

    @Test("fixture: top --json, top and top --group-by cgroup name the app and say whose supervisor")
    func fixtureTop() async throws {
        let json = try await runMempressure(["top", "--json"] + Self.fixtureArguments)
        #expect(json.status == 0, "\(json.standardError)")
        let report = try Self.decode(TopReport.self, json)
        #expect(report.apps.map(\.name) == ["Photos", "bash"])
        let app = try #require(report.apps.first)
        #expect(app.key == Self.fixtureKey && app.pid == 17665 && app.pids == [17665, 17667] && app.processCount == 2)
        #expect(app.cgroup?.supervised?.supervisorPID == 17658 && app.cgroup?.supervised?.deviceGroup == "mempressure-17658-95703012")
        // Private_Dirty of the two captured smaps_rollup.
        #expect(app.totals.dirtyBytes == (3296 + 7392) * 1024)
        #expect(report.apps[1].cgroup == nil, "a process tree has no cgroup in the app view")

        let text = try await runMempressure(["top"] + Self.fixtureArguments)
        #expect(text.status == 0, "\(text.standardError)")
        let lines = text.standardOutput.split(separator: "\n")
        #expect(lines.contains { $0.split(separator: " ").prefix(3) == ["17665", "Photos", "2"] }, "\(text.standardOutput)")
        #expect(lines.contains("note: supervised apps (each is every process in its cgroup, whatever its parent): Photos (supervisor 17658)"))

        let byCgroup = try await runMempressure(["top", "--group-by", "cgroup"] + Self.fixtureArguments)
        let row = try #require(byCgroup.standardOutput.split(separator: "\n").first { $0.hasPrefix("Photos ") })
        #expect(row.contains(" supervised by 17658 ") && row.hasSuffix(Self.fixtureKey), "\(row)")
        let csv = try await runMempressure(["top", "--group-by", "cgroup", "--csv"] + Self.fixtureArguments)
        #expect(csv.standardOutput.split(separator: "\n").contains { $0.hasPrefix("17665,Photos,\(Self.fixtureKey),2,") && $0.hasSuffix(",Photos,17658") })
    }

    @Test("fixture: vm APP is the supervised app; --only, an unknown name and a PID keep their meaning")
    func fixtureVM() async throws {
        let json = try await runMempressure(["vm", "Photos", "--json"] + Self.fixtureArguments)
        #expect(json.status == 0, "\(json.standardError)")
        let report = try Self.decode(VMReport.self, json)
        #expect(report.name == "Photos" && report.pid == 17665 && report.scope == "app")
        #expect(report.processes.map(\.pid) == [17665, 17667] && report.processes.map(\.ppid) == [17658, 1])
        #expect(report.supervisedApp?.path == Self.fixtureKey)
        let text = try await runMempressure(["vm", "Photos"] + Self.fixtureArguments)
        #expect(text.standardOutput.hasPrefix("Photos [17665]  app of 2 processes, supervised: cgroup \(Self.fixtureKey) of supervisor 17658\n"))

        // --only names a process, and no process is named Photos.
        let only = try await runMempressure(["vm", "Photos", "--only"] + Self.fixtureArguments)
        #expect(only.status == 1 && only.standardError == "mempressure: no process is named 'Photos'\n", "\(only.standardError)")
        let none = try await runMempressure(["vm", "Maps"] + Self.fixtureArguments)
        #expect(none.status == 1 && none.standardError == "mempressure: no process is named 'Maps'\n", "\(none.standardError)")
        let pid = try Self.decode(VMReport.self, try await runMempressure(["vm", "17665", "--json"] + Self.fixtureArguments))
        #expect(pid.name == "mempressure-hog" && pid.processes.map(\.pid) == [17665] && pid.supervisedApp == nil)
    }

    // MARK: Real processes in a real v1 layout

    static var layoutAvailable: Bool {
        getuid() == 0 && ProcFS.isFile("\(SupervisedLayout.root)/memory/cgroup.procs") && ProcFS.isFile("\(SupervisedLayout.root)/freezer/cgroup.procs")
    }

    @Test(
        "v1: an app whose helper double-forked is one app in top --json and vm, with both processes' memory",
        .enabled(if: layoutAvailable, "needs root and the cgroup v1 memory and freezer controllers"))
    func doubleForkedHelper() async throws {
        // This test plays the supervisor: the device group carries its PID.
        let app = "Helped\(UInt32.random(in: 0...UInt32.max))"
        let layout = try SupervisedLayout(supervisorPID: getpid(), app: app)
        try await withCleanup({ layout.remove() }) {
            let main = try layout.startApp(mainDirtyMB: 8, helperDirtyMB: 24)
            let members = try layout.members()
            #expect(members.count == 2 && members.contains(main.pid), "\(members)")
            let helper = try #require(members.first { $0 != main.pid })
            let helperParent = try ProcFS.readBytes("/proc/\(helper)/stat").withUnsafeBytes { try ProcessStat.parse($0, pid: helper) }.ppid
            #expect(helperParent != main.pid, "the helper double-forked: its parent is gone")

            let top = try Self.decode(TopReport.self, try await runMempressure(["top", "--json"]))
            let entry = try #require(top.apps.first { $0.key == layout.appPath }, "\(top.apps.map(\.key))")
            #expect(entry.name == app && entry.pid == main.pid && entry.pids == [main.pid, helper].sorted())
            #expect(entry.cgroup?.supervised?.supervisorPID == getpid())
            #expect(entry.totals.dirtyBytes >= 32 << 20, "8 MiB of the main process and 24 MiB of its helper: \(entry.totals.dirtyBytes)")
            #expect(!top.apps.contains { $0.key != layout.appPath && ($0.pids.contains(main.pid) || $0.pids.contains(helper)) })

            for arguments in [["vm", app, "--json"], ["vm", "--cgroup", layout.appPath, "--json"]] {
                let r = try await runMempressure(arguments)
                #expect(r.status == 0, "\(arguments): \(r.standardError)")
                let vm = try Self.decode(VMReport.self, r)
                #expect(vm.name == app && vm.pid == main.pid && vm.scope == "app", "\(arguments)")
                #expect(vm.processes.map(\.pid) == [main.pid, helper].sorted(), "\(arguments)")
                #expect(vm.totals.dirtyBytes >= 32 << 20, "\(arguments): \(vm.totals.dirtyBytes)")
                #expect(vm.supervisedApp?.path == layout.appPath && vm.supervisedApp?.supervisorPID == getpid(), "\(arguments)")
            }

            // watch's Watcher follows the app by name until its last process has gone.
            var watcher = Watcher(definition: .supervisedApp(app), options: SnapshotOptions(detail: .rollup))
            let first = try #require(try watcher.step())
            #expect(first.entry.processCount == 2)
            layout.killApp()
            let last = try #require(try watcher.step())
            #expect(last.snapshot == nil && last.entry.processCount == 0)
            #expect(last.entry.markers.filter { $0.kind == .exited }.map(\.pid) == [main.pid, helper].sorted())
            #expect(try watcher.step() == nil)
        }
        #expect(!ProcFS.isDirectory(layout.memoryDevice) && !ProcFS.isDirectory(layout.freezerDevice), "the cgroups are gone")
    }
}

/// A supervisor's layout made by a test on cgroup v1: the device group
/// `mempressure-<PID>-<random>` in the memory and freezer hierarchies, and one app cgroup below it
/// in both. `remove` kills every process in the app's cgroup through pidfds (each checked to be in
/// it after the pidfd is opened: only processes the test started, and their descendants, are
/// there), waits for each to exit on its pidfd, reaps the one the test started, and removes the
/// cgroups; it reports what it could not do and goes on.
final class SupervisedLayout: Sendable {
    static let root = "/sys/fs/cgroup"
    let device: String
    let app: String
    var appPath: String { "/\(device)/\(app)" }
    var memoryDevice: String { "\(Self.root)/memory/\(device)" }
    var freezerDevice: String { "\(Self.root)/freezer/\(device)" }
    var memoryApp: String { "\(memoryDevice)/\(app)" }
    var freezerApp: String { "\(freezerDevice)/\(app)" }
    /// The app's main process, once started: the only process the test starts itself.
    private let started = Mutex<ProcessHandle?>(nil)
    /// Where the app's standard output goes: a FIFO the test reads.
    private let directory: TemporaryDirectory

    init(supervisorPID: Int32, app: String) throws {
        device = SupervisedAppCgroup.deviceGroupName(supervisorPID: supervisorPID, random: UInt32.random(in: 0...UInt32.max))
        self.app = app
        directory = try TemporaryDirectory()
        for dir in [memoryDevice, freezerDevice, memoryApp, freezerApp] {
            guard mkdir(dir, 0o755) == 0 else {
                let failure = TestFailure("mkdir \(dir): errno \(errno)")
                remove()
                throw failure
            }
        }
    }

    /// Starts the app: a shell that joins the app's cgroups before it runs anything, starts a
    /// helper hog that double-forks (`(hog &)`: its parent exits at once) and then becomes the
    /// main hog (`exec`). Returns once both said ready.
    func startApp(mainDirtyMB: Int, helperDirtyMB: Int) throws -> ProcessHandle {
        let hog = buildDirectory + "/mempressure-hog"
        let script = """
            echo $$ > "$1/cgroup.procs" && echo $$ > "$2/cgroup.procs" || exit 1
            ("$3" --dirty \(helperDirtyMB)m --wait signal &)
            exec "$3" --dirty \(mainDirtyMB)m --wait signal
            """
        // A FIFO rather than a pipe: no descriptor of it can leak into what other tests start.
        let fifo = "\(directory.path)/out"
        guard mkfifo(fifo, 0o600) == 0 else { throw TestFailure("mkfifo \(fifo): errno \(errno)") }
        let output = open(fifo, O_RDONLY | O_NONBLOCK | O_CLOEXEC)
        guard output >= 0 else { throw TestFailure("open \(fifo): errno \(errno)") }
        defer { close(output) }
        let handle = try spawnChild(["/bin/sh", "-c", script, "app", memoryApp, freezerApp, hog], files: [ChildFile(1, fifo, O_WRONLY)])
        started.withLock { $0 = handle }
        // Both hogs write "ready {...}" into the pipe once they hold their memory; the pipe ends
        // when every writer has gone (a hog that failed to start).
        var said: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 4096)
        while said.split(separator: 0x0a).filter({ $0.starts(with: "ready ".utf8) }).count < 2 {
            var ready = pollfd(fd: output, events: Int16(POLLIN), revents: 0)
            guard retryOnInterrupt({ poll(&ready, 1, 60_000) }) == 1 else { throw TestFailure("the app's hogs did not become ready within 60 s") }
            let n = read(output, &chunk, chunk.count)
            if n < 0 && errno == EAGAIN { continue }
            guard n > 0 else { throw TestFailure("the app ended before both hogs were ready: \(String(decoding: said, as: UTF8.self))") }
            said += chunk[0..<n]
        }
        return handle
    }

    /// The PIDs in the app's memory cgroup.
    func members() throws -> [Int32] {
        String(decoding: try ProcFS.readBytes("\(memoryApp)/cgroup.procs"), as: UTF8.self).split(separator: "\n").compactMap { Int32($0) }
    }

    func remove() {
        if ProcFS.isDirectory(memoryApp) { killApp() }
        if let main = started.withLock({ $0 }) {
            do {
                // Killed above with the cgroup's processes, unless it never joined (and exited):
                // our child, not yet reaped, so its pidfd is that process whatever happened.
                do {
                    try main.signal(SIGKILL)
                } catch where error.errno == .noSuchProcess {
                    // It has exited already: the wait below reaps it.
                }
                _ = try main.wait(for: WEXITED)
            } catch {
                Issue.record("could not reap the app's main process \(main.pid): \(String(describing: error))")
            }
        }
        for dir in [memoryApp, freezerApp, memoryDevice, freezerDevice] where ProcFS.isDirectory(dir) {
            if rmdir(dir) != 0 { Issue.record("rmdir \(dir): errno \(errno)") }
        }
        directory.remove()
    }

    /// SIGKILL to every process in the app's cgroup through a pidfd, then waits on each pidfd
    /// until it has exited; again while the cgroup is not empty (a process that forked meanwhile).
    func killApp() {
        for _ in 0..<8 {
            let pids: [Int32]
            do {
                pids = try members()
            } catch {
                Issue.record("cannot list \(memoryApp): \(error)")
                return
            }
            guard !pids.isEmpty else { return }
            var handles: [ProcessHandle] = []
            for pid in pids {
                do {
                    let handle = try ProcessHandle(pid: pid)
                    // Still in the app's cgroup now that the pidfd is open: the pidfd is that process.
                    guard String(decoding: try ProcFS.readBytes("/proc/\(pid)/cgroup"), as: UTF8.self).contains(":memory:\(appPath)\n") else { continue }
                    try handle.signal(SIGKILL)
                    handles.append(handle)
                } catch {
                    continue  // exited meanwhile
                }
            }
            for handle in handles {
                var exited = pollfd(fd: handle.descriptor, events: Int16(POLLIN), revents: 0)
                if retryOnInterrupt({ poll(&exited, 1, 60_000) }) != 1 { Issue.record("pid \(handle.pid) still running 60 s after SIGKILL") }
            }
        }
        Issue.record("\(memoryApp) still has processes after 8 rounds of SIGKILL")
    }
}
