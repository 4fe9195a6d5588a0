import MemPressureLifecycle
import FoundationEssentials
import Glibc
import MemPressureSystem
import Subprocess
import SystemPackage
import Testing
import MemPressureTestSupport

@Suite("mempressure supervise, app, apps, run on a hostile machine", .serialized)
struct HostileCLITests {
    @Test("a supervisor out of descriptors under 1,000 connection attempts still answers apps afterwards")
    func survivesDescriptorExhaustion() async throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let runtime = "\(dir.path)/rt"
        // The supervisor runs with 32 descriptors: a few connections exhaust them (EMFILE).
        _ = try await Subprocess.run(
            .path("/bin/sh"), arguments: ["-c", #"ulimit -n 32 && exec "$0" supervise --dir "$1" 2>"$2""#, buildDirectory + "/mempressure", runtime, "\(dir.path)/stderr"],
            input: .none, output: .sequence, error: .discarded
        ) { execution in
            var lines = execution.standardOutput.strings().makeAsyncIterator()
            let first = try #require(try await lines.next())
            #expect(first.hasPrefix("supervising: "))
            let path = "\(runtime)/admin.sock"
            let supervisor = execution.processIdentifier.value
            let held = await withCheckedContinuation { continuation in
                TestThread.detached {
                    var open: [UnixSocket] = []
                    var refused = 0
                    for _ in 0..<1000 {
                        do {
                            open.append(try UnixSocket.connect(to: path, timeout: 0.001))
                        } catch {
                            refused += 1  // the backlog is full: the supervisor accepts no more for now
                        }
                    }
                    // While they are all open: how many descriptors the supervisor holds.
                    let descriptors: Int
                    do {
                        descriptors = try ProcFS.listDirectory("/proc/\(supervisor)/fd").count
                    } catch {
                        descriptors = -1
                    }
                    let connected = open.count
                    for c in open { c.close() }
                    continuation.resume(returning: (connected, refused, descriptors))
                }
            }
            #expect(held.0 > 32, "more connections were made than the supervisor has descriptors: \(held)")
            // Out of descriptors, libdispatch (under Swift's executor) traps when it next reads
            // /proc for its threads: connections never take the last 8 of its 32.
            #expect(held.2 >= 0 && held.2 <= 32 - 4, "the supervisor held \(held.2) descriptors of 32 under the flood")
            let apps = try await runMempressure(["apps", "--dir", runtime, "--json", "--timeout", "60"])
            #expect(apps.status == 0, "\(apps.standardError); the supervisor's standard error: \(String(decoding: (try? ProcFS.readBytes("\(dir.path)/stderr")) ?? [], as: UTF8.self))")
            #expect(apps.standardOutput == "[]\n" || apps.standardOutput.hasPrefix("["), "\(apps.standardOutput)")
            try execution.send(signal: .terminate)
            while let _ = try await lines.next() {}
        }
        #expect(!ProcFS.isDirectory(runtime), "the supervisor removed its runtime directory")
    }

    @Test("a runtime directory given as a symbolic link is refused with one line, its target unchanged")
    func symlinkedDirectory() async throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let target = "\(dir.path)/target"
        try #require(mkdir(target, 0o755) == 0 && chmod(target, 0o755) == 0)
        try #require(symlink(target, "\(dir.path)/link") == 0)
        for command in [["supervise", "--dir", "\(dir.path)/link"], ["apps", "--dir", "\(dir.path)/link"]] {
            let r = try await runMempressure(command)
            #expect(r.status == 1)
            #expect(r.standardError.hasPrefix("mempressure: \(dir.path)/link is a symbolic link or not a directory: refused as a runtime directory"), "\(r.standardError)")
            #expect(r.standardError.split(separator: "\n").count == 1)
        }
        var st = stat()
        try #require(stat(target, &st) == 0)
        #expect(st.st_mode & 0o7777 == 0o755)
    }

    @Test("a failing scenario (a bad app name, a missing executable) leaves no cgroup, directory, socket or process behind")
    func failingScenarioCleansUp() async throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let freezer = ProcFS.isFile("/sys/fs/cgroup/freezer/cgroup.procs")
        let budget = Supervisor.canBudget()
        let device = (budget ? #""budgetBytes": 268435456, "# : "") + (freezer ? #""suspendWith": "freezer", "# : "")
        let scenarios = [
            ("badname", #"{\#(device)"apps": [{"name": "..", "command": ["/bin/true"]}], "steps": [{"launch": ".."}]}"#, "app name \"..\" is not valid"),
            ("missing", #"{\#(device)"apps": [{"name": "M", "command": ["/nonexistent/program"]}, {"name": "S", "command": ["/bin/sleep", "31995"], "client": false}], "steps": [{"launch": "S"}, {"launch": "M"}]}"#, "cannot launch /nonexistent/program: no such file"),
        ]
        for (label, text, message) in scenarios {
            try writeText(text, to: "\(dir.path)/\(label).json")
            // The shell prints its PID, then becomes mempressure (exec keeps the PID).
            let result = try await Subprocess.run(
                .path("/bin/sh"), arguments: ["-c", #"echo $$ && exec "$0" run "$1""#, buildDirectory + "/mempressure", "\(dir.path)/\(label).json"],
                output: .string(limit: 1 << 20), error: .string(limit: 1 << 20))
            let pid = try #require(Int32(result.standardOutput.split(separator: "\n").first ?? ""))
            #expect(result.terminationStatus == .exited(1), "\(label)")
            #expect(result.standardError.contains(message), "\(label): \(result.standardError)")
            // Nothing named for that run is left: cgroups, the runtime directory (and its sockets).
            var places = ["/run", "/tmp"]
            if freezer { places.append("/sys/fs/cgroup/freezer") }
            if budget { places.append("/sys/fs/cgroup/memory") }
            for place in places {
                let left = try ProcFS.listDirectory(place).map { String(decoding: $0, as: UTF8.self) }.filter { $0.hasPrefix("mempressure-\(pid)-") }
                #expect(left.isEmpty, "\(label): \(place) still holds \(left)")
            }
            // No process of that run: the sleeping app S was terminated with the run.
            for entry in try ProcFS.listDirectory("/proc") {
                guard let p = Int32(String(decoding: entry, as: UTF8.self)) else { continue }
                let cmdline: [UInt8]
                do {
                    cmdline = try ProcFS.readBytes("/proc/\(p)/cmdline")
                } catch {
                    continue  // gone meanwhile
                }
                let argv = cmdline.split(separator: 0).map { String(decoding: $0, as: UTF8.self) }
                let alive = try ChildSignals.isAlive(p)
                // A duration no other test uses (tests run side by side).
                let ours = argv == ["/bin/sleep", "31995"] && alive
                #expect(!ours, "\(label): the run's sleep 31995 is still running (pid \(p))")
            }
        }
    }
}
