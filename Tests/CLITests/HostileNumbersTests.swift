import MemPressureLifecycle
import FoundationEssentials
import Glibc
import MemPressureSystem
import Testing
import MemPressureTestSupport
import MemPressureVMTracker

/// Numbers from outside that once trapped (SIGILL) or were misreported, exit statuses that said
/// "done" when nothing was done, and control characters from files reaching the terminal.
/// Every test here failed on the code before issue 11.
@Suite("hostile numbers, exit statuses, printable output")
struct HostileNumbersTests {
    /// A status of -1 is a death by signal (`runMempressure`): the trap these tests guard against.
    func expectRefused(_ arguments: [String], status: Int32 = 1, saying words: String) async throws {
        let r = try await runMempressure(arguments)
        #expect(r.status == status, "\(arguments): status \(r.status), stderr \(r.standardError)")
        #expect(r.standardError.contains(words), "\(arguments): \(r.standardError)")
    }

    @Test("Seconds.duration saturates instead of trapping; Seconds.check names the value and the range")
    func seconds() throws {
        #expect(Seconds.duration(.infinity) == .seconds(86_400))
        #expect(Seconds.duration(1e300) == .seconds(86_400))
        #expect(Seconds.duration(.nan) == .zero)
        #expect(Seconds.duration(-5) == .zero)
        #expect(Seconds.duration(1.5) == .milliseconds(1500))
        #expect(Seconds.milliseconds(.infinity) == 86_400_000)
        #expect(throws: SecondsError.self) { try Seconds.check(.infinity, "x") }
        #expect(throws: SecondsError.self) { try Seconds.check(0, "x") }
        #expect(try Seconds.check(0, "x", allowZero: true) == 0)
        do {
            try Seconds.check(1e300, "callbackTimeout")
            Issue.record("1e300 s accepted")
        } catch {
            #expect(error.description == "callbackTimeout must be a number of seconds above 0 and at most 86400 (a day), not 1e+300")
        }
    }

    @Test("an smaps Rss far above its Size renders in all three formats (the percentage once trapped)")
    func rssAboveSize() async throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let pid = "\(try Fixtures.process(labelled: "sleep").pid)"
        try copyTree("\(Fixtures.procRoot)/\(pid)", to: "\(dir.path)/\(pid)")
        var text = String(decoding: try Fixtures.bytes("\(dir.path)/\(pid)/smaps"), as: UTF8.self)
        let rss = try #require(text.firstRange(of: "\nRss:"))
        let end = try #require(text[rss.upperBound...].firstIndex(of: "\n"))
        text.replaceSubrange(rss.upperBound..<end, with: " 17592186044415 kB")
        try writeText(text, to: "\(dir.path)/\(pid)/smaps")
        for format in [[], ["--json"], ["--csv"], ["--regions"]] {
            let r = try await runMempressure(["vm", pid, "--proc-root", dir.path] + format)
            #expect(r.status == 0, "\(format): status \(r.status) \(r.standardError)")
        }
        #expect(ByteFormat.percent(UInt64.max, of: 1).hasSuffix("%"))
        #expect(ByteFormat.percent(1, of: 4) == "25%")
    }

    @Test("durations out of range are refused where they enter, naming the flag or key", arguments: [
        (["watch", "1", "--interval", "1e300"], Int32(64), "--interval must be a number of seconds above 0"),
        (["watch", "1", "--interval", "inf"], Int32(64), "--interval must be a number of seconds above 0"),
        (["supervise", "--background-task-limit", "inf"], Int32(64), "--background-task-limit must be a number of seconds"),
        (["supervise", "--background-task-limit", "nan"], Int32(64), "--background-task-limit must be a number of seconds"),
    ])
    func durationFlags(_ arguments: [String], _ status: Int32, _ words: String) async throws {
        try await expectRefused(arguments, status: status, saying: words)
    }

    @Test("a scenario's durations out of range are refused before anything starts", arguments: [
        (#""callbackTimeout": 1e300"#, "callbackTimeout must be a number of seconds"),
        (#""launchTimeout": -1"#, "launchTimeout must be a number of seconds"),
        (#""backgroundTaskLimit": 0"#, "backgroundTaskLimit must be a number of seconds"),
        (#""budgetBytes": 1e30"#, "valid JSON, but the number at budgetBytes"),
    ])
    func scenarioDurations(_ field: String, _ words: String) async throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let path = "\(dir.path)/s.json"
        try writeText(#"{\#(field), "apps": [{"name": "a", "command": ["mempressure-workload"]}], "steps": [{"launch": "a"}]}"#, to: path)
        try await expectRefused(["run", path], saying: words)
    }

    @Test("a key a scenario does not know is refused, naming it: at the top, in an app, in a step", arguments: [
        (#"{"callbackTimout": 1, "apps": [{"name": "a", "command": ["true"]}], "steps": []}"#, "unknown key 'callbackTimout' in the scenario"),
        (#"{"apps": [{"name": "a", "command": ["true"], "enviroment": {"A": "1"}}], "steps": []}"#, "unknown key 'enviroment' in an app"),
        (#"{"apps": [{"name": "a", "command": ["true"]}], "steps": [{"launch": "a", "timout": 5}]}"#, "unknown key 'timout' in a command"),
    ])
    func unknownKeys(_ text: String, _ words: String) async throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        try writeText(text, to: "\(dir.path)/s.json")
        try await expectRefused(["run", "\(dir.path)/s.json"], saying: words)
    }

    @Test("a supervisor configured with an infinite duration refuses to start and makes nothing")
    func supervisorConfiguration() throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        var c = SupervisorConfiguration()
        c.runtimeDirectory = dir.path + "/run"
        c.callbackTimeout = .infinity
        do {
            _ = try Supervisor(configuration: c)
            Issue.record("a supervisor with callbackTimeout infinity started")
        } catch {
            guard case .configuration(.seconds(let e)) = error else { throw error }
            #expect(e.what == "callbackTimeout")
        }
        c.callbackTimeout = 5
        c.expirationWarning = 60
        #expect(throws: SupervisorError.self) { _ = try Supervisor(configuration: c) }
        #expect(access(dir.path + "/run", F_OK) != 0, "nothing was made")
    }

    @Test("a runtime directory made for a supervisor whose setup then fails is removed again")
    func failedSetupRemovesDirectory() throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        var c = SupervisorConfiguration()
        // Short enough for mkdir, too long for a socket address (108 bytes).
        let runtime = dir.path + "/" + String(repeating: "d", count: 120)
        c.runtimeDirectory = runtime
        #expect(throws: SupervisorError.self) { _ = try Supervisor(configuration: c) }
        #expect(access(runtime, F_OK) != 0, "the directory made for the failed setup is gone")
    }

    @Test("generated traces have documented limits; a bad first line of a trace is not taken for a header")
    func traces() async throws {
        try await expectRefused(["cache", "simulate", "--zipf", "1", "--requests", "1000000000000", "--capacity", "10"], status: 64, saying: "--requests must be from 0 to 100000000")
        try await expectRefused(["cache", "simulate", "--zipf", "1", "--objects", "9000000000000000", "--capacity", "10"], status: 64, saying: "--objects must be from 1 to 10000000")
        try await expectRefused(["cache", "simulate", "--zipf", "inf", "--capacity", "10"], status: 64, saying: "--zipf must be a number from 0 to 100")
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        try writeText("a,-5\nb,10\n", to: "\(dir.path)/bad.csv")
        try await expectRefused(["cache", "simulate", "--trace", "\(dir.path)/bad.csv", "--capacity", "1"], saying: "line 1: size is not a non-negative integer")
        try writeText("key,size\nb,10\nb,10\n", to: "\(dir.path)/good.csv")
        let r = try await runMempressure(["cache", "simulate", "--trace", "\(dir.path)/good.csv", "--capacity", "1", "--policy", "lru", "--json"])
        #expect(r.status == 0, "\(r.standardError)")
        #expect(r.standardOutput.contains("\"hits\" : 1"))
    }

    @Test("check and watch of a PID that does not exist exit 1 and say so")
    func missingPID() async throws {
        try await expectRefused(["check", "2147483632"], saying: "")
        try await expectRefused(["watch", "2147483632", "--count", "1"], saying: "pid 2147483632: no such process")
        try await expectRefused(["watch", "2147483632", "--count", "1", "--json"], saying: "pid 2147483632: no such process")
    }

    @Test("control characters and bidi overrides in a report file never reach the terminal; JSON stays valid")
    func controlCharacters() async throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let fixtures = Fixtures.directory + "/reports"
        for name in ["before", "after"] {
            var text = String(decoding: try Fixtures.bytes("\(fixtures)/\(name).json"), as: UTF8.self)
            text = text.replacing(#""name" : "mempressure-hog""#, with: #""name" : "\u001b[2J\u001b]0;pwned\u0007evil\u202egol.exe\u0085""#)
            text = text.replacing(#""path" : "/"#, with: #""path" : "\r\u001b[31m/"#)
            try writeText(text, to: "\(dir.path)/\(name).json")
        }
        let r = try await runMempressure(["diff", "\(dir.path)/before.json", "\(dir.path)/after.json"])
        #expect(r.status == 0, "\(r.standardError)")
        let forbidden: [Unicode.Scalar] = ["\u{1b}", "\u{07}", "\r", "\u{202e}", "\u{85}"]
        #expect(!r.standardOutput.unicodeScalars.contains { forbidden.contains($0) })
        #expect(r.standardOutput.contains("\\u001b"))
        let json = try await runMempressure(["diff", "\(dir.path)/before.json", "\(dir.path)/after.json", "--json"])
        #expect(json.status == 0)
        #expect(!json.standardOutput.unicodeScalars.contains { forbidden.contains($0) })
        let decoded = try JSONDecoder().decode(ReportDiff.self, from: Data(json.standardOutput.utf8))
        #expect(decoded.regions?.contains { $0.path.hasPrefix("\r\u{1b}[31m/") } == true, "the JSON still means the same bytes")
        #expect(printableText("a\u{1b}b\u{202e}\n") == "a\\u001bb\\u202e\\u000a")
        #expect(printableText("a\tb\n", keepingLineBreaks: true) == "a\tb\n")
    }

    @Test("valid JSON with a byte count out of range is called that, with the number's path")
    func outOfRangeNumber() async throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let fixtures = Fixtures.directory + "/reports"
        var text = String(decoding: try Fixtures.bytes("\(fixtures)/before.json"), as: UTF8.self)
        let key = try #require(text.firstRange(of: #""footprintBytes" : "#))
        let end = try #require(text[key.upperBound...].firstIndex { $0 == "," || $0 == "\n" })
        text.replaceSubrange(key.upperBound..<end, with: "-1")
        try writeText(text, to: "\(dir.path)/neg.json")
        let r = try await runMempressure(["diff", "\(dir.path)/neg.json", "\(fixtures)/after.json"])
        #expect(r.status == 1)
        #expect(r.standardError.contains("valid JSON, but the number at "))
        #expect(r.standardError.contains("footprintBytes, -1.0, is out of range"), "\(r.standardError)")
        #expect(!r.standardError.contains("not valid JSON"))
    }
}
