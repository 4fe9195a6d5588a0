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
        var z = state
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

public enum TraceGenerator {
    /// The most requests a generated trace holds (100 M: 1.6 GB of requests in memory); more are
    /// not generated (the CLI refuses them).
    public static let maximumRequests = 100_000_000
    /// The most distinct objects of a generated trace (10 M: the Zipf sampler's table is 80 MB);
    /// a larger count is taken as this one (the CLI refuses it).
    public static let maximumObjects = 10_000_000

    /// Requests drawn independently from a Zipf distribution over `objects` keys: key k
    /// (1-based popularity rank) has probability proportional to 1 / k^alpha.
    public static func zipf(
        objects: Int, alpha: Double, requests: Int, sizes: SizeModel = .constant(1), seed: UInt64 = 42
    ) -> Trace {
        let objects = min(max(1, objects), maximumObjects)
        let requests = min(max(0, requests), maximumRequests)
        let sampler = ZipfSampler(objects: objects, alpha: alpha)
        var g = SplitMix64(seed: seed)
        var out: [Request] = []
        out.reserveCapacity(requests)
        for _ in 0..<requests {
            let key = sampler.sample(using: &g)
            out.append(Request(key: key, size: sizes.size(of: key, seed: seed)))
        }
        return Trace(name: "zipf(alpha \(alpha), \(objects) objects, \(requests) requests)", requests: out)
    }

    /// A Zipf trace interrupted by scans: every `scanEvery` requests, `scanLength` requests for
    /// keys never seen before (a backup, a report, a crawler), the pattern that flushes LRU.
    public static func scanMixed(
        objects: Int, alpha: Double, requests: Int, scanEvery: Int, scanLength: Int,
        sizes: SizeModel = .constant(1), seed: UInt64 = 42
    ) -> Trace {
        let objects = min(max(1, objects), maximumObjects)
        let requests = min(max(0, requests), maximumRequests)
        let sampler = ZipfSampler(objects: objects, alpha: alpha)
        var g = SplitMix64(seed: seed)
        var out: [Request] = []
        out.reserveCapacity(requests)
        var nextScanKey = objects + 1
        var sinceScan = 0
        while out.count < requests {
            if scanEvery > 0, scanLength > 0, sinceScan >= scanEvery {
                for _ in 0..<max(0, min(scanLength, requests - out.count)) {
                    out.append(Request(key: nextScanKey, size: sizes.size(of: nextScanKey, seed: seed)))
                    nextScanKey += 1
                }
                sinceScan = 0
                continue
            }
            let key = sampler.sample(using: &g)
            out.append(Request(key: key, size: sizes.size(of: key, seed: seed)))
            sinceScan += 1
        }
        return Trace(
            name: "zipf(alpha \(alpha), \(objects) objects) with a \(scanLength)-key scan every \(scanEvery) requests",
            requests: out)
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

    public init(file: String, line: Int, reason: String) {
        self.file = file
        self.line = line
        self.reason = reason
    }

    public var description: String { "\(file): line \(line): \(reason)" }
}

/// The CSV trace format: one request per line, `key,size`, where key is any text without a
/// comma or newline and size a non-negative integer number of bytes. A first line whose size
/// field is a name (a letter first: `key,size`) is a header and is skipped; any other bad size,
/// on the first line too (`a,-5`), is an error. Empty lines and a final line without a
/// newline are accepted; a line with a missing or bad size is an error naming the line.
public enum TraceReader {
    public static func parse(_ bytes: [UInt8], name: String) throws(TraceError) -> Trace {
        var keys: [[UInt8]: Int] = [:]
        var requests: [Request] = []
        var lineNumber = 0
        for line in bytes.split(separator: 0x0a, omittingEmptySubsequences: false) {
            lineNumber += 1
            var fields = line
            if fields.last == 0x0d { fields = fields.dropLast() }  // CRLF
            if fields.isEmpty { continue }
            guard let comma = fields.lastIndex(of: 0x2c) else {
                throw TraceError(file: name, line: lineNumber, reason: "expected 'key,size'")
            }
            let keyBytes = Array(fields[fields.startIndex..<comma])
            let sizeField = fields[fields.index(after: comma)...]
            guard let size = parseSize(sizeField) else {
                if lineNumber == 1, let first = sizeField.first, isLetter(first) { continue }  // a header
                throw TraceError(file: name, line: lineNumber, reason: "size is not a non-negative integer of at most \(maximumSize) bytes")
            }
            guard !keyBytes.isEmpty else { throw TraceError(file: name, line: lineNumber, reason: "empty key") }
            let id: Int
            if let existing = keys[keyBytes] {
                id = existing
            } else {
                id = keys.count + 1
                keys[keyBytes] = id
            }
            requests.append(Request(key: id, size: size))
        }
        return Trace(name: name, requests: requests)
    }

    private static func isLetter(_ b: UInt8) -> Bool { (b | 0x20) >= 0x61 && (b | 0x20) <= 0x7a }

    /// The largest object size a trace may give (1 TiB): sums over millions of requests stay
    /// far from overflowing.
    public static let maximumSize = 1 << 40

    static func parseSize(_ bytes: ArraySlice<UInt8>) -> Int? {
        var trimmed = bytes.drop { $0 == 0x20 }
        while let last = trimmed.last, last == 0x20 { trimmed = trimmed.dropLast() }
        guard !trimmed.isEmpty, trimmed.count <= 13 else { return nil }
        var v = 0
        for c in trimmed {
            let d = Int(c) - 0x30
            guard d >= 0, d <= 9 else { return nil }
            v = v * 10 + d
        }
        return v <= maximumSize ? v : nil
    }
}
