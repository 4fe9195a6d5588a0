import Glibc
import MemPressureSystem
import Subprocess
import SystemPackage
import Testing
import MemPressureTestSupport

/// `app launch --memory-warning` and `--memory-warning-command`: what a warning becomes for a
/// program without a client, chosen on the command line, and the log that says so.
@Suite("memory warnings for programs without a client, from the command line")
struct MemoryWarningCLITests {
    @Test("a wrong choice is refused before anything is asked of a supervisor", arguments: [
        (["--memory-warning", "SIGKILL"], "--memory-warning \"SIGKILL\": give callback, none, or a signal"),
        (["--memory-warning", "often"], "--memory-warning \"often\": give callback, none, or a signal"),
        (["--memory-warning", "none", "--memory-warning-command", "/bin/true"], "give --memory-warning or --memory-warning-command, not both"),
    ])
    func refused(_ options: [String], _ message: String) async throws {
        let r = try await runMempressure(["app", "--dir", "/nonexistent", "launch", "A", "--no-client"] + options + ["--", "/bin/true"])
        #expect(r.status == 64, "\(r.standardError)")
        #expect(r.standardError.contains(message), "\(r.standardError)")
        let notLaunch = try await runMempressure(["app", "--dir", "/nonexistent", "activate", "A", "--memory-warning", "SIGUSR1"])
        #expect(notLaunch.status == 64 && notLaunch.standardError.contains("go with launch and a program"), "\(notLaunch.standardError)")
    }

    @Test("supervise: a signal chosen with --memory-warning is logged as sent, a program with no choice as not sent")
    func supervised() async throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let runtime = "\(dir.path)/rt"
        let executable = buildDirectory + "/mempressure"
        _ = try await Subprocess.run(.path(FilePath(executable)), arguments: ["supervise", "--dir", runtime], input: .none, output: .sequence, error: .discarded) { execution in
            var lines = execution.standardOutput.strings().makeAsyncIterator()
            _ = try #require(try await lines.next())  // supervising: ...
            func app(_ args: [String]) async throws -> CommandResult { try await runMempressure(["app", "--dir", runtime] + args) }
            let signalled = try await app(["launch", "S", "--no-client", "--memory-warning", "usr1", "--", "/bin/sh", "-c", "trap '' USR1; exec sleep 31994"])
            #expect(signalled.status == 0, "\(signalled.standardError)")
            let plain = try await app(["launch", "N", "--no-client", "--", "/bin/sleep", "31993"])
            #expect(plain.status == 0, "\(plain.standardError)")
            let warned = try await app(["warn", "all"])
            #expect(warned.status == 0, "\(warned.standardError)")
            // The log, as supervise prints it, up to both warnings.
            var seen: [String] = []
            while seen.count < 2, let line = try await lines.next() {
                if line.contains(" warning ") { seen.append(line) }
            }
            #expect(seen.contains { $0.contains(" S ") && $0.hasSuffix("sent: signal \(SIGUSR1) (SIGUSR1)") }, "\(seen)")
            #expect(seen.contains { $0.contains(" N ") && $0.hasSuffix("not sent: nothing chosen for this app (no client, no memoryWarning)") }, "\(seen)")
            try execution.send(signal: .terminate)
            while let _ = try await lines.next() {}
        }
    }
}
