// A small RESP2 client over redis's UNIX socket: commands as arrays of bulk strings, replies
// parsed from bytes. Every wait has a deadline and notices cancellation (Ctrl-C) within 50 ms.

import BenchSupport
import Glibc
import MemPressureSystem
import SystemPackage

enum Reply: Equatable {
    case status(String)
    case error(String)
    case integer(Int64)
    case bulk([UInt8]?)
    case array([Reply]?)

    var text: String {
        switch self {
        case .status(let s): return "+\(s)"
        case .error(let s): return "-\(s)"
        case .integer(let n): return ":\(n)"
        case .bulk(let b): return b.map { "$\($0.count) bytes" } ?? "$nil"
        case .array(let a): return a.map { "*\($0.count) elements" } ?? "*nil"
        }
    }
}

struct RedisError: Error, CustomStringConvertible {
    var description: String
    init(_ d: String) { description = d }
}

/// One connection to redis-server.
final class RedisConnection {
    let path: String
    private let socket: UnixSocket
    private var buffer: [UInt8] = []
    private var head = 0
    private var chunk = [UInt8](repeating: 0, count: 1 << 20)
    /// How long one reply may take.
    var timeout: Double = 120

    /// Connects to the socket at `path` (throws ENOENT while there is none, ECONNREFUSED while
    /// nothing listens on it).
    init(path: String) throws(SystemCallError) {
        self.path = path
        socket = try UnixSocket.connect(to: path)
        buffer.reserveCapacity(4 << 20)
    }

    func close() { socket.close() }

    /// RESP for one command.
    static func encode(_ args: [[UInt8]], into out: inout [UInt8]) {
        out += Array("*\(args.count)\r\n".utf8)
        for a in args {
            out += Array("$\(a.count)\r\n".utf8)
            out += a
            out += [13, 10]
        }
    }

    func send(_ bytes: [UInt8]) throws {
        do {
            try socket.sendAll(bytes, deadline: monotonicSeconds() + timeout)
        } catch {
            throw RedisError("sending to redis at \(path): \(error)")
        }
    }

    /// Sends one command and reads its reply.
    func call(_ args: String...) throws -> Reply {
        var out: [UInt8] = []
        Self.encode(args.map { Array($0.utf8) }, into: &out)
        try send(out)
        return try reply()
    }

    /// `call` for a command that must answer with a status (+OK).
    func expectStatus(_ expected: String, _ args: String...) throws {
        var out: [UInt8] = []
        Self.encode(args.map { Array($0.utf8) }, into: &out)
        try send(out)
        let r = try reply()
        guard r == .status(expected) else { throw RedisError("\(args.joined(separator: " ")): redis answered \(r.text) (\(r)), expected +\(expected)") }
    }

    /// `call` for a command that must answer with a bulk string.
    func bulkText(_ args: String...) throws -> String {
        var out: [UInt8] = []
        Self.encode(args.map { Array($0.utf8) }, into: &out)
        try send(out)
        let r = try reply()
        guard case .bulk(let bytes?) = r else { throw RedisError("\(args.joined(separator: " ")): redis answered \(r), expected a bulk string") }
        return String(decoding: bytes, as: UTF8.self)
    }

    /// The next reply.
    func reply() throws -> Reply {
        let deadline = monotonicSeconds() + timeout
        return try parse(deadline: deadline)
    }

    /// The next reply, which must be a bulk string: `body` gets its bytes (nil for a nil
    /// reply) in place, before they are consumed. Another reply is an error naming it.
    func bulk<R>(_ body: (UnsafeRawBufferPointer?) throws -> R) throws -> R {
        let deadline = monotonicSeconds() + timeout
        try need(1, deadline: deadline)
        guard buffer[head] == UInt8(ascii: "$") else { throw RedisError("expected a bulk string, redis answered \(try parse(deadline: deadline))") }
        let line = try readLine(deadline: deadline)
        guard let n = ByteScanner.signed(line.dropFirst()) else { throw RedisError("redis sent a malformed bulk length: \(escapedText(line))") }
        if n < 0 { return try body(nil) }
        let length = Int(n)
        try need(length + 2, deadline: deadline)
        guard buffer[head + length] == 13, buffer[head + length + 1] == 10 else { throw RedisError("redis sent a bulk string without CRLF after it") }
        let start = head
        let result = try buffer.withUnsafeBytes { try body(UnsafeRawBufferPointer(rebasing: $0[start..<start + length])) }
        head += length + 2
        return result
    }

    private func parse(deadline: Double) throws -> Reply {
        let line = try readLine(deadline: deadline)
        guard let kind = line.first else { throw RedisError("redis at \(path) sent an empty line") }
        let rest = line.dropFirst()
        switch kind {
        case UInt8(ascii: "+"): return .status(String(decoding: rest, as: UTF8.self))
        case UInt8(ascii: "-"): return .error(String(decoding: rest, as: UTF8.self))
        case UInt8(ascii: ":"):
            guard let n = ByteScanner.signed(rest) else { throw RedisError("redis sent a malformed integer: \(escapedText(line))") }
            return .integer(n)
        case UInt8(ascii: "$"):
            guard let n = ByteScanner.signed(rest) else { throw RedisError("redis sent a malformed bulk length: \(escapedText(line))") }
            if n < 0 { return .bulk(nil) }
            let length = Int(n)
            try need(length + 2, deadline: deadline)
            let bytes = Array(buffer[head..<head + length])
            guard buffer[head + length] == 13, buffer[head + length + 1] == 10 else { throw RedisError("redis sent a bulk string without CRLF after it") }
            head += length + 2
            return .bulk(bytes)
        case UInt8(ascii: "*"):
            guard let n = ByteScanner.signed(rest) else { throw RedisError("redis sent a malformed array length: \(escapedText(line))") }
            if n < 0 { return .array(nil) }
            var items: [Reply] = []
            for _ in 0..<n { items.append(try parse(deadline: deadline)) }
            return .array(items)
        default:
            throw RedisError("redis sent a reply of unknown type: \(escapedText(line.prefix(80)))")
        }
    }

    /// The next line, without its CRLF.
    private func readLine(deadline: Double) throws -> [UInt8] {
        while true {
            if let cr = buffer[head...].firstIndex(of: 13), cr + 1 < buffer.count {
                guard buffer[cr + 1] == 10 else { throw RedisError("redis sent a CR without LF") }
                let line = Array(buffer[head..<cr])
                head = cr + 2
                return line
            }
            try fill(deadline: deadline)
        }
    }

    /// Until `count` unread bytes are in the buffer.
    private func need(_ count: Int, deadline: Double) throws {
        while buffer.count - head < count { try fill(deadline: deadline) }
    }

    /// Reads what has arrived (waiting for something, up to `deadline`).
    private func fill(deadline: Double) throws {
        if head > 0 && (head == buffer.count || head > 4 << 20) {
            buffer.removeSubrange(0..<head)
            head = 0
        }
        let fd = socket.descriptor
        while true {
            try Task.checkCancellation()
            let left = deadline - monotonicSeconds()
            guard left > 0 else { throw RedisError("redis at \(path) did not answer within \(Int(timeout)) s") }
            var p = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            let ready = retryOnInterrupt { poll(&p, 1, Int32(min(left, 0.05) * 1000) + 1) }
            guard ready > 0 else { continue }
            let n = chunk.withUnsafeMutableBytes { raw in retryOnInterrupt { read(fd, raw.baseAddress!, raw.count) } }
            if n < 0 { throw RedisError("reading from redis at \(path): \(SystemCallError("read", errno: Errno(rawValue: errno)))") }
            if n == 0 { throw RedisError("redis at \(path) closed the connection") }
            buffer.append(contentsOf: chunk[0..<n])
            return
        }
    }
}
