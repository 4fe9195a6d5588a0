import Glibc

/// The trace file formats the simulator reads, each streamed in constant memory.
///
/// - `csv`: one request per line, `key,size` (this project's format; see `TraceReader`).
/// - `txt`: libCacheSim's plain-text format: one object id per line and nothing else (libCacheSim's
///   `txt` reader takes the whole line as the id, numeric or text, and gives every request size 1;
///   so does this reader). A line of decimal digits that fits in 64 bits is that number as the id;
///   any other line is text, hashed (`TraceKeyHash`). Empty lines are skipped; a final CR and
///   spaces or tabs around the id are ignored.
/// - `oracleGeneral`: libCacheSim's binary format: packed little-endian 24-byte records
///   `{ uint32 clock_time; uint64 obj_id; uint32 obj_size; int64 next_access_vtime }`. The id and
///   size are used; the clock time and the next access (for Belady) are not. A file whose length
///   is not a multiple of 24 ends in a truncated record: an error naming its byte offset.
public enum TraceFormat: String, Sendable, Hashable, Codable, CaseIterable {
    case csv
    case txt
    case oracleGeneral = "oracle-general"

    /// The bytes of one oracleGeneral record.
    public static let oracleGeneralRecordSize = 24

    /// The format a file name's extension says: `.csv`, `.txt`, `.oracleGeneral` or
    /// `.oracleGeneral.bin` (case-sensitive, as libCacheSim's trace names are); nil otherwise.
    public init?(detectingFrom path: String) {
        if path.hasSuffix(".csv") {
            self = .csv
        } else if path.hasSuffix(".txt") {
            self = .txt
        } else if path.hasSuffix(".oracleGeneral") || path.hasSuffix(".oracleGeneral.bin") {
            self = .oracleGeneral
        } else {
            return nil
        }
    }
}

/// Maps the bytes of a key in a text trace to a 64-bit id with a hash of FIXED seed, so that ids
/// are the same in every process and no table of the keys seen is kept (memory stays constant in
/// the number of requests and of keys).
///
/// Two distinct keys get the same id with probability 2^-64 for a pair: among n distinct keys
/// the chance of any collision is about n^2 / 2^65 (for 10 million keys, 3 in a million; for a
/// billion, 3 in 100). A collision merges two objects into one, which changes a result by at
/// most the requests of those two objects.
public enum TraceKeyHash {
    /// The fixed seed (the first 64 bits of the fractional part of pi).
    public static let seed: UInt64 = 0x243F_6A88_85A3_08D3

    /// The id of `bytes`: 8 bytes at a time, each word mixed in by multiplication and rotation,
    /// then the length, then MurmurHash3's 64-bit finaliser.
    @inlinable
    public static func hash(_ bytes: UnsafeRawBufferPointer) -> UInt64 {
        var h = seed ^ (UInt64(truncatingIfNeeded: bytes.count) &* 0x9E37_79B9_7F4A_7C15)
        var i = 0
        let n = bytes.count
        while i + 8 <= n {
            let w = UInt64(littleEndian: bytes.loadUnaligned(fromByteOffset: i, as: UInt64.self))
            h = mixWord(h, w)
            i += 8
        }
        if i < n {
            var w: UInt64 = 0
            var shift: UInt64 = 0
            while i < n {
                w |= UInt64(bytes[i]) << shift
                shift += 8
                i += 1
            }
            h = mixWord(h, w)
        }
        return finalize(h)
    }

    /// `hash` of an array's bytes.
    public static func hash(_ bytes: [UInt8]) -> UInt64 {
        bytes.withUnsafeBytes { hash($0) }
    }

    @inlinable static func mixWord(_ h: UInt64, _ w: UInt64) -> UInt64 {
        var k = w &* 0x87C3_7B91_1142_53D5
        k = (k << 31) | (k >> 33)
        k = k &* 0x4CF5_AD43_2745_937F
        var x = h ^ k
        x = (x << 27) | (x >> 37)
        return x &* 5 &+ 0x52DC_E729
    }

    /// MurmurHash3's fmix64: every input bit affects every output bit.
    @inlinable public static func finalize(_ h: UInt64) -> UInt64 {
        var x = h
        x ^= x >> 33
        x = x &* 0xFF51_AFD7_ED55_8CCD
        x ^= x >> 33
        x = x &* 0xC4CE_B9FE_1A85_EC53
        x ^= x >> 33
        return x
    }
}

/// Turns the bytes of a trace file, given chunk by chunk in order, into requests. Holds at most
/// one incomplete line (or record) between chunks, so its memory is constant whatever the
/// trace's length.
public struct TraceParser: Sendable {
    public let format: TraceFormat
    /// The name errors give (the file's path).
    public let name: String
    /// The longest line a text trace may have (64 KiB): a longer one is an error, so that a file
    /// without line breaks cannot make the parser hold all of it.
    public static let maximumLineLength = 1 << 16

    private var carry: [UInt8] = []
    private var lineNumber = 0
    private var bytesConsumed = 0

    public init(format: TraceFormat, name: String) {
        self.format = format
        self.name = name
    }

    /// Parses `chunk`, the next bytes of the file, appending its complete requests to `out`.
    public mutating func consume(_ chunk: UnsafeRawBufferPointer, into out: inout [Request]) throws(TraceError) {
        switch format {
        case .oracleGeneral: consumeRecords(chunk, into: &out)
        case .csv, .txt: try consumeLines(chunk, into: &out)
        }
        bytesConsumed += chunk.count
    }

    /// The end of the file: parses a final line without a line break; a truncated binary record
    /// is an error naming its byte offset.
    public mutating func finish(into out: inout [Request]) throws(TraceError) {
        guard !carry.isEmpty else { return }
        switch format {
        case .oracleGeneral:
            let offset = bytesConsumed - carry.count
            throw TraceError(
                file: name, line: 0,
                reason: "truncated record at byte offset \(offset): \(carry.count) of \(TraceFormat.oracleGeneralRecordSize) bytes",
                byteOffset: offset)
        case .csv, .txt:
            let line = carry
            carry.removeAll()
            lineNumber += 1
            try withBytes(of: line) { (raw) throws(TraceError) in try parseLine(raw, into: &out) }
        }
    }

    // MARK: oracleGeneral

    private mutating func consumeRecords(_ chunk: UnsafeRawBufferPointer, into out: inout [Request]) {
        let size = TraceFormat.oracleGeneralRecordSize
        var i = 0
        if !carry.isEmpty {
            let need = min(size - carry.count, chunk.count)
            carry.append(contentsOf: chunk[0..<need])
            i = need
            if carry.count == size {
                carry.withUnsafeBytes { out.append(Self.record($0, at: 0)) }
                carry.removeAll(keepingCapacity: true)
            }
        }
        while i + size <= chunk.count {
            out.append(Self.record(chunk, at: i))
            i += size
        }
        if i < chunk.count { carry.append(contentsOf: chunk[i...]) }
    }

    @inline(__always)
    private static func record(_ bytes: UnsafeRawBufferPointer, at offset: Int) -> Request {
        let id = UInt64(littleEndian: bytes.loadUnaligned(fromByteOffset: offset + 4, as: UInt64.self))
        let size = UInt32(littleEndian: bytes.loadUnaligned(fromByteOffset: offset + 12, as: UInt32.self))
        return Request(key: Int(bitPattern: UInt(id)), size: Int(size))
    }

    // MARK: Text

    private mutating func consumeLines(_ chunk: UnsafeRawBufferPointer, into out: inout [Request]) throws(TraceError) {
        guard let base = chunk.baseAddress, chunk.count > 0 else { return }
        var start = 0
        while start < chunk.count {
            guard let nl = memchr(base + start, 0x0a, chunk.count - start) else { break }
            let end = base.distance(to: UnsafeRawPointer(nl))
            lineNumber += 1
            if carry.isEmpty {
                guard end - start <= Self.maximumLineLength else { throw tooLong() }
                try parseLine(UnsafeRawBufferPointer(rebasing: chunk[start..<end]), into: &out)
            } else {
                guard carry.count + (end - start) <= Self.maximumLineLength else { throw tooLong() }
                carry.append(contentsOf: chunk[start..<end])
                let line = carry
                carry.removeAll(keepingCapacity: true)
                try withBytes(of: line) { (raw) throws(TraceError) in try parseLine(raw, into: &out) }
            }
            start = end + 1
        }
        if start < chunk.count {
            guard carry.count + (chunk.count - start) <= Self.maximumLineLength else {
                lineNumber += 1
                throw tooLong()
            }
            carry.append(contentsOf: chunk[start...])
        }
    }

    private func tooLong() -> TraceError {
        TraceError(file: name, line: lineNumber, reason: "line longer than \(Self.maximumLineLength) bytes")
    }

    private func parseLine(_ raw: UnsafeRawBufferPointer, into out: inout [Request]) throws(TraceError) {
        var line = raw
        if let last = line.last, last == 0x0d { line = UnsafeRawBufferPointer(rebasing: line.dropLast()) }  // CRLF
        if line.isEmpty { return }
        switch format {
        case .txt: parseID(line, into: &out)
        default: try parseCSV(line, into: &out)
        }
    }

    /// A txt line: a number, or text hashed.
    private func parseID(_ raw: UnsafeRawBufferPointer, into out: inout [Request]) {
        var lo = 0, hi = raw.count
        while lo < hi, raw[lo] == 0x20 || raw[lo] == 0x09 { lo += 1 }
        while hi > lo, raw[hi - 1] == 0x20 || raw[hi - 1] == 0x09 { hi -= 1 }
        if lo == hi { return }
        let field = UnsafeRawBufferPointer(rebasing: raw[lo..<hi])
        var value: UInt64 = 0
        var numeric = true
        for c in field {
            let d = UInt64(c) &- 0x30
            guard d <= 9 else { numeric = false; break }
            let (m, o1) = value.multipliedReportingOverflow(by: 10)
            let (s, o2) = m.addingReportingOverflow(d)
            guard !o1, !o2 else { numeric = false; break }
            value = s
        }
        let id = numeric ? value : TraceKeyHash.hash(field)
        out.append(Request(key: Int(bitPattern: UInt(id)), size: 1))
    }

    /// A CSV line: `key,size`, split at the last comma; a first line with a name for a size is
    /// a header.
    private func parseCSV(_ line: UnsafeRawBufferPointer, into out: inout [Request]) throws(TraceError) {
        var comma = line.count - 1
        while comma >= 0, line[comma] != 0x2c { comma -= 1 }
        guard comma >= 0 else { throw TraceError(file: name, line: lineNumber, reason: "expected 'key,size'") }
        let sizeField = UnsafeRawBufferPointer(rebasing: line[(comma + 1)...])
        guard let size = TraceReader.parseSize(sizeField) else {
            if lineNumber == 1, let first = sizeField.first, Self.isLetter(first) { return }  // a header
            throw TraceError(file: name, line: lineNumber, reason: "size is not a non-negative integer of at most \(TraceReader.maximumSize) bytes")
        }
        guard comma > 0 else { throw TraceError(file: name, line: lineNumber, reason: "empty key") }
        let id = TraceKeyHash.hash(UnsafeRawBufferPointer(rebasing: line[0..<comma]))
        out.append(Request(key: Int(bitPattern: UInt(id)), size: size))
    }

    private static func isLetter(_ b: UInt8) -> Bool { (b | 0x20) >= 0x61 && (b | 0x20) <= 0x7a }
}

/// A stream of requests, read a batch at a time: a trace file, a generator, or a trace in memory.
public protocol RequestSource {
    /// What the requests are (a file's path, a generator's parameters).
    var name: String { get }
    /// How far through its requests the source is, from 0 to 1, when it knows (for progress).
    var fractionDone: Double? { get }
    /// Replaces the contents of `batch` with the next requests (at most `limit`, at least one);
    /// returns false, with `batch` empty, at the end.
    mutating func nextBatch(_ batch: inout [Request], limit: Int) throws(TraceError) -> Bool
}

/// A trace file streamed through `read(2)` in fixed-size chunks (1 MiB by default): its memory
/// is the chunk, one batch of requests and at most one incomplete line, whatever the file's
/// size. The descriptor belongs to the caller, who keeps it open while reading and closes it;
/// reads are positioned (`pread`) from the start, so two readers of one descriptor do not
/// disturb each other.
public struct TraceFileReader: RequestSource {
    public let name: String
    public let descriptor: CInt
    /// The file's size when opened (for progress), if known.
    public let fileSize: Int?
    private var parser: TraceParser
    private var chunk: [UInt8]
    private var offset = 0
    private var pending: [Request] = []
    private var pendingStart = 0
    private var ended = false

    /// The default chunk size (1 MiB).
    public static let defaultChunkSize = 1 << 20

    public init(descriptor: CInt, name: String, format: TraceFormat, fileSize: Int? = nil, chunkSize: Int = defaultChunkSize) {
        self.descriptor = descriptor
        self.name = name
        self.fileSize = fileSize
        parser = TraceParser(format: format, name: name)
        chunk = [UInt8](repeating: 0, count: max(1, chunkSize))
    }

    public var fractionDone: Double? {
        guard let fileSize, fileSize > 0 else { return nil }
        return min(1, Double(offset) / Double(fileSize))
    }

    /// Bytes read so far.
    public var bytesRead: Int { offset }

    public mutating func nextBatch(_ batch: inout [Request], limit: Int) throws(TraceError) -> Bool {
        batch.removeAll(keepingCapacity: true)
        let limit = max(1, limit)
        while batch.count < limit {
            if pendingStart < pending.count {
                let n = min(limit - batch.count, pending.count - pendingStart)
                batch.append(contentsOf: pending[pendingStart..<(pendingStart + n)])
                pendingStart += n
                continue
            }
            pending.removeAll(keepingCapacity: true)
            pendingStart = 0
            if ended { break }
            let n = try readChunk()
            if n == 0 {
                ended = true
                try parser.finish(into: &pending)
                continue
            }
            try withBytes(of: chunk) { (raw) throws(TraceError) in
                try parser.consume(UnsafeRawBufferPointer(rebasing: raw[0..<n]), into: &pending)
            }
        }
        return !batch.isEmpty
    }

    private mutating func readChunk() throws(TraceError) -> Int {
        let fd = descriptor
        let at = off_t(offset)
        while true {
            let n = chunk.withUnsafeMutableBytes { raw in pread(fd, raw.baseAddress!, raw.count, at) }
            if n >= 0 {
                offset += n
                return n
            }
            let e = errno
            if e == EINTR { continue }
            throw TraceError(file: name, line: 0, reason: "read at byte offset \(offset) failed: \(String(cString: strerror(e)))", byteOffset: offset)
        }
    }
}

/// A trace held in memory, as a request source.
public struct InMemoryRequestSource: RequestSource {
    public let trace: Trace
    private var index = 0

    public init(_ trace: Trace) { self.trace = trace }

    public var name: String { trace.name }
    public var fractionDone: Double? { trace.requests.isEmpty ? 1 : Double(index) / Double(trace.requests.count) }

    public mutating func nextBatch(_ batch: inout [Request], limit: Int) throws(TraceError) -> Bool {
        batch.removeAll(keepingCapacity: true)
        let end = min(trace.requests.count, index + max(1, limit))
        batch.append(contentsOf: trace.requests[index..<end])
        index = end
        return !batch.isEmpty
    }
}

extension RequestSource {
    /// Every remaining request, in memory (for tests and small traces).
    public mutating func collect(batchSize: Int = 1 << 16) throws(TraceError) -> Trace {
        var all: [Request] = []
        var batch: [Request] = []
        while try nextBatch(&batch, limit: batchSize) { all.append(contentsOf: batch) }
        return Trace(name: name, requests: all)
    }
}

/// The distinct objects of a stream and the bytes they add up to (each object counted at the
/// last size it was requested with, as `Trace.uniqueBytes` does). Its memory is proportional to
/// the distinct objects, the scale of a cache that would hold them all.
public struct TraceCensus: Sendable {
    private var sizes: [Int: Int] = [:]
    public private(set) var requests = 0

    public init() {}

    public mutating func add(_ batch: [Request]) {
        requests += batch.count
        for r in batch { sizes[r.key] = r.size }
    }

    public var distinctObjects: Int { sizes.count }
    public var distinctBytes: Int { sizes.values.reduce(0) { saturatingAdd($0, $1) } }

    /// Reads `source` to its end.
    public static func of(_ source: inout some RequestSource, batchSize: Int = 1 << 16) throws(TraceError) -> TraceCensus {
        var census = TraceCensus()
        var batch: [Request] = []
        while try source.nextBatch(&batch, limit: batchSize) { census.add(batch) }
        return census
    }
}

/// `array.withUnsafeBytes(body)` for a body that throws a `TraceError` (the standard library's
/// `rethrows` would widen it to `any Error`).
func withBytes(of array: [UInt8], _ body: (UnsafeRawBufferPointer) throws(TraceError) -> Void) throws(TraceError) {
    let failure = array.withUnsafeBytes { raw -> TraceError? in
        do throws(TraceError) {
            try body(raw)
            return nil
        } catch {
            return error
        }
    }
    if let failure { throw failure }
}
