// One scrape as Prometheus makes it: an HTTP GET of /metrics on loopback, timed on the client
// from before connect to the last byte of the response; and what the harness reads from the
// exposition (its size, its series, the Go exporters' own allocation counter, node_exporter's
// collectors).
//
// The client is a small blocking HTTP/1.1 client written for the measurement, one request per
// connection (`Connection: close`): a blocking socket adds the least of its own to the time it
// measures, and the harness needs nothing of HTTP beyond one GET (status line, Content-Length or
// chunked transfer coding, no compression asked for).

import BenchSupport
import Glibc
import MemPressureSystem

/// A response to one GET.
struct HTTPResponse {
    var status: Int
    /// The body, chunked transfer coding removed.
    var body: [UInt8]
    /// Wall time from before connect to the end of the response (the server closing the
    /// connection), in seconds.
    var seconds: Double
}

/// Why a scrape failed; `connectionRefused` is what a port nobody listens on yet answers.
enum ScrapeError: Error, CustomStringConvertible {
    case connectionRefused(port: UInt16)
    case system(String, port: UInt16, errno: Int32)
    case timedOut(port: UInt16, seconds: Double)
    case malformed(port: UInt16, String)

    var description: String {
        switch self {
        case .connectionRefused(let port): "127.0.0.1:\(port): connection refused"
        case let .system(call, port, code): "127.0.0.1:\(port): \(call): \(String(cString: strerror(code))) (errno \(code))"
        case let .timedOut(port, seconds): "127.0.0.1:\(port): no complete response within \(Int(seconds)) s"
        case let .malformed(port, what): "127.0.0.1:\(port): malformed HTTP response: \(what)"
        }
    }
}

/// GET `path` from 127.0.0.1:`port` with `accept` as the Accept header, waiting at most `timeout`
/// seconds for the whole response.
func httpGet(port: UInt16, path: String = "/metrics", accept: String, timeout: Double) throws(ScrapeError) -> HTTPResponse {
    let request = Array("GET \(path) HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\nUser-Agent: export-bench\r\nAccept: \(accept)\r\nConnection: close\r\n\r\n".utf8)
    var raw: [UInt8] = []
    raw.reserveCapacity(1 << 20)
    let start = monotonicSeconds()
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
    guard fd >= 0 else { throw .system("socket", port: port, errno: errno) }
    defer { close(fd) }
    var one: Int32 = 1
    setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_port = port.bigEndian
    address.sin_addr = in_addr(s_addr: UInt32(0x7F00_0001).bigEndian)
    let connected = withUnsafePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { a in retryOnInterrupt { connect(fd, a, socklen_t(MemoryLayout<sockaddr_in>.size)) } }
    }
    guard connected == 0 else {
        let code = errno
        if code == ECONNREFUSED { throw .connectionRefused(port: port) }
        throw .system("connect", port: port, errno: code)
    }
    var sent = 0
    while sent < request.count {
        let n = request.withUnsafeBytes { b in retryOnInterrupt { send(fd, b.baseAddress! + sent, b.count - sent, Int32(MSG_NOSIGNAL)) } }
        guard n > 0 else { throw .system("send", port: port, errno: errno) }
        sent += n
    }
    var chunk = [UInt8](repeating: 0, count: 64 << 10)
    let deadline = start + timeout
    while true {
        let left = deadline - monotonicSeconds()
        guard left > 0 else { throw .timedOut(port: port, seconds: timeout) }
        var p = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        let ready = retryOnInterrupt { poll(&p, 1, Int32(min(left * 1000, 1000).rounded(.up))) }
        guard ready >= 0 else { throw .system("poll", port: port, errno: errno) }
        if ready == 0 { continue }
        let n = chunk.withUnsafeMutableBytes { b in retryOnInterrupt { recv(fd, b.baseAddress!, b.count, 0) } }
        guard n >= 0 else { throw .system("recv", port: port, errno: errno) }
        if n == 0 { break }
        raw.append(contentsOf: chunk[0..<n])
    }
    let seconds = monotonicSeconds() - start
    let (status, body) = try parseResponse(raw, port: port)
    return HTTPResponse(status: status, body: body, seconds: seconds)
}

/// The status and the body of a whole HTTP/1.1 response (the server closed the connection after
/// it).
private func parseResponse(_ raw: [UInt8], port: UInt16) throws(ScrapeError) -> (Int, [UInt8]) {
    let separator: [UInt8] = Array("\r\n\r\n".utf8)
    guard let headerEnd = raw.firstRange(of: separator) else { throw .malformed(port: port, "no end of headers in \(raw.count) bytes") }
    let headerLines = raw[..<headerEnd.lowerBound].split(separator: UInt8(ascii: "\n")).map {
        String(decoding: $0.last == UInt8(ascii: "\r") ? $0.dropLast() : $0, as: UTF8.self)
    }
    guard let statusLine = headerLines.first, statusLine.hasPrefix("HTTP/1."),
          let code = statusLine.split(separator: " ").dropFirst().first.flatMap({ Int($0) }) else {
        throw .malformed(port: port, "status line \(headerLines.first.map { "'\($0)'" } ?? "missing")")
    }
    var chunked = false
    var contentLength: Int?
    for line in headerLines.dropFirst() {
        guard let colon = line.firstIndex(of: ":") else { continue }
        let name = line[..<colon].lowercased()
        let value = line[line.index(after: colon)...].trimmingCharacters(in: " \t")
        switch name {
        case "transfer-encoding": chunked = value.lowercased().contains("chunked")
        case "content-length": contentLength = Int(value)
        case "content-encoding" where value.lowercased() != "identity":
            throw .malformed(port: port, "Content-Encoding \(value), which was not asked for")
        default: break
        }
    }
    let rest = raw[headerEnd.upperBound...]
    if chunked { return (code, try dechunk(rest, port: port)) }
    if let contentLength {
        guard rest.count >= contentLength else { throw .malformed(port: port, "Content-Length \(contentLength), \(rest.count) bytes received") }
        return (code, Array(rest.prefix(contentLength)))
    }
    return (code, Array(rest))
}

/// The body of a chunked transfer coding: hexadecimal sizes, each chunk, a zero-size last chunk.
private func dechunk(_ bytes: ArraySlice<UInt8>, port: UInt16) throws(ScrapeError) -> [UInt8] {
    var out: [UInt8] = []
    out.reserveCapacity(bytes.count)
    var at = bytes.startIndex
    while true {
        guard let lineEnd = bytes[at...].firstIndex(of: UInt8(ascii: "\n")) else { throw .malformed(port: port, "chunked body ends without its last chunk") }
        var size = 0
        for b in bytes[at..<lineEnd] {
            let digit: Int
            switch b {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = Int(b - UInt8(ascii: "0"))
            case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = Int(b - UInt8(ascii: "a")) + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = Int(b - UInt8(ascii: "A")) + 10
            default: digit = -1
            }
            guard digit >= 0 else { break }  // ";extension" or "\r"
            guard size < 1 << 40 else { throw .malformed(port: port, "chunk size too large") }
            size = size * 16 + digit
        }
        at = lineEnd + 1
        if size == 0 { return out }
        guard bytes.endIndex - at >= size + 2 else { throw .malformed(port: port, "chunk of \(size) bytes cut short") }
        out.append(contentsOf: bytes[at..<at + size])
        at += size + 2  // the chunk's CRLF
    }
}

extension StringProtocol {
    fileprivate func trimmingCharacters(in set: String) -> String {
        String(drop { set.contains($0) }.reversed().drop { set.contains($0) }.reversed())
    }
}

// MARK: The exposition

/// What the harness reads from a Prometheus text exposition.
struct Exposition {
    /// Its size in bytes.
    var bytes: Int
    /// Sample lines (series).
    var series: Int
    /// `# TYPE` lines (metric families).
    var families: Int
    /// The value of `go_memstats_alloc_bytes_total` (a Go exporter's own count of the bytes it
    /// ever allocated), if present.
    var goAllocatedBytesTotal: Double?
    /// node_exporter's `node_scrape_collector_success{collector="..."}`: each collector that ran,
    /// and whether it succeeded.
    var collectors: [(name: String, succeeded: Bool)]

    init(_ body: [UInt8]) {
        bytes = body.count
        series = 0
        families = 0
        collectors = []
        let goAlloc = Array("go_memstats_alloc_bytes_total ".utf8)
        let collectorSuccess = Array("node_scrape_collector_success{collector=\"".utf8)
        let typeLine = Array("# TYPE ".utf8)
        for line in body.split(separator: UInt8(ascii: "\n")) {
            if line.first == UInt8(ascii: "#") {
                if line.starts(with: typeLine) { families += 1 }
                continue
            }
            series += 1
            if line.starts(with: goAlloc) {
                goAllocatedBytesTotal = Double(String(decoding: line.dropFirst(goAlloc.count).prefix { $0 != UInt8(ascii: " ") }, as: UTF8.self))
            } else if line.starts(with: collectorSuccess) {
                let rest = line.dropFirst(collectorSuccess.count)
                guard let quote = rest.firstIndex(of: UInt8(ascii: "\"")) else { continue }
                let name = String(decoding: rest[..<quote], as: UTF8.self)
                let value = String(decoding: rest[quote...].drop { $0 != UInt8(ascii: " ") }.dropFirst(), as: UTF8.self)
                collectors.append((name, Double(value) == 1))
            }
        }
    }
}
