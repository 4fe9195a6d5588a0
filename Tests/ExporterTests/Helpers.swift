import Dispatch
import FoundationEssentials
import Glibc
import MemPressureSystem
import MemPressureTestSupport

/// A child process of the test, started with posix_spawn; killed (SIGKILL through a pidfd) and
/// reaped by `stop()`, which every test calls in a `defer`.
final class Child: @unchecked Sendable {
    let pid: pid_t
    /// The read end of its standard error, when asked for.
    let standardError: CInt?
    /// The write end of its standard input, when asked for (closed by `stop()`).
    let standardInput: CInt?
    private var reaped = false
    /// Standard error read but not yet returned by `readStandardError`.
    private var pending: [UInt8] = []

    /// Starts `path` with `arguments`; standard output (and standard error unless
    /// `pipeStandardError`) go to `logFile`, or /dev/null.
    init(_ path: String, _ arguments: [String], logFile: String? = nil, pipeStandardError: Bool = false, pipeStandardInput: Bool = false) throws {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        let log = logFile ?? "/dev/null"
        var input: [CInt] = [-1, -1]
        if pipeStandardInput {
            guard pipe(&input) == 0 else { throw TestFailure("pipe: errno \(errno)") }
            _ = fcntl(input[0], F_SETFD, FD_CLOEXEC)
            _ = fcntl(input[1], F_SETFD, FD_CLOEXEC)
            posix_spawn_file_actions_adddup2(&actions, input[0], 0)
        } else {
            posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        }
        posix_spawn_file_actions_addopen(&actions, 1, log, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        var ends: [CInt] = [-1, -1]
        if pipeStandardError {
            guard pipe(&ends) == 0 else { throw TestFailure("pipe: errno \(errno)") }
            _ = fcntl(ends[0], F_SETFD, FD_CLOEXEC)
            _ = fcntl(ends[1], F_SETFD, FD_CLOEXEC)
            posix_spawn_file_actions_adddup2(&actions, ends[1], 2)
        } else {
            posix_spawn_file_actions_adddup2(&actions, 1, 2)
        }
        let argv = ([path] + arguments).map { strdup($0) } + [nil]
        defer { for a in argv { free(a) } }
        var pid: pid_t = 0
        let rc = withShellSignals { attributes in posix_spawn(&pid, path, &actions, attributes, argv, environ) }
        if pipeStandardError { close(ends[1]) }
        if pipeStandardInput { close(input[0]) }
        guard rc == 0 else {
            if pipeStandardError { close(ends[0]) }
            if pipeStandardInput { close(input[1]) }
            throw TestFailure("cannot start \(path): errno \(rc)")
        }
        self.pid = pid
        standardError = pipeStandardError ? ends[0] : nil
        standardInput = pipeStandardInput ? input[1] : nil
    }

    /// Reads its standard error until a line containing `marker` (the lines before it are
    /// consumed, those after it kept for the next call), its end, or `timeout` seconds; returns
    /// that line, or nil.
    func readStandardError(until marker: String, within timeout: Double = 60) -> String? {
        guard let fd = standardError else { return nil }
        let deadline = monotonicSeconds() + timeout
        var chunk = [UInt8](repeating: 0, count: 512)
        while true {
            while let newline = pending.firstIndex(of: 0x0a) {
                let line = String(decoding: pending[..<newline], as: UTF8.self)
                pending.removeSubrange(...newline)
                if line.contains(marker) { return line }
            }
            let left = deadline - monotonicSeconds()
            guard left > 0 else { return nil }
            var waiting = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            let ready = retryOnInterrupt { Glibc.poll(&waiting, 1, Int32(min(left * 1000 + 1, 3_600_000))) }
            guard ready > 0 else { return nil }
            let n = retryOnInterrupt { read(fd, &chunk, chunk.count) }
            guard n > 0 else { return nil }
            pending += chunk[..<n]
        }
    }

    /// `readStandardError(until:within:)` from an async test: the wait blocks a thread of
    /// Dispatch's, not one of Swift concurrency's few (which the other tests need).
    func standardErrorLine(containing marker: String, within timeout: Double) async -> String? {
        await withCheckedContinuation { done in
            DispatchQueue.global().async { done.resume(returning: self.readStandardError(until: marker, within: timeout)) }
        }
    }

    /// Sends `signal` (through a pidfd) and reaps the child; returns its wait status.
    @discardableResult
    func stop(_ signal: Int32 = SIGKILL) -> Int32 {
        guard !reaped else { return 0 }
        do {
            try ChildSignals.send(signal, to: pid)
        } catch {
            // Already gone: reaping below still collects it.
        }
        var status: Int32 = 0
        _ = retryOnInterrupt { waitpid(pid, &status, 0) }
        reaped = true
        if let fd = standardError { close(fd) }
        if let fd = standardInput { close(fd) }
        return status
    }
}

/// A TCP port free now on 127.0.0.1 (bound to port 0, read back, closed): for Prometheus, which
/// cannot say which port it chose.
func freePort() throws -> Int {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    guard fd >= 0 else { throw TestFailure("socket: errno \(errno)") }
    defer { close(fd) }
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    address.sin_port = 0
    let bound = withUnsafePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) } }
    guard bound == 0 else { throw TestFailure("bind: errno \(errno)") }
    var length = socklen_t(MemoryLayout<sockaddr_in>.size)
    let named = withUnsafeMutablePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) } }
    guard named == 0 else { throw TestFailure("getsockname: errno \(errno)") }
    return Int(UInt16(bigEndian: address.sin_port))
}

/// An HTTP response read to the end of the connection.
struct HTTPResponse: Sendable {
    var status: Int
    var headers: [(String, String)]
    var body: [UInt8]

    func header(_ name: String) -> String? {
        headers.first { $0.0.lowercased() == name.lowercased() }?.1
    }
    var text: String { String(decoding: body, as: UTF8.self) }
}

/// Sends `request` (raw bytes) to 127.0.0.1:`port` and reads the answer until the server
/// closes; on a thread of its own (blocking sockets, never on the test's executor). nil when the
/// connection is refused or cut without an answer.
/// `halfClose`: shut our side down after the request (for requests the server may wait on).
func exchange(port: Int, _ request: [UInt8], halfClose: Bool = false) async -> [UInt8]? {
    await withCheckedContinuation { (continuation: CheckedContinuation<[UInt8]?, Never>) in
        TestThread.detached {
            continuation.resume(returning: blockingExchange(port: port, request, halfClose: halfClose))
        }
    }
}

private func blockingExchange(port: Int, _ request: [UInt8], halfClose: Bool) -> [UInt8]? {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
    guard fd >= 0 else { return nil }
    defer { close(fd) }
    // A scrape of the whole machine from a debug build on a very busy machine can take tens of seconds.
    var timeout = timeval(tv_sec: 120, tv_usec: 0)
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    address.sin_port = in_port_t(UInt16(port).bigEndian)
    let connected = withUnsafePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) } }
    guard connected == 0 else { return nil }
    do {
        try request.withUnsafeBytes { try writeAll(fd, $0) }
    } catch {
        return nil
    }
    if halfClose { shutdown(fd, Int32(SHUT_WR)) }
    var answer: [UInt8] = []
    var chunk = [UInt8](repeating: 0, count: 65536)
    while true {
        let n = retryOnInterrupt { read(fd, &chunk, chunk.count) }
        if n <= 0 { break }
        answer += chunk[..<n]
    }
    return answer
}

/// `GET path` with `Connection: close`, and the answer parsed (a chunked body is decoded).
func get(port: Int, _ path: String, accept: String? = nil) async throws -> HTTPResponse {
    var request = "GET \(path) HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\nConnection: close\r\n"
    if let accept { request += "Accept: \(accept)\r\n" }
    request += "\r\n"
    guard let raw = await exchange(port: port, Array(request.utf8)) else { throw TestFailure("no answer from 127.0.0.1:\(port) to GET \(path)") }
    return try parseResponse(raw)
}

func parseResponse(_ raw: [UInt8]) throws -> HTTPResponse {
    let separator: [UInt8] = [13, 10, 13, 10]
    guard let end = raw.firstRange(of: separator) else { throw TestFailure("no end of headers in \(String(decoding: raw.prefix(200), as: UTF8.self))") }
    let head = String(decoding: raw[..<end.lowerBound], as: UTF8.self)
    var lines = head.split(separator: "\r\n").map(String.init)
    guard !lines.isEmpty else { throw TestFailure("empty answer") }
    let statusLine = lines.removeFirst().split(separator: " ")
    guard statusLine.count >= 2, let status = Int(statusLine[1]) else { throw TestFailure("bad status line") }
    let headers = lines.compactMap { line -> (String, String)? in
        guard let colon = line.firstIndex(of: ":") else { return nil }
        var value = line[line.index(after: colon)...]
        while value.first == " " { value.removeFirst() }
        return (String(line[..<colon]), String(value))
    }
    var body = Array(raw[end.upperBound...])
    if headers.contains(where: { $0.0.lowercased() == "transfer-encoding" && $0.1.lowercased().contains("chunked") }) {
        var decoded: [UInt8] = []
        var rest = body[...]
        while let lineEnd = rest.firstRange(of: [13, 10]) {
            let sizeText = String(decoding: rest[..<lineEnd.lowerBound], as: UTF8.self).split(separator: ";").first ?? ""
            guard let size = Int(sizeText, radix: 16) else { throw TestFailure("bad chunk size '\(sizeText)'") }
            if size == 0 { break }
            let start = lineEnd.upperBound
            guard rest.distance(from: start, to: rest.endIndex) >= size + 2 else { throw TestFailure("short chunk") }
            decoded += rest[start..<rest.index(start, offsetBy: size)]
            rest = rest[rest.index(start, offsetBy: size + 2)...]
        }
        body = decoded
    }
    return HTTPResponse(status: status, headers: headers, body: body)
}

/// Whether an executable is on the PATH the tests see (Debian's prometheus package).
func installed(_ program: String) -> Bool {
    for directory in ["/usr/bin", "/usr/local/bin", "/bin"] where access("\(directory)/\(program)", X_OK) == 0 {
        return true
    }
    return false
}

/// `promtool check metrics` on `exposition`: its exit status and what it printed.
func promtoolCheck(_ exposition: [UInt8], in directory: String) async throws -> (status: Int32, output: String) {
    let (status, output) = try await filter(exposition, through: "promtool check metrics", in: directory)
    return (status, String(decoding: output, as: UTF8.self))
}

/// `bytes` through `gzip -dc`.
func gunzip(_ bytes: [UInt8], in directory: String) async throws -> [UInt8] {
    let (status, output) = try await filter(bytes, through: "gzip -dc", in: directory)
    guard status == 0 else { throw TestFailure("gzip -dc: exit status \(status): \(String(decoding: output, as: UTF8.self))") }
    return output
}

/// `bytes` as the standard input of the shell command `command` (through a file in `directory`):
/// its exit status (-1 if a signal ended it) and what it wrote on its standard output and error.
private func filter(_ bytes: [UInt8], through command: String, in directory: String) async throws -> (status: Int32, output: [UInt8]) {
    let input = "\(directory)/input-\(UInt64.random(in: 0...UInt64.max))"
    try writeBytes(bytes, to: input)
    defer { _ = unlinkFile(input) }
    let output = input + ".out"
    defer { _ = unlinkFile(output) }
    let child = try Child("/bin/sh", ["-c", "exec \(command) < \"$0\"", input], logFile: output)
    let pid = child.pid
    let status = await withCheckedContinuation { (continuation: CheckedContinuation<Int32, Never>) in
        TestThread.detached {
            var status: Int32 = 0
            _ = retryOnInterrupt { waitpid(pid, &status, 0) }
            continuation.resume(returning: status)
        }
    }
    return ((status & 0x7f) == 0 ? (status >> 8) & 0xff : -1, try ProcFS.readBytes(output))
}

/// A running `mempressure export` on a port of its own choosing, with the port it printed.
final class ExporterProcess: @unchecked Sendable {
    let child: Child
    let port: Int

    init(_ arguments: [String] = []) throws {
        child = try Child(buildDirectory + "/mempressure", ["export", "--listen", "127.0.0.1:0"] + arguments, pipeStandardError: true)
        guard let line = child.readStandardError(until: "serving http://"),
            let portText = line.split(separator: ":").last?.split(separator: "/").first, let port = Int(portText)
        else {
            child.stop()
            throw TestFailure("mempressure export did not say where it serves")
        }
        self.port = port
    }

    func stop() { child.stop(SIGKILL) }
}

/// The samples of `family` in a Prometheus-text exposition, as (labels text, value text).
func samples(of family: String, in exposition: String) -> [(labels: String, value: String)] {
    exposition.split(separator: "\n").compactMap { line in
        guard line.hasPrefix(family + "{") || line.hasPrefix(family + " ") else { return nil }
        guard let space = line.lastIndex(of: " ") else { return nil }
        let head = line[..<space]
        let labels = head.hasSuffix("}") ? String(head.dropFirst(family.count + 1).dropLast()) : ""
        return (labels, String(line[line.index(after: space)...]))
    }
}
