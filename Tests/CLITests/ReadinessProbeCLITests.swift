import Glibc
import MemPressureSystem
import Subprocess
import SystemPackage
import Testing
import MemPressureTestSupport

/// `app launch --ready-probe`: a program without the client made an app from the command line,
/// its launch done once its probe passes.
@Suite("readiness probes from the command line")
struct ReadinessProbeCLITests {
    @Test("--ready-probe goes with launch, --no-client and a program; refused otherwise before a supervisor is asked")
    func refused() async throws {
        for args in [["launch", "A", "--ready-probe", "/bin/true", "--", "/bin/true"], ["activate", "A", "--no-client", "--ready-probe", "/bin/true"]] {
            let r = try await runMempressure(["app", "--dir", "/nonexistent"] + args)
            #expect(r.status == 64, "\(r.standardError)")
            #expect(r.standardError.contains("--ready-probe goes with launch, --no-client and a program"), "\(r.standardError)")
        }
    }

    @Test("supervise: the launch returns once the probe passes, and the log says the program is ready")
    func supervised() async throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let runtime = "\(dir.path)/rt"
        // The probe passes once the program has written its file; it counts its tries.
        let probe = "\(dir.path)/probe.sh"
        let script = "#!/bin/sh\necho x >> \(dir.path)/tries\ntest -e \(dir.path)/up\n"
        let fd = open(probe, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o700)
        try #require(fd >= 0)
        _ = script.withCString { Glibc.write(fd, $0, strlen($0)) }
        close(fd)
        let executable = buildDirectory + "/mempressure"
        _ = try await Subprocess.run(.path(FilePath(executable)), arguments: ["supervise", "--dir", runtime], input: .none, output: .sequence, error: .discarded) { execution in
            var lines = execution.standardOutput.strings().makeAsyncIterator()
            _ = try #require(try await lines.next())  // supervising: ...
            let launched = try await runMempressure([
                "app", "--dir", runtime, "launch", "R", "--no-client", "--ready-probe", probe, "--", "/bin/sh", "-c", "touch \(dir.path)/up; exec sleep 31997",
            ])
            #expect(launched.status == 0, "\(launched.standardError)")
            // The launch returned after a pass: the program's file exists and the probe ran.
            #expect(ProcFS.isFile("\(dir.path)/up"))
            #expect(ProcFS.isFile("\(dir.path)/tries"))
            var ready = false
            while !ready, let line = try await lines.next() {
                if line.contains(" R ") && line.contains(" ready") { ready = true }
            }
            #expect(ready)
            try execution.send(signal: .terminate)
            while let _ = try await lines.next() {}
        }
    }
}
