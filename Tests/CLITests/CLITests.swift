import MemPressureLifecycle
import FoundationEssentials
import Glibc
import MemPressureLifecycleProtocol
import MemPressureSystem
import MemPressureHogClient
import Subprocess
import SystemPackage
import Testing
import MemPressureTestSupport
import MemPressureVMTracker

/// Whole commands, run as a user would run them, their output compared with golden files in
/// Fixtures/cli. Set MEMPRESSURE_UPDATE_GOLDEN=1 to rewrite the golden files after a deliberate
/// change of output, then review the diff.
@Suite("mempressure CLI")
struct CLITests {
    static let goldenDirectory = Fixtures.directory + "/cli"

    func golden(_ name: String, _ actual: String) throws {
        let path = "\(Self.goldenDirectory)/\(name)"
        if getenv("MEMPRESSURE_UPDATE_GOLDEN") != nil {
            _ = mkdir(Self.goldenDirectory, 0o755)
            try writeText(actual, to: path)
            return
        }
        let expected = String(decoding: try Fixtures.readFile(path), as: UTF8.self)
        #expect(actual == expected, "\(name) differs from its golden file")
    }

    func fixturePID(_ label: String) throws -> String {
        "\(try Fixtures.process(labelled: label).pid)"
    }

    @Test("vm --json of a captured process matches its golden report")
    func vmJSON() async throws {
        let r = try await runMempressure(["vm", try fixturePID("hog"), "--proc-root", Fixtures.procRoot, "--json", "--regions"])
        #expect(r.status == 0, "\(r.standardError)")
        try golden("vm-hog.json", maskingTimestamps(r.standardOutput))
    }

    @Test("vm text: the summary table and the regions map sorted by dirty size")
    func vmText() async throws {
        let r = try await runMempressure(["vm", try fixturePID("python3"), "--proc-root", Fixtures.procRoot, "--regions", "--sort", "dirty"])
        #expect(r.status == 0, "\(r.standardError)")
        try golden("vm-python3.txt", r.standardOutput)
        let header = try #require(r.standardOutput.split(separator: "\n").first { $0.contains("% of Res.") })
        for column in ["% of Res.", "Type", "# Regs", "Path", "Resident", "Virtual Size", "Res. %", "Protections", "% All Dirty", "Dirty Size", "Swapped", "Purgeable"] {
            #expect(header.contains(column), "\(column)")
        }
    }

    @Test("vm --csv: the summary, or the regions with --regions")
    func vmCSV() async throws {
        let summary = try await runMempressure(["vm", try fixturePID("sleep"), "--proc-root", Fixtures.procRoot, "--csv"])
        try golden("vm-sleep.csv", summary.standardOutput)
        let regions = try await runMempressure(["vm", try fixturePID("sleep"), "--proc-root", Fixtures.procRoot, "--csv", "--regions"])
        let lines = regions.standardOutput.split(separator: "\n")
        #expect(lines.first?.hasPrefix("pid,start,end,permissions,offset,type,path,") == true)
        #expect(lines.count == 1 + (try Fixtures.process(labelled: "sleep").regionCount))
    }

    @Test("diff of two captured reports")
    func diff() async throws {
        let dir = Fixtures.directory + "/reports"
        let r = try await runMempressure(["diff", "\(dir)/before.json", "\(dir)/after.json"])
        #expect(r.status == 0, "\(r.standardError)")
        try golden("diff.txt", r.standardOutput)
        #expect(r.standardOutput.contains("grew"))
        let json = try await runMempressure(["diff", "\(dir)/before.json", "\(dir)/after.json", "--json"])
        let decoded = try JSONDecoder().decode(ReportDiff.self, from: Data(json.standardOutput.utf8))
        #expect(decoded.regions?.contains { $0.type == "heap" && $0.change == .grew } == true)
    }

    @Test("bad input: one clear line on stderr and status 1", arguments: [
        (["vm", "2147483632"], "mempressure: pid 2147483632: no such process\n"),
        (["vm", "no-such-process-name"], "mempressure: no process is named 'no-such-process-name'\n"),
        (["vm", "2"], "mempressure: pid 2: kernel thread, it has no user memory to report\n"),
        (["vm", "--cgroup", "no/such/group"], "mempressure: cgroup no/such/group does not exist\n"),
        (["diff", "/nonexistent/a.json", "/nonexistent/b.json"], "mempressure: /nonexistent/a.json: ENOENT (No such file or directory)\n"),
    ])
    func badInput(_ arguments: [String], _ message: String) async throws {
        let r = try await runMempressure(arguments)
        #expect(r.status == 1)
        #expect(r.standardError == message)
        #expect(r.standardOutput.isEmpty)
    }

    @Test("diff of files that are not reports names the file and what is wrong")
    func diffGarbage() async throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        try writeText("{\"hello\": 1}", to: "\(dir.path)/a.json")
        try writeText("\u{1b}[31mnot json at all", to: "\(dir.path)/b.json")
        let r1 = try await runMempressure(["diff", "\(dir.path)/a.json", "\(dir.path)/a.json"])
        #expect(r1.status == 1)
        #expect(r1.standardError.hasPrefix("mempressure: \(dir.path)/a.json: not a VM report (missing \"formatVersion\""))
        let r2 = try await runMempressure(["diff", "\(dir.path)/b.json", "\(dir.path)/a.json"])
        #expect(r2.status == 1)
        #expect(r2.standardError.hasPrefix("mempressure: \(dir.path)/b.json: not a VM report"))
        #expect(r2.standardError.split(separator: "\n").count == 1)
    }

    @Test("a truncated smaps gives the PID, the file and the line")
    func truncatedSmaps() async throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let pid = try fixturePID("sleep")
        try copyTree("\(Fixtures.procRoot)/\(pid)", to: "\(dir.path)/\(pid)")
        var smaps = try Fixtures.bytes("\(dir.path)/\(pid)/smaps")
        smaps.removeLast(7)
        try writeBytes(smaps, to: "\(dir.path)/\(pid)/smaps")
        let r = try await runMempressure(["vm", pid, "--proc-root", dir.path])
        #expect(r.status == 1)
        #expect(r.standardError.hasPrefix("mempressure: pid \(pid): \(dir.path)/\(pid)/smaps: line "))
        #expect(r.standardError.hasSuffix("truncated: the last line has no newline\n"))
    }

    @Test("top --json lists a running process with its footprint")
    func top() async throws {
        try await Hog.with(["--dirty", "8m"]) { hog in
            let r = try await runMempressure(["top", "--json"])
            #expect(r.status == 0, "\(r.standardError)")
            let report = try JSONDecoder().decode(TopReport.self, from: Data(r.standardOutput.utf8))
            let app = try #require(report.apps.first { $0.pids.contains(hog.pid) })
            #expect(app.totals.footprintBytes >= 8 << 20)
            #expect(app.totals.dirtyBytes >= 8 << 20)
            let text = try await runMempressure(["top", "--limit", "3"])
            // The machine header, then the table's column titles.
            #expect(text.standardOutput.split(separator: "\n").first { $0.split(separator: " ").prefix(2) == ["PID", "App"] }?.contains("Footprint") == true)
            let byProcess = try await runMempressure(["top", "--group-by", "process", "--csv"])
            #expect(byProcess.standardOutput.contains("\n\(hog.pid),mempressure-hog,"))
        }
    }

    @Test("vm by name, and the app of a process tree")
    func vmByName() async throws {
        try await Hog.with(["--dirty", "2m", "--children", "1"]) { hog in
            let r = try await runMempressure(["vm", "\(hog.pid)", "--json"])
            let report = try JSONDecoder().decode(VMReport.self, from: Data(r.standardOutput.utf8))
            #expect(report.scope == "app")
            #expect(Set(report.processes.map(\.pid)) == Set([hog.pid] + (hog.children ?? [])))
            let only = try await runMempressure(["vm", "\(hog.pid)", "--only", "--json"])
            #expect(try JSONDecoder().decode(VMReport.self, from: Data(only.standardOutput.utf8)).scope == "process")
        }
    }

    @Test("watch --count --json: a timeline of that many entries")
    func watch() async throws {
        try await Hog.with(["--dirty", "1m"]) { hog in
            let dir = try TemporaryDirectory()
            defer { dir.remove() }
            let r = try await runMempressure(["watch", "\(hog.pid)", "--interval", "0.05", "--count", "3", "--json", "--save", dir.path])
            #expect(r.status == 0, "\(r.standardError)")
            let timeline = try JSONDecoder().decode(Timeline.self, from: Data(r.standardOutput.utf8))
            #expect(timeline.entries.count == 3)
            #expect(timeline.entries.allSatisfy { $0.totals.dirtyBytes >= 1 << 20 })
            #expect(try ProcFS.listDirectory(dir.path).count == 3)
            let text = try await runMempressure(["watch", "\(hog.pid)", "--interval", "0.05", "--count", "2"])
            #expect(text.standardOutput.hasPrefix(TimelineEntry.header))
            #expect(text.standardOutput.split(separator: "\n").count == 3)
        }
    }

    @Test("check: the parser agrees with smaps_rollup")
    func check() async throws {
        let r = try await runMempressure(["check", "\(getpid())"])
        #expect(r.status == 0, "\(r.standardOutput)\(r.standardError)")
        #expect(r.standardOutput.hasPrefix("checked 1 processes: "))
        #expect(r.standardOutput.contains(" 0 disagree"))
    }

    static var canDropPrivileges: Bool { getuid() == 0 && access("/usr/bin/setpriv", X_OK) == 0 }

    @Test("permission denied on another user's process", .enabled(if: canDropPrivileges, "needs root and setpriv(1) to run as another user"))
    func permissionDenied() async throws {
        try await Hog.with(["--dirty", "1m"]) { hog in
            let r = try await runMempressure(["vm", "\(hog.pid)"], asUser: 65534)
            #expect(r.status == 1)
            #expect(r.standardError == "mempressure: pid \(hog.pid): /proc/\(hog.pid)/smaps: permission denied (run as the process's user or as root)\n")
            let top = try await runMempressure(["top"], asUser: 65534)
            #expect(top.status == 0, "\(top.standardError)")
            #expect(top.standardOutput.contains("not readable (permission denied)"))
            // What /proc/PID/status shows every user is shown for it: the hog's resident size
            // (its 1 MiB dirty at least), named, under its UID.
            #expect(top.standardOutput.contains("Not readable by this user (memory maps denied; from /proc/PID/status"), "\(top.standardOutput)")
            let json = try await runMempressure(["top", "--json", "--limit", "100000"], asUser: 65534)
            #expect(json.status == 0, "\(json.standardError)")
            struct Unreadable: Decodable { var pid: Int32; var name: String; var uid: UInt32?; var residentBytes: UInt64?; var residentAnonBytes: UInt64? }
            struct Report: Decodable { var unreadable: [Unreadable]? }
            let report = try JSONDecoder().decode(Report.self, from: Data(json.standardOutput.utf8))
            let shown = try #require(report.unreadable?.first { $0.pid == hog.pid }, "the hog is not among \(report.unreadable?.map(\.pid) ?? [])")
            #expect(shown.uid == 0 && shown.name == "mempressure-hog")
            #expect((shown.residentAnonBytes ?? 0) >= 1 << 20 && (shown.residentBytes ?? 0) >= (shown.residentAnonBytes ?? 0))
        }
    }
}

@Suite("mempressure cache")
struct CacheCLITests {
    @Test("cache demo: the kernel takes reclaimed entries, the rest are intact, none corrupted")
    func demo() async throws {
        let r = try await runMempressure(["cache", "demo", "--size", "8m", "--entry-size", "256k", "--json"])
        #expect(r.status == 0, "\(r.standardError)")
        struct Result: Decodable {
            var filledBytes: Int, purgeableBytesBefore: Int, residentBytesBefore: Int, residentBytesAfter: Int
            var entries: Int, discarded: Int, intact: Int, corrupted: Int
        }
        let result = try JSONDecoder().decode(Result.self, from: Data(r.standardOutput.utf8))
        #expect(result.entries == 32)
        #expect(result.discarded == 16)
        #expect(result.intact == 16)
        #expect(result.corrupted == 0)
        #expect(result.residentBytesBefore >= result.filledBytes)
        #expect(result.purgeableBytesBefore >= result.filledBytes * 9 / 10)
        #expect(result.residentBytesBefore - result.residentBytesAfter >= result.filledBytes / 2 * 9 / 10)
    }

    @Test("cache simulate: a trace file, every policy, as a table and as JSON")
    func simulate() async throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        var csv = "key,size\n"
        for i in 0..<2000 { csv += "k\((i * 7919) % 97),\(100 + i % 3)\n" }
        try writeText(csv, to: "\(dir.path)/t.csv")
        let text = try await runMempressure(["cache", "simulate", "--trace", "\(dir.path)/t.csv", "--policy", "all", "--capacity", "20"])
        #expect(text.status == 0, "\(text.standardError)")
        for p in ["lru", "sieve", "s3fifo", "tinylfu"] { #expect(text.standardOutput.contains("\n\(p) ")) }
        let json = try await runMempressure(["cache", "simulate", "--trace", "\(dir.path)/t.csv", "--policy", "sieve", "--capacity", "10%", "--capacity-unit", "bytes", "--json"])
        struct Report: Decodable { var results: [SimulationRow] }
        struct SimulationRow: Decodable { var policy: String; var requests: Int; var hits: Int; var misses: Int; var missRatio: Double }
        let report = try JSONDecoder().decode(Report.self, from: Data(json.standardOutput.utf8))
        #expect(report.results.map(\.policy) == ["sieve"])
        #expect(report.results[0].requests == 2000)
        #expect(report.results[0].hits + report.results[0].misses == 2000)
        let bad = try await runMempressure(["cache", "simulate", "--trace", "/nonexistent.csv", "--capacity", "5"])
        #expect(bad.status == 1)
        try writeText("a,1\nb,x\n", to: "\(dir.path)/bad.csv")
        let malformed = try await runMempressure(["cache", "simulate", "--trace", "\(dir.path)/bad.csv", "--capacity", "5"])
        #expect(malformed.standardError == "mempressure: \(dir.path)/bad.csv: line 2: size is not a non-negative integer of at most 1099511627776 bytes\n")
    }

    @Test("a purgeable cache in another process shows as its own type, with the stack that made it")
    func attributionFromOutside() async throws {
        try await Hog.with(["--purgeable-cache", "4m"]) { hog in
            let r = try await runMempressure(["vm", "\(hog.pid)", "--only", "--regions", "--stacks", "--json"])
            #expect(r.status == 0, "\(r.standardError)")
            let report = try JSONDecoder().decode(VMReport.self, from: Data(r.standardOutput.utf8))
            let type = try #require(report.types.first { $0.type == "purgeable cache: hog" })
            #expect(type.residentBytes >= 4 << 20)
            #expect(type.purgeableBytes >= (4 << 20) * 9 / 10)
            let region = try #require(report.regions?.first { $0.type == "purgeable cache: hog" && $0.stack != nil })
            #expect(region.stack?.contains { $0.contains("mempressure-hog") || $0.contains("main") } == true, "\(region.stack ?? [])")
            let text = try await runMempressure(["vm", "\(hog.pid)", "--only", "--regions", "--stacks"])
            #expect(text.standardOutput.contains("Call stacks of registered regions"))
        }
    }
}

@Suite("mempressure load")
struct LoadCLITests {
    @Test("load --compare: the heap copy stays dirty through reclaim, the mapping's clean pages go and come back intact")
    func compare() async throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let path = "\(dir.path)/data"
        try writeBytes((0..<(8 << 20)).map { UInt8(truncatingIfNeeded: $0 &* 7) }, to: path)
        let fd = open(path, O_RDONLY)
        #expect(fsync(fd) == 0)
        close(fd)
        let r = try await runMempressure(["load", path, "--compare", "--json"])
        #expect(r.status == 0, "\(r.standardError)")
        struct Figures: Decodable { var residentBytes: Int; var dirtyBytes: Int; var cleanBytes: Int }
        struct Side: Decodable { var before: Figures; var after: Figures }
        struct Result: Decodable { var heap: Side; var mapped: Side; var fileBytes: Int; var contentIntact: Bool; var refaultNanosPerPage: Double; var swapActive: Bool }
        let result = try JSONDecoder().decode(Result.self, from: Data(r.standardOutput.utf8))
        let size = 8 << 20
        #expect(result.fileBytes == size)
        #expect(result.heap.before.dirtyBytes == size)
        #expect(result.mapped.before.cleanBytes == size)
        #expect(result.mapped.before.dirtyBytes == 0)
        if !result.swapActive {
            #expect(result.heap.after.dirtyBytes == size, "reclaim cannot take dirty memory without swap")
        }
        #expect(result.mapped.after.residentBytes == 0, "the clean pages were dropped")
        #expect(result.contentIntact)
        #expect(result.refaultNanosPerPage > 0)
    }

    /// What `load --compare --json` says, as the tests below read it.
    struct Comparison: Decodable {
        struct Figures: Decodable { var residentBytes: Int; var dirtyBytes: Int; var cleanBytes: Int }
        struct Side: Decodable { var before: Figures; var after: Figures }
        var heap: Side
        var mapped: Side
        var fileSystem: String
        var memoryBacked: Bool
        var dirtyInPageCacheBytes: Int
        var flushedBytes: Int
        var pageCacheBytesBefore: Int
        var pageCacheBytesAfter: Int
        var pagesRefaulted: Int
        var refaultNanosPerPage: Double?
        var contentIntact: Bool
        var swapActive: Bool
        var explanation: [String]
        var text: String { explanation.joined(separator: "\n") }
    }

    /// A file of `bytes` written just now and not synced: its pages are dirty in the page cache
    /// until the kernel writes them back (ext4 delays allocation, so a new file stays dirty for
    /// up to dirty_expire_centisecs, 30 s by default).
    func writeUnsynced(_ path: String, bytes: Int) throws {
        try writeBytes((0..<bytes).map { UInt8(truncatingIfNeeded: $0 &* 13) }, to: path)
    }

    /// The text must agree with the figures: no claim that pages were dropped when none left.
    func expectTextAgrees(_ text: String, with c: Comparison) {
        if c.pagesRefaulted == 0 {
            #expect(text.contains("no page had left memory"), "\(text)")
            #expect(!text.contains("dropped"), "\(text)")
            #expect(!text.contains("came back"), "\(text)")
        } else {
            #expect(text.contains("\(c.pagesRefaulted) pages came back"), "\(text)")
            #expect(text.contains("left memory"), "\(text)")
        }
        if c.pageCacheBytesAfter > 0 { #expect(text.contains("stayed in the page cache"), "\(text)") }
    }

    @Test("load --compare of a file just written flushes its dirty pages first and says so; the mapping's pages then leave memory")
    func compareDirtyFlushed() async throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let path = "\(dir.path)/fresh"
        try writeUnsynced(path, bytes: 8 << 20)
        let r = try await runMempressure(["load", path, "--compare", "--json"])
        #expect(r.status == 0, "\(r.standardError)")
        let c = try JSONDecoder().decode(Comparison.self, from: Data(r.standardOutput.utf8))
        #expect(!c.memoryBacked)
        #expect(c.flushedBytes == c.dirtyInPageCacheBytes, "whatever was dirty was flushed")
        #expect(c.mapped.before.dirtyBytes == 0, "after the flush the mapping's pages are clean")
        #expect(c.pagesRefaulted > 0, "clean pages can be dropped")
        #expect(c.refaultNanosPerPage != nil)
        #expect(c.contentIntact)
        expectTextAgrees(c.text, with: c)
        try writeUnsynced(path + "2", bytes: 8 << 20)
        let text = try await runMempressure(["load", path + "2", "--compare"])
        #expect(text.status == 0, "\(text.standardError)")
        if text.standardOutput.contains("were dirty in the page cache") {
            #expect(text.standardOutput.contains("flushed them first (fdatasync)"))
        }
        #expect(!text.standardOutput.contains("no page had left memory"), "\(text.standardOutput)")
    }

    @Test("load --compare --no-flush of a file just written: its dirty pages stay in the page cache, and the text says so instead of claiming they were dropped")
    func compareDirtyNotFlushed() async throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let path = "\(dir.path)/fresh"
        try writeUnsynced(path, bytes: 8 << 20)
        let r = try await runMempressure(["load", path, "--compare", "--no-flush", "--json"])
        #expect(r.status == 0, "\(r.standardError)")
        let c = try JSONDecoder().decode(Comparison.self, from: Data(r.standardOutput.utf8))
        #expect(c.flushedBytes == 0)
        #expect(c.dirtyInPageCacheBytes == c.mapped.before.dirtyBytes)
        // Dirty pages cannot be dropped; they may be written back meanwhile, but a page under
        // writeback is not dropped either: at least the dirty ones are still cached.
        #expect(c.pageCacheBytesAfter >= c.dirtyInPageCacheBytes, "\(c.pageCacheBytesAfter) cached after reclaim, \(c.dirtyInPageCacheBytes) were dirty")
        if c.dirtyInPageCacheBytes == 8 << 20 {
            #expect(c.pagesRefaulted == 0)
            #expect(c.refaultNanosPerPage == nil, "no refault time without a refault")
        }
        expectTextAgrees(c.text, with: c)
        try writeUnsynced(path + "2", bytes: 8 << 20)
        let text = try await runMempressure(["load", path + "2", "--compare", "--no-flush"])
        #expect(text.status == 0, "\(text.standardError)")
        let out = text.standardOutput
        if out.contains("were dirty in the page cache") {
            #expect(out.contains("were not flushed (--no-flush)"))
            #expect(out.contains("dirty pages must be written back before the kernel can drop them"), "\(out)")
        }
    }

    @Test("load --compare of a file on tmpfs says its pages are memory that only swap can take, and does not claim they were dropped")
    func compareTmpfs() async throws {
        let path = "/dev/shm/mempressure-load-test-\(getpid())"
        try writeBytes((0..<(8 << 20)).map { UInt8(truncatingIfNeeded: $0 &* 5) }, to: path)
        defer { unlink(path) }
        let r = try await runMempressure(["load", path, "--compare", "--json"])
        #expect(r.status == 0, "\(r.standardError)")
        let c = try JSONDecoder().decode(Comparison.self, from: Data(r.standardOutput.utf8))
        #expect(c.fileSystem == "tmpfs")
        #expect(c.memoryBacked)
        #expect(c.flushedBytes == 0, "nothing to flush on tmpfs")
        #expect(c.mapped.before.dirtyBytes == 8 << 20, "tmpfs pages count as dirty")
        if !c.swapActive {
            #expect(c.pageCacheBytesAfter == c.pageCacheBytesBefore, "without swap tmpfs pages cannot leave memory")
            #expect(c.pagesRefaulted == 0)
            #expect(c.refaultNanosPerPage == nil)
        }
        expectTextAgrees(c.text, with: c)
        let text = try await runMempressure(["load", path, "--compare"])
        #expect(text.status == 0, "\(text.standardError)")
        #expect(text.standardOutput.contains("The file is on tmpfs: its pages are memory"), "\(text.standardOutput)")
        if !c.swapActive {
            #expect(text.standardOutput.contains("tmpfs pages can only go to swap, and there is no swap"), "\(text.standardOutput)")
            #expect(!text.standardOutput.contains("dropped"), "\(text.standardOutput)")
        }
    }

    @Test("load: bad input names the file", arguments: [
        (["load", "/nonexistent-file"], "mempressure: /nonexistent-file: no such file\n"),
        (["load", "/"], "mempressure: /: is a directory, not a regular file\n"),
        (["load", "/dev/null", "--compare"], "mempressure: /dev/null: is a character device, not a regular file\n"),
    ])
    func badInput(_ arguments: [String], _ message: String) async throws {
        let r = try await runMempressure(arguments)
        #expect(r.status == 1)
        #expect(r.standardError == message)
    }

    @Test("load: permission denied", .enabled(if: CLITests.canDropPrivileges, "needs root and setpriv(1) to run as another user"))
    func permissionDenied() async throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        chmod(dir.path, 0o755)
        let path = "\(dir.path)/secret"
        try writeBytes([1, 2, 3], to: path)
        chmod(path, 0o600)
        let r = try await runMempressure(["load", path], asUser: 65534)
        #expect(r.status == 1)
        #expect(r.standardError == "mempressure: \(path): permission denied\n")
    }
}

@Suite("mempressure run, supervise, app, apps")
struct LifecycleCLITests {
    @Test("run SCENARIO --json: the issue's example scenario, its event log and accounting per state")
    func runScenario() async throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let scenario = """
            {"budgetBytes": 536870912, "suspendWith": "sigstop", "launchTimeout": 120, "callbackTimeout": 30,
             "apps": [{"name": "A", "command": ["mempressure-workload", "--state-mb", "4", "--image-cache-mb", "2", "--data-dir", "\(dir.path)/A"]}],
             "steps": [{"launch": "A"}, {"activate": "A"}, {"background": "A"}, {"wait": 0.5},
                       {"activate": "A"}, {"warn": "running"}, {"terminate": "A"}]}
            """
        try writeText(scenario, to: "\(dir.path)/s.json")
        let r = try await runMempressure(["run", "\(dir.path)/s.json", "--json"])
        #expect(r.status == 0, "\(r.standardError)")
        struct Accounting: Decodable { var seconds: Double; var cpuSeconds: Double; var minorFaults: Int; var majorFaults: Int; var ioReadBytes: Int; var ioWriteBytes: Int }
        struct App: Decodable { var name: String; var accounting: [String: Accounting] }
        struct Log: Decodable { var events: [SupervisorEvent]; var apps: [App] }
        let log = try JSONDecoder().decode(Log.self, from: Data(r.standardOutput.utf8))
        let transitions = log.events.compactMap { if case .state(let from, let to) = $0.payload { "\(from)->\(to)" } else { nil } }
        #expect(transitions == [
            "notRunning->inactive", "inactive->active", "active->inactive", "inactive->backgroundRunning",
            "backgroundRunning->suspended", "suspended->backgroundRunning", "backgroundRunning->inactive", "inactive->active",
            "active->notRunning",
        ])
        let acknowledged: [LifecycleCallback] = log.events.compactMap { if case .callback(let c) = $0.payload { c } else { nil } }
        #expect(acknowledged == [
            .didFinishLaunching, .didBecomeActive, .willResignActive, .didEnterBackground, .willEnterForeground,
            .didBecomeActive, .didReceiveMemoryWarning, .willTerminate,
        ])
        #expect(log.events.filter { $0.kind == .ready }.count == 2)
        #expect(log.events.allSatisfy { $0.t >= 0 })
        let accounting = try #require(log.apps.first { $0.name == "A" }?.accounting)
        #expect(Set(accounting.keys) == ["inactive", "active", "backgroundRunning", "suspended"])
        #expect(accounting["suspended"]!.cpuSeconds == 0)
        #expect(accounting["suspended"]!.seconds >= 0.5)
        #expect(accounting["backgroundRunning"]!.ioWriteBytes >= 4 << 20, "the state was saved on didEnterBackground")
    }

    @Test("run: a bad scenario is a clear error")
    func badScenario() async throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        try writeText(#"{"apps": [{"name": "A", "command": ["x"]}], "steps": [{"launch": "B"}]}"#, to: "\(dir.path)/s.json")
        let r = try await runMempressure(["run", "\(dir.path)/s.json"])
        #expect(r.status == 1)
        #expect(r.standardError == "mempressure: step 1: no app named B\n")
    }

    @Test("supervise as a service, driven by app and apps, stopped by SIGTERM")
    func service() async throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let runtime = "\(dir.path)/rt"
        let data = "\(dir.path)/data"
        let executable = buildDirectory + "/mempressure"
        // The service runs until we stop it; its output is collected when it ends.
        _ = try await Subprocess.run(.path(FilePath(executable)), arguments: ["supervise", "--dir", runtime], input: .none, output: .sequence, error: .discarded) { execution in
            var lines = execution.standardOutput.strings().makeAsyncIterator()
            let first = try #require(try await lines.next())
            #expect(first.hasPrefix("supervising: apps connect to \(runtime)/control.sock"))
            func app(_ args: [String]) async throws -> CommandResult {
                try await runMempressure(["app", "--dir", runtime] + args)
            }
            let launched = try await app(["launch", "W", "--", "mempressure-workload", "--state-mb", "1", "--image-cache-mb", "1", "--data-dir", data])
            #expect(launched.status == 0, "\(launched.standardError)")
            #expect(launched.standardOutput == "W: inactive\n")
            #expect(try await app(["activate", "W"]).standardOutput == "W: active\n")
            #expect(try await app(["background", "W"]).standardOutput == "W: suspended\n")
            let apps = try await runMempressure(["apps", "--dir", runtime, "--json"])
            #expect(apps.status == 0, "\(apps.standardError)")
            let reports = try JSONDecoder().decode([AppReport].self, from: Data(apps.standardOutput.utf8))
            #expect(reports.first?.name == "W")
            #expect(reports.first?.state == .suspended)
            #expect(reports.first?.accounting["active"] != nil)
            let table = try await runMempressure(["apps", "--dir", runtime])
            #expect(table.standardOutput.contains("suspended"))
            let unknown = try await app(["activate", "nobody"])
            #expect(unknown.status == 1)
            #expect(unknown.standardError == "mempressure: no app named nobody\n")
            try execution.send(signal: .terminate)
            while let _ = try await lines.next() {}
        }
        let gone = try await runMempressure(["apps", "--dir", runtime])
        #expect(gone.status == 1)
        #expect(gone.standardError.contains("no supervisor at \(runtime)/admin.sock"))
    }
}
