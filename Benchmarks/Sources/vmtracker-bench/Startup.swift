// What a one-shot command costs as a whole process, on the machine as it is (before the
// benchmark starts its hogs): CPU time (user + system, from wait4's rusage) and peak resident
// set (ru_maxrss), against the floor of `cat /proc/self/status`, against smem -t, and against the
// same /proc reads done by cat. Every condition runs `rounds` times, in a new seeded order each
// round.

import BenchSupport
import MemPressureCachePolicies
import Glibc
import MemPressureSystem
import SystemPackage

struct StartupReport: Codable {
    struct Row: Codable {
        var name: String
        /// The command line, as run.
        var command: String
        /// CPU (user + system) per run, ms.
        var cpu: Percentiles
        /// Peak resident set per run, KiB.
        var peakKiB: Percentiles
        var cpuSamples: [Double]
        var peakSamples: [Double]
    }

    var processes: Int
    var rounds: Int
    var loadAtStart: String
    var loadAtEnd: String
    var rows: [Row]
    var notes: [String]

    static let floorName = "floor: cat /proc/self/status"
    static let versionName = "mempressure --version"
    static let vmName = "mempressure vm PID (a sleep, no children)"
    static let topName = "mempressure top"
    static let smemName = "smem -t"
    static let sameReadsName = "cat of every /proc/PID/stat and smaps_rollup (top's reads)"
    static let commandsName = "mempressure-commands --version (every command; mempressure becomes it for the rest)"
    static let serverName = "mempressure-server --version (the same commands with the HTTP stack)"
    static let swiftName = "a fully static Swift program (-static-executable) that prints one line"
    static let swiftReadsName = "the same program doing top's reads (open, read, close of every /proc/PID/stat and smaps_rollup)"
    /// The same commands written in a form the quick reading leaves to ArgumentParser (an
    /// option as `--name=value`, its default value): what they cost when ArgumentParser reads them.
    static let vmParsedName = "mempressure vm PID --sort=dirty (the same, read by ArgumentParser)"
    static let topParsedName = "mempressure top --sort=footprint (the same, read by ArgumentParser)"

    /// Targets (issue 25).
    static let cpuAboveFloorTarget = 4.0  // ms
    static let peakTargetKiB = 12.0 * 1024
    static let smemRatioTarget = 10.0

    func row(_ name: String) -> Row? { rows.first { $0.name == name } }

    func markdown() -> String {
        func ms(_ v: Double) -> String { ByteFormat.fixed(v, 2) }
        func mib(_ kib: Double) -> String { ByteFormat.fixed(kib / 1024, 1) }
        /// "N ms more CPU and M MiB more at its peak" of `a` over `b`.
        func more(_ a: Row, than b: Row) -> String {
            "\(ms(a.cpu.p50 - b.cpu.p50)) ms more CPU and \(mib(a.peakKiB.p50 - b.peakKiB.p50)) MiB more at its peak"
        }
        let floor = row(Self.floorName)?.cpu.p50 ?? 0
        var out = """

            ## Start-up: one-shot commands as whole processes

            Measured before the benchmark started its processes, on the machine as it was (\(processes) \
            processes); load average \(loadAtStart) at the start of this part, \(loadAtEnd) at its end. Each \
            command ran \(rounds) times as a whole process (posix_spawn, output to /dev/null), the commands in a \
            new seeded order each round. CPU is user + system time from wait4; the peak resident set \
            (the kernel's ru_maxrss) is from one more run per round under GNU time (`%M`; `Startup.peak` \
            says why not from the same run): the median, with p90 (CPU) and the least and most in brackets.

            | command | CPU ms | above the floor, ms | peak MiB |
            |---|---:|---:|---:|

            """
        for r in rows {
            out += "| \(r.name) | \(ms(r.cpu.p50)) (p90 \(ms(r.cpu.p90)), \(ms(r.cpu.min))–\(ms(r.cpu.max))) "
            out += "| \(r.name == Self.floorName ? "–" : ms(r.cpu.p50 - floor)) "
            out += "| \(mib(r.peakKiB.p50)) (\(mib(r.peakKiB.min))–\(mib(r.peakKiB.max))) |\n"
        }
        out += "\n| target (issue 25) | measured | met |\n|---|---:|---|\n"
        for name in [Self.versionName, Self.vmName, Self.topName] {
            guard let r = row(name) else { continue }
            let above = r.cpu.p50 - floor
            out += "| \(name): at most \(ms(Self.cpuAboveFloorTarget)) ms of CPU above the floor | \(ms(above)) ms | \(above <= Self.cpuAboveFloorTarget ? "yes" : "**no**") |\n"
            out += "| \(name): peak under \(mib(Self.peakTargetKiB)) MiB | \(mib(r.peakKiB.p50)) MiB | \(r.peakKiB.p50 < Self.peakTargetKiB ? "yes" : "**no**") |\n"
        }
        if let smem = row(Self.smemName), let top = row(Self.topName) {
            let ratio = smem.cpu.p50 / top.cpu.p50
            out += "| smem -t / mempressure top, CPU, at least \(ByteFormat.fixed(Self.smemRatioTarget, 0))x | \(ByteFormat.fixed(ratio, 2))x | \(ratio >= Self.smemRatioTarget ? "yes" : "**no**") |\n"
            out += "\n"
            // The spread, so that a ratio met (or missed) by less than it is read as such.
            out += "- The ratio at the medians is \(ByteFormat.fixed(ratio, 2))x; against top's p90 (\(ms(top.cpu.p90)) ms) it is "
            out += "\(ByteFormat.fixed(smem.cpu.p50 / top.cpu.p90, 2))x, against its fastest run (\(ms(top.cpu.min)) ms) \(ByteFormat.fixed(smem.cpu.p50 / top.cpu.min, 2))x"
            let close = abs(ratio - Self.smemRatioTarget) < (smem.cpu.p50 / top.cpu.min - smem.cpu.p50 / top.cpu.p90) / 2
            out += close ? ": the target is \(ratio >= Self.smemRatioTarget ? "met" : "missed") by less than the runs' spread.\n" : ".\n"
        } else {
            out += "\n"
        }
        if let smem = row(Self.smemName), let swift = row(Self.swiftName), let least = row(Self.swiftReadsName) {
            // The least a Swift `top` could cost: a program that loads nothing (fully static: no
            // dynamic loader, no shared library), does top's reads and parses none of it.
            let budget = smem.cpu.p50 / Self.smemRatioTarget
            out += "- How far `top` can go: a fully static Swift program that only prints a line costs \(ms(swift.cpu.p50)) ms and peaks "
            out += "at \(mib(swift.peakKiB.p50)) MiB; doing top's reads as well (without parsing them) it costs \(ms(least.cpu.p50)) ms, the least "
            out += "a Swift `top` could cost, \(ByteFormat.fixed(smem.cpu.p50 / least.cpu.p50, 1))x below smem -t's \(ms(smem.cpu.p50)) ms. "
            if let reads = row(Self.sameReadsName) {
                out += "(cat reading the same files costs \(ms(reads.cpu.p50)) ms: it makes twice the system calls per file.) "
            }
            out += "10x asks for at most \(ms(budget)) ms. "
            if least.cpu.p50 <= budget {
                out += "So 10x is within a Swift program's reach on this machine"
                if let top = row(Self.topName), let version = row(Self.versionName), top.cpu.p50 > budget {
                    out += ", and `mempressure top` misses it by \(ms(top.cpu.p50 - budget)) ms; its start-up (`mempressure --version`) "
                    out += "costs \(ms(version.cpu.p50 - swift.cpu.p50)) ms more than the static program's.\n"
                } else if let top = row(Self.topName) {
                    out += ", and `mempressure top` (\(ms(top.cpu.p50)) ms, linked fully static like that program) is within it: \(ms(top.cpu.p50 - least.cpu.p50)) ms "
                    out += "above the least, for parsing, grouping and printing, and reading each process's cgroup and its stat a second time "
                    out += "(to tell that it is still the process whose totals were read).\n"
                } else {
                    out += ".\n"
                }
            } else {
                out += "On a machine this quiet smem is mostly the start of a Python interpreter, and 10x is beyond what a Swift program could do.\n"
            }
        }
        for (quick, parsed) in [(Self.vmName, Self.vmParsedName), (Self.topName, Self.topParsedName)] {
            guard let q = row(quick), let p = row(parsed) else { continue }
            out += "- `\(quick)` is read without ArgumentParser, in `mempressure` itself (`QuickCommandLine`: the common forms of `--version`, "
            out += "`vm` and a single `top`; anything else, help and errors included, is ArgumentParser's, in mempressure-commands); written as "
            out += "`\(parsed.split(separator: " (").first ?? "")`, mempressure becomes mempressure-commands and ArgumentParser reads it, building "
            out += "its argument definitions by reflection: it costs \(more(p, than: q)) (\(ByteFormat.fixed(p.cpu.p50 / q.cpu.p50, 2))x CPU).\n"
        }
        if let commands = row(Self.commandsName), let version = row(Self.versionName) {
            out += "- `mempressure` is linked fully static and holds only these lines' code; `mempressure-commands` has every command "
            out += "(ArgumentParser, the supervisor, jemalloc, libunwind), and its `--version` costs \(more(commands, than: version)) "
            out += "than mempressure's: what the quick lines paid while they ran in it.\n"
            if let server = row(Self.serverName) {
                out += "- `mempressure-server` is mempressure-commands with the exporter's HTTP stack (SwiftNIO, Hummingbird, "
                out += "Foundation with ICU); mempressure-commands executes it for `export` and `supervise --export` only. Its `--version` "
                out += "costs \(more(server, than: commands)) than mempressure-commands'.\n"
            }
        }
        out += notes.map { "- \($0)\n" }.joined()
        return out
    }
}

enum Startup {
    /// One whole-process run: CPU ms (user + system, from wait4). Output to /dev/null; the exit
    /// status is checked unless `anyStatus` (cat of files that may vanish meanwhile).
    static func cpu(_ argv: [String], anyStatus: Bool = false) throws -> Double {
        let (usage, status) = try spawnAndWait(argv)
        guard anyStatus || status == 0 else { throw BenchError("\(argv.joined(separator: " ")) ended \(describe(status))") }
        func ms(_ t: timeval) -> Double { Double(t.tv_sec) * 1000 + Double(t.tv_usec) / 1000 }
        return ms(usage.ru_utime) + ms(usage.ru_stime)
    }

    /// One run's peak resident set in KiB, as GNU time's %M reports it. Not from our own wait4:
    /// a child spawned by this process (posix_spawn, which shares our memory until exec) has
    /// our resident set, some 20 MiB, as its ru_maxrss whatever it uses itself; GNU time forks
    /// from its own small process (about 1.5 MiB, which is also the floor's own peak).
    static func peak(_ argv: [String], anyStatus: Bool, scratch: String) throws -> Double {
        let out = "\(scratch)/peak"
        unlink(out)
        let (_, status) = try spawnAndWait([gnuTime, "-f", "%M", "-o", out] + argv)
        guard anyStatus || status == 0 else { throw BenchError("\(argv.joined(separator: " ")) ended \(describe(status)) under \(gnuTime)") }
        let text = String(decoding: try ProcFS.readBytes(out), as: UTF8.self)
        // "Command exited with non-zero status N" comes first when it failed.
        guard let last = text.split(separator: "\n").last, let kib = Double(last) else { throw BenchError("\(gnuTime) wrote '\(text)'") }
        return kib
    }

    static let gnuTime = "/usr/bin/time"

    private static func spawnAndWait(_ argv: [String], searchPath: Bool = false) throws -> (rusage, Int32) {
        var options = SpawnOptions(argv)
        options.searchPath = searchPath
        options.standardOutput = .null
        options.standardError = .null
        let handle = try Spawn.start(options)
        var status: Int32 = 0
        var usage = rusage()
        let r = retryOnInterrupt { wait4(handle.pid, &status, 0, &usage) }
        guard r == handle.pid else { throw BenchError("wait4 for \(argv[0]): \(String(cString: strerror(errno)))") }
        return (usage, status)
    }

    /// Every /proc/PID/stat and smaps_rollup path now (what `top` reads).
    static func topReads() throws -> [String] {
        try ProcFS().pids().flatMap { ["/proc/\($0)/stat", "/proc/\($0)/smaps_rollup"] }
    }

    /// What the reads-only program does: `top`'s reads, each file opened (its path built in place,
    /// no String), read once into one buffer and closed, nothing parsed; it prints the bytes read.
    static let readsProgram = """
        import Glibc
        let buffer = UnsafeMutableRawPointer.allocate(byteCount: 65536, alignment: 16)
        let path = UnsafeMutablePointer<CChar>.allocate(capacity: 64)
        var total = 0
        let proc = open("/proc", O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        if proc >= 0, let directory = fdopendir(dup(proc)) {
            while let entry = readdir(directory) {
                withUnsafeBytes(of: entry.pointee.d_name) { name in
                    guard let first = name.first, first >= 48, first <= 57 else { return }
                    var length = 0
                    while length < 32, name[length] != 0 { path[length] = CChar(bitPattern: name[length]); length += 1 }
                    for file in [StaticString("/stat"), StaticString("/smaps_rollup")] {
                        file.withUTF8Buffer { suffix in
                            for (i, b) in suffix.enumerated() { path[length + i] = CChar(bitPattern: b) }
                            path[length + suffix.count] = 0
                        }
                        let fd = openat(proc, path, O_RDONLY | O_CLOEXEC)
                        guard fd >= 0 else { continue }
                        let n = read(fd, buffer, 65536)
                        if n > 0 { total += n }
                        close(fd)
                    }
                }
            }
            closedir(directory)
        }
        print(total)

        """

    /// Compiles two fully static Swift programs into `directory` (`-static-executable`: no
    /// dynamic loader, no shared library; `-static-stdlib` alone still loads the C and C++
    /// libraries, which cost 0.5 to 0.7 ms more at every start here): one that prints a line, and
    /// one that does `top`'s reads (`readsProgram`). Nil paths (with the reason) when swiftc is
    /// not at hand or cannot link them.
    static func swiftFloor(in directory: CheckedDirectory) -> (hello: String?, reads: String?, note: String?) {
        func build(_ name: String, _ source: String) throws -> String? {
            try directory.replaceFile("\(name).swift", with: Array(source.utf8))
            let binary = "\(directory.path)/\(name)"
            let (_, status) = try spawnAndWait(["swiftc", "-O", "-static-executable", "\(directory.path)/\(name).swift", "-o", binary], searchPath: true)
            return status == 0 ? binary : nil
        }
        do {
            guard let hello = try build("hello", "print(\"0.0.0\")\n"), let reads = try build("reads", readsProgram) else {
                return (nil, nil, "swiftc could not build the fully static Swift programs: no Swift floor in this run")
            }
            return (hello, reads, nil)
        } catch {
            return (nil, nil, "no Swift floor in this run: \(error)")
        }
    }

    static func measure(cli: String, rounds: Int, scratch: CheckedDirectory) throws -> StartupReport {
        var notes: [String] = []
        let loadAtStart = Machine.loadAverage()
        let processes = try ProcFS().pids().count
        // The process `vm` reports on: a sleep of our own, with no children.
        var sleeper = SpawnOptions(["/bin/sleep", "3600"])
        sleeper.standardOutput = .null
        let sleep = try Spawn.start(sleeper)
        defer {
            do { try sleep.signal(SIGKILL) } catch { log("SIGKILL to the sleep: \(error)") }
            var status: Int32 = 0
            _ = retryOnInterrupt { waitpid(sleep.pid, &status, 0) }
        }
        let (swift, swiftReads, swiftNote) = swiftFloor(in: scratch)
        if let swiftNote { notes.append(swiftNote) }
        let smem = "/usr/bin/smem"
        let haveSmem = access(smem, X_OK) == 0
        if !haveSmem { notes.append("smem is not installed: no smem comparison (apt-get install smem)") }
        let haveTime = access(gnuTime, X_OK) == 0
        if !haveTime { notes.append("GNU time is not installed (apt-get install time): no peak figures") }
        let server = cli + "-server"
        let commandsProgram = cli + "-commands"
        var conditions: [(name: String, argv: () throws -> [String], anyStatus: Bool)] = [
            (StartupReport.floorName, { ["/bin/cat", "/proc/self/status"] }, false),
            (StartupReport.versionName, { [cli, "--version"] }, false),
            (StartupReport.vmName, { [cli, "vm", "\(sleep.pid)"] }, false),
            (StartupReport.topName, { [cli, "top"] }, false),
            (StartupReport.vmParsedName, { [cli, "vm", "\(sleep.pid)", "--sort=dirty"] }, false),
            (StartupReport.topParsedName, { [cli, "top", "--sort=footprint"] }, false),
            (StartupReport.sameReadsName, { ["/bin/cat"] + (try topReads()) }, true),
        ]
        if access(commandsProgram, X_OK) == 0 { conditions.append((StartupReport.commandsName, { [commandsProgram, "--version"] }, false)) }
        if access(server, X_OK) == 0 { conditions.append((StartupReport.serverName, { [server, "--version"] }, false)) }
        if haveSmem { conditions.append((StartupReport.smemName, { [smem, "-t"] }, false)) }
        if let swift { conditions.append((StartupReport.swiftName, { [swift] }, false)) }
        if let swiftReads { conditions.append((StartupReport.swiftReadsName, { [swiftReads] }, false)) }
        var cpu: [String: [Double]] = [:], peak: [String: [Double]] = [:]
        var commands: [String: String] = [:]
        for round in 0..<rounds {
            if round % 10 == 0 { log("start-up round \(round + 1)/\(rounds)") }
            var order = SplitMix64(seed: 7000 + UInt64(round))
            for c in conditions.shuffled(using: &order) {
                let argv = try c.argv()
                cpu[c.name, default: []].append(try Startup.cpu(argv, anyStatus: c.anyStatus))
                if haveTime { peak[c.name, default: []].append(try Startup.peak(argv, anyStatus: c.anyStatus, scratch: scratch.path)) }
                if commands[c.name] == nil {
                    commands[c.name] = argv.count > 4 ? argv.prefix(2).joined(separator: " ") + " … (\(argv.count - 1) files)" : argv.joined(separator: " ")
                }
            }
        }
        let rows = conditions.map { c in
            StartupReport.Row(
                name: c.name, command: commands[c.name] ?? "", cpu: Percentiles(cpu[c.name] ?? []), peakKiB: Percentiles(peak[c.name] ?? []),
                cpuSamples: cpu[c.name] ?? [], peakSamples: peak[c.name] ?? [])
        }
        return StartupReport(processes: processes, rounds: rounds, loadAtStart: loadAtStart, loadAtEnd: Machine.loadAverage(), rows: rows, notes: notes)
    }
}
