// Bytes allocated per scrape by our exporter: the LD_PRELOAD shim (Benchmarks/scripts/
// alloc-counter.c, compiled here with cc) counts every allocation and free of the process it is
// loaded into, in a small file mapped shared (its layout is CAllocCounter's AllocCounter.h),
// which the harness reads before and after each scrape. Before trusting it, the harness checks it
// on a plain Swift program (itself, run again with the shim loaded) whose allocations are known:
// the counts must match to the byte.

import BenchSupport
import CAllocCounter
import Foundation
import Glibc
import MemPressureSystem

/// Benchmarks/scripts (the C sources the harness compiles), found from this file's path.
let scriptsDirectory = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
    .deletingLastPathComponent().appendingPathComponent("scripts").path
/// The directory of AllocCounter.h.
let allocCounterInclude = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
    .appendingPathComponent("CAllocCounter/include").path

/// Compiles Benchmarks/scripts/`source` with cc into `output`: a shared library for
/// LD_PRELOAD (`shared`), else a program. Warnings are errors.
func compileC(_ source: String, output: String, shared: Bool) throws {
    let path = "\(scriptsDirectory)/\(source)"
    guard ProcFS.isFile(path) else { throw BenchError("\(path) is missing (export-bench compiles it; run from Benchmarks/ of the repository)") }
    var arguments = ["cc", "-O2", "-Wall", "-Wextra", "-Werror"]
    if shared { arguments += ["-shared", "-fPIC"] }
    arguments += ["-I", allocCounterInclude, "-o", output, path]
    if shared { arguments += ["-ldl", "-lpthread"] }
    let (status, text) = try runCollecting(arguments)
    guard status == 0 else { throw BenchError("cc failed on \(path) (status \(status)): \(text)") }
}

/// Runs `arguments` (found on PATH) and returns its exit status and its stdout and stderr
/// together.
func runCollecting(_ arguments: [String]) throws -> (Int32, String) {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
    process.arguments = arguments
    let pipe = Pipe()
    process.standardOutput = pipe
    process.standardError = pipe
    process.standardInput = FileHandle.nullDevice
    do {
        try process.run()
    } catch {
        throw BenchError("cannot run \(arguments.joined(separator: " ")): \(error)")
    }
    let data = pipe.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    return (process.terminationStatus, String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines))
}

/// The counters at one moment.
struct AllocCounts: Codable, Sendable, Equatable {
    var allocatedBytes: UInt64 = 0
    var allocations: UInt64 = 0
    var freedBytes: UInt64 = 0
    var frees: UInt64 = 0
    var requestedBytes: UInt64 = 0

    /// What happened between `earlier` and `self`.
    func since(_ earlier: AllocCounts) -> AllocCounts {
        AllocCounts(
            allocatedBytes: allocatedBytes &- earlier.allocatedBytes, allocations: allocations &- earlier.allocations,
            freedBytes: freedBytes &- earlier.freedBytes, frees: frees &- earlier.frees,
            requestedBytes: requestedBytes &- earlier.requestedBytes)
    }

    /// Allocated minus freed: how much the live heap grew (negative: shrank).
    var netBytes: Int64 { Int64(bitPattern: allocatedBytes &- freedBytes) }
}

/// The counters file: created by the harness (one page of zeros) and mapped read-only; the shim
/// in the measured process maps it shared and writes it.
final class AllocCounterFile {
    let path: String
    private let base: UnsafeMutableRawPointer
    private static let size = 4096

    /// Creates the file at `path` (which must not exist) and maps it.
    init(creating path: String) throws {
        let fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw BenchError("create \(path): \(String(cString: strerror(errno)))") }
        defer { close(fd) }
        guard ftruncate(fd, off_t(Self.size)) == 0 else { throw BenchError("ftruncate \(path): \(String(cString: strerror(errno)))") }
        self.path = path
        base = try Self.map(fd, path)
    }

    /// Maps the file at `path`, created by another process.
    init(existing path: String) throws {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw BenchError("open \(path): \(String(cString: strerror(errno)))") }
        defer { close(fd) }
        self.path = path
        base = try Self.map(fd, path)
    }

    private static func map(_ fd: Int32, _ path: String) throws -> UnsafeMutableRawPointer {
        guard let p = mmap(nil, size, PROT_READ, MAP_SHARED, fd, 0), p != MAP_FAILED else {
            throw BenchError("mmap \(path): \(String(cString: strerror(errno)))")
        }
        return p
    }

    deinit { munmap(base, Self.size) }

    /// The process counting into the file (nil until the shim has mapped it).
    var countingPID: Int32? {
        let c = alloc_counters_load(base.assumingMemoryBound(to: alloc_counters.self))
        return c.magic == ALLOC_COUNTER_MAGIC ? Int32(truncatingIfNeeded: c.pid) : nil
    }

    /// The counters now (each read atomically).
    func read() -> AllocCounts {
        let c = alloc_counters_load(base.assumingMemoryBound(to: alloc_counters.self))
        return AllocCounts(
            allocatedBytes: c.allocated_bytes, allocations: c.allocations, freedBytes: c.freed_bytes,
            frees: c.frees, requestedBytes: c.requested_bytes)
    }
}

/// The environment that loads the shim into a program: `env` runs the program with these
/// variables set (same PID, so its pidfd and /proc entries are the program's).
func countedArgv(_ program: [String], shim: String, counters: AllocCounterFile, preloadAfter: String? = nil) -> [String] {
    let preload = [shim] + (preloadAfter.map { [$0] } ?? [])
    return ["/usr/bin/env", "LD_PRELOAD=\(preload.joined(separator: ":"))", "\(ALLOC_COUNTER_ENV)=\(counters.path)"] + program
}

// MARK: The check on a plain Swift program

/// What the shim counted around known allocations of a plain Swift program (export-bench
/// itself, run again with the shim loaded): a raw block of `bytes` (UnsafeMutableRawPointer.
/// allocate, which is malloc) allocated then freed, and a [UInt8] of `bytes / 10` elements (a
/// Swift heap object: the elements and a header) made then released.
struct ShimSelfCheck: Codable, Sendable {
    /// The malloc the shim wrapped ("glibc malloc", "jemalloc").
    var allocator: String
    var bytes: Int
    /// Counted around the raw block: after allocate, then after deallocate (each a delta).
    var rawAllocated: AllocCounts
    var rawFreed: AllocCounts
    /// Counted around the array: while it lived, then after its release.
    var arrayAllocated: AllocCounts
    var arrayFreed: AllocCounts
    /// Why the counts do not match what was allocated, or nil if they do.
    var failure: String?

    /// The checks: the raw block counted once, asked-for size exact, usable size at least that
    /// (the allocator rounds up), freed as allocated; the array one block of its elements plus a
    /// header of at most 64 bytes, freed as allocated.
    mutating func verify() {
        var problems: [String] = []
        let n = UInt64(bytes)
        if rawAllocated.allocations != 1 || rawAllocated.requestedBytes != n || rawAllocated.allocatedBytes < n || rawAllocated.frees != 0 {
            problems.append("raw block of \(n): counted \(rawAllocated.allocations) allocations asking \(rawAllocated.requestedBytes) bytes (usable \(rawAllocated.allocatedBytes)), \(rawAllocated.frees) frees")
        }
        if rawFreed.frees != 1 || rawFreed.freedBytes != rawAllocated.allocatedBytes || rawFreed.allocations != 0 {
            problems.append("its free: counted \(rawFreed.frees) frees of \(rawFreed.freedBytes) bytes, \(rawFreed.allocations) allocations")
        }
        let elements = n / 10
        if arrayAllocated.allocations != 1 || arrayAllocated.requestedBytes < elements || arrayAllocated.requestedBytes > elements + 64 {
            problems.append("array of \(elements) bytes: counted \(arrayAllocated.allocations) allocations asking \(arrayAllocated.requestedBytes) bytes")
        }
        if arrayFreed.frees != 1 || arrayFreed.freedBytes != arrayAllocated.allocatedBytes {
            problems.append("its release: counted \(arrayFreed.frees) frees of \(arrayFreed.freedBytes) bytes (allocated \(arrayAllocated.allocatedBytes))")
        }
        failure = problems.isEmpty ? nil : problems.joined(separator: "; ")
    }
}

/// The child's side of the check (export-bench --alloc-self-check-child FILE): allocates, reads
/// the counters around each step and prints them as one line of JSON.
func selfCheckChild(counterPath: String, bytes: Int) throws {
    let file = try AllocCounterFile(existing: counterPath)
    guard file.countingPID == getpid() else { throw BenchError("the allocation counter is not loaded in this process (LD_PRELOAD?)") }
    let start = file.read()
    let block = UnsafeMutableRawPointer.allocate(byteCount: bytes, alignment: 16)
    let allocated = file.read()
    block.deallocate()
    let freed = file.read()
    let (arrayStart, arrayLive) = makeArray(file, count: bytes / 10)
    let arrayEnd = file.read()
    let check = ShimSelfCheck(
        allocator: "", bytes: bytes, rawAllocated: allocated.since(start), rawFreed: freed.since(allocated),
        arrayAllocated: arrayLive.since(arrayStart), arrayFreed: arrayEnd.since(arrayLive))
    print(String(decoding: try JSONEncoder().encode(check), as: UTF8.self))
}

/// Makes a [UInt8] of `count` elements and returns the counters before it and while it lives; it
/// is released on return.
@inline(never)
private func makeArray(_ file: AllocCounterFile, count: Int) -> (AllocCounts, AllocCounts) {
    let before = file.read()
    let array = [UInt8](repeating: 7, count: count)
    let during = file.read()
    withExtendedLifetime(array) {}
    return (before, during)
}

/// Runs the check in a child (this program with the shim loaded, and `preloadAfter`, jemalloc,
/// behind it when given) and verifies what it counted.
func runSelfCheck(allocator: String, shim: String, preloadAfter: String?, scratch: String, bytes: Int = 1 << 20) throws -> ShimSelfCheck {
    guard let me = ProcFS.ownExecutablePath() else { throw BenchError("cannot find export-bench's own executable (/proc/self/exe)") }
    let name = allocator.replacingOccurrences(of: " ", with: "-")
    let counters = try AllocCounterFile(creating: "\(scratch)/self-check-\(name).counters")
    defer { unlink(counters.path) }
    let logPath = "\(scratch)/self-check-\(name).log"
    defer { unlink(logPath) }
    let child = try ChildProcess(
        name: "export-bench self-check (\(allocator))", tool: "export-bench",
        argv: countedArgv([me, "--alloc-self-check-child", counters.path, "--self-check-bytes", "\(bytes)"], shim: shim, counters: counters, preloadAfter: preloadAfter),
        logPath: logPath)
    defer { child.kill() }
    try child.waitForExit(timeout: 60, "during the allocation counter's self-check")
    guard let status = child.exitStatus, status == 0 else {
        throw BenchError("the allocation counter's self-check (\(allocator)) failed: \(child.exitStatus.map(describe) ?? "?"); its output:\n\(child.logTail())")
    }
    let output = String(decoding: try ProcFS.readBytes(logPath), as: UTF8.self)
    guard let line = output.split(separator: "\n").last(where: { $0.hasPrefix("{") }) else {
        throw BenchError("the allocation counter's self-check (\(allocator)) printed no result; its output:\n\(output)")
    }
    var check = try JSONDecoder().decode(ShimSelfCheck.self, from: Data(line.utf8))
    check.allocator = allocator
    check.verify()
    return check
}

/// Debian's jemalloc (libjemalloc2), which mempressure-server links, if installed.
func jemallocLibrary() -> String? {
    ["/usr/lib/x86_64-linux-gnu/libjemalloc.so.2", "/lib/x86_64-linux-gnu/libjemalloc.so.2",
     "/usr/lib/aarch64-linux-gnu/libjemalloc.so.2", "/lib/aarch64-linux-gnu/libjemalloc.so.2"].first { ProcFS.isFile($0) }
}
