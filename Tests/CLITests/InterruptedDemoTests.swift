import FoundationEssentials
import Glibc
import MemPressureSystem
import Subprocess
import SystemPackage
import Testing
import MemPressureTestSupport

/// `make demo` interrupted at each of its parts, by each of the signals a user or a terminal
/// sends: nothing of the demo's may be left — no process, cgroup, runtime directory, data file or
/// region registry file. The demo runs with TMPDIR, XDG_RUNTIME_DIR and MEMPRESSURE_REGISTRY in a
/// directory of the test's own, so that what it leaves is told apart from what other tests,
/// running meanwhile, have made.
@Suite("an interrupted demo leaves nothing behind", .serialized)
struct InterruptedDemoTests {
    /// Each case names the part (1: the lifecycle scenario's supervisor, 2: jetsam's) and the
    /// app whose launch is the moment to interrupt.
    @Test("interrupted during each part, by SIGINT, SIGTERM or SIGHUP", arguments: [
        (1, "Photos", Signal.interrupt),
        (2, "Safari", Signal.terminate),
        (2, "Photos", Signal.terminalClosed),
    ])
    func interrupted(part: Int, app: String, signal: Signal) async throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let runtime = "\(dir.path)/xdg"
        let registry = "\(dir.path)/registry"
        #expect(mkdir(runtime, 0o700) == 0)
        let environment = Environment.inherit.updating([
            "TMPDIR": dir.path, "XDG_RUNTIME_DIR": runtime, "MEMPRESSURE_REGISTRY": registry,
        ])
        // The real event, watched by a thread of its own started before the demo (the test's
        // tasks may wait their turn for seconds on a busy machine, and the demo may be over by
        // then): the part's supervisor made its directory (named for the demo's PID) and the
        // app's output file in it, i.e. launched it. The demo is stopped at once (SIGSTOP), so
        // that however late this task runs, the signal finds it in that part.
        let watch = try LaunchWatch(runtime: runtime)
        let thread = TestThread { watch.stopDemo(whenLaunched: app, inPart: part, within: 120) }
        var signalState = ""
        let result = try await Subprocess.run(
            .path(FilePath(buildDirectory + "/mempressure")), arguments: ["demo"], environment: environment,
            input: .none, output: .fileDescriptor(try FileDescriptor.open("\(dir.path)/demo.out", .writeOnly, options: [.create, .truncate], permissions: .ownerReadWrite), closeAfterSpawningProcess: true),
            error: .fileDescriptor(try FileDescriptor.open("\(dir.path)/demo.err", .writeOnly, options: [.create, .truncate], permissions: .ownerReadWrite), closeAfterSpawningProcess: true)
        ) { execution in
            thread.join()
            if watch.outcome == nil {
                #expect(watch.stoppedPID == execution.processIdentifier.value)
                signalState = text("/proc/\(execution.processIdentifier.value)/status")
                    .split(separator: "\n").filter { $0.hasPrefix("State") }.joined(separator: " ")
                try execution.send(signal: signal)
            }
            try execution.send(signal: .resume)
        }
        let demoPID = watch.stoppedPID
        let stopped = watch.outcome
        #expect(stopped == nil, "\(stopped ?? "")")
        let said = text("\(dir.path)/demo.err")
        let printed = text("\(dir.path)/demo.out")
        #expect(result.terminationStatus == .exited(130), "an interrupted demo exits 130: \(result.terminationStatus); when stopped: \(signalState); it said \(said); printed \(printed.suffix(3000))")
        #expect(unlink("\(dir.path)/demo.out") == 0 && unlink("\(dir.path)/demo.err") == 0)
        let left = leftovers(demoPID: demoPID, testDirectory: dir.path, runtime: runtime, registry: registry)
        #expect(left.isEmpty, "left behind: \(left)")
    }

    /// What of the demo's is still there: processes whose command line names the test's
    /// directory, cgroups named for the demo's PID, anything in the runtime or registry
    /// directories, and data files in the test's directory.
    func leftovers(demoPID: Int32, testDirectory: String, runtime: String, registry: String) -> [String] {
        var left: [String] = []
        // A directory that is not there holds nothing; one that cannot be read is a failure of
        // the check, said as such (never taken for "nothing left").
        func names(_ path: String) -> [String] {
            do {
                return try ProcFS.listDirectory(path).map { String(decoding: $0, as: UTF8.self) }
            } catch {
                if error.errno != .noSuchFileOrDirectory { left.append("cannot list \(path): \(error)") }
                return []
            }
        }
        let ours = Array(testDirectory.utf8)
        for name in names("/proc") {
            guard let pid = Int32(name), pid != getpid() else { continue }
            let cmdline: [UInt8]
            do {
                cmdline = try ProcFS.readBytes("/proc/\(name)/cmdline")
            } catch {
                if error.errno == .noSuchFileOrDirectory || error.errno == .noSuchProcess { continue }  // gone meanwhile
                left.append("cannot read /proc/\(name)/cmdline: \(error)")
                continue
            }
            if cmdline.split(separator: 0).contains(where: { $0.firstRange(of: ours) != nil }) {
                left.append("process \(pid): \(escapedText(cmdline.map { $0 == 0 ? 0x20 : $0 }))")
            }
        }
        for hierarchy in ["memory", "freezer"] {
            for name in names("/sys/fs/cgroup/\(hierarchy)") where name.hasPrefix("mempressure-\(demoPID)-") {
                left.append("cgroup \(hierarchy)/\(name)")
            }
        }
        for name in names(runtime) { left.append("runtime \(name)") }
        for name in names(registry) { left.append("registry file \(name)") }
        for name in names(testDirectory) where name != "xdg" && name != "registry" {
            left.append("file \(name)")
        }
        return left
    }
}

/// Watches a runtime directory with inotify for the supervisors the demo makes in it (one a
/// part) and, in the Nth, for an app's output file (`NAME-1.log`, created when it is launched);
/// then stops the demo with SIGSTOP (the test's own child).
final class LaunchWatch: @unchecked Sendable {
    let fd: Int32
    let runtime: String
    /// nil once the demo was stopped; else what went wrong.
    private(set) var outcome: String? = "not run"
    /// The demo's PID, from its supervisor's directory (`mempressure-PID-RANDOM`).
    private(set) var stoppedPID: Int32 = 0

    init(runtime: String) throws {
        fd = inotify_init1(Int32(IN_CLOEXEC))
        guard fd >= 0 else { throw TestFailure("inotify_init1: errno \(errno)") }
        self.runtime = runtime
        guard inotify_add_watch(fd, runtime, UInt32(IN_CREATE)) >= 0 else { throw TestFailure("inotify_add_watch: errno \(errno)") }
    }

    deinit { close(fd) }

    /// Stops the demo, once checked to be this process's child (never signal another's).
    private func stopDemo(_ directoryName: String) {
        let parts = directoryName.split(separator: "-")
        guard parts.count == 3, let pid = Int32(parts[1]) else {
            outcome = "a directory not named mempressure-PID-RANDOM: \(directoryName)"
            return
        }
        let parent: Int32
        do {
            let bytes = try ProcFS.readBytes("/proc/\(pid)/stat")
            parent = try bytes.withUnsafeBytes { try ProcessStat.parse($0, pid: pid) }.ppid
        } catch {
            outcome = "pid \(pid): \(error)"
            return
        }
        guard parent == getpid() else {
            outcome = "pid \(pid) is not this test's child (its parent is \(parent))"
            return
        }
        stoppedPID = pid
        outcome = kill(pid, SIGSTOP) == 0 ? nil : "kill: errno \(errno)"
    }

    func stopDemo(whenLaunched app: String, inPart part: Int, within timeout: Double) {
        var partDirectory = ""
        let deadline = monotonicSeconds() + timeout
        var supervisors = 0
        var partWatch: Int32 = -1
        var buffer = [UInt8](repeating: 0, count: 64 << 10)
        let logName = "\(app)-1.log"
        while monotonicSeconds() < deadline {
            var p = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            let ready = poll(&p, 1, Int32((deadline - monotonicSeconds()) * 1000) + 1)
            if ready < 0 && errno == EINTR { continue }
            guard ready > 0 else { break }
            let n = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            guard n > 0 else { continue }
            var offset = 0
            while offset + 16 <= n {
                let (wd, mask, length) = buffer.withUnsafeBytes { raw in
                    (raw.load(fromByteOffset: offset, as: Int32.self), raw.load(fromByteOffset: offset + 4, as: UInt32.self),
                     Int(raw.load(fromByteOffset: offset + 12, as: UInt32.self)))
                }
                let nameBytes = buffer[(offset + 16)..<(offset + 16 + length)].prefix { $0 != 0 }
                let name = String(decoding: nameBytes, as: UTF8.self)
                offset += 16 + length
                if partWatch < 0, mask & UInt32(IN_ISDIR) != 0 {
                    supervisors += 1
                    if supervisors == part {
                        partDirectory = name
                        let directory = "\(runtime)/\(name)"
                        partWatch = inotify_add_watch(fd, directory, UInt32(IN_CREATE))
                        // Launched before the watch was in place: stop now all the same.
                        if partWatch < 0 || access("\(directory)/\(logName)", F_OK) == 0 {
                            stopDemo(name)
                            return
                        }
                    }
                } else if wd == partWatch, name == logName {
                    stopDemo(partDirectory)
                    return
                }
            }
        }
        outcome = "no launch of \(app) in part \(part) within \(timeout) s"
    }
}

/// A file's text for a failure message, or why it could not be read.
private func text(_ path: String) -> String {
    do {
        return String(decoding: try ProcFS.readBytes(path), as: UTF8.self)
    } catch {
        return "(\(path): \(error))"
    }
}
