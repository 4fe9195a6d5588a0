import MemPressureLifecycle
import Glibc
import MemPressureLifecycleProtocol
import MemPressureSystem
import Testing
import MemPressureTestSupport

/// The names in a directory (empty when it is gone).
func entries(_ dir: String) -> [String] {
    do {
        return try ProcFS.listDirectory(dir).map { String(decoding: $0, as: UTF8.self) }.sorted()
    } catch {
        return []
    }
}

@Suite("a supervisor that stays bounded", .serialized)
struct BoundedTests {
    @Test("an app not running can be forgotten (a running one cannot); with maximumApps reached, the app idle longest makes room, and with every app running a new one is refused")
    func forgetting() async throws {
        let s = try Supervisor(configuration: supervisorConfiguration { $0.maximumApps = 3 })
        try await withCleanup({ await s.shutdown() }) {
            for name in ["A", "B", "C"] { try await s.register(AppSpec(name: name, command: ["/bin/sleep", "60"], client: false)) }
            try await s.launch("B")
            await #expect(throws: SupervisorError.wrongState(app: "B", state: .inactive, operation: .forget)) { try await s.forget("B") }
            try await s.forget("C")
            #expect(!(await s.isRegistered("C")))
            await #expect(throws: SupervisorError.noSuchApp("C")) { try await s.state(of: "C") }
            try await s.register(AppSpec(name: "C", command: ["/bin/sleep", "60"], client: false))
            // A fourth: A, not running and idle longest, makes room.
            try await s.register(AppSpec(name: "D", command: ["/bin/sleep", "60"], client: false))
            #expect(!(await s.isRegistered("A")))
            #expect(await s.log.contains { $0.app == "A" && $0.payload == .forgotten(.madeRoom(for: "D", limit: 3)) })
            try await s.launch("C")
            try await s.launch("D")
            await #expect(throws: SupervisorError.tooManyApps(limit: 3)) {
                try await s.register(AppSpec(name: "E", command: ["/bin/sleep", "60"], client: false))
            }
            #expect(await s.apps().map(\.name) == ["B", "C", "D"])
        }
    }

    @Test("launch with another command runs it on a known app that is not running, and says so; a running app keeps its command and the launch is refused")
    func changedCommand() async throws {
        let s = try Supervisor(configuration: supervisorConfiguration())
        try await withCleanup({ await s.shutdown() }) {
            try await s.perform(.launch("A", registering: AppSpec(name: "A", command: ["/bin/sleep", "61"], client: false)))
            await #expect(throws: SupervisorError.wrongState(app: "A", state: .inactive, operation: .lifecycle(.launch))) {
                try await s.perform(.launch("A", registering: AppSpec(name: "A", command: ["/bin/sleep", "62"], client: false)))
            }
            try await s.terminate("A")
            try await s.perform(.launch("A", registering: AppSpec(name: "A", command: ["/bin/sleep", "63"], client: false)))
            let pid = try #require(try await s.pid(of: "A"))
            // Once mempressure-exec has joined the cgroups and exec'd it (no event says when).
            let cmdline = await within(10) { () async -> String? in
                while !Task.isCancelled {
                    do {
                        let text = String(decoding: try ProcFS.readBytes("/proc/\(pid)/cmdline"), as: UTF8.self)
                        if !text.contains("mempressure-exec") { return text }
                        try await Task.sleep(for: .milliseconds(2))
                    } catch {
                        return nil
                    }
                }
                return nil
            }
            #expect(cmdline == "/bin/sleep\u{0}63\u{0}", "the new command runs: \(cmdline.debugDescription)")
            #expect(await s.log.contains { $0.app == "A" && $0.payload == .commandChanged(to: ["/bin/sleep", "63"], from: ["/bin/sleep", "61"]) })
        }
    }

    @Test("an app's output is cut at 1 MiB, kept outside the device's budget, its last bytes logged when it crashes, and its file removed when its run ends")
    func boundedOutput() async throws {
        let budget = Supervisor.canBudget()
        let s = try Supervisor(configuration: supervisorConfiguration { if budget { $0.budgetBytes = 256 << 20 } })
        try await withCleanup({ await s.shutdown() }) {
            let directory = await s.runtimeDirectory
            // 48 MiB of output, then a last line and a crash.
            let script = "head -c 50331648 /dev/zero | tr '\\\\000' x; echo; echo the last words; kill -SEGV $$"
            try await s.register(AppSpec(name: "Talker", command: ["/bin/sh", "-c", script], client: false))
            let events = await s.logStream()
            try await s.launch("Talker")
            let crash = await first(of: events, within: 60) { $0.app == "Talker" && ($0.kind == .crash || $0.kind == .exit) }
            guard case .crash(.signaled(SIGSEGV), let output?) = crash?.payload else {
                Issue.record("not a crash by SIGSEGV with its output: \(String(describing: crash))")
                return
            }
            #expect(output.hasSuffix("the last words\n") || output.hasSuffix("the last words"), "its last output: \(output.suffix(80).debugDescription)")
            try await s.waitForState("Talker", .notRunning, timeout: 10)
            #expect(!entries(directory).contains { $0.hasSuffix(".log") }, "the output file went with the run: \(entries(directory))")
            if let device = s.deviceMemoryCgroup {
                let usage = ByteScanner.singleNumber(try ProcFS.readBytes("\(device)/memory.usage_in_bytes")) ?? 0
                #expect(usage < 16 << 20, "the device is not charged for the app's output: \(usage) bytes in use")
            }
        }
    }
}
