// mempressure-hog: a process that holds known amounts of memory of each kind, so that reports
// about it can be checked to the page.
//
//   mempressure-hog [--dirty BYTES] [--file PATH --file-bytes BYTES] [--purgeable BYTES]
//                   [--purgeable-cache BYTES] [--regions N] [--children N] [--odd-files DIR]
//                   [--zombie] [--wait stdin|signal]
//
// It prints one line, `ready {json}`, with the address range of everything it holds, then reads
// commands from its standard input, one per line, answering each with one line, until end of
// file (or, with --wait signal, sleeps until a signal ends it):
//
//   spawn            start a child hog holding one dirty page    -> "child PID"
//   end-children     close the children's input and reap them    -> "ended N"
//   grow-heap BYTES  extend the brk heap by BYTES and write them  -> "heap START END"
//   lock BYTES       map BYTES more, write and mlock them         -> "locked START END"
//
// --zombie starts a child that exits at once and is never reaped, so it stays a zombie.
// --purgeable-cache fills a PurgeableCache named "hog" (arena "purgeable cache: hog") with
// 256 KiB entries and ends access to all of them.
// Each block sits between two no-access guard pages so that the kernel cannot merge it with a
// neighbouring mapping; transparent huge pages are disabled on the blocks so page counts are exact.

import CMemoryPressure
import Glibc
import MemPressureSystem
import MemPressurePurgeable

let pageSize = Int(sysconf(Int32(_SC_PAGESIZE)))

/// This program's own path, so that children run under its name (not "exe").
let selfPath = ProcFS.ownExecutablePath() ?? "/proc/self/exe"

func fail(_ message: String) -> Never {
    let text = "mempressure-hog: \(message)\n"
    _ = text.withCString { write(2, $0, strlen($0)) }
    exit(2)
}

func failErrno(_ call: String, _ subject: String = "") -> Never {
    let code = errno
    fail("\(call)\(subject.isEmpty ? "" : " \(subject)"): \(String(cString: strerror(code))) (errno \(code))")
}

struct Options {
    var dirty = 0
    var filePath: String?
    var fileBytes = 0
    var purgeable = 0
    var purgeableCache = 0
    var regions = 0
    var children = 0
    var oddFilesDirectory: String?
    var waitForSignal = false
    var isChild = false
    var zombie = false
}

func parseSize(_ text: String, _ flag: String) -> Int {
    var multiplier = 1
    var digits = Substring(text)
    switch text.last {
    case "k", "K": multiplier = 1024; digits = digits.dropLast()
    case "m", "M": multiplier = 1024 * 1024; digits = digits.dropLast()
    case "g", "G": multiplier = 1024 * 1024 * 1024; digits = digits.dropLast()
    default: break
    }
    guard let value = ByteScanner.unsigned(digits.utf8).flatMap({ Int(exactly: $0) }), value <= Int.max / multiplier else {
        fail("\(flag) takes a size in bytes (optionally with k, m or g), not '\(text)'")
    }
    // Past the address space (128 TiB on x86-64) nothing can be mapped; the page arithmetic
    // of larger sizes would overflow.
    guard value * multiplier <= 1 << 47 else { fail("\(flag) \(text): larger than the address space (128 TiB)") }
    return value * multiplier
}

func parseOptions() -> Options {
    var o = Options()
    var args = CommandLine.arguments.dropFirst()
    func value(_ flag: String) -> String {
        guard let v = args.popFirst() else { fail("\(flag) needs a value") }
        return v
    }
    while let arg = args.popFirst() {
        switch arg {
        case "--dirty": o.dirty = parseSize(value(arg), arg)
        case "--file": o.filePath = value(arg)
        case "--file-bytes": o.fileBytes = parseSize(value(arg), arg)
        case "--purgeable": o.purgeable = parseSize(value(arg), arg)
        case "--purgeable-cache": o.purgeableCache = parseSize(value(arg), arg)
        case "--regions": o.regions = parseSize(value(arg), arg)
        case "--children": o.children = parseSize(value(arg), arg)
        case "--odd-files": o.oddFilesDirectory = value(arg)
        case "--wait":
            switch value(arg) {
            case "stdin": o.waitForSignal = false
            case "signal": o.waitForSignal = true
            case let other: fail("--wait takes stdin or signal, not '\(other)'")
            }
        case "--child": o.isChild = true
        case "--zombie": o.zombie = true
        case "-h", "--help":
            print("usage: mempressure-hog [--dirty BYTES] [--file PATH --file-bytes BYTES] [--purgeable BYTES] [--regions N] [--children N] [--odd-files DIR] [--wait stdin|signal]")
            exit(0)
        default: fail("unknown argument '\(arg)' (see --help)")
        }
    }
    if o.filePath != nil && o.fileBytes == 0 { fail("--file needs --file-bytes") }
    return o
}

/// Rounds up to whole pages.
func pages(_ bytes: Int) -> Int { (bytes + pageSize - 1) / pageSize * pageSize }

/// Maps `bytes` of private anonymous memory between two guard pages; returns the usable start.
func guardedAnonymous(_ bytes: Int) -> UnsafeMutableRawPointer {
    let total = bytes + 2 * pageSize
    guard let base = mmap(nil, total, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0), base != MAP_FAILED else {
        failErrno("mmap", "\(bytes) bytes")
    }
    if mprotect(base, pageSize, PROT_NONE) != 0 { failErrno("mprotect") }
    if mprotect(base + pageSize + bytes, pageSize, PROT_NONE) != 0 { failErrno("mprotect") }
    let start = base + pageSize
    _ = madvise(start, bytes, MADV_NOHUGEPAGE)
    return start
}

struct Block {
    var start: UInt
    var bytes: Int
    var json: String { "{\"start\":\(start),\"end\":\(start + UInt(bytes)),\"bytes\":\(bytes)}" }
}

func holdDirty(_ bytes: Int) -> Block {
    let n = pages(bytes)
    let p = guardedAnonymous(n)
    memset(p, 0xa5, n)
    return Block(start: UInt(bitPattern: p), bytes: n)
}

/// Writes `bytes` to a new file (created safely: `CheckedDirectory`; a file or link already at
/// `path` is refused), flushes it to disk (so its page-cache pages are clean), maps it read-only
/// and reads every page.
func holdFile(_ path: String, _ bytes: Int) -> Block {
    let n = pages(bytes)
    var chunk = [UInt8](repeating: 0, count: 65536)
    for i in chunk.indices { chunk[i] = UInt8(truncatingIfNeeded: i &* 31 &+ 7) }
    do {
        let (directory, name) = try CheckedDirectory.containing(path)
        let file = try directory.createFile(name, mode: 0o644)
        var written = 0
        while written < n {
            let count = min(chunk.count, n - written)
            try file.write(count == chunk.count ? chunk : Array(chunk[0..<count]))
            written += count
        }
        try file.sync()
        guard let p = mmap(nil, n, PROT_READ, MAP_PRIVATE, file.descriptor, 0), p != MAP_FAILED else { failErrno("mmap", path) }
        touch(p, n)
        return Block(start: UInt(bitPattern: p), bytes: n)
    } catch {
        fail("\(error)")
    }
}

nonisolated(unsafe) var sink: UInt8 = 0

func touch(_ p: UnsafeRawPointer, _ bytes: Int) {
    var sum: UInt8 = 0
    var offset = 0
    while offset < bytes {
        sum &+= p.load(fromByteOffset: offset, as: UInt8.self)
        offset += pageSize
    }
    sink &+= sum
}

/// Writes `bytes` of anonymous memory and marks it MADV_FREE: resident, clean, and the kernel's
/// to take under pressure (LazyFree in smaps).
func holdPurgeable(_ bytes: Int) -> Block {
    let n = pages(bytes)
    let p = guardedAnonymous(n)
    // MADV_FREE queues pages on a per-CPU batch before clearing their swap-backed flag; the next
    // madvise(MADV_FREE) on the same CPU drains that batch. Stay on one CPU so the second call
    // drains the first call's batch and LazyFree is exact when we report ready.
    let cpu = mp_current_cpu()
    if cpu >= 0 { _ = mp_pin_to_cpu(cpu) }
    memset(p, 0x5a, n)
    if madvise(p, n, mp_MADV_FREE) != 0 { failErrno("madvise(MADV_FREE)") }
    if madvise(p, pageSize, mp_MADV_FREE) != 0 { failErrno("madvise(MADV_FREE)") }
    return Block(start: UInt(bitPattern: p), bytes: n)
}

/// Makes 2 × `count` separate regions by alternating the protection of single pages.
func holdRegions(_ count: Int) -> Block {
    let n = 2 * count * pageSize
    let p = guardedAnonymous(n)
    for i in 0..<(2 * count) {
        let page = p + i * pageSize
        page.storeBytes(of: 1, as: UInt8.self)
        if i % 2 == 1, mprotect(page, pageSize, PROT_READ) != 0 { failErrno("mprotect", "(vm.max_map_count reached?)") }
    }
    return Block(start: UInt(bitPattern: p), bytes: n)
}

/// Maps one page of each file whose name is awkward for a parser: not UTF-8, with spaces, with
/// a literal " (deleted)" in it; and one file that is deleted after it was mapped.
func holdOddFiles(_ path: String) -> [String] {
    let directory: CheckedDirectory
    do {
        directory = try CheckedDirectory.open(path)
    } catch {
        fail("\(error)")
    }
    let names: [[UInt8]] = [
        Array("with space".utf8),
        [0x6e, 0x6f, 0x74, 0x2d, 0xff, 0xfe, 0x2d, 0x75, 0x74, 0x66, 0x38],  // "not-\xff\xfe-utf8"
        Array("literal (deleted)".utf8),
        Array("unlinked after mapping".utf8),
    ]
    var out: [String] = []
    for (i, name) in names.enumerated() {
        let start: UInt
        do {
            let file = try directory.createFile(PathBytes(name), mode: 0o644)
            try file.write([UInt8](repeating: UInt8(i + 1), count: pageSize))
            try file.sync()
            guard let p = mmap(nil, pageSize, PROT_READ, MAP_PRIVATE, file.descriptor, 0), p != MAP_FAILED else { failErrno("mmap") }
            touch(p, pageSize)
            if i == 3 { try directory.removeFile(PathBytes(name)) }
            start = UInt(bitPattern: p)
        } catch {
            fail("odd file \(i): \(error)")
        }
        let hex = name.map { b in String(b, radix: 16).count == 1 ? "0" + String(b, radix: 16) : String(b, radix: 16) }.joined()
        out.append("{\"start\":\(start),\"end\":\(start + UInt(pageSize)),\"nameHex\":\"\(hex)\"}")
    }
    return out
}

/// A child hog: its PID and the write end of its standard input (closing it ends the child).
struct Child {
    var pid: pid_t
    var input: Int32
}

func makePipe() -> (read: Int32, write: Int32) {
    var fds: [Int32] = [0, 0]
    if pipe(&fds) != 0 { failErrno("pipe") }
    for fd in fds { _ = fcntl(fd, F_SETFD, FD_CLOEXEC) }
    return (fds[0], fds[1])
}

func spawn(_ args: [String], stdin: Int32?, stdout: Int32?) -> pid_t {
    var options = SpawnOptions(args)
    options.standardInput = stdin.map { .descriptor($0) } ?? .inherit
    options.standardOutput = stdout.map { .descriptor($0) } ?? .inherit
    options.newProcessGroup = false
    options.defaultSignals = []
    do {
        // Our child, reaped by its PID (waitpid) in `Child`: the pidfd is not kept.
        return try Spawn.start(options).pid
    } catch {
        fail("\(error)")
    }
}

/// Starts a child hog holding `dirty` bytes and waits for its ready line.
func spawnChild(dirty: Int) -> Child {
    let output = makePipe()
    let input = makePipe()
    let pid = spawn([selfPath, "--child", "--dirty", "\(dirty)"], stdin: input.read, stdout: output.write)
    close(output.write)
    close(input.read)
    var line: [UInt8] = []
    var byte: UInt8 = 0
    while read(output.read, &byte, 1) == 1 {
        if byte == 0x0a { break }
        line.append(byte)
    }
    close(output.read)
    guard line.starts(with: Array("ready ".utf8)) else { fail("child \(pid) did not become ready") }
    return Child(pid: pid, input: input.write)
}

func endChildren(_ children: inout [Child]) -> Int {
    for child in children { close(child.input) }
    var ended = 0
    for child in children {
        var status: Int32 = 0
        _ = retryOnInterrupt { waitpid(child.pid, &status, 0) }
        ended += 1
    }
    children.removeAll()
    return ended
}

func say(_ text: String) {
    let line = text + "\n"
    _ = line.withCString { write(1, $0, strlen($0)) }
}

/// Reads one line from standard input; nil at end of file.
func readLine0() -> String? {
    var line: [UInt8] = []
    var byte: UInt8 = 0
    while true {
        let n = retryOnInterrupt { read(0, &byte, 1) }
        if n == 1 {
            if byte == 0x0a { return String(decoding: line, as: UTF8.self) }
            line.append(byte)
        } else {
            return line.isEmpty ? nil : String(decoding: line, as: UTF8.self)
        }
    }
}

let options = parseOptions()
var parts: [String] = ["\"pid\":\(getpid())", "\"pageSize\":\(pageSize)"]
if options.dirty > 0 { parts.append("\"dirty\":\(holdDirty(options.dirty).json)") }
if let path = options.filePath {
    let block = holdFile(path, options.fileBytes)
    parts.append("\"file\":\(block.json)")
}
if options.purgeable > 0 { parts.append("\"purgeable\":\(holdPurgeable(options.purgeable).json)") }
if options.regions > 0 { parts.append("\"regions\":\(holdRegions(options.regions).json)") }
let cache = PurgeableCache<Int, PurgeableBuffer>(name: "hog")
if options.purgeableCache > 0 {
    let entry = 256 * 1024
    do {
        for id in 0..<max(1, options.purgeableCache / entry) {
            try cache.setContent([UInt8](repeating: UInt8(truncatingIfNeeded: id | 1), count: entry), forKey: id)
        }
    } catch {
        fail("purgeable cache: \(error)")
    }
    parts.append("\"purgeableCache\":{\"entries\":\(cache.statistics.count),\"bytes\":\(cache.statistics.totalCost)}")
}
if let dir = options.oddFilesDirectory { parts.append("\"oddFiles\":[\(holdOddFiles(dir).joined(separator: ","))]") }
var children: [Child] = []
if options.children > 0 {
    children = (0..<options.children).map { _ in spawnChild(dirty: max(options.dirty, pageSize)) }
    parts.append("\"children\":[\(children.map { String($0.pid) }.joined(separator: ","))]")
}
if options.zombie {
    let pid = spawn(["/bin/true"], stdin: nil, stdout: nil)
    // Wait until it has exited without reaping it (WNOWAIT leaves it a zombie).
    var info = siginfo_t()
    _ = retryOnInterrupt { waitid(P_PID, id_t(pid), &info, WEXITED | WNOWAIT) }
    parts.append("\"zombie\":\(pid)")
}

let ready = "ready {\(parts.joined(separator: ","))}\n"
_ = ready.withCString { write(1, $0, strlen($0)) }
if options.isChild { close(1) }

if options.waitForSignal {
    while true { pause() }
}
while let command = readLine0() {
    let words = command.split(separator: " ")
    switch words.first {
    case "spawn":
        let child = spawnChild(dirty: pageSize)
        children.append(child)
        say("child \(child.pid)")
    case "end-children":
        say("ended \(endChildren(&children))")
    case "grow-heap":
        guard words.count == 2, let bytes = Int(words[1]), bytes > 0 else {
            say("error grow-heap takes a byte count")
            continue
        }
        let n = pages(bytes)
        let start = sbrk(0)
        guard let p = sbrk(intptr_t(n)), p != UnsafeMutableRawPointer(bitPattern: -1) else {
            say("error sbrk: \(String(cString: strerror(errno)))")
            continue
        }
        memset(p, 0x3c, n)
        say("heap \(UInt(bitPattern: start)) \(UInt(bitPattern: p) + UInt(n))")
    case "lock":
        guard words.count == 2, let bytes = Int(words[1]), bytes > 0 else {
            say("error lock takes a byte count")
            continue
        }
        let n = pages(bytes)
        guard let p = mmap(nil, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0), p != MAP_FAILED else {
            say("error mmap: \(String(cString: strerror(errno)))")
            continue
        }
        memset(p, 0x4c, n)
        guard mlock(p, n) == 0 else {
            say("error mlock: \(String(cString: strerror(errno)))")
            continue
        }
        say("locked \(UInt(bitPattern: p)) \(UInt(bitPattern: p) + UInt(n))")
    default:
        say("error unknown command '\(command)'")
    }
}
_ = endChildren(&children)
exit(0)
