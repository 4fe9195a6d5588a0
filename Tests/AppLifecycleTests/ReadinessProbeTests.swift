import MemPressureLifecycle
import MemPressureLifecycleProtocol
import FoundationEssentials
import Glibc
import MemPressureSystem
import Testing
import MemPressureTestSupport

/// A program without the client is an app through configuration: its readiness probe decides
/// when a launch and a resume are done, and each pass is a `ready` event.
@Suite("readiness probes for programs without the client")
struct ReadinessProbeTests {
    /// A probe that counts its tries in `dir`, writes who it was run for, and passes on every
    /// third try.
    static func counting(_ dir: String) -> ReadinessProbe {
        let script = """
            n=$(cat "\(dir)/tries" 2>/dev/null || echo 0); n=$((n + 1)); echo $n > "\(dir)/tries"
            echo "$MEMPRESSURE_APP $MEMPRESSURE_PID" > "\(dir)/who"
            [ $((n % 3)) -eq 0 ]
            """
        return ReadinessProbe(command: ["/bin/sh", "-c", script], interval: 0.001)
    }

    static func tries(_ dir: String) throws -> String {
        String(decoding: try ProcFS.readBytes(dir + "/tries"), as: UTF8.self)
    }

    @Test("a launch returns once the probe passes, a resume once it passes again; each pass is a ready event")
    func launchAndResume() async throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let s = try Supervisor(configuration: supervisorConfiguration())
        try await withCleanup({ await s.shutdown() }) {
            try await s.register(AppSpec(name: "P", command: ["/bin/sleep", "600"], client: false, ready: Self.counting(dir.path)))
            try await s.activate("P")
            #expect(try Self.tries(dir.path) == "3\n", "the launch waited for the third try, the first to pass")
            let pid = try #require(try await s.pid(of: "P"))
            #expect(String(decoding: try ProcFS.readBytes(dir.path + "/who"), as: UTF8.self) == "P \(pid)\n")
            try await s.waitForReady("P", count: 1, timeout: 60)

            try await s.background("P")
            #expect(try await s.state(of: "P") == .suspended)
            #expect(try Self.tries(dir.path) == "3\n", "no probe while it goes to the background")
            try await s.activate("P")
            #expect(try Self.tries(dir.path) == "6\n", "the resume waited for the probe to pass again")
            try await s.waitForReady("P", count: 2, timeout: 60)
            let ready = await s.log.filter { $0.app == "P" && $0.kind == .ready }
            #expect(ready.count == 2)
            // The second pass came after the app was let run again.
            let thawed = try #require(await s.log.last { $0.app == "P" && $0.from == .suspended })
            #expect(ready.last.map { $0.t >= thawed.t } == true)
        }
    }

    @Test("a probe that never passes fails the launch in launchTimeout, and the log says why; the app stays supervised")
    func neverPasses() async throws {
        let s = try Supervisor(configuration: supervisorConfiguration { $0.launchTimeout = 0.3 })
        try await withCleanup({ await s.shutdown() }) {
            try await s.register(AppSpec(name: "N", command: ["/bin/sleep", "600"], client: false, ready: ReadinessProbe(command: ["/bin/false"])))
            await #expect(throws: SupervisorError.self) { try await s.launch("N") }
            let log = await s.log
            let faults = log.compactMap { e -> String? in
                if case .error(.readinessProbe(let cause)) = e.payload, e.app == "N" { return cause }
                return nil
            }
            #expect(faults.count == 1)
            #expect(faults.first?.contains("exited with status 1") == true, "\(faults)")
            #expect(!log.contains { $0.app == "N" && $0.kind == .ready })
            #expect(try await s.pid(of: "N") != nil, "still running: terminate or shutdown ends it")
        }
    }

    @Test("a probe running at shutdown is ended with its process group; the launch is refused, and the shutdown does not wait for the probe's day-long timeout")
    func endedAtShutdown() async throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let fifo = try FIFO(dir.path + "/words")
        defer { fifo.close() }
        let probe = ReadinessProbe(command: ["/bin/sh", "-c", "sleep 31994 & echo $! > \(fifo.path); exec sleep 31995"], timeout: 86_400)
        let s = try Supervisor(configuration: supervisorConfiguration { $0.launchTimeout = 86_400 })
        var helper: WatchedProcess?
        try await withCleanup({ await s.shutdown() }) {
            try await s.register(AppSpec(name: "W", command: ["/bin/sleep", "600"], client: false, ready: probe))
            let launch = Task { try await s.launch("W") }
            let pid = try #require(await fifo.line(within: 60).flatMap { Int32($0) }, "the probe started its helper")
            helper = WatchedProcess(pid)
            try #require(helper != nil)
            // Left to its timeout, the probe would hold the shutdown for a day.
            let ended: Bool? = await within(60) {
                await s.shutdown()
                return true
            }
            #expect(ended == true, "the shutdown ended the probe instead of waiting for it")
            let result = await launch.result
            #expect(throws: SupervisorError.self) { try result.get() }
            #expect(!(await s.log).contains { $0.app == "W" && $0.kind == .ready })
        }
        #expect(await helper?.waitForExit(timeout: 10) ?? true, "the probe's helper was ended with it")
    }

    @Test("a resume whose probe does not pass goes on to the foreground, as for a client that did not acknowledge; the fault is logged")
    func resumeProbeFails() async throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        // Passes on its first try (the launch) only.
        let script = "n=$(cat \"\(dir.path)/tries\" 2>/dev/null || echo 0); n=$((n + 1)); echo $n > \"\(dir.path)/tries\"; [ $n -eq 1 ]"
        let s = try Supervisor(configuration: supervisorConfiguration { $0.launchTimeout = 0.3 })
        try await withCleanup({ await s.shutdown() }) {
            try await s.register(AppSpec(name: "F", command: ["/bin/sleep", "600"], client: false, ready: ReadinessProbe(command: ["/bin/sh", "-c", script], interval: 0.01)))
            try await s.activate("F")
            try await s.background("F")
            #expect(try await s.state(of: "F") == .suspended)
            try await s.activate("F")
            #expect(try await s.state(of: "F") == .active, "not left let run in the background")
            let log = await s.log
            #expect(log.contains { if case .error(.readinessProbe) = $0.payload { $0.app == "F" } else { false } })
            #expect(log.filter { $0.app == "F" && $0.kind == .ready }.count == 1)
        }
    }

    @Test("the probe in JSON and on the admin socket; refused for a client and with durations out of range")
    func json() throws {
        let text = #"{"name": "R", "command": ["/usr/bin/redis-server"], "client": false, "ready": {"command": ["redis-cli", "ping"], "interval": 0.05}}"#
        let spec = try JSONDecoder().decode(AppSpec.self, from: Data(text.utf8))
        #expect(spec.ready == ReadinessProbe(command: ["redis-cli", "ping"], interval: 0.05, timeout: ReadinessProbe.defaultTimeout))
        try spec.validate()
        #expect(try JSONDecoder().decode(AppSpec.self, from: try JSONEncoder().encode(spec)) == spec)
        let command = Command.register(spec)
        #expect(try JSONDecoder().decode(Command.self, from: try JSONEncoder().encode(command)) == command)
        // The step form carries it too.
        let step = try JSONDecoder().decode(Command.self, from: Data(#"{"launch": "R", "argv": ["/bin/true"], "client": false, "ready": {"command": ["/bin/true"]}}"#.utf8))
        #expect(step == .launch("R", registering: AppSpec(name: "R", command: ["/bin/true"], client: false, ready: ReadinessProbe(command: ["/bin/true"]))))
        for bad in [#"{"comand": ["x"]}"#, #"{"command": ["x"], "every": 1}"#, #"["x"]"#] {
            #expect(throws: DecodingError.self, "\(bad)") {
                try JSONDecoder().decode(AppSpec.self, from: Data(#"{"name": "R", "command": ["/x"], "client": false, "ready": \#(bad)}"#.utf8))
            }
        }
        #expect(throws: CommandError.probeForClient(app: "R")) {
            try AppSpec(name: "R", command: ["/x"], ready: ReadinessProbe(command: ["/bin/true"])).validate()
        }
        for (interval, timeout, field) in [(-1.0, 5.0, "interval"), (.nan, 5, "interval"), (0.01, 0, "timeout"), (0.01, 1e300, "timeout")] {
            #expect(throws: CommandError.probeDurationOutOfRange(app: "R", field)) {
                try AppSpec(name: "R", command: ["/x"], client: false, ready: ReadinessProbe(command: ["/bin/true"], interval: interval, timeout: timeout)).validate()
            }
        }
        #expect(throws: CommandError.emptyCommand(app: "R")) {
            try AppSpec(name: "R", command: ["/x"], client: false, ready: ReadinessProbe(command: [])).validate()
        }
    }
}
