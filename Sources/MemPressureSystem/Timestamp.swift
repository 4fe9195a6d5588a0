import Glibc

/// A wall-clock instant to the microsecond, that prints and parses as ISO 8601 UTC
/// (`2026-11-22T10:15:30.123456Z`), the form of `capturedAt` in every report.
public struct Timestamp: Sendable, Hashable, Comparable, Codable, CustomStringConvertible {
    public var secondsSinceEpoch: Int64
    public var nanoseconds: Int32

    public init(secondsSinceEpoch: Int64, nanoseconds: Int32 = 0) {
        self.secondsSinceEpoch = secondsSinceEpoch
        self.nanoseconds = nanoseconds
    }

    public static func now() -> Timestamp {
        var ts = timespec()
        clock_gettime(CLOCK_REALTIME, &ts)
        // Microseconds: what the text form carries, so a report reads back equal.
        return Timestamp(secondsSinceEpoch: Int64(ts.tv_sec), nanoseconds: Int32(ts.tv_nsec / 1000 * 1000))
    }

    public static func < (a: Timestamp, b: Timestamp) -> Bool {
        (a.secondsSinceEpoch, a.nanoseconds) < (b.secondsSinceEpoch, b.nanoseconds)
    }

    /// Seconds from `self` to `other`.
    public func seconds(to other: Timestamp) -> Double {
        Double(other.secondsSinceEpoch - secondsSinceEpoch) + Double(other.nanoseconds - nanoseconds) / 1e9
    }

    /// ISO 8601 in UTC with microseconds.
    public var description: String {
        var t = time_t(secondsSinceEpoch)
        var parts = tm()
        gmtime_r(&t, &parts)
        func pad(_ v: Int32, _ width: Int) -> String {
            let s = String(v)
            return String(repeating: "0", count: max(0, width - s.count)) + s
        }
        return "\(pad(parts.tm_year + 1900, 4))-\(pad(parts.tm_mon + 1, 2))-\(pad(parts.tm_mday, 2))T"
            + "\(pad(parts.tm_hour, 2)):\(pad(parts.tm_min, 2)):\(pad(parts.tm_sec, 2)).\(pad(nanoseconds / 1000, 6))Z"
    }

    /// Parses what `description` prints (fractional seconds optional, `Z` required).
    public init?(iso8601 text: String) {
        let b = Array(text.utf8)
        func num(_ from: Int, _ count: Int) -> Int32? {
            guard from + count <= b.count else { return nil }
            return ByteScanner.unsigned(b[from..<(from + count)]).map { Int32($0) }  // at most 4 digits
        }
        guard b.count >= 20, b[4] == 0x2d, b[7] == 0x2d, b[10] == 0x54, b[13] == 0x3a, b[16] == 0x3a, b.last == 0x5a,
            let year = num(0, 4), let month = num(5, 2), let day = num(8, 2), let hour = num(11, 2),
            let minute = num(14, 2), let second = num(17, 2), (1...12).contains(month), (1...31).contains(day),
            hour < 24, minute < 60, second < 61
        else { return nil }
        var nanos: Int32 = 0
        if b.count > 20 {
            guard b[19] == 0x2e else { return nil }
            let digits = b[20..<(b.count - 1)]
            guard digits.count <= 9, let fraction = ByteScanner.unsigned(digits) else { return nil }
            nanos = Int32(fraction)
            for _ in digits.count..<9 { nanos *= 10 }
        }
        var parts = tm()
        parts.tm_year = year - 1900
        parts.tm_mon = month - 1
        parts.tm_mday = day
        parts.tm_hour = hour
        parts.tm_min = minute
        parts.tm_sec = second
        let seconds = timegm(&parts)
        self.init(secondsSinceEpoch: Int64(seconds), nanoseconds: nanos)
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.singleValueContainer()
        try c.encode(description)
    }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.singleValueContainer()
        let text = try c.decode(String.self)
        guard let t = Timestamp(iso8601: text) else {
            throw DecodingError.dataCorruptedError(in: c, debugDescription: "not an ISO 8601 UTC time: '\(text)'")
        }
        self = t
    }
}

/// Monotonic seconds (CLOCK_MONOTONIC), for intervals.
public func monotonicSeconds() -> Double {
    var ts = timespec()
    clock_gettime(CLOCK_MONOTONIC, &ts)
    return Double(ts.tv_sec) + Double(ts.tv_nsec) / 1e9
}
