import FoundationEssentials
import Glibc
import LinuxSystem
import Subprocess
import SystemPackage
import Testing
import TestSupport

/// `make demo` interrupted at each of its parts, by each of the signals a user or a terminal
/// sends: nothing of the demo's may be left — no process, cgroup, runtime directory, data file or
/// region registry file. The demo runs with TMPDIR, XDG_RUNTIME_DIR and MEMPRESSURE_REGISTRY in a
/// directory of the test's own, so that what it leaves is told apart from what other tests,
/// running meanwhile, have made.
@Suite("an interrupted demo leaves nothing behind", .serialized)
struct InterruptedDemoTests {
    @Test("interrupted during each part, by SIGINT, SIGTERM or SIGHUP", arguments: [
        ("Part 2: ", "Photos", Signal.interrupt),
        ("Part 3: ", "Safari", Signal.terminate),
        ("Part 3: ", "Photos", Signal.terminalClosed),
    ])
    func interrupted(part: String, app: String, signal: Signal) async throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let runtime = "\(dir.path)/xdg"
        let registry = "\(dir.path)/registry"
        #expect(mkdir(runtime, 0o700) == 0)
        let environment = Environment.inherit.updating([
            "TMPDIR": dir.path, "XDG_RUNTIME_DIR": runtime, "MEMPRESSURE_REGISTRY": registry,
        ])
        var demoPID: Int32 = 0
        var sawPart = false
        var lastLine = ""
        let result = try await Subprocess.run(
            .path(FilePath(buildDirectory + "/mempressure")), arguments: ["demo"], environment: environment,
            input: .none, output: .sequence, error: .discarded
        ) { execution in
            demoPID = execution.processIdentifier.value
            var lines = execution.standardOutput.strings().makeAsyncIterator()
            // The real event: the part has begun and the app named has been launched in it.
            while let line = try await lines.next() {
                lastLine = line
                if line.hasPrefix(part) { sawPart = true }
                if sawPart, line.contains(" \(app) "), line.contains("launch") {
                    try execution.send(signal: signal)
                    break
                }
            }
            while let _ = try await lines.next() {}
        }
        #expect(sawPart, "the demo never reached \(part) (last line: \(lastLine))")
        if case .exited(let code) = result.terminationStatus {
            #expect(code != 0, "an interrupted demo does not report success")
        }
        let left = leftovers(demoPID: demoPID, testDirectory: dir.path, runtime: runtime, registry: registry)
        #expect(left.isEmpty, "left behind: \(left)")
    }

    /// What of the demo's is still there: processes whose command line names the test's
    /// directory, cgroups named for the demo's PID, anything in the runtime or registry
    /// directories, and data files in the test's directory.
    func leftovers(demoPID: Int32, testDirectory: String, runtime: String, registry: String) -> [String] {
        func names(_ path: String) -> [String] {
            ((try? ProcFS.listDirectory(path)) ?? []).map { String(decoding: $0, as: UTF8.self) }
        }
        var left: [String] = []
        let ours = Array(testDirectory.utf8)
        for name in names("/proc") {
            guard let pid = Int32(name), pid != getpid() else { continue }
            guard let cmdline = try? ProcFS.readBytes("/proc/\(name)/cmdline") else { continue }  // gone meanwhile
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
