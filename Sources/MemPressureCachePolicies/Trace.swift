import Glibc

/// One request of a trace: a key and the size of its object in bytes.
public struct Request: Sendable, Hashable {
    public var key: Int
    public var size: Int

    public init(key: Int, size: Int) {
        self.key = key
        self.size = size
    }
}

/// A sequence of requests with a name saying where it came from.
public struct Trace: Sendable {
    public var name: String
    public var requests: [Request]

    public init(name: String, requests: [Request]) {
        self.name = name
        self.requests = requests
    }

    /// Distinct keys requested.
    public var uniqueKeys: Int { Set(requests.lazy.map { $0.key }).count }

    /// The sum of the sizes of the distinct objects (the footprint of caching everything).
    public var uniqueBytes: Int {
        var sizes: [Int: Int] = [:]
        for r in requests { sizes[r.key] = r.size }
        return sizes.values.reduce(0) { saturatingAdd($0, $1) }
    }
}

/// A small, fast, seedable generator (SplitMix64), so traces are reproducible from their seed.
public struct SplitMix64: RandomNumberGenerator, Sendable {
    public var state: UInt64
    public init(seed: UInt64) { state = seed }
    public mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        return Self.finalize(state)
    }

    /// SplitMix64's output function: every input bit affects every output bit.
    @inlinable static func finalize(_ x: UInt64) -> UInt64 {
        var z = x
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

/// How big each object is. An object keeps its size for the whole trace.
public enum SizeModel: Sendable, Hashable {
    /// Every object has this size.
    case constant(Int)
    /// Each object has a size drawn once, uniformly in the range.
    case uniform(ClosedRange<Int>)

    func size(of key: Int, seed: UInt64) -> Int {
        min(max(0, rawSize(of: key, seed: seed)), TraceReader.maximumSize)
    }

    private func rawSize(of key: Int, seed: UInt64) -> Int {
        switch self {
        case .constant(let s):
            return s
        case .uniform(let range):
            var g = SplitMix64(seed: seed ^ UInt64(bitPattern: Int64(key)) &* 0x9E37_79B9_7F4A_7C15)
            return Int.random(in: range, using: &g)
        }
    }
}

/// Generated request traces, reproducible from their seed, collected in memory (for traces too
/// long for that, stream a `ZipfRequestSource` instead).
public enum TraceGenerator {
    /// The most requests a generated trace holds (100 M: 1.6 GB of requests in memory); more are
    /// not generated (the CLI refuses them). Streamed (`ZipfRequestSource`), a trace of this
    /// length takes no memory beyond the sampler's table.
    public static let maximumRequests = 100_000_000
    /// The most distinct objects of a generated trace (10 M: the Zipf sampler's table is 80 MB);
    /// a larger count is taken as this one (the CLI refuses it).
    public static let maximumObjects = 10_000_000

    /// Requests drawn independently from a Zipf distribution over `objects` keys: key k
    /// (1-based popularity rank) has probability proportional to 1 / k^alpha.
    public static func zipf(
        objects: Int, alpha: Double, requests: Int, sizes: SizeModel = .constant(1), seed: UInt64 = 42
    ) -> Trace {
        var source = ZipfRequestSource(objects: objects, alpha: alpha, requests: requests, sizes: sizes, seed: seed)
        return source.collectAll()
    }

    /// A Zipf trace interrupted by scans: every `scanEvery` requests, `scanLength` requests for
    /// keys never seen before (a backup, a report, a crawler), the pattern that flushes LRU.
    public static func scanMixed(
        objects: Int, alpha: Double, requests: Int, scanEvery: Int, scanLength: Int,
        sizes: SizeModel = .constant(1), seed: UInt64 = 42
    ) -> Trace {
        var source = ZipfRequestSource(
            objects: objects, alpha: alpha, requests: requests, scanEvery: scanEvery, scanLength: scanLength, sizes: sizes, seed: seed)
        return source.collectAll()
    }
}

/// A generated trace, made request by request as it is read (`TraceGenerator.zipf` and
/// `scanMixed` collect one of these, so the same parameters and seed give the same requests
/// whether streamed or in memory). Its memory is the sampler's table (8 bytes an object),
/// whatever the number of requests.
public struct ZipfRequestSource: RequestSource, Sendable {
    public let name: String
    /// The requests it makes in all.
    public let requestCount: Int
    private let sampler: ZipfSampler
    private let sizes: SizeModel
    private let seed: UInt64
    private let scanEvery: Int
    private let scanLength: Int
    private var generator: SplitMix64
    private var made = 0
    private var nextScanKey: Int
    private var sinceScan = 0
    private var scanLeft = 0

    /// A Zipf trace (`TraceGenerator.zipf`), with a scan of `scanLength` new keys every
    /// `scanEvery` requests when both are above 0 (`TraceGenerator.scanMixed`).
    public init(
        objects: Int, alpha: Double, requests: Int, scanEvery: Int = 0, scanLength: Int = 0,
        sizes: SizeModel = .constant(1), seed: UInt64 = 42
    ) {
        let objects = min(max(1, objects), TraceGenerator.maximumObjects)
        requestCount = min(max(0, requests), TraceGenerator.maximumRequests)
        sampler = ZipfSampler(objects: objects, alpha: alpha)
        self.sizes = sizes
        self.seed = seed
        self.scanEvery = scanEvery > 0 && scanLength > 0 ? scanEvery : 0
        self.scanLength = scanLength
        generator = SplitMix64(seed: seed)
        nextScanKey = objects + 1
        name = self.scanEvery > 0
            ? "zipf(alpha \(alpha), \(objects) objects) with a \(scanLength)-key scan every \(scanEvery) requests"
            : "zipf(alpha \(alpha), \(objects) objects, \(requestCount) requests)"
    }

    public var fractionDone: Double? { requestCount == 0 ? 1 : Double(made) / Double(requestCount) }

    public mutating func nextBatch(_ batch: inout [Request], limit: Int) throws(TraceError) -> Bool {
        fill(&batch, limit: limit)
        return !batch.isEmpty
    }

    private mutating func fill(_ batch: inout [Request], limit: Int) {
        batch.removeAll(keepingCapacity: true)
        let end = min(requestCount, made + max(1, limit))
        while made < end {
            if scanLeft == 0, scanEvery > 0, sinceScan >= scanEvery {
                scanLeft = scanLength
                sinceScan = 0
            }
            let key: Int
            if scanLeft > 0 {
                key = nextScanKey
                nextScanKey += 1
                scanLeft -= 1
            } else {
                key = sampler.sample(using: &generator)
                sinceScan += 1
            }
            batch.append(Request(key: key, size: sizes.size(of: key, seed: seed)))
            made += 1
        }
    }

    /// Every remaining request, in memory.
    mutating func collectAll() -> Trace {
        var all: [Request] = []
        all.reserveCapacity(requestCount - made)
        var batch: [Request] = []
        while made < requestCount {
            fill(&batch, limit: 1 << 16)
            all.append(contentsOf: batch)
        }
        return Trace(name: name, requests: all)
    }
}

/// Samples ranks 1...n with probability proportional to 1/k^alpha, by binary search in the
/// cumulative distribution (exact for any alpha, O(log n) a sample).
struct ZipfSampler: Sendable {
    private var cdf: [Double]

    init(objects: Int, alpha: Double) {
        let n = max(1, objects)
        cdf = []
        cdf.reserveCapacity(n)
        var total = 0.0
        for k in 1...n {
            total += 1 / pow(Double(k), alpha)
            cdf.append(total)
        }
        for i in cdf.indices { cdf[i] /= total }
    }

    func sample(using g: inout some RandomNumberGenerator) -> Int {
        let u = Double.random(in: 0..<1, using: &g)
        var lo = 0, hi = cdf.count - 1
        while lo < hi {
            let mid = (lo + hi) / 2
            if cdf[mid] < u { lo = mid + 1 } else { hi = mid }
        }
        return lo + 1
    }
}

/// Why a trace file could not be read.
public struct TraceError: Error, Sendable, Hashable, CustomStringConvertible {
    public var file: String
    public var line: Int
    public var reason: String
    /// Where in a binary trace (or at which read) it went wrong, in bytes from the start; nil
    /// for a text line.
    public var byteOffset: Int?

    /// `line` is 1-based; 0 when the error is not about a line (a binary record, a failed read),
    /// in which case the reason says where.
    public init(file: String, line: Int, reason: String, byteOffset: Int? = nil) {
        self.file = file
        self.line = line
        self.reason = reason
        self.byteOffset = byteOffset
    }

    public var description: String { line > 0 ? "\(file): line \(line): \(reason)" : "\(file): \(reason)" }
}

/// The CSV trace format: one request per line, `key,size`, where key is any text without a
/// comma or newline and size a non-negative integer number of bytes. A first line whose size
/// field is a name (a letter first: `key,size`) is a header and is skipped; any other bad size,
/// on the first line too (`a,-5`), is an error. Empty lines and a final line without a
/// newline are accepted; a line with a missing or bad size, or longer than 64 KiB, is an error
/// naming the line. Files are streamed by `TraceFileReader`; this parses bytes in memory.
public enum TraceReader {
    /// Parses a whole CSV trace in memory. Keys get dense ids 1, 2, 3... in order of first
    /// appearance (the streamed readers give hashed ids instead; the policies' results do not
    /// depend on which).
    public static func parse(_ bytes: [UInt8], name: String) throws(TraceError) -> Trace {
        let hashed = try parse(bytes, name: name, format: .csv)
        var ids: [Int: Int] = [:]
        var requests: [Request] = []
        requests.reserveCapacity(hashed.requests.count)
        for r in hashed.requests {
            let id: Int
            if let existing = ids[r.key] {
                id = existing
            } else {
                id = ids.count + 1
                ids[r.key] = id
            }
            requests.append(Request(key: id, size: r.size))
        }
        return Trace(name: name, requests: requests)
    }

    /// Parses a whole trace of `format` in memory, with the ids the streamed reader gives.
    public static func parse(_ bytes: [UInt8], name: String, format: TraceFormat) throws(TraceError) -> Trace {
        var parser = TraceParser(format: format, name: name)
        var requests: [Request] = []
        try withBytes(of: bytes) { (raw) throws(TraceError) in try parser.consume(raw, into: &requests) }
        try parser.finish(into: &requests)
        return Trace(name: name, requests: requests)
    }

    /// The largest object size a trace may give (1 TiB): sums over millions of requests stay
    /// far from overflowing.
    public static let maximumSize = 1 << 40

    static func parseSize(_ bytes: UnsafeRawBufferPointer) -> Int? {
        var lo = 0, hi = bytes.count
        while lo < hi, bytes[lo] == 0x20 { lo += 1 }
        while hi > lo, bytes[hi - 1] == 0x20 { hi -= 1 }
        guard lo < hi, hi - lo <= 13 else { return nil }
        var v = 0
        for i in lo..<hi {
            let d = Int(bytes[i]) - 0x30
            guard d >= 0, d <= 9 else { return nil }
            v = v * 10 + d
        }
        return v <= maximumSize ? v : nil
    }
}
