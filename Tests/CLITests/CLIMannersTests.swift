import FoundationEssentials
import Glibc
import Subprocess
import SystemPackage
import Testing
import MemPressureTestSupport

/// The command line's manners, as htop and btm have them: live `top` answers keys, a mistyped
/// subcommand gets a suggestion, a bad value is named for what it is, and no message shows Swift
/// or library internals.
@Suite("CLI manners")
struct CLIMannersTests {
    @Test("a mistyped subcommand is named, with the closest ones (did you mean), status 64")
    func didYouMean() async throws {
        let top = try await runMempressure(["tpo"])
        #expect(top.status == 64)
        #expect(top.standardError.contains("unknown subcommand 'tpo' of mempressure; did you mean 'top'?"), "\(top.standardError)")
        let nested = try await runMempressure(["cache", "simulat"])
        #expect(nested.status == 64)
        #expect(nested.standardError.contains("unknown subcommand 'simulat' of mempressure cache; did you mean 'simulate'?"), "\(nested.standardError)")
        // Nothing close: named, without a guess.
        let far = try await runMempressure(["zzzzzz"])
        #expect(far.status == 64)
        #expect(far.standardError.contains("unknown subcommand 'zzzzzz' of mempressure") && !far.standardError.contains("did you mean"), "\(far.standardError)")
    }

    @Test("a negative number after an option is its value, and is told what is wrong with it")
    func negativeValue() async throws {
        let r = try await runMempressure(["top", "--interval", "-1"])
        #expect(r.status == 64)
        #expect(!r.standardError.contains("Missing value"), "\(r.standardError)")
        #expect(r.standardError.contains("--interval") && r.standardError.contains("-1"), "\(r.standardError)")
    }

    @Test("a file that is not a scenario, and a port in use, are said in words: no DecodingError, no NIO function names")
    func noInternals() async throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        try writeText("{\"apps\": 3}", to: "\(dir.path)/s.json")
        let run = try await runMempressure(["run", "\(dir.path)/s.json"])
        #expect(run.status == 1)
        #expect(run.standardError.hasPrefix("mempressure: \(dir.path)/s.json: not a scenario: "), "\(run.standardError)")
        #expect(!run.standardError.contains("DecodingError") && !run.standardError.contains("Context("), "\(run.standardError)")

        // A port this test holds.
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        try #require(fd >= 0)
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let bound = withUnsafePointer(to: &address) { p in
            p.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        try #require(bound == 0 && listen(fd, 1) == 0)
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) { p in
            p.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        let port = Int(UInt16(bigEndian: address.sin_port))
        let export = try await runMempressure(["export", "--listen", "127.0.0.1:\(port)"])
        #expect(export.status == 1)
        #expect(export.standardError == "mempressure: cannot listen on 127.0.0.1:\(port): Address already in use (EADDRINUSE)\n", "\(export.standardError)")
    }

    /// What Swift or a library would print of itself: a type's rendering, a decoder's own
    /// sentence, a function's signature.
    static let internals = [
        "DecodingError", "EncodingError", "Context(", "codingPath", "debugDescription", "underlyingError", "Expected to decode",
        "Dictionary<", "Array<", "Optional(", "Swift.", "Foundation", "NIO", "Hummingbird", "(descriptor:", "Fatal error",
    ]

    /// Every command that reads a file, given files that are wrong in each way a decoder can
    /// see: not JSON, JSON of the wrong shape at the top, a field of the wrong kind, a missing
    /// field, a directory, a FIFO. Each must fail with a message of its own in words.
    @Test("bad files for every command that reads one: a message in words, never the decoder's or Swift's")
    func badFilesSweep() async throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let files: [(String, String)] = [
            ("garbage.json", "garbage{"), ("array.json", "[1, 2]"), ("kind.json", #"{"formatVersion": "x", "kind": 3}"#),
            ("empty-object.json", "{}"), ("null-field.json", #"{"apps": null, "steps": []}"#),
            ("binary.json", String(decoding: (0..<200).map { UInt8(($0 * 37) & 0xff) }, as: UTF8.self)),
            ("trace.csv", "key,size\n1,x\n"),
        ]
        for (name, text) in files { try writeText(text, to: "\(dir.path)/\(name)") }
        try #require(mkfifo("\(dir.path)/fifo", 0o600) == 0)
        var commands: [[String]] = []
        for name in files.map(\.0) + ["fifo", "."] {
            let path = "\(dir.path)/\(name)"
            commands += [["diff", path, path], ["run", path], ["jetsam", "replay", path], ["jetsam", "report", path]]
        }
        // load takes any regular file: only what is not one.
        commands += [["load", "\(dir.path)/fifo"], ["load", dir.path]]
        commands += [["cache", "simulate", "--capacity", "10", "--trace", "\(dir.path)/trace.csv"]]
        for arguments in commands {
            let r = try await runMempressure(arguments)
            let said = r.standardError
            #expect(r.status != 0 && !said.isEmpty, "mempressure \(arguments.joined(separator: " ")): status \(r.status), said \(said)")
            #expect(said.hasPrefix("mempressure: ") || said.hasPrefix("Error: "), "mempressure \(arguments.joined(separator: " ")): \(said)")
            let leaks = Self.internals.filter { said.contains($0) }
            #expect(leaks.isEmpty, "mempressure \(arguments.joined(separator: " ")) shows \(leaks): \(said)")
        }
        // A field of the wrong kind and a null where a list belongs, in JSON's words.
        let kind = try await runMempressure(["diff", "\(dir.path)/kind.json", "\(dir.path)/kind.json"])
        #expect(kind.standardError.contains("expected a number, found a string at .formatVersion"), "\(kind.standardError)")
        let null = try await runMempressure(["run", "\(dir.path)/null-field.json"])
        #expect(null.standardError.contains("expected an array, found null at .apps"), "\(null.standardError)")
    }

    /// Live `top` on a pseudo-terminal of 100 columns, driven by a small Python program: it waits
    /// for the footer to say what the table is sorted by, types a sort key, waits for the table
    /// to be sorted by it, then types q and waits for the exit. Each wait is for the text, with a
    /// timeout; none is a sleep.
    @Test("live top: q quits, sort keys re-sort at once, the last line lists the keys, the sorted column stays in sight at 100 columns")
    func liveKeys() async throws {
        let driver = #"""
            import os, pty, select, signal, struct, fcntl, termios, sys, time
            pid, fd = pty.fork()
            if pid == 0:
                fcntl.ioctl(0, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 100, 0, 0))
                os.execv(sys.argv[1], [sys.argv[1], "top", "--interval", "1", "--sort", "swappss", "--limit", "5"])
            seen = b""
            def wait_for(text, seconds=120):
                global seen
                deadline = time.monotonic() + seconds
                while text not in seen:
                    left = deadline - time.monotonic()
                    if left <= 0:
                        print("TIMEOUT waiting for %r; screen: %r" % (text, seen[-3000:])); sys.exit(3)
                    r, _, _ = select.select([fd], [], [], left)
                    if r:
                        try:
                            chunk = os.read(fd, 65536)
                        except OSError:
                            print("EOF waiting for %r" % text); sys.exit(4)
                        if not chunk:
                            print("EOF waiting for %r" % text); sys.exit(4)
                        seen += chunk
            wait_for(b"sorted by swappss")
            # The header row of the first screen, as the terminal shows it (cut at 100 columns).
            header = [l for l in seen.split(b"\n") if b"PID" in l and b"App" in l]
            print("HEADER " + (header[0].decode(errors="replace") if header else ""))
            print("KEYS " + ("yes" if b"q quit" in seen else "no"))
            seen = b""
            os.write(fd, b"d")
            wait_for(b"sorted by dirty")
            os.write(fd, b"q")
            deadline = time.monotonic() + 120
            while True:
                done, status = os.waitpid(pid, os.WNOHANG)
                if done:
                    print("EXIT %d" % os.waitstatus_to_exitcode(status)); break
                if time.monotonic() > deadline:
                    os.kill(pid, signal.SIGKILL); os.waitpid(pid, 0); print("TIMEOUT waiting for the exit after q"); sys.exit(5)
                select.select([fd], [], [], 0.2)
                try:
                    os.read(fd, 65536)
                except OSError:
                    pass
            """#
        let result = try await Subprocess.run(
            .path(FilePath("/usr/bin/python3")), arguments: ["-c", driver, buildDirectory + "/mempressure"],
            output: .string(limit: 1 << 20), error: .string(limit: 1 << 20))
        let out = result.standardOutput
        #expect(result.terminationStatus == .exited(0), "\(out)\n\(result.standardError)")
        let header = out.split(separator: "\n").first { $0.hasPrefix("HEADER ") }.map(String.init) ?? ""
        #expect(header.contains("SwapPss"), "the sorted column is not in the first 100 columns: \(header)")
        #expect(out.contains("KEYS yes"), "\(out)")
        #expect(out.contains("EXIT 0"), "\(out)")
    }
}
