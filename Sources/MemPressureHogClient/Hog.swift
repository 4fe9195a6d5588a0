// Starts `mempressure-hog` and waits until it holds its memory: used by `mempressure demo`, the
// live tests and the benchmarks, so that all three measure the same known quantities.

import FoundationEssentials
import Glibc
import MemPressureSystem
import Subprocess
import SystemPackage

/// What a running hog holds, from its `ready {json}` line. Addresses are in the hog's own
/// address space.
public struct HogInfo: Decodable, Sendable, Hashable {
    public struct Block: Decodable, Sendable, Hashable {
        public var start: UInt64
        public var end: UInt64
        public var bytes: Int
    }

    package struct OddFile: Decodable, Sendable, Hashable {
        package var start: UInt64
        package var end: UInt64
        /// The file name's bytes in hexadecimal.
        package var nameHex: String

        package var nameBytes: [UInt8] {
            let digits = Array(nameHex.utf8)
            return stride(from: 0, to: digits.count - 1, by: 2).compactMap { i in
                ByteScanner.hex(digits[i...i + 1]).map { UInt8(truncatingIfNeeded: $0) }  // two digits: at most 0xff
            }
        }
    }

    public var pid: Int32
    var pageSize: Int
    public var dirty: Block?
    public var file: Block?
    public var purgeable: Block?
    public var regions: Block?
    package var oddFiles: [OddFile]?
    package var children: [Int32]?
    /// A child that exited and that the hog never reaps (with --zombie).
    package var zombie: Int32?
    /// The purgeable cache it filled (with --purgeable-cache).
    package var purgeableCache: PurgeableCacheInfo?

    package struct PurgeableCacheInfo: Decodable, Sendable, Hashable {
        package var entries: Int
        package var bytes: Int
    }
}

/// A running hog: what it holds, and a way to send it commands (see mempressure-hog's header).
package final class HogSession {
    package let info: HogInfo
    private let sendLine: (String) async throws -> String?

    init(info: HogInfo, send: @escaping (String) async throws -> String?) {
        self.info = info
        self.sendLine = send
    }

    package var pid: Int32 { info.pid }

    /// Sends one command and returns the hog's one-line answer.
    package func send(_ command: String) async throws -> String {
        guard let answer = try await sendLine(command) else {
            throw HogError.notReady(status: "exited while answering '\(command)'", standardError: "")
        }
        if answer.hasPrefix("error ") { throw HogError.commandFailed(command, String(answer.dropFirst(6))) }
        return answer
    }
}

public enum HogError: Error, CustomStringConvertible {
    case executableNotFound(String)
    case notReady(status: String, standardError: String)
    case badReadyLine(String)
    case commandFailed(String, String)

    public var description: String {
        switch self {
        case .executableNotFound(let path):
            "mempressure-hog not found at \(path) (build the package, or set MEMPRESSURE_HOG)"
        case .notReady(let status, let stderr):
            "mempressure-hog exited (\(status)) before it was ready\(stderr.isEmpty ? "" : ": \(stderr)")"
        case .badReadyLine(let line):
            "mempressure-hog printed an unexpected line: \(line)"
        case .commandFailed(let command, let answer):
            "mempressure-hog could not do '\(command)': \(answer)"
        }
    }
}

public enum Hog {
    /// `$MEMPRESSURE_HOG`, or `mempressure-hog` next to the running executable (SwiftPM puts all
    /// products of a build, and the test bundle, in one directory).
    package static func executablePath() throws -> String {
        if let env = getenv("MEMPRESSURE_HOG") { return String(cString: env) }
        guard let directory = ProcFS.ownExecutableDirectory() else { throw HogError.executableNotFound("/proc/self/exe") }
        let path = "\(directory)/mempressure-hog"
        guard access(path, X_OK) == 0 else { throw HogError.executableNotFound(path) }
        return path
    }

    /// Runs a hog with `arguments`, calls `body` once it is ready, then closes its standard input
    /// (it exits on end of file) and waits for it to exit.
    public static func with<R: Sendable>(
        _ arguments: [String], executable: String? = nil, _ body: (HogInfo) async throws -> R
    ) async throws -> R {
        try await session(arguments, executable: executable) { try await body($0.info) }
    }

    /// Like `with`, giving `body` a session to send the hog commands.
    package static func session<R: Sendable>(
        _ arguments: [String], executable: String? = nil, _ body: (HogSession) async throws -> R
    ) async throws -> R {
        let path = try executable ?? executablePath()
        let result = try await Subprocess.run(
            .path(FilePath(path)), arguments: Arguments(arguments), input: .inputWriter, output: .sequence,
            error: .string(limit: 64 * 1024)
        ) { execution -> Result<R, any Error>? in
            var lines = execution.standardOutput.strings().makeAsyncIterator()
            guard let line = try await lines.next() else {
                try await execution.standardInputWriter.finish()
                return nil
            }
            let outcome: Result<R, any Error>
            do {
                guard line.hasPrefix("ready ") else { throw HogError.badReadyLine(line) }
                let info = try JSONDecoder().decode(HogInfo.self, from: Data(line.dropFirst(6).utf8))
                let writer = execution.standardInputWriter
                let session = HogSession(info: info) { command in
                    _ = try await writer.write(command + "\n")
                    return try await lines.next()
                }
                outcome = .success(try await body(session))
            } catch {
                outcome = .failure(error)
            }
            try await execution.standardInputWriter.finish()
            while try await lines.next() != nil {}
            return outcome
        }
        guard let outcome = result.closureResult else {
            throw HogError.notReady(status: "\(result.terminationStatus)", standardError: result.standardError)
        }
        return try outcome.get()
    }
}
