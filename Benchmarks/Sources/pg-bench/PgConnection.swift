// libpq, wrapped: the one file of pg-bench that calls it. A connection over postgres's UNIX
// socket in non-blocking mode, so that every wait is a poll(2) of at most 50 ms that notices
// cancellation (Ctrl-C) and a deadline; results owned by one type that clears them.

import BenchSupport
import CLibpq
import Glibc
import Foundation
import MemPressureSystem
import SystemPackage

/// What libpq or the server said went wrong.
struct PgError: Error, CustomStringConvertible {
    var description: String
    init(_ d: String) { description = d }
}

/// One result (PGresult), cleared when this goes.
final class PgResult {
    fileprivate let raw: OpaquePointer

    fileprivate init(_ raw: OpaquePointer) { self.raw = raw }

    deinit { PQclear(raw) }

    var rows: Int { Int(PQntuples(raw)) }
    var columns: Int { Int(PQnfields(raw)) }

    func isNull(_ row: Int, _ column: Int) -> Bool { PQgetisnull(raw, Int32(row), Int32(column)) != 0 }

    /// The bytes of a field (text or binary, as the query asked), valid while this result is.
    func withBytes<R>(_ row: Int, _ column: Int, _ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        let n = Int(PQgetlength(raw, Int32(row), Int32(column)))
        guard let p = PQgetvalue(raw, Int32(row), Int32(column)) else { return try body(UnsafeRawBufferPointer(start: nil, count: 0)) }
        return try body(UnsafeRawBufferPointer(start: p, count: n))
    }

    func text(_ row: Int, _ column: Int) -> String {
        withBytes(row, column) { String(decoding: $0, as: UTF8.self) }
    }

    /// A binary int8 (big-endian) field.
    func int64(_ row: Int, _ column: Int) throws -> Int64 {
        try withBytes(row, column) { b in
            guard b.count == 8 else { throw PgError("expected an int8 of 8 bytes, got \(b.count)") }
            return Int64(bigEndian: b.loadUnaligned(as: Int64.self))
        }
    }
}

/// One connection.
final class PgConnection {
    private let conn: OpaquePointer
    private var closed = false
    /// How long one answer may take.
    var timeout: Double = 600

    /// Connects to the server listening in `socketDirectory` (its socket `.s.PGSQL.PORT`) as
    /// `user` to `database`, waiting at most until `deadline`.
    init(socketDirectory: String, port: Int, user: String, database: String, deadline: Double) throws {
        let pairs: [(String, String)] = [
            ("host", socketDirectory), ("port", "\(port)"), ("user", user), ("dbname", database),
            ("application_name", "pg-bench"), ("sslmode", "disable"), ("gssencmode", "disable"),
        ]
        let keys = pairs.map { strdup($0.0) }
        let values = pairs.map { strdup($0.1) }
        defer { for p in keys + values { free(p) } }
        var k: [UnsafePointer<CChar>?] = keys.map { UnsafePointer($0) } + [nil]
        var v: [UnsafePointer<CChar>?] = values.map { UnsafePointer($0) } + [nil]
        guard let c = PQconnectStartParams(&k, &v, 0) else { throw PgError("PQconnectStartParams: out of memory") }
        conn = c
        do {
            guard PQstatus(conn) != CONNECTION_BAD else { throw PgError("connecting to \(socketDirectory): \(errorMessage)") }
            var wantWrite = true  // as if PQconnectPoll had said PGRES_POLLING_WRITING
            while true {
                try wait(forWriting: wantWrite, deadline: deadline, during: "connecting")
                switch PQconnectPoll(conn) {
                case PGRES_POLLING_OK: break
                case PGRES_POLLING_READING: wantWrite = false; continue
                case PGRES_POLLING_WRITING: wantWrite = true; continue
                default: throw PgError("connecting to \(socketDirectory): \(errorMessage)")
                }
                break
            }
            guard PQsetnonblocking(conn, 1) == 0 else { throw PgError("PQsetnonblocking: \(errorMessage)") }
        } catch {
            PQfinish(conn)
            closed = true
            throw error
        }
    }

    deinit { close() }

    func close() {
        guard !closed else { return }
        closed = true
        PQfinish(conn)
    }

    var errorMessage: String {
        guard let m = PQerrorMessage(conn) else { return "(no message)" }
        return String(cString: m).trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// The server's version as it reports it (`server_version`).
    var serverVersion: String {
        guard let v = PQparameterStatus(conn, "server_version") else { return "unknown" }
        return String(cString: v)
    }

    /// Runs one statement; parameters are binary int8 values (`$1`...); the answer is in binary
    /// (`binary`) or text. Throws the server's error.
    @discardableResult
    func query(_ sql: String, int64 parameters: [Int64] = [], binary: Bool = false) throws -> PgResult {
        try send(sql, parameters, binary: binary)
        return try finish(sql)
    }

    /// Runs a statement that returns rows and hands each row (a result of one row) to `body` as
    /// it arrives (single-row mode), so that a large answer is never held whole.
    func forEachRow(_ sql: String, binary: Bool, _ body: (PgResult) throws -> Void) throws {
        try send(sql, [], binary: binary)
        guard PQsetSingleRowMode(conn) == 1 else { throw PgError("PQsetSingleRowMode failed for \(sql)") }
        let deadline = monotonicSeconds() + timeout
        var failure: String?
        while let r = try nextResult(deadline: deadline) {
            switch PQresultStatus(r.raw) {
            case PGRES_SINGLE_TUPLE: if failure == nil { try body(r) }
            case PGRES_TUPLES_OK: break
            default: failure = failure ?? resultError(r, sql)
            }
        }
        if let failure { throw PgError(failure) }
    }

    /// COPY ... FROM STDIN: `next` gives the data in pieces, nil when there is no more.
    func copyIn(_ sql: String, _ next: () throws -> [UInt8]?) throws {
        try send(sql, [], binary: false)
        let deadline = monotonicSeconds() + timeout
        guard let start = try nextResult(deadline: deadline) else { throw PgError("\(sql): no answer") }
        guard PQresultStatus(start.raw) == PGRES_COPY_IN else { throw PgError(resultError(start, sql)) }
        while let piece = try next() {
            while true {
                let rc = piece.withUnsafeBufferPointer { b in
                    b.withMemoryRebound(to: CChar.self) { PQputCopyData(conn, $0.baseAddress, Int32($0.count)) }
                }
                if rc == 1 { break }
                guard rc == 0 else { throw PgError("PQputCopyData: \(errorMessage)") }
                try wait(forWriting: true, deadline: deadline, during: "sending COPY data")
                try flush(deadline: deadline)
            }
        }
        guard PQputCopyEnd(conn, nil) == 1 else { throw PgError("PQputCopyEnd: \(errorMessage)") }
        try flush(deadline: deadline)
        _ = try finish(sql)
    }

    // MARK: Underneath

    private func send(_ sql: String, _ parameters: [Int64], binary: Bool) throws {
        let values = parameters.map { withUnsafeBytes(of: $0.bigEndian) { Array($0) } }
        let types = [Oid](repeating: 20, count: values.count)  // INT8OID
        let lengths = values.map { Int32($0.count) }
        let formats = [Int32](repeating: 1, count: values.count)
        let sent = values.withPointers { pointers in
            PQsendQueryParams(conn, sql, Int32(values.count), types, pointers, lengths, formats, binary ? 1 : 0)
        }
        guard sent == 1 else { throw PgError("sending \(sql): \(errorMessage)") }
        try flush(deadline: monotonicSeconds() + timeout)
    }

    /// The results of the statement sent, until libpq has none: the first that is not an
    /// error is returned; an error is thrown once all were read.
    private func finish(_ sql: String) throws -> PgResult {
        let deadline = monotonicSeconds() + timeout
        var first: PgResult?
        var failure: String?
        while let r = try nextResult(deadline: deadline) {
            switch PQresultStatus(r.raw) {
            case PGRES_TUPLES_OK, PGRES_COMMAND_OK: if first == nil { first = r }
            default: failure = failure ?? resultError(r, sql)
            }
        }
        if let failure { throw PgError(failure) }
        guard let first else { throw PgError("\(sql): no result") }
        return first
    }

    private func resultError(_ r: PgResult, _ sql: String) -> String {
        let message = PQresultErrorMessage(r.raw).map { String(cString: $0) } ?? ""
        let status = PQresStatus(PQresultStatus(r.raw)).map { String(cString: $0) } ?? "?"
        return "\(sql.prefix(120)): \(status) \(message.trimmingCharacters(in: .whitespacesAndNewlines))"
    }

    /// The next result, waiting for it without blocking in libpq; nil when the statement is done.
    private func nextResult(deadline: Double) throws -> PgResult? {
        while PQisBusy(conn) != 0 {
            try wait(forWriting: false, deadline: deadline, during: "waiting for an answer")
            guard PQconsumeInput(conn) == 1 else { throw PgError("reading from postgres: \(errorMessage)") }
        }
        return PQgetResult(conn).map(PgResult.init)
    }

    private func flush(deadline: Double) throws {
        while true {
            let rc = PQflush(conn)
            if rc == 0 { return }
            guard rc == 1 else { throw PgError("sending to postgres: \(errorMessage)") }
            try wait(forWriting: true, deadline: deadline, during: "sending")
            // Reading what has come meanwhile keeps the server from blocking on its own output.
            guard PQconsumeInput(conn) == 1 else { throw PgError("reading from postgres: \(errorMessage)") }
        }
    }

    /// Until the socket is readable (or writable), in polls of at most 50 ms, each noticing
    /// cancellation and the deadline.
    private func wait(forWriting: Bool, deadline: Double, during: String) throws {
        let fd = PQsocket(conn)
        guard fd >= 0 else { throw PgError("\(during): no socket (\(errorMessage))") }
        while true {
            try Task.checkCancellation()
            let left = deadline - monotonicSeconds()
            guard left > 0 else { throw PgError("postgres did not answer within \(Int(timeout)) s (\(during))") }
            var p = pollfd(fd: fd, events: Int16(forWriting ? POLLOUT : POLLIN), revents: 0)
            let ready = retryOnInterrupt { poll(&p, 1, Int32(min(left, 0.05) * 1000) + 1) }
            if ready > 0 { return }
            guard ready == 0 else { throw SystemCallError("poll", errno: Errno(rawValue: errno), subject: "postgres's socket") }
        }
    }
}

extension Array where Element == [UInt8] {
    /// The arrays' base addresses, valid inside `body` (libpq's paramValues).
    fileprivate func withPointers<R>(_ body: ([UnsafePointer<CChar>?]) -> R) -> R {
        var pointers: [UnsafePointer<CChar>?] = []
        func go(_ i: Int) -> R {
            guard i < count else { return body(pointers) }
            return self[i].withUnsafeBufferPointer { b in
                b.withMemoryRebound(to: CChar.self) { c in
                    pointers.append(c.baseAddress)
                    return go(i + 1)
                }
            }
        }
        return go(0)
    }
}
