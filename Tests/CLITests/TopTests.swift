import FoundationEssentials
import Glibc
import MemPressureSystem
import MemPressureHogClient
import MemPressureValues
import Testing
import MemPressureTestSupport
import MemPressureVMTracker

/// `top` as operators live in it (sorting, filters, refreshing, the machine header, --bytes),
/// the new columns of `vm`, `diff --fail-on-growth` and `--version`: the real binary on real
/// processes (mempressure-hog).
@Suite("mempressure top, vm columns, diff --fail-on-growth, --version")
struct TopTests {
    func decodeTop(_ text: String) throws -> TopReport {
        try JSONDecoder().decode(TopReport.self, from: Data(text.utf8))
    }

    /// The hogs' apps only: `--match` keeps the machine's other processes out of the assertions.
    static let hogs = ["--match", "mempressure-hog", "--group-by", "process"]

    @Test("--sort orders the rows by the column; --match keeps only apps whose name matches")
    func sortAndMatch() async throws {
        try await Hog.with(["--dirty", "2m"]) { small in
            try await Hog.with(["--dirty", "12m"]) { large in
                let byDirty = try await runMempressure(["top", "--json", "--sort", "dirty"] + Self.hogs)
                #expect(byDirty.status == 0, "\(byDirty.standardError)")
                let report = try decodeTop(byDirty.standardOutput)
                #expect(report.sortedBy == "dirty")
                #expect(report.apps.allSatisfy { $0.name == "mempressure-hog" })
                let order = report.apps.compactMap(\.pid).filter { $0 == small.pid || $0 == large.pid }
                #expect(order == [large.pid, small.pid])
                let dirty = report.apps.map(\.totals.dirtyBytes)
                #expect(dirty == dirty.sorted(by: >))

                let byPID = try decodeTop(try await runMempressure(["top", "--json", "--sort", "pid"] + Self.hogs).standardOutput)
                let pids = byPID.apps.compactMap(\.pid)
                #expect(pids == pids.sorted())
                #expect(Set(pids).isSuperset(of: [small.pid, large.pid]))

                // The text table in the same order: the larger hog's row comes first.
                let text = try await runMempressure(["top", "--sort", "dirty"] + Self.hogs)
                let rows = text.standardOutput.split(separator: "\n")
                let largeRow = try #require(rows.firstIndex { $0.hasPrefix("\(large.pid) ") || $0.contains(" \(large.pid)  mempressure-hog") })
                let smallRow = try #require(rows.firstIndex { $0.hasPrefix("\(small.pid) ") || $0.contains(" \(small.pid)  mempressure-hog") })
                #expect(largeRow < smallRow)

                let none = try decodeTop(try await runMempressure(["top", "--json", "--match", "no-such-app-*"]).standardOutput)
                #expect(none.apps.isEmpty)
                #expect(none.notes.first == "no app matches --match 'no-such-app-*'")
            }
        }
    }

    @Test("--user: the processes of a user (by name or UID); a UID nobody runs is empty with a note; an unknown name is an error")
    func user() async throws {
        try await Hog.with(["--dirty", "1m"]) { hog in
            let uid = getuid()
            let name = try #require(getpwuid(uid).map { String(cString: $0.pointee.pw_name) })
            for user in [name, "\(uid)"] {
                let r = try await runMempressure(["top", "--json", "--user", user] + Self.hogs)
                #expect(r.status == 0, "\(r.standardError)")
                let report = try decodeTop(r.standardOutput)
                #expect(report.apps.contains { $0.pid == hog.pid }, "--user \(user)")
                #expect(report.filter?.uid == uid)
            }
            // A UID no process runs as (the tests' own UID plus a large offset).
            let unused = try await runMempressure(["top", "--user", "\(uid &+ 4_000_000)"])
            #expect(unused.status == 0, "\(unused.standardError)")
            #expect(unused.standardOutput.contains("note: no app matches --user \(uid &+ 4_000_000)\n"))
            #expect(!unused.standardOutput.contains("mempressure-hog"))

            let unknown = try await runMempressure(["top", "--user", "no-such-user-i12"])
            #expect(unknown.status == 1)
            #expect(unknown.standardError == "mempressure: --user no-such-user-i12: no such user (give a user name or a numeric UID)\n")
            #expect(unknown.standardOutput.isEmpty)
        }
    }

    @Test("--interval with --count 2, not on a terminal: two tables, or two JSON lines")
    func interval() async throws {
        try await Hog.with(["--dirty", "1m"]) { hog in
            let text = try await runMempressure(["top", "--interval", "0.05", "--count", "2"] + Self.hogs)
            #expect(text.status == 0, "\(text.standardError)")
            let headers = text.standardOutput.split(separator: "\n").filter { $0.contains("  memory: total ") }
            #expect(headers.count == 2)
            #expect(text.standardOutput.split(separator: "\n").filter { $0.hasPrefix("total footprint ") }.count == 2)
            #expect(!text.standardOutput.contains("\u{1b}"), "no terminal control sequences into a pipe")

            let json = try await runMempressure(["top", "--interval", "0.05", "--count", "2", "--json"] + Self.hogs)
            #expect(json.status == 0, "\(json.standardError)")
            let lines = json.standardOutput.split(separator: "\n")
            #expect(lines.count == 2)
            let reports = try lines.map { try decodeTop(String($0)) }
            #expect(reports.allSatisfy { $0.apps.contains { $0.pid == hog.pid } })
            #expect(reports[0].capturedAt <= reports[1].capturedAt)

            let usage = try await runMempressure(["top", "--count", "2"])
            #expect(usage.status == 64)
            #expect(usage.standardError.contains("--count counts the refreshes of --interval"))
        }
    }

    @Test("the machine header: MemTotal as /proc/meminfo has it, swap and PSI")
    func header() async throws {
        let r = try await runMempressure(["top", "--json", "--limit", "1"])
        #expect(r.status == 0, "\(r.standardError)")
        let machine = try #require(try decodeTop(r.standardOutput).machine)
        let meminfo = try ProcFS.readBytes("/proc/meminfo").withUnsafeBytes { MemInfo.parse($0) }
        #expect(machine.memTotalBytes == meminfo.totalBytes)
        #expect(machine.memAvailableBytes != nil)
        #expect(machine.swapTotalBytes == meminfo.swapTotalBytes)
        if access("/proc/pressure/memory", R_OK) == 0 {
            #expect(machine.psi != nil)
        } else {
            #expect(machine.notes.contains { $0.hasPrefix("PSI unavailable") })
        }
        let text = try await runMempressure(["top", "--limit", "1"])
        let first = try #require(text.standardOutput.split(separator: "\n").first)
        #expect(first.contains("  memory: total "))
        #expect(text.standardOutput.contains("PSI memory: some avg10 ") || text.standardOutput.contains("PSI unavailable"))
    }

    @Test("--bytes: the text table's byte counts are integers")
    func bytes() async throws {
        try await Hog.with(["--dirty", "8m"]) { hog in
            let r = try await runMempressure(["top", "--bytes", "--sort", "pid"] + Self.hogs)
            #expect(r.status == 0, "\(r.standardError)")
            let row = try #require(r.standardOutput.split(separator: "\n").first { $0.split(separator: " ").first == "\(hog.pid)" })
            let cells = row.split(separator: " ")
            #expect(cells[1] == "mempressure-hog")
            // Procs, Footprint, Dirty, Clean, Purgeable, Swapped, Resident, PSS, USS, SwapPss, THP, Locked.
            let numbers = cells.dropFirst(2).map { UInt64($0) }
            #expect(numbers.count == 12)
            #expect(numbers.allSatisfy { $0 != nil }, "\(row)")
            #expect((numbers[1] ?? 0) >= 8 << 20)
            #expect(!r.standardOutput.contains("MiB"))
        }
    }

    @Test("vm --json carries USS, SwapPss, THP and Locked for a process, in totals and by type; Locked counts mlocked pages")
    func vmColumns() async throws {
        try await Hog.session(["--dirty", "4m"]) { hog in
            // 64 KiB: within the smallest RLIMIT_MEMLOCK a distribution sets.
            _ = try await hog.send("lock 65536")
            let r = try await runMempressure(["vm", "\(hog.pid)", "--only", "--json"])
            #expect(r.status == 0, "\(r.standardError)")
            let report = try JSONDecoder().decode(VMReport.self, from: Data(r.standardOutput.utf8))
            let uss = try #require(report.totals.ussBytes)
            #expect(uss >= 4 << 20)
            #expect(report.totals.swapPssBytes != nil)
            #expect(report.totals.thpBytes != nil)
            #expect(try #require(report.totals.lockedBytes) >= 65536)
            let top = try decodeTop(try await runMempressure(["top", "--json", "--sort", "locked"] + Self.hogs).standardOutput)
            #expect(try #require(top.apps.first { $0.pid == hog.pid }?.totals.lockedBytes) >= 65536)
            #expect(report.types.allSatisfy { $0.ussBytes != nil && $0.lockedBytes != nil })
            let text = try await runMempressure(["vm", "\(hog.pid)", "--only"])
            #expect(text.standardOutput.split(separator: "\n")[2].hasPrefix("uss "))
            #expect(text.standardOutput.contains("SwapPss"))
        }
    }

    @Test("diff --fail-on-growth: status 1 and the growth by type when the footprint grew more, 0 otherwise, 2 on unreadable reports")
    func failOnGrowth() async throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        try await Hog.session(["--dirty", "1m"]) { hog in
            let before = try await runMempressure(["vm", "\(hog.pid)", "--only", "--json"])
            try writeText(before.standardOutput, to: "\(dir.path)/before.json")
            _ = try await hog.send("grow-heap \(8 << 20)")
            let after = try await runMempressure(["vm", "\(hog.pid)", "--only", "--json"])
            try writeText(after.standardOutput, to: "\(dir.path)/after.json")
        }
        let (a, b) = ("\(dir.path)/before.json", "\(dir.path)/after.json")
        let grew = try await runMempressure(["diff", a, b, "--fail-on-growth", "1m"])
        #expect(grew.status == 1, "\(grew.standardError)")
        let line = try #require(grew.standardOutput.split(separator: "\n").last)
        #expect(line.hasPrefix("footprint grew by "))
        #expect(line.contains("more than the 1.00 MiB (1048576 bytes) allowed: heap +"))

        let within = try await runMempressure(["diff", a, b, "--fail-on-growth", "1g"])
        #expect(within.status == 0, "\(within.standardError)")
        #expect(within.standardOutput.contains("within the 1.00 GiB (1073741824 bytes) allowed"))
        let shrank = try await runMempressure(["diff", b, a, "--fail-on-growth", "0"])
        #expect(shrank.status == 0, "\(shrank.standardError)")

        let json = try await runMempressure(["diff", a, b, "--fail-on-growth", "1m", "--json"])
        #expect(json.status == 1)
        let check = try #require(try JSONDecoder().decode(ReportDiff.self, from: Data(json.standardOutput.utf8)).growthCheck)
        #expect(check.exceeded)
        #expect(check.limitBytes == 1 << 20)
        #expect(check.footprintGrowthBytes >= 8 << 20)
        #expect(check.grownTypes.first?.type == "heap")

        let plain = try await runMempressure(["diff", a, b])
        #expect(plain.status == 0, "without the flag, growth is no failure")
        let missing = try await runMempressure(["diff", "\(dir.path)/nonexistent.json", b, "--fail-on-growth", "1m"])
        #expect(missing.status == 2)
        #expect(missing.standardError.hasPrefix("mempressure: \(dir.path)/nonexistent.json: ENOENT"))
        let badLimit = try await runMempressure(["diff", a, b, "--fail-on-growth", "lots"])
        #expect(badLimit.status == 64)
    }

    @Test("--interval on a terminal: redrawn on the alternate screen, cut to the terminal's height; SIGINT and SIGTERM restore the screen, status 0", arguments: [SIGINT, SIGTERM])
    func liveTerminal(_ signal: Int32) throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        // A pseudo-terminal of 8 rows and 60 columns: the table of every app on the machine fits
        // neither way.
        // (posix_openpt and friends are not visible to Swift: /dev/ptmx and the two ioctls they
        // wrap, TIOCSPTLCK and TIOCGPTN, whose _IOW/_IOR macros Swift cannot import either.)
        let master = open("/dev/ptmx", O_RDWR | O_NOCTTY | O_CLOEXEC)
        try #require(master >= 0, "open /dev/ptmx: errno \(errno)")
        defer { close(master) }
        var unlock: CInt = 0
        var number: CUnsignedInt = 0
        try #require(ioctl(master, 0x4004_5431 /* TIOCSPTLCK */, &unlock) == 0, "TIOCSPTLCK: errno \(errno)")
        try #require(ioctl(master, 0x8004_5430 /* TIOCGPTN */, &number) == 0, "TIOCGPTN: errno \(errno)")
        let name = "/dev/pts/\(number)"
        var size = winsize(ws_row: 8, ws_col: 60, ws_xpixel: 0, ws_ypixel: 0)
        try #require(ioctl(master, UInt(TIOCSWINSZ), &size) == 0)

        let child = try spawnChild(
            [buildDirectory + "/mempressure", "top", "--interval", "0.05"],
            files: [ChildFile(1, name, O_WRONLY | O_NOCTTY), ChildFile(2, "\(dir.path)/stderr", O_WRONLY | O_CREAT | O_TRUNC)])
        let pid = child.pid
        var reaped = false
        defer {
            if !reaped {
                do {
                    try child.signal(SIGKILL)
                    _ = try child.wait(for: WEXITED)
                } catch {
                    Issue.record("could not end mempressure top (pid \(pid)): \(error)")
                }
            }
        }

        // Everything the terminal received, read until the first draw is complete (its last
        // line says what did not fit), then after the signal until the terminal closes.
        var screen: [UInt8] = []
        let cut = Array("more lines (a taller terminal, or --limit)".utf8)
        func readTerminal(until done: ([UInt8]) -> Bool) -> Bool {
            var chunk = [UInt8](repeating: 0, count: 65536)
            while !done(screen) {
                var ready = pollfd(fd: master, events: Int16(POLLIN), revents: 0)
                guard retryOnInterrupt({ poll(&ready, 1, 60_000) }) == 1 else { return false }
                let n = read(master, &chunk, chunk.count)
                guard n > 0 else { return false }  // EIO: every writer of the terminal is gone
                screen += chunk[0..<n]
            }
            return true
        }
        try #require(readTerminal { $0.firstRange(of: cut) != nil }, "no complete draw: \(String(decoding: screen, as: UTF8.self))")
        try child.signal(signal)
        _ = readTerminal { _ in false }
        var exited = pollfd(fd: child.descriptor, events: Int16(POLLIN), revents: 0)
        try #require(retryOnInterrupt({ poll(&exited, 1, 60_000) }) == 1, "still running after the signal")
        let info = try child.wait(for: WEXITED)
        reaped = true
        #expect(info.si_code == CLD_EXITED && info._sifields._sigchld.si_status == 0, "code \(info.si_code), status \(info._sifields._sigchld.si_status)")
        #expect(try Fixtures.bytes("\(dir.path)/stderr").isEmpty)
        let text = String(decoding: screen, as: UTF8.self)
        #expect(text.hasPrefix("\u{1b}[?1049h\u{1b}[?25l\u{1b}[H"), "the alternate screen, the cursor hidden, drawn from the top")
        #expect(text.hasSuffix("\u{1b}[?25h\u{1b}[?1049l"), "the screen and the cursor given back")
        // Cut to 8 rows: at most 7 lines of the report and the line saying how many did not fit.
        let firstDraw = try #require(text.split(separator: "\u{1b}[J").first)
        // Lines by scalars: the terminal turned each newline into CR LF, one Character to Swift.
        let drawn = firstDraw.unicodeScalars.split(separator: "\n").map { String(String.UnicodeScalarView($0)) }
        #expect(drawn.count == 8, "7 lines of the report and the line saying what did not fit")
        // Cut to 60 columns: no line wraps.
        let widths = drawn.map { $0.replacing("\u{1b}[K", with: "").replacing("\r", with: "").replacing("\u{1b}[?1049h\u{1b}[?25l\u{1b}[H", with: "").unicodeScalars.count }
        #expect(widths.allSatisfy { $0 <= 60 }, "\(widths)")
        #expect(widths.contains(60), "the table is wider than 60 columns: some line was cut at 60")
    }

    @Test("--version prints the version")
    func version() async throws {
        let r = try await runMempressure(["--version"])
        #expect(r.status == 0)
        #expect(r.standardOutput == "0.12.0\n")
    }
}
