import FoundationEssentials
import Glibc
import MemPressureSystem
import Subprocess
import SystemPackage
import Testing
import MemPressureTestSupport

/// Every file written as root is created safely (issue 26): a link another user planted where
/// root writes is replaced or refused, never followed, and a directory another user controls is
/// refused. Each attack is made by a real unprivileged user (uid 65534, through setpriv) against
/// root; each test checks the file the links point at is untouched and the error says why. Every
/// attack test here overwrote its victim (or wrote where the link pointed) on the code before.
@Suite("files written as root: no write through another user's links")
struct PlantedLinkTests {
    static let refusedAsOthers = "belongs to uid 65534, not to this user (uid 0) or root, and that user could plant links in it: refused, nothing written"

    /// The kind of what is at `path` itself (a link is not followed), if anything.
    static func kind(_ path: String) -> FileKind? {
        var st = stat()
        return lstat(path, &st) == 0 ? FileKind(mode: st.st_mode) : nil
    }

    @Test("CheckedDirectory: a link at a replaced name is replaced, never followed; a name that must be new is refused when taken; a link as the directory, a directory others may write in (not sticky) or another user's are refused; removeTree does not follow links")
    func checkedDirectory() throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let victim = try VictimFile(in: dir)
        let work = "\(dir.path)/work"
        try #require(mkdir(work, 0o700) == 0)
        try #require(symlink(victim.path, "\(work)/report.json") == 0 && symlink(victim.path, "\(work)/new.dat") == 0)
        let directory = try CheckedDirectory.open(work)

        try directory.replaceFile("report.json", with: Array("new\n".utf8))
        #expect(victim.isIntact, "the victim: \(victim.now)")
        #expect(Self.kind("\(work)/report.json") == .regular)
        #expect(try ProcFS.readBytes("\(work)/report.json") == Array("new\n".utf8))
        #expect(throws: FileWriteError.alreadyExists(path: "\(work)/new.dat", kind: .symbolicLink)) { _ = try directory.createFile("new.dat") }
        #expect(victim.isIntact)
        #expect(throws: FileWriteError.notAFileName("../x")) { try directory.replaceFile("../x", with: []) }
        // No temporary file is left by a replacement, done or refused.
        #expect(try ProcFS.listDirectory(work).map { String(decoding: $0, as: UTF8.self) }.sorted() == ["new.dat", "report.json"])

        try #require(symlink(work, "\(dir.path)/link") == 0)
        #expect(throws: FileWriteError.notADirectory(path: "\(dir.path)/link", kind: .symbolicLink)) { _ = try CheckedDirectory.open("\(dir.path)/link") }
        let open = "\(dir.path)/open"
        try #require(mkdir(open, 0o700) == 0 && chmod(open, 0o777) == 0)
        do {
            _ = try CheckedDirectory.open(open)
            Issue.record("a directory anyone may write in was accepted")
        } catch {
            #expect("\(error)" == "\(open): group or others may write in it (mode 777) and it is not sticky, so anyone could plant links in it: refused, nothing written")
        }
        try #require(chmod(open, 0o1777) == 0)
        #expect(throws: Never.self) { _ = try CheckedDirectory.open(open) }  // sticky, as /tmp: each file is its owner's
        if geteuid() == 0 {
            try #require(chown(open, Attacker.uid, Attacker.uid) == 0 && chmod(open, 0o755) == 0)
            do {
                _ = try CheckedDirectory.open(open)
                Issue.record("another user's directory was accepted")
            } catch {
                #expect("\(error)" == "\(open): \(Self.refusedAsOthers)")
            }
        }

        // A private directory: mode 0700, and removed whole without following a link out of it.
        let scratch = try CheckedDirectory.makeUnique(in: dir.path, prefix: "scratch-")
        var st = stat()
        try #require(stat(scratch.path, &st) == 0)
        #expect(st.st_mode & 0o7777 == 0o700 && st.st_uid == geteuid())
        let nested = try scratch.subdirectory("a").subdirectory("b")
        try nested.replaceFile("f", with: [1])
        try #require(symlink(work, "\(scratch.path)/a/out") == 0)
        #expect(scratch.removeTree().isEmpty)
        #expect(Self.kind(scratch.path) == nil)
        #expect(Self.kind("\(work)/report.json") == .regular, "the link's target was left alone")
    }

    @Test("watch --save: a link planted at the directory's name and another user's directory are refused; nothing is written there or where the link points",
          .enabled(if: canSwitchUser, "needs root and setpriv(1) to act as another user"))
    func watchSave() async throws {
        let stage = try await PlantedLinkStage()
        defer { stage.remove() }
        let (dir, victim, attacker) = (stage.directory, stage.victim, stage.attacker)
        try await attacker.plantLink("snapshots", to: dir.path)

        let link = try await runMempressure(["watch", "\(getpid())", "--count", "1", "--save", "\(attacker.path)/snapshots"])
        #expect(link.status == 1)
        #expect(link.standardError == "mempressure: \(attacker.path)/snapshots: is a symbolic link, not a directory: refused, nothing written\n")
        #expect(try ProcFS.listDirectory(dir.path).map { String(decoding: $0, as: UTF8.self) } == ["victim"], "nothing written where the link points")

        let foreign = try await runMempressure(["watch", "\(getpid())", "--count", "1", "--save", attacker.path])
        #expect(foreign.status == 1)
        #expect(foreign.standardError == "mempressure: \(attacker.path): \(Self.refusedAsOthers)\n")
        #expect(try attacker.names() == ["snapshots"], "nothing written in the other user's directory")
        #expect(victim.isIntact, "the victim: \(victim.now)")
    }

    @Test("supervise --jetsam-reports: another user's directory is refused at start, before any episode; nothing is written in it",
          .enabled(if: canSwitchUser, "needs root and setpriv(1) to act as another user"))
    func superviseReports() async throws {
        let stage = try await PlantedLinkStage()
        defer { stage.remove() }
        try await stage.attacker.plantLink("episode-1.json", to: stage.victim.path)
        let runtime = "\(stage.directory.path)/runtime"
        // Without the check the supervisor started and ran until stopped: a time limit makes that
        // a failure (and stops it).
        let ended = try await runMempressure(["supervise", "--dir", runtime, "--jetsam", "--jetsam-reports", stage.attacker.path], within: 60)
        let r = try #require(ended, "supervise started with another user's report directory")
        #expect(r.status == 1)
        #expect(r.standardError == "mempressure: \(stage.attacker.path): \(Self.refusedAsOthers)\n")
        #expect(!ProcFS.isDirectory(runtime), "no supervisor started")
        #expect(try stage.attacker.names() == ["episode-1.json"])
        #expect(stage.victim.isIntact)
    }

    @Test("demo: its files are in a directory it makes, never at names from its PID that another user plants beforehand (PIDs are predictable)",
          .enabled(if: canSwitchUser, "needs root and setpriv(1) to act as another user"))
    func demo() async throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let victim = try VictimFile(in: dir)
        // TMPDIR: a directory as /tmp is (root's, sticky, open to everyone), of this test's own.
        try #require(chmod(dir.path, 0o755) == 0)
        let tmp = "\(dir.path)/tmp"
        try #require(mkdir(tmp, 0o700) == 0 && chmod(tmp, 0o1777) == 0)
        // The next PIDs, and at each the names the demo used: its hog's file, its data directory.
        let last = try #require(Int(String(decoding: try ProcFS.readBytes("/proc/sys/kernel/ns_last_pid"), as: UTF8.self).filter(\.isNumber)))
        let planted = 20_000
        try await Attacker.run("""
            python3 -c 'import os
            pid_max = int(open("/proc/sys/kernel/pid_max").read())
            for i in range(1, \(planted) + 1):
                p = \(last) + i
                if p >= pid_max: p = 300 + p - pid_max
                os.symlink("\(victim.path)", "\(tmp)/mempressure-demo-%d.dat" % p)
                os.symlink("\(dir.path)", "\(tmp)/mempressure-demo-%d" % p)'
            """)
        let r = try await runMempressure(["demo", "--vm-only", "--file", "1m"], environment: ["TMPDIR": tmp])
        #expect(r.status == 0, "\(r.standardError)")
        #expect(victim.isIntact, "the victim: \(victim.now)")
        let left = try ProcFS.listDirectory(tmp).map { String(decoding: $0, as: UTF8.self) }
        #expect(left.count == 2 * planted && left.allSatisfy { Self.kind("\(tmp)/\($0)") == .symbolicLink }, "the demo removed its own directory and only that")
        #expect(try ProcFS.listDirectory(dir.path).map { String(decoding: $0, as: UTF8.self) }.sorted() == ["tmp", "victim"])
    }

    /// The model app run unsupervised: it launches, says ready, and ends at the end of its
    /// input (/dev/null).
    static func runWorkload(_ arguments: [String], environment: [Environment.Key: String?]) async throws -> CommandResult {
        try await runBuilt("mempressure-workload", arguments, environment: environment.merging(["MEMPRESSURE_SOCKET": nil, "MEMPRESSURE_APP": nil]) { a, _ in a })
    }

    @Test("the model app: its default data directory is not a fixed name in /tmp another user can make first; another user's --data-dir is refused; a link planted as its temporary state file is never written through",
          .enabled(if: canSwitchUser, "needs root and setpriv(1) to act as another user"))
    func workloadData() async throws {
        let stage = try await PlantedLinkStage()
        defer { stage.remove() }
        let (dir, victim, attacker) = (stage.directory, stage.victim, stage.attacker)
        let xdg = "\(dir.path)/xdg"
        try #require(mkdir(xdg, 0o700) == 0)
        let small = ["--state-mb", "1", "--image-cache-mb", "1", "--backing-mb", "1", "--assets-mb", "1"]

        // The old default, /tmp/mempressure-workload-NAME, made first by the attacker with links
        // at the names of the files the app writes (the reproduced attack: the root app truncated
        // the victim and wrote its 1 MiB of assets into it).
        let name = "attack-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        let squatted = "/tmp/mempressure-workload-\(name)"
        try await Attacker.run("mkdir -m 755 \(squatted) && for f in assets.bin .state.bin.tmp; do ln -s \(victim.path) \(squatted)/$f; done")
        defer { removeDirectoryTree(squatted) }
        let byDefault = try await Self.runWorkload(["--name", name] + small, environment: ["XDG_RUNTIME_DIR": xdg])
        #expect(byDefault.status == 0, "\(byDefault.standardError)")
        #expect(victim.isIntact, "the victim: \(victim.now)")
        #expect(Self.kind("\(xdg)/mempressure-workload-\(name)/assets.bin") == .regular, "its data are in the user's runtime directory")

        // --data-dir naming another user's directory, links planted in it.
        for f in ["assets.bin", ".state.bin.tmp"] { try await attacker.plantLink(f, to: victim.path) }
        let foreign = try await Self.runWorkload(["--name", "W", "--data-dir", attacker.path] + small, environment: [:])
        #expect(foreign.status == 2)
        #expect(foreign.standardError == "mempressure-workload: its data directory: \(attacker.path): \(Self.refusedAsOthers)\n")
        #expect(victim.isIntact, "the victim: \(victim.now)")

        // A directory anyone may make names in, as /tmp (root's, sticky): the app may use it, and
        // the attacker plants the temporary name its state was saved through. The state is saved
        // (didEnterBackground, willTerminate) under a supervisor.
        try #require(chmod(dir.path, 0o755) == 0)
        let shared = "\(dir.path)/shared"
        try #require(mkdir(shared, 0o700) == 0 && chmod(shared, 0o1777) == 0)
        try await Attacker.plantLink("\(shared)/.state.bin.tmp", to: victim.path)
        let scenario = """
            {"apps": [{"name": "A", "command": ["mempressure-workload", "--data-dir", "\(shared)", \(small.map { "\"\($0)\"" }.joined(separator: ", "))]}],
             "steps": [{"launch": "A"}, {"activate": "A"}, {"waitReady": "A"}, {"background": "A"}, {"terminate": "A"}]}
            """
        try writeText(scenario, to: "\(dir.path)/scenario.json")
        let run = try await runMempressure(["run", "\(dir.path)/scenario.json"], environment: ["XDG_RUNTIME_DIR": xdg])
        #expect(run.status == 0, "\(run.standardError)")
        #expect(!run.standardOutput.contains("error"), "\(run.standardOutput.suffix(2000))")
        #expect(victim.isIntact, "the victim: \(victim.now)")
        #expect(Self.kind("\(shared)/state.bin") == .regular)
        #expect(try ProcFS.readBytes("\(shared)/state.bin").count == 1 << 20, "the state was saved")
        #expect(Self.kind("\(shared)/.state.bin.tmp") == .symbolicLink, "the planted link is left as it was")
    }

    @Test("simulate --plot: gnuplot draws in a private directory; the SVG is put at the path safely, a link planted there is replaced",
          .enabled(if: access("/usr/bin/gnuplot", X_OK) == 0, "needs gnuplot"))
    func plot() async throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let victim = try VictimFile(in: dir)
        try #require(symlink(victim.path, "\(dir.path)/curves.svg") == 0)
        let r = try await runMempressure(["cache", "simulate", "--zipf", "1", "--objects", "1000", "--requests", "20000", "--capacity", "5%", "--plot", "\(dir.path)/curves.svg"])
        #expect(r.status == 0, "\(r.standardError)")
        #expect(victim.isIntact, "the victim: \(victim.now)")
        #expect(Self.kind("\(dir.path)/curves.svg") == .regular)
        #expect(String(decoding: try ProcFS.readBytes("\(dir.path)/curves.svg"), as: UTF8.self).contains("<svg"))
    }
}
