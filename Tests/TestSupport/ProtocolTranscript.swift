// The lifecycle protocol's golden session transcripts (Tests/Fixtures/protocol, whose README
// says their format) and a fake supervisor that replays them against a client.

import Glibc
import MemPressureSystem

/// The repository's top directory, found from this source file's location.
public let repositoryDirectory: String = {
    var path = #filePath
    for _ in 0..<3 { path = String(path[..<path.lastIndex(of: "/")!]) }  // TestSupport, Tests, the top
    return path
}()

/// One golden session: what the supervisor sends and what a conforming client answers.
public struct ProtocolTranscript: Sendable, CustomStringConvertible {
    public enum Step: Sendable, Hashable {
        /// The supervisor sends these bytes.
        case send([UInt8])
        /// The client's next line must match the pattern.
        case expect(String)
        /// Zero or more client lines matching the pattern.
        case expectAny(String)
    }

    public var name: String
    public var steps: [Step]
    public var description: String { name }

    /// The app name and token the client under test is started with.
    public static let app = "conformance"
    public static let token = "0123abcd"

    public static let directory = repositoryDirectory + "/Tests/Fixtures/protocol"

    /// Every transcript, by name.
    public static func all() throws -> [ProtocolTranscript] {
        let names = ["commands", "launch", "lifecycle", "memory-warning", "notifications", "robustness", "tasks-and-stacks"]
        return try names.map { try named($0) }
    }

    public static func named(_ name: String) throws -> ProtocolTranscript {
        try ProtocolTranscript(name: name, text: String(decoding: try ProcFS.readBytes("\(directory)/\(name).txt"), as: UTF8.self))
    }

    public init(name: String, text: String) throws {
        self.name = name
        steps = []
        for (number, line) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            if line.isEmpty || line.hasPrefix("#") { continue }
            if let rest = line.droppingPrefix(">hex ") {
                let bytes = rest.split(separator: " ").map { UInt8($0, radix: 16) }
                guard bytes.allSatisfy({ $0 != nil }) else { throw TestFailure("\(name):\(number + 1): bad hex") }
                steps.append(.send(bytes.map { $0! }))
            } else if let rest = line.droppingPrefix(">long ") {
                guard let n = Int(rest) else { throw TestFailure("\(name):\(number + 1): bad length") }
                steps.append(.send([UInt8](repeating: UInt8(ascii: "x"), count: n) + [0x0a]))
            } else if let rest = line.droppingPrefix("> ") {
                steps.append(.send(Array(rest.utf8) + [0x0a]))
            } else if let rest = line.droppingPrefix("<* ") {
                steps.append(.expectAny(String(rest)))
            } else if let rest = line.droppingPrefix("< ") {
                steps.append(.expect(String(rest)))
            } else {
                throw TestFailure("\(name):\(number + 1): not a directive: \(line)")
            }
        }
    }

    /// Whether the client's `line` matches `pattern`: a word `*` matches any one word; a pattern
    /// ending in "..." matches every line beginning with what comes before it.
    public static func matches(_ line: String, _ pattern: String) -> Bool {
        if pattern.hasSuffix("...") { return line.hasPrefix(pattern.dropLast(3)) }
        let words = line.split(separator: " ", omittingEmptySubsequences: false)
        let wanted = pattern.split(separator: " ", omittingEmptySubsequences: false)
        return words.count == wanted.count && zip(words, wanted).allSatisfy { $1 == "*" ? !$0.isEmpty : $0 == $1 }
    }
}

extension Substring {
    fileprivate func droppingPrefix(_ prefix: String) -> Substring? { hasPrefix(prefix) ? dropFirst(prefix.count) : nil }
}

/// A fake supervisor: a control socket in a directory of its own, which accepts one client and
/// replays a transcript to it. Blocking work runs on a thread of its own (not the tests' pool).
public final class TranscriptPeer: Sendable {
    public let directory: TemporaryDirectory
    public var socketPath: String { directory.path + "/control.sock" }
    private let listener: UnixSocket

    public init() throws {
        directory = try TemporaryDirectory("mempressure-transcript")
        listener = try UnixSocket.listen(at: directory.path + "/control.sock")
    }

    /// The environment that points a client at this peer, as a supervisor's does.
    public var environment: [String: String] {
        ["MEMPRESSURE_SOCKET": socketPath, "MEMPRESSURE_APP": ProtocolTranscript.app, "MEMPRESSURE_TOKEN": ProtocolTranscript.token]
    }

    /// Accepts one client (waiting up to `timeout` seconds) and replays `transcript` to it,
    /// waiting up to `timeout` for each line it expects; then closes the connection. Nil when
    /// the client answered as the transcript says, else what went wrong.
    public func replay(_ transcript: ProtocolTranscript, timeout: Double = 60) async -> String? {
        let listener = self.listener
        return await withCheckedContinuation { (c: CheckedContinuation<String?, Never>) in
            do {
                try OSThread.detached { c.resume(returning: Self.replay(transcript, on: listener, timeout: timeout)) }
            } catch {
                c.resume(returning: "no thread for the peer: \(error)")
            }
        }
    }

    /// Closes the socket and removes its directory.
    public func close() {
        listener.close()
        directory.remove()
    }

    private static func replay(_ transcript: ProtocolTranscript, on listener: UnixSocket, timeout: Double) -> String? {
        guard wait(listener.descriptor, timeout) else { return "\(transcript): no client connected within \(timeout) s" }
        let connection: UnixSocket
        do {
            connection = try listener.accept().connection
        } catch {
            return "\(transcript): accept: \(error)"
        }
        defer { connection.close() }
        var reader = LineReader(fd: connection.descriptor, timeout: timeout)
        var received: [String] = []
        func failure(_ index: Int, _ what: String) -> String {
            "\(transcript), step \(index + 1): \(what); the client sent so far: \(received)"
        }
        for (index, step) in transcript.steps.enumerated() {
            switch step {
            case .send(let bytes):
                do {
                    try connection.sendAll(bytes, deadline: monotonicSeconds() + timeout)
                } catch {
                    return failure(index, "sending: \(error)")
                }
            case .expect(let pattern):
                guard let line = reader.next() else { return failure(index, "expected '\(pattern)', got \(reader.ending)") }
                received.append(line)
                guard ProtocolTranscript.matches(line, pattern) else { return failure(index, "expected '\(pattern)', got '\(line)'") }
            case .expectAny(let pattern):
                while let line = reader.peek(), ProtocolTranscript.matches(line, pattern) {
                    received.append(line)
                    _ = reader.next()
                }
            }
        }
        return nil
    }

    static func wait(_ fd: CInt, _ timeout: Double) -> Bool {
        var p = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        return retryOnInterrupt { poll(&p, 1, Int32(timeout * 1000)) } > 0
    }
}

/// Lines from a connection, each waited for at most `timeout` seconds.
private struct LineReader {
    let fd: CInt
    let timeout: Double
    var pending: [UInt8] = []
    var peeked: String?
    /// Why no line came ("the end of the connection", "nothing within N s", an error).
    var ending = ""

    init(fd: CInt, timeout: Double) {
        self.fd = fd
        self.timeout = timeout
    }

    mutating func peek() -> String? {
        if peeked == nil { peeked = read() }
        return peeked
    }

    mutating func next() -> String? {
        if let line = peeked {
            peeked = nil
            return line
        }
        return read()
    }

    private mutating func read() -> String? {
        while true {
            if let newline = pending.firstIndex(of: 0x0a) {
                let line = String(decoding: pending[..<newline], as: UTF8.self)
                pending.removeSubrange(...newline)
                return line
            }
            guard TranscriptPeer.wait(fd, timeout) else {
                ending = "nothing within \(timeout) s"
                return nil
            }
            var buffer = [UInt8](repeating: 0, count: 4096)
            let n: Int
            do {
                n = try buffer.withUnsafeMutableBytes { (raw) throws(SystemCallError) in try UnixSocket.read(fd, into: raw) }
            } catch {
                ending = "\(error)"
                return nil
            }
            guard n > 0 else {
                ending = "the end of the connection"
                return nil
            }
            pending += buffer[..<n]
        }
    }
}
