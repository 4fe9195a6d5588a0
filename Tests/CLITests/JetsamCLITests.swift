import MemPressureLifecycle
import FoundationEssentials
import Glibc
import MemPressureLifecycleProtocol
import MemPressureSystem
import Subprocess
import SystemPackage
import Testing
import MemPressureTestSupport

@Suite("mempressure jetsam")
struct JetsamCLITests {
    static let canBudget = Supervisor.canBudget()

    struct DryRun: Decodable {
        var formatVersion: Int
        var policy: String
        var apps: [App]
        struct App: Decodable {
            var rank: Int
            var pid: Int32
            var name: String
            var state: String
            var band: String
            var footprintBytes: UInt64
            var purgeableBytes: UInt64
            var explanation: String
        }
    }

    @Test("--dry-run --json ranks the live machine's apps in kill order; a stopped process counts as suspended; nothing is killed")
    func dryRun() async throws {
        // A process of our own, stopped: the one thing on the machine we may stop.
        var pid: pid_t = 0
        let words: [String] = ["/bin/sleep", "120"]
        let argv = words.map { strdup($0) } + [nil]
        defer { for p in argv { free(p) } }
        try #require(posix_spawn(&pid, "/bin/sleep", nil, nil, argv, environ) == 0)
        defer {
            do { try ChildSignals.send(SIGKILL, to: pid) } catch { Issue.record("\(error)") }
            var status: Int32 = 0
            waitpid(pid, &status, 0)
        }
        try ChildSignals.send(SIGSTOP, to: pid)
        try ChildSignals.waitUntil(WSTOPPED, pid: pid)

        for policy in ["ios", "xnu", "lmkd", "largest", "lru", "cost"] {
            let r = try await runMempressure(["jetsam", "--dry-run", "--json", "--policy", policy, "--foreground", "\(getpid())"])
            #expect(r.status == 0, "\(r.standardError)")
            let report = try JSONDecoder().decode(DryRun.self, from: Data(r.standardOutput.utf8))
            #expect(report.formatVersion == 1 && report.policy == policy)
            #expect(report.apps.map(\.rank) == Array(1...report.apps.count), "ranks 1, 2, ... in kill order")
            #expect(report.apps.allSatisfy { !$0.explanation.isEmpty && !$0.band.isEmpty })
            let sleeper = try #require(report.apps.first { $0.pid == pid }, "the stopped sleep is ranked")
            #expect(sleeper.state == "suspended")
            // --foreground names the foreground app: active, in the foreground band, ranked last.
            let foreground = report.apps.filter { $0.state == "active" }
            #expect(foreground.count == 1 && foreground.first?.band == "foreground", "\(foreground)")
            #expect(report.apps.last?.state == "active", "the foreground app is ranked last")
        }
        let without = try JSONDecoder().decode(DryRun.self, from: Data(try await runMempressure(["jetsam", "--dry-run", "--json"]).standardOutput.utf8))
        #expect(!without.apps.contains { $0.state == "active" }, "without --foreground no app is in the foreground")
        let ios = try JSONDecoder().decode(DryRun.self, from: Data(try await runMempressure(["jetsam", "--dry-run", "--json", "--high-memory", "1g"]).standardOutput.utf8))
        // ios: every suspended app (here all below 1 GiB: suspended-low) before every app running in the background.
        if let lastSuspended = ios.apps.lastIndex(where: { $0.state == "suspended" }), let firstRunning = ios.apps.firstIndex(where: { $0.state == "backgroundRunning" }) {
            #expect(lastSuspended < firstRunning)
        }
        #expect(try ChildSignals.isAlive(pid), "a dry run kills nothing")
    }

    @Test("without --dry-run it refuses: jetsam kills only what a supervisor launched")
    func refuses() async throws {
        let r = try await runMempressure(["jetsam"])
        #expect(r.status != 0)
        #expect(r.standardError.contains("--dry-run"))
    }

    @Test("a scenario with jetsam logs each kill and its episode; report renders it; replay gives the same decisions twice", .enabled(if: canBudget, "needs root and a cgroup memory controller"))
    func scenarioReportReplay() async throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        func app(_ name: String, _ dirty: Int, _ extra: [String] = []) -> String {
            let argv = ["mempressure-workload", "--data-dir", "\(dir.path)/\(name)", "--state-mb", "1", "--image-cache-mb", "2", "--backing-mb", "1", "--assets-mb", "1", "--dirty-mb", "\(dirty)"] + extra
            return #"{"name": "\#(name)", "command": [\#(argv.map { "\"\($0)\"" }.joined(separator: ", "))]}"#
        }
        let scenario = """
            {"budgetBytes": 268435456, "backgroundTaskLimit": 600,
             "jetsam": {"policy": "ios", "highMemoryBytes": 26214400, "protected": ["P"], "targetAvailableShare": 0.25},
             "apps": [\(app("A", 40)), \(app("B", 30)), \(app("P", 40)), \(app("F", 20))],
             "steps": [{"activate": "A"}, {"background": "A"}, {"activate": "B"}, {"background": "B"},
                       {"activate": "P"}, {"background": "P"}, {"activate": "F"},
                       {"allocate": "F", "bytes": 73400320}, {"waitState": "A", "state": "notRunning", "timeout": 30},
                       {"terminate": "F"}]}
            """
        try writeText(scenario, to: "\(dir.path)/s.json")
        let r = try await runMempressure(["run", "\(dir.path)/s.json", "--json"])
        #expect(r.status == 0, "\(r.standardError)")
        try writeText(r.standardOutput, to: "\(dir.path)/log.json")
        struct Log: Decodable {
            var events: [SupervisorEvent]
            var episodes: [Episode]
            var kernelOOMKills: UInt64?
            struct Episode: Decodable {
                var formatVersion: Int
                var kind: String
                var victims: [Victim]
                struct Victim: Decodable { var name: String; var reclaimedBytes: UInt64; var needed: Bool; var explanation: String }
            }
        }
        let log = try JSONDecoder().decode(Log.self, from: Data(r.standardOutput.utf8))
        #expect(log.kernelOOMKills == 0)
        let event = try #require(log.events.first { $0.kind == .jetsam })
        guard case .policy(.kill(let kill)) = event.payload else {
            Issue.record("a jetsam event that is not a kill: \(event)")
            return
        }
        #expect(event.app == "A" && event.pid != nil && kill.reason == .vmPageShortage && kill.rank == 1 && kill.policy == "ios")
        #expect(kill.footprintBytes > 30 << 20 && kill.reclaimedBytes > 30 << 20 && !kill.explanation.isEmpty)
        // The log's words, as its readers have always read them.
        #expect(r.standardOutput.contains(#""kind" : "jetsam""#) && r.standardOutput.contains(#""reason" : "vm-pageshortage""#))
        let episode = try #require(log.episodes.first)
        #expect(episode.formatVersion == 2 && episode.kind == "mempressure-jetsam-episode")
        #expect(episode.victims.first?.name == "A")

        let report = try await runMempressure(["jetsam", "report", "\(dir.path)/log.json"])
        #expect(report.status == 0, "\(report.standardError)")
        for text in ["Jetsam episode 1", "Victims:", "vm-pageshortage", "suspended-high", "Timeline:"] {
            #expect(report.standardOutput.contains(text), "\(text)")
        }
        let first = try await runMempressure(["jetsam", "replay", "\(dir.path)/log.json", "--policy", "all", "--json"])
        let second = try await runMempressure(["jetsam", "replay", "\(dir.path)/log.json", "--policy", "all", "--json"])
        #expect(first.status == 0, "\(first.standardError)")
        #expect(first.standardOutput == second.standardOutput, "a replay is deterministic")
        let text = try await runMempressure(["jetsam", "replay", "\(dir.path)/log.json"])
        for policy in ["ios", "xnu", "lmkd", "largest", "lru", "cost"] { #expect(text.standardOutput.contains(policy)) }
    }

    @Test("report and replay of a file that is not ours, or of another format version, say so")
    func badFiles() async throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        try writeText(#"{"hello": "world"}"#, to: "\(dir.path)/other.json")
        try writeText(#"{"kind": "mempressure-jetsam-episode", "formatVersion": 99}"#, to: "\(dir.path)/future.json")
        try writeText("not json at all", to: "\(dir.path)/garbage.json")
        let cases: [(String, String)] = [
            ("other.json", "not a jetsam episode report"),
            ("future.json", "episode format version 99"),
            ("garbage.json", "not valid JSON"),
            ("missing.json", "ENOENT"),
        ]
        for (file, message) in cases {
            for command in ["report", "replay"] {
                let r = try await runMempressure(["jetsam", command, "\(dir.path)/\(file)"])
                #expect(r.status == 1)
                #expect(r.standardError.hasPrefix("mempressure: ") && r.standardError.contains(message), "\(command) \(file): \(r.standardError)")
            }
        }
    }

    @Test("supervise --jetsam, driven by app: allocate and release grow and shrink the model app's dirty memory; background --no-wait", .enabled(if: canBudget, "needs root and a cgroup memory controller"))
    func superviseAllocate() async throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let runtime = "\(dir.path)/rt"
        _ = try await Subprocess.run(
            .path(FilePath(buildDirectory + "/mempressure")),
            arguments: ["supervise", "--dir", runtime, "--budget", "256m", "--jetsam", "--jetsam-policy", "cost", "--high-memory", "25%", "--protect", "W"],
            input: .none, output: .sequence, error: .discarded
        ) { execution in
            var lines = execution.standardOutput.strings().makeAsyncIterator()
            let first = try #require(try await lines.next())
            #expect(first.hasPrefix("supervising: apps connect to \(runtime)/control.sock"))
            func app(_ args: [String]) async throws -> CommandResult { try await runMempressure(["app", "--dir", runtime] + args) }
            func footprint() async throws -> UInt64 {
                let r = try await runMempressure(["apps", "--dir", runtime, "--json"])
                let reports = try JSONDecoder().decode([AppReport].self, from: Data(r.standardOutput.utf8))
                return try #require(reports.first?.footprint.last?.footprintBytes)
            }
            // A background task of a minute: `background --no-wait` must return while it runs.
            let launched = try await app(["launch", "W", "--", "mempressure-workload", "--state-mb", "1", "--image-cache-mb", "1", "--data-dir", "\(dir.path)/data", "--background-task", "60"])
            #expect(launched.status == 0, "\(launched.standardError)")
            #expect(try await app(["activate", "W"]).standardOutput == "W: active\n")
            let before = try await footprint()
            let grown = try await app(["allocate", "W", "--bytes", "32m"])
            #expect(grown.status == 0, "\(grown.standardError)")
            #expect(try await app(["deactivate", "W"]).standardOutput == "W: inactive\n")  // a transition samples the footprint
            let after = try await footprint()
            // The app's own transient memory (launch buffers freed back to malloc) moves its
            // footprint by a few MiB either way; the 32 MiB written must show whole.
            #expect(after >= 32 << 20 && after > before, "\(before) -> \(after)")
            #expect(try await app(["release", "W", "--bytes", "32m"]).status == 0)
            #expect(try await app(["background", "W", "--no-wait"]).status == 0)
            let state = try JSONDecoder().decode([AppReport].self, from: Data(try await runMempressure(["apps", "--dir", runtime, "--json"]).standardOutput.utf8))
            #expect(state.first?.state == .backgroundRunning, "returned once didEnterBackground was delivered, while the task runs")
            let bad = try await app(["allocate", "W"])
            #expect(bad.status != 0 && bad.standardError.contains("--bytes"))
            // The kernel's OOM killer never fired in the device (its cgroup is named after the
            // supervisor's PID).
            let supervisorPID = execution.processIdentifier.value
            let v1 = ProcFS.isFile("/sys/fs/cgroup/memory/cgroup.procs")
            let (root, file) = v1 ? ("/sys/fs/cgroup/memory", "memory.oom_control") : ("/sys/fs/cgroup", "memory.events")
            let groups = try ProcFS.listDirectory(root).map { String(decoding: $0, as: UTF8.self) }.filter { $0.hasPrefix("mempressure-\(supervisorPID)-") }
            #expect(groups.count == 1, "\(groups)")
            for g in groups {
                let control = String(decoding: try ProcFS.readBytes("\(root)/\(g)/\(file)"), as: UTF8.self)
                #expect(control.contains("oom_kill 0"), "\(control)")
            }
            try execution.send(signal: .terminate)
            while let _ = try await lines.next() {}
        }
    }
}

