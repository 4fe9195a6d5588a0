import MemPressureLifecycle
import FoundationEssentials
import Glibc
import MemPressureSystem
import Testing
import MemPressureTestSupport

/// What a memory warning becomes for apps without a client, and that the log and the metric say
/// "sent" only when something reached the app.
@Suite("memory warnings for apps with and without a client")
struct MemoryWarningActionTests {
    @Test("a program without a client is not sent a warning: the log says nothing was chosen, and warn does not name it")
    func noClient() async throws {
        let s = try Supervisor(configuration: supervisorConfiguration())
        try await withCleanup({ await s.shutdown() }) {
            try await s.register(AppSpec(name: "P", command: ["/bin/sleep", "600"], client: false))
            try await s.activate("P")
            let warned = await s.warn(.app("P"))
            let log = await s.log
            #expect(warned.isEmpty)
            #expect(log.contains { $0.app == "P" && $0.payload == .warning(.notSent(.noneChosen)) })
            #expect(!log.contains { $0.app == "P" && $0.payload == .warning(.sent) })
            let text = log.filter { $0.app == "P" && $0.kind == .warning }.map(\.detail)
            #expect(text == ["not sent: nothing chosen for this app (no client, no memoryWarning)"], "\(text)")
        }
    }

    @Test("a client that never connected is not sent a warning: no control channel")
    func clientWithoutChannel() async throws {
        let s = try Supervisor(configuration: supervisorConfiguration { $0.connectTimeout = 0.5 })
        try await withCleanup({ await s.shutdown() }) {
            // Said to be a client, it never connects: launched once the connect wait is over.
            try await s.register(AppSpec(name: "Q", command: ["/bin/sleep", "600"]))
            try await s.launch("Q")
            let warned = await s.warn(.app("Q"))
            let log = await s.log
            #expect(warned.isEmpty)
            #expect(log.contains { $0.app == "Q" && $0.payload == .warning(.notSent(.noChannel)) })
            #expect(!log.contains { $0.app == "Q" && $0.payload == .warning(.sent) })
        }
    }

    @Test("a signal chosen for the app reaches its main process, and the log names it")
    func signal() async throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let fifo = try FIFO(dir.path + "/words")
        defer { fifo.close() }
        let script = "trap 'echo warned > \(fifo.path)' USR1; echo started > \(fifo.path); while :; do sleep 600 & wait $!; done"
        let s = try Supervisor(configuration: supervisorConfiguration())
        try await withCleanup({ await s.shutdown() }) {
            try await s.register(AppSpec(name: "S", command: ["/bin/sh", "-c", script], client: false, memoryWarning: .signal(SIGUSR1)))
            try await s.activate("S")
            #expect(await fifo.line(within: 60) == "started", "the app's trap is set")
            let warned = await s.warn(.app("S"))
            #expect(warned == ["S"])
            #expect(await fifo.line(within: 60) == "warned", "SIGUSR1 reached the app")
            let log = await s.log
            let warnings = log.filter { $0.app == "S" && $0.kind == .warning }
            #expect(warnings.map(\.payload) == [.warning(.signalled(SIGUSR1))])
            #expect(warnings.map(\.detail) == ["sent: signal \(SIGUSR1) (SIGUSR1)"])
        }
    }

    @Test("a command chosen for the app runs with its name and PID, and the log says how it ended")
    func command() async throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let out = dir.path + "/out"
        let action = MemoryWarningAction.command(["/bin/sh", "-c", "echo \"$MEMPRESSURE_APP $MEMPRESSURE_PID\" > \(out); exit 3"])
        let s = try Supervisor(configuration: supervisorConfiguration())
        try await withCleanup({ await s.shutdown() }) {
            try await s.register(AppSpec(name: "C", command: ["/bin/sleep", "600"], client: false, memoryWarning: action))
            try await s.activate("C")
            let pid = try #require(try await s.pid(of: "C"))
            let warned = await s.warn(.app("C"))  // waits for the command
            #expect(warned == ["C"])
            #expect(String(decoding: try ProcFS.readBytes(out), as: UTF8.self) == "C \(pid)\n")
            let log = await s.log
            #expect(log.contains { $0.app == "C" && $0.payload == .warning(.commandRan(.exited(3))) })
            #expect(log.contains { $0.app == "C" && $0.detail == "command ran: exited with status 3" })
        }
    }

    @Test("a warning command still running at shutdown is ended with its process group, reaped and logged")
    func commandAtShutdown() async throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let fifo = try FIFO(dir.path + "/words")
        defer { fifo.close() }
        // The command and a helper it leaves in its group: both must go.
        let action = MemoryWarningAction.command(["/bin/sh", "-c", "sleep 31991 & echo $! > \(fifo.path); exec sleep 31992"])
        let s = try Supervisor(configuration: supervisorConfiguration())
        var helper: WatchedProcess?
        try await withCleanup({ await s.shutdown() }) {
            try await s.register(AppSpec(name: "L", command: ["/bin/sleep", "600"], client: false, memoryWarning: action))
            try await s.activate("L")
            #expect(await s.warn(.app("L"), waitForAcknowledgements: false) == ["L"])
            let pid = try #require(await fifo.line(within: 60).flatMap { Int32($0) }, "the command started its helper")
            helper = WatchedProcess(pid)
            try #require(helper != nil)
            await s.shutdown()
            let log = await s.log
            #expect(log.contains { $0.app == "L" && $0.payload == .warning(.commandRan(.signaled(SIGKILL))) }, "\(log.filter { $0.kind == .warning })")
        }
        #expect(await helper?.waitForExit(timeout: 10) ?? true, "the command's helper was ended with it")
    }

    @Test("a command that cannot be started: not sent, and the error says why")
    func missingCommand() async throws {
        let s = try Supervisor(configuration: supervisorConfiguration())
        try await withCleanup({ await s.shutdown() }) {
            try await s.register(AppSpec(name: "M", command: ["/bin/sleep", "600"], client: false, memoryWarning: .command(["/nonexistent/warn-me"])))
            try await s.activate("M")
            #expect(await s.warn(.app("M")).isEmpty)
            let log = await s.log
            #expect(log.contains { $0.app == "M" && $0.payload == .warning(.notSent(.commandNotStarted)) })
            #expect(log.contains { if case .error(.warningCommand) = $0.payload { $0.app == "M" } else { false } })
        }
    }

    @Test("the choice in JSON: a word, a signal's name, or a command; anything else is refused by name")
    func json() throws {
        func spec(_ warning: String) throws -> AppSpec {
            try JSONDecoder().decode(AppSpec.self, from: Data(#"{"name": "A", "command": ["/bin/true"], "memoryWarning": \#(warning)}"#.utf8))
        }
        #expect(try spec(#""none""#).memoryWarning == MemoryWarningAction.none)
        #expect(try spec(#""callback""#).memoryWarning == .callback)
        #expect(try spec(#""SIGUSR1""#).memoryWarning == .signal(SIGUSR1))
        #expect(try spec(#""usr2""#).memoryWarning == .signal(SIGUSR2))
        #expect(try spec(#""SIGRTMIN+3""#).memoryWarning == .signal(37))
        #expect(try spec(#"{"command": ["/bin/echo", "x"]}"#).memoryWarning == .command(["/bin/echo", "x"]))
        for bad in [#""SIGKILL""#, #""SIGSTOP""#, #""sometimes""#, #""SIGRTMIN+31""#, #"{"command": []}"#, #"{"comand": ["/x"]}"#, "7"] {
            #expect(throws: DecodingError.self, "\(bad)") { try spec(bad) }
        }
        // Without a choice: the callback for a client, nothing for any other program.
        #expect(AppSpec(name: "A", command: ["/x"]).effectiveMemoryWarning == .callback)
        #expect(AppSpec(name: "A", command: ["/x"], client: false).effectiveMemoryWarning == MemoryWarningAction.none)
        // What it encodes, it decodes.
        for action in [MemoryWarningAction.none, .callback, .signal(SIGHUP), .signal(40), .command(["/bin/sh", "-c", "kill -USR1 $MEMPRESSURE_PID"])] {
            let spec = AppSpec(name: "A", command: ["/x"], memoryWarning: action)
            #expect(try JSONDecoder().decode(AppSpec.self, from: try JSONEncoder().encode(spec)) == spec)
            let command = Command.register(spec)
            #expect(try JSONDecoder().decode(Command.self, from: try JSONEncoder().encode(command)) == command)
        }
    }
}
