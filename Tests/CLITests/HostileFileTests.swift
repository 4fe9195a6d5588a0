import Glibc
import MemPressureSystem
import Synchronization
import SystemPackage
import Testing
import MemPressureTestSupport

/// How a run of `mempressure` ended (see `runMempressure(raw:timeout:in:)`).
struct TimedRun {
    /// The exit status, if it exited.
    var status: Int32?
    /// The signal that ended it, if one did (SIGKILL after a timeout included).
    var signal: Int32?
    var timedOut: Bool
    var standardOutput: [UInt8]
    var standardError: String
}

/// Runs the built `mempressure` with arguments given as raw bytes (they need not be UTF-8),
/// its output in files under `directory`, and waits for it to exit at most `timeout` seconds
/// (poll on its pidfd); a run still going then is killed through that pidfd and reaped.
func runMempressure(raw arguments: [[UInt8]], timeout: Double, in directory: String) throws -> TimedRun {
    let executable = buildDirectory + "/mempressure"
    let argv: [UnsafeMutablePointer<CChar>?] = ([Array(executable.utf8)] + arguments).map { bytes in
        let p = UnsafeMutablePointer<CChar>.allocate(capacity: bytes.count + 1)
        for (i, b) in bytes.enumerated() { p[i] = CChar(bitPattern: b) }
        p[bytes.count] = 0
        return p
    } + [nil]
    defer { for p in argv { p?.deallocate() } }
    let out = "\(directory)/stdout", err = "\(directory)/stderr"
    var actions = posix_spawn_file_actions_t()
    posix_spawn_file_actions_init(&actions)
    defer { posix_spawn_file_actions_destroy(&actions) }
    posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
    posix_spawn_file_actions_addopen(&actions, 1, out, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
    posix_spawn_file_actions_addopen(&actions, 2, err, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
    var pid: pid_t = 0
    // Not the test runner's blocked signals: the command runs as it would from a shell.
    let rc = withShellSignals { posix_spawn(&pid, executable, &actions, $0, argv, environ) }
    guard rc == 0 else { throw TestFailure("posix_spawn \(executable): errno \(rc)") }
    let child = try ProcessHandle(pid: pid)
    var ready = pollfd(fd: child.descriptor, events: Int16(POLLIN), revents: 0)
    let n = retryOnInterrupt { poll(&ready, 1, Int32(timeout * 1000)) }
    let timedOut = n == 0
    if timedOut { try child.signal(SIGKILL) }
    let info = try child.wait(for: WEXITED)
    let exited = info.si_code == CLD_EXITED
    let code = info._sifields._sigchld.si_status
    return TimedRun(
        status: exited && !timedOut ? code : nil, signal: exited ? nil : code, timedOut: timedOut,
        standardOutput: try Fixtures.bytes(out), standardError: String(decoding: try Fixtures.bytes(err), as: UTF8.self))
}

/// Creates the file at exactly these path bytes with `bytes`.
func writeBytes(_ bytes: [UInt8], toRawPath path: [UInt8]) throws {
    let fd = (path + [0]).withUnsafeBufferPointer { p in
        p.withMemoryRebound(to: CChar.self) { open($0.baseAddress!, O_CREAT | O_TRUNC | O_WRONLY | O_CLOEXEC, 0o644) }
    }
    guard fd >= 0 else { throw TestFailure("open \(PathBytes(path)): errno \(errno)") }
    defer { close(fd) }
    try writeAll(fd, bytes)
}

func runMempressure(_ arguments: [String], timeout: Double, in directory: String) throws -> TimedRun {
    try runMempressure(raw: arguments.map { Array($0.utf8) }, timeout: timeout, in: directory)
}

/// Files from outside that are not what they seem: FIFOs, devices, links, names that are not
/// UTF-8, a file truncated while mapped. Each run is bounded by a timeout: a hang is a failure,
/// not a stuck test.
@Suite("mempressure CLI: hostile files")
struct HostileFileTests {
    @Test("a FIFO given as a file is refused at once with one line naming it, by every command that reads a file")
    func fifo() throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let fifo = "\(dir.path)/fifo"
        try #require(mkfifo(fifo, 0o600) == 0)
        for arguments in [
            ["diff", fifo, fifo], ["load", fifo], ["load", fifo, "--compare"], ["cache", "simulate", "--trace", fifo, "--capacity", "10"],
            ["jetsam", "replay", fifo], ["jetsam", "report", fifo], ["run", fifo],
        ] {
            let r = try runMempressure(arguments, timeout: 60, in: dir.path)
            #expect(!r.timedOut, "\(arguments) waited on the FIFO")
            #expect(r.status == 1, "\(arguments)")
            #expect(r.standardError == "mempressure: \(fifo): is a FIFO, not a regular file\n", "\(arguments)")
        }
    }

    @Test("a device, a link to one and a directory are named, not read")
    func devicesAndLinks() throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let link = "\(dir.path)/zero.json"
        try #require(symlink("/dev/zero", link) == 0)
        for (file, kind) in [(link, "symbolic link"), ("/dev/zero", "character device"), (dir.path, "directory")] {
            let r = try runMempressure(["diff", file, file], timeout: 60, in: dir.path)
            #expect(!r.timedOut)
            #expect(r.status == 1)
            #expect(r.standardError == "mempressure: \(file): is a \(kind), not a regular file\n")
            let l = try runMempressure(["load", file], timeout: 60, in: dir.path)
            #expect(l.status == 1)
            #expect(l.standardError == "mempressure: \(file): is a \(kind), not a regular file\n")
        }
    }

    @Test("a FIFO planted in the region registry under the process's number does not hang vm")
    func fifoInRegistry() throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let registry = "\(dir.path)/registry"
        try #require(mkdir(registry, 0o755) == 0)
        try #require(mkfifo("\(registry)/\(getpid())", 0o600) == 0)
        let r = try runMempressure(["vm", "\(getpid())", "--only", "--registry", registry, "--json"], timeout: 120, in: dir.path)
        #expect(!r.timedOut, "vm waited on the FIFO in the registry")
        #expect(r.status == 0, "\(r.standardError)")
        // And says why nothing of this process is tagged.
        let text = try runMempressure(["vm", "\(getpid())", "--only", "--registry", registry], timeout: 120, in: dir.path)
        #expect(String(decoding: text.standardOutput, as: UTF8.self).contains(
            "note: pid \(getpid()): region registry file not used: \(registry)/\(getpid()): is a FIFO, not a regular file"),
            "\(String(decoding: text.standardOutput, as: UTF8.self).suffix(400))")
    }

    @Test("a path argument that is not UTF-8 reaches open() with its exact bytes and is printed escaped")
    func nonUTF8Name() throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let name = Array("\(dir.path)/report-".utf8) + [0xff, 0xfe] + Array(".json".utf8)
        let report = try Fixtures.bytes(Fixtures.directory + "/reports/before.json")
        try writeBytes(report, toRawPath: name)
        let diff = try runMempressure(raw: [Array("diff".utf8), name, name], timeout: 60, in: dir.path)
        #expect(diff.status == 0, "\(diff.standardError)")
        #expect(String(decoding: diff.standardOutput, as: UTF8.self).contains("no change by type"), "the report compared with itself")

        let data = Array(Array(repeating: UInt8(7), count: 100_000))
        let binary = Array("\(dir.path)/data-".utf8) + [0xff]
        try writeBytes(data, toRawPath: binary)
        let load = try runMempressure(raw: [Array("load".utf8), binary], timeout: 60, in: dir.path)
        #expect(load.status == 0, "\(load.standardError)")
        #expect(String(decoding: load.standardOutput, as: UTF8.self) == "\(dir.path)/data-\\xff: 100000 bytes, mapped (clean page-cache pages, reclaimable)\n")

        let missing = Array("\(dir.path)/missing-".utf8) + [0xff]
        let m = try runMempressure(raw: [Array("diff".utf8), missing, missing], timeout: 60, in: dir.path)
        #expect(m.status == 1)
        #expect(m.standardError == "mempressure: \(dir.path)/missing-\\xff: ENOENT (No such file or directory)\n")
    }

    /// Another thread truncates the file and makes it whole again as fast as it can while
    /// `load --compare` maps, touches, reclaims and compares it. Each round must end by itself,
    /// with success or with the truncation named; never by SIGBUS.
    @Test("load --compare of a file truncated while mapped reports it and exits 1, never dies by SIGBUS")
    func truncatedWhileMapped() throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let path = "\(dir.path)/big"
        let size = 8 << 20
        try writeBytes([UInt8](repeating: 0x5a, count: size), to: path)
        let fd = open(path, O_WRONLY | O_CLOEXEC)
        try #require(fd >= 0)
        defer { close(fd) }
        let stop = Atomic<Bool>(false)
        let truncator = TestThread {
            while !stop.load(ordering: .relaxed) {
                _ = ftruncate(fd, 4096)
                _ = ftruncate(fd, off_t(size))
            }
        }
        var outcomes: [String: Int] = [:]
        for round in 0..<20 {
            let r = try runMempressure(["load", path, "--compare"], timeout: 120, in: dir.path)
            #expect(!r.timedOut, "round \(round)")
            #expect(r.signal == nil, "round \(round) ended by signal \(r.signal ?? 0): \(r.standardError)")
            if r.status == 0 {
                outcomes["succeeded", default: 0] += 1
            } else {
                #expect(r.status == 1)
                #expect(r.standardError.hasPrefix("mempressure: \(path) was truncated while mapped: "), "round \(round): \(r.standardError)")
                #expect(r.standardError.split(separator: "\n").count == 1)
                outcomes[r.standardError.contains("(SIGBUS)") ? "stopped by the SIGBUS guard" : "found before an access", default: 0] += 1
            }
        }
        stop.store(true, ordering: .relaxed)
        truncator.join()
        #expect(outcomes.values.reduce(0, +) == 20, "\(outcomes)")
    }
}
