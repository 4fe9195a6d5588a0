// Test support: golden fixtures captured from real processes (see Fixtures/capture.sh), the
// built executables, and helpers to run them.

import FoundationEssentials
import Glibc
import MemPressureSystem
import MemPressureHogClient
import Subprocess
import SystemPackage
import MemPressureVMTracker

public enum Fixtures {
    /// `Tests/TestSupport/Fixtures`, found from this source file's location.
    public static let directory: String = {
        let file = #filePath
        return String(file[..<file.lastIndex(of: "/")!]) + "/Fixtures"
    }()

    /// The captured `/proc` tree.
    public static var procRoot: String { directory + "/proc" }

    /// What capture.sh recorded about each captured process.
    public struct Expected: Decodable, Sendable {
        public var label: String
        public var pid: Int32
        public var regionCount: Int
        public var info: HogInfo?
        /// smaps_rollup fields, in bytes, read by awk at capture time.
        public var rollup: [String: UInt64]
    }

    public static func processes() throws -> [Expected] {
        try ProcFS(root: procRoot).pids().map { pid in
            try JSONDecoder().decode(Expected.self, from: try readFile("\(procRoot)/\(pid)/expected.json"))
        }
    }

    public static func process(labelled label: String) throws -> Expected {
        guard let p = try processes().first(where: { $0.label == label }) else {
            throw TestFailure("no fixture labelled \(label)")
        }
        return p
    }

    public static func readFile(_ path: String) throws -> Data {
        Data(try ProcFS.readBytes(path))
    }

    public static func bytes(_ path: String) throws -> [UInt8] {
        try ProcFS.readBytes(path)
    }
}

public struct TestFailure: Error, CustomStringConvertible {
    public var description: String
    public init(_ description: String) { self.description = description }
}

/// The directory holding the built products (the test bundle runs from it).
public let buildDirectory: String = ProcFS.ownExecutableDirectory() ?? ""

/// The result of running a command to completion.
public struct CommandResult: Sendable {
    public var status: Int32
    public var standardOutput: String
    public var standardError: String
}

/// Runs the built `mempressure` with `arguments` and collects its output.
public func runMempressure(_ arguments: [String], asUser uid: UInt32? = nil, environment: [Environment.Key: String?] = [:]) async throws -> CommandResult {
    try await runBuilt("mempressure", arguments, asUser: uid, environment: environment)
}

/// Runs the built executable `program` (standard input /dev/null; from `directory`, the build
/// directory unless told otherwise) with `arguments`, as the
/// user `uid` if given, with `environment` changing the inherited one (nil removes a variable),
/// and collects its output.
public func runBuilt(
    _ program: String, _ arguments: [String], asUser uid: UInt32? = nil, environment: [Environment.Key: String?] = [:], in directory: String = buildDirectory
) async throws -> CommandResult {
    let executable = directory + "/" + program
    var argv = arguments
    var path = executable
    if let uid {
        // setpriv(1) from util-linux drops to another user before running the command.
        path = "/usr/bin/setpriv"
        argv = ["--reuid=\(uid)", "--regid=\(uid)", "--clear-groups", executable] + arguments
    }
    let result = try await Subprocess.run(
        .path(FilePath(path)), arguments: Arguments(argv), environment: .inherit.updating(environment), output: .string(limit: 16 << 20),
        error: .string(limit: 1 << 20))
    let status: Int32
    switch result.terminationStatus {
    case .exited(let code): status = Int32(code)
    default: status = -1
    }
    return CommandResult(status: status, standardOutput: result.standardOutput, standardError: result.standardError)
}

/// Removes `"capturedAt" : "..."` values so that outputs taken at different times compare.
public func maskingTimestamps(_ text: String) -> String {
    var out = ""
    var rest = Substring(text)
    let key = "\"capturedAt\" : \""
    while let r = rest.firstRange(of: key) {
        out += rest[..<r.upperBound]
        rest = rest[r.upperBound...]
        if let end = rest.firstIndex(of: "\"") { rest = rest[end...] }
        out += "<time>"
    }
    return out + rest
}

/// A temporary directory, removed with `remove()`.
public struct TemporaryDirectory: Sendable {
    public let path: String

    public init(_ prefix: String = "mempressure-test") throws {
        var template = Array("/tmp/\(prefix).XXXXXX".utf8CString)
        guard let p = template.withUnsafeMutableBufferPointer({ mkdtemp($0.baseAddress!) }) else {
            throw TestFailure("mkdtemp failed: errno \(errno)")
        }
        path = String(cString: p)
    }

    public func remove() { removeTree(Array(path.utf8)) }
}

/// Removes the directory `path` and everything in it (links are removed, never followed).
public func removeDirectoryTree(_ path: String) { removeTree(Array(path.utf8)) }

/// Removes a directory tree of plain files (names are bytes: tests make non-UTF-8 ones).
private func removeTree(_ path: [UInt8]) {
    let names: [[UInt8]]
    do {
        names = try ProcFS.listDirectory(String(decoding: path, as: UTF8.self))
    } catch {
        names = []  // not a directory we can list: nothing below it to remove
    }
    for name in names {
        let child = path + [0x2f] + name
        let removed = (child + [0]).withUnsafeBufferPointer { buf in
            buf.withMemoryRebound(to: CChar.self) { unlink($0.baseAddress!) == 0 }
        }
        if !removed { removeTree(child) }
    }
    _ = (path + [0]).withUnsafeBufferPointer { buf in buf.withMemoryRebound(to: CChar.self) { rmdir($0.baseAddress!) } }
}

/// The process's own pidfd-based signalling: tests signal only processes they started.
public enum ChildSignals {
    /// Sends `signal` through a pidfd, so a reused PID is never hit.
    public static func send(_ signal: Int32, to pid: Int32) throws {
        try ProcessHandle(pid: pid).signal(signal)
    }

    /// Whether `pid` is a live process (not gone, not a zombie), from /proc/PID/stat.
    public static func isAlive(_ pid: Int32) throws -> Bool {
        let bytes: [UInt8]
        do {
            bytes = try ProcFS.readBytes("/proc/\(pid)/stat")
        } catch {
            return false
        }
        return try !bytes.withUnsafeBytes { try ProcessStat.parse($0, pid: pid) }.isZombie
    }

    /// Blocks until our child `pid` is stopped (WSTOPPED) or continued (WCONTINUED), without
    /// reaping it: waiting on the real event instead of sleeping.
    public static func waitUntil(_ event: Int32, pid: Int32) throws {
        var info = siginfo_t()
        guard retryOnInterrupt({ waitid(P_PID, id_t(pid), &info, event | WNOWAIT) }) == 0 else {
            throw TestFailure("waitid(\(pid)): errno \(errno)")
        }
    }
}

/// Copies the plain files of directory `from` into a new directory `to`.
public func copyTree(_ from: String, to: String) throws {
    guard mkdir(to, 0o755) == 0 else { throw TestFailure("mkdir \(to): errno \(errno)") }
    for name in try ProcFS.listDirectory(from) {
        let n = String(decoding: name, as: UTF8.self)
        try writeBytes(try Fixtures.bytes("\(from)/\(n)"), to: "\(to)/\(n)")
    }
}

/// Creates or replaces the file at `path` (mode 0644), in a directory of the test's own, the
/// project's one way (`CheckedDirectory`).
public func writeBytes(_ bytes: [UInt8], to path: String) throws {
    try CheckedDirectory.replaceFile(at: path, with: bytes, mode: 0o644)
}

public func writeText(_ text: String, to path: String) throws {
    try writeBytes(Array(text.utf8), to: path)
}

public func unlinkFile(_ path: String) -> Bool { unlink(path) == 0 }

/// A JSON decoder for test fixtures.
public enum JSONDecoderForTests {
    public static func decode<T: Decodable>(_ type: T.Type, from data: Data) throws -> T {
        try JSONDecoder().decode(type, from: data)
    }
}

/// Writes `text` for cleanup code that must go on after a failure: returns whether it worked.
public func writeTextReportingFailure(_ text: String, to path: String) -> Bool {
    let fd = open(path, O_WRONLY | O_CLOEXEC)
    guard fd >= 0 else { return false }
    defer { close(fd) }
    let bytes = Array(text.utf8)
    return bytes.withUnsafeBytes { write(fd, $0.baseAddress!, bytes.count) } == bytes.count
}

/// A real OS thread (Swift concurrency's pool has as many threads as cores, so busy loops there
/// would not run at the same time).
///
/// Starting one cannot fail quietly: `OSThread` throws when the system has no thread to give,
/// and a test that cannot run its threads cannot mean anything, so the test process stops there
/// with the reason (the tests create their threads without `try`).
public final class TestThread: Sendable {
    private let thread: OSThread

    public init(_ body: @escaping @Sendable () -> Void) {
        do {
            thread = try OSThread(body)
        } catch {
            fatalError("cannot start a test thread: \(error)")
        }
    }

    public static func detached(_ body: @escaping @Sendable () -> Void) {
        TestThread(body).thread.detach()
    }

    public func join() { thread.join() }
}

/// Runs `body` with posix_spawn attributes for a child that starts as it would from a shell: no
/// signal blocked and every signal at its default action. The test runner's threads block some
/// signals (SIGTERM among them), and a child spawned plainly would inherit that.
public func withShellSignals<T>(_ body: (UnsafeMutablePointer<posix_spawnattr_t>) throws -> T) rethrows -> T {
    var attributes = posix_spawnattr_t()
    posix_spawnattr_init(&attributes)
    defer { posix_spawnattr_destroy(&attributes) }
    var none = sigset_t(), all = sigset_t()
    sigemptyset(&none)
    sigfillset(&all)
    posix_spawnattr_setsigmask(&attributes, &none)
    posix_spawnattr_setsigdefault(&attributes, &all)
    posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF))
    return try body(&attributes)
}
