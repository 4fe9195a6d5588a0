import Glibc

/// An app-switching trace: which app the user switches to, one switch after another, and when
/// (seconds since the trace began) when the trace says. The switching benchmark replays it
/// against real apps; the generators below make one from a seed, the reader from a file.
///
/// Pure value code: the same seed gives the same trace in any process (SplitMix64; no hashed
/// collection or system random number decides anything).
public struct SwitchTrace: Sendable, Hashable {
    public var name: String
    /// The apps, by name: for a generated trace in order of popularity (the first is the most
    /// used), for a file in order of first appearance.
    public var apps: [String]
    /// One element per switch: the index in `apps` of the app switched to. Never the app
    /// switched to just before (a switch changes the foreground app).
    public var switches: [Int]
    /// The time of each switch, seconds since the trace began (non-decreasing), when the trace
    /// gives times.
    public var times: [Double]?

    public init(name: String, apps: [String], switches: [Int], times: [Double]? = nil) {
        self.name = name
        self.apps = apps
        self.switches = switches
        self.times = times
    }

    /// How many switches go to each app (indexed as `apps`).
    public var switchCounts: [Int] {
        var counts = [Int](repeating: 0, count: apps.count)
        for s in switches { counts[s] += 1 }
        return counts
    }
}

/// Generated app-switching traces (which app the user brings to the foreground next), reproducible
/// from their seed: the input of the multi-app switching replay.
public enum SwitchTraceGenerator {
    /// Switches drawn independently from a Zipf distribution over `apps`: the app of popularity
    /// rank k (1-based, the order of `apps`) is drawn with probability proportional to
    /// 1 / k^alpha; a draw of the app already in the foreground is drawn again.
    public static func zipf(apps: [String], alpha: Double, switches: Int, seed: UInt64) -> SwitchTrace {
        let count = apps.count > 1 ? max(0, switches) : min(max(0, switches), apps.count)
        let sampler = ZipfSampler(objects: apps.count, alpha: alpha)
        var g = SplitMix64(seed: seed)
        var out: [Int] = []
        out.reserveCapacity(count)
        while out.count < count {
            let next = sampler.sample(using: &g) - 1
            if next != out.last { out.append(next) }
        }
        return SwitchTrace(name: "zipf(alpha \(alpha), \(apps.count) apps, \(count) switches, seed \(seed))", apps: apps, switches: out)
    }

    /// A Markov model of switching: a seeded transition matrix whose row for each app weighs
    /// every other app by its Zipf popularity (1 / k^alpha) times a factor drawn uniformly from
    /// 0.5 to 1.5, so that each app has its own favourite successors; and, with probability
    /// `returnProbability`, a switch back to the app used before the current one (the
    /// "previous app" gesture), which a first-order matrix alone would not favour. The first
    /// switch is a Zipf draw.
    public static func markov(apps: [String], alpha: Double, returnProbability: Double, switches: Int, seed: UInt64) -> SwitchTrace {
        let n = apps.count
        let count = n > 1 ? max(0, switches) : min(max(0, switches), n)
        var g = SplitMix64(seed: seed)
        // Row i: cumulative weights of moving from app i to app j (j != i).
        var rows: [[Double]] = []
        rows.reserveCapacity(n)
        for i in 0..<n {
            var cumulative: [Double] = []
            cumulative.reserveCapacity(n)
            var total = 0.0
            for j in 0..<n {
                let factor = Double.random(in: 0.5..<1.5, using: &g)
                if j != i { total += factor / pow(Double(j + 1), alpha) }
                cumulative.append(total)
            }
            rows.append(cumulative)
        }
        let first = ZipfSampler(objects: max(1, n), alpha: alpha)
        let back = min(1, max(0, returnProbability))
        var out: [Int] = []
        out.reserveCapacity(count)
        while out.count < count {
            guard let current = out.last else {
                out.append(first.sample(using: &g) - 1)
                continue
            }
            if out.count >= 2, Double.random(in: 0..<1, using: &g) < back {
                out.append(out[out.count - 2])
                continue
            }
            let row = rows[current]
            let u = Double.random(in: 0..<1, using: &g) * row[n - 1]
            // The first j whose cumulative weight exceeds u; j == current has no weight of its
            // own (its cumulative equals its predecessor's), so it is never chosen.
            var lo = 0, hi = n - 1
            while lo < hi {
                let mid = (lo + hi) / 2
                if row[mid] <= u { lo = mid + 1 } else { hi = mid }
            }
            out.append(lo == current ? (current + 1) % n : lo)
        }
        return SwitchTrace(
            name: "markov(alpha \(alpha), return \(back), \(n) apps, \(count) switches, seed \(seed))", apps: apps, switches: out)
    }
}

/// The switch trace file format (CSV), one switch per line:
///
///     APP
///     SECONDS,APP
///
/// APP is the name of the app switched to: 1 to 128 letters, digits, `.`, `_` or `-` (what the
/// supervisor accepts as an app name). SECONDS, when given, is when the switch happens, in
/// seconds since the trace began: a non-negative decimal number, never less than the line
/// before; either every line gives it or none does. A first line `app` or `seconds,app` (in any
/// case) is a header. Empty lines and lines beginning with `#` are skipped, spaces around a
/// field are ignored, CRLF line ends are accepted. A line that switches to the app already in
/// the foreground (the app of the line before) is an error, as is any malformed line: the error
/// names the file and the line.
public enum SwitchTraceReader {
    public static func parse(_ bytes: [UInt8], name: String) throws(TraceError) -> SwitchTrace {
        var apps: [String] = []
        var switches: [Int] = []
        var times: [Double] = []
        var timed: Bool?
        var lineNumber = 0
        var sawLine = false
        for rawLine in bytes.split(separator: 0x0a, omittingEmptySubsequences: false) {
            lineNumber += 1
            var line = rawLine[...]
            if line.last == 0x0d { line = line.dropLast() }
            line = trimmed(line)
            if line.isEmpty || line.first == 0x23 { continue }
            let fields = line.split(separator: 0x2c, omittingEmptySubsequences: false).map(trimmed)
            if !sawLine {
                sawLine = true
                let lower = fields.map { String(decoding: $0, as: UTF8.self).lowercased() }
                if lower == ["app"] || lower == ["seconds", "app"] { continue }
            }
            guard fields.count <= 2 else {
                throw TraceError(file: name, line: lineNumber, reason: "expected 'app' or 'seconds,app', found \(fields.count) fields")
            }
            let appField = fields[fields.count - 1]
            guard isAppName(appField) else {
                throw TraceError(file: name, line: lineNumber, reason: appField.isEmpty ? "empty app name" : "app name '\(printable(appField))' is not 1 to 128 letters, digits, '.', '_' or '-'")
            }
            let hasTime = fields.count == 2
            if let timed, timed != hasTime {
                throw TraceError(file: name, line: lineNumber, reason: timed ? "no time, but the lines before give one" : "a time, but the lines before give none")
            }
            timed = hasTime
            if hasTime {
                guard let t = parseSeconds(fields[0]) else {
                    throw TraceError(file: name, line: lineNumber, reason: "time '\(printable(fields[0]))' is not a non-negative decimal number of seconds")
                }
                if let last = times.last, t < last {
                    throw TraceError(file: name, line: lineNumber, reason: "time \(t) is earlier than the line before (\(last))")
                }
                times.append(t)
            }
            let app = String(decoding: appField, as: UTF8.self)
            let index: Int
            if let i = apps.firstIndex(of: app) {
                index = i
            } else {
                index = apps.count
                apps.append(app)
            }
            if switches.last == index {
                throw TraceError(file: name, line: lineNumber, reason: "switches to '\(app)', which the line before already brought to the foreground")
            }
            switches.append(index)
        }
        // The line count, not counting the empty piece after a final newline.
        let lines = max(1, lineNumber - (bytes.last == 0x0a ? 1 : 0))
        guard !switches.isEmpty else { throw TraceError(file: name, line: lines, reason: "no switches in the trace") }
        return SwitchTrace(name: name, apps: apps, switches: switches, times: timed == true ? times : nil)
    }

    static func trimmed(_ s: ArraySlice<UInt8>) -> ArraySlice<UInt8> {
        var t = s.drop { $0 == 0x20 || $0 == 0x09 }
        while let last = t.last, last == 0x20 || last == 0x09 { t = t.dropLast() }
        return t
    }

    static func isAppName(_ s: ArraySlice<UInt8>) -> Bool {
        !s.isEmpty && s.count <= 128 && s.allSatisfy { c in
            (c >= 0x30 && c <= 0x39) || (c >= 0x41 && c <= 0x5a) || (c >= 0x61 && c <= 0x7a) || c == 0x2d || c == 0x5f || c == 0x2e
        }
    }

    /// Digits, optionally a point and more digits; at most 10^9 seconds.
    static func parseSeconds(_ s: ArraySlice<UInt8>) -> Double? {
        guard !s.isEmpty, s.count <= 24 else { return nil }
        var whole = 0.0, fraction = 0.0, scale = 1.0
        var seenPoint = false, digits = 0
        for c in s {
            if c == 0x2e {
                guard !seenPoint else { return nil }
                seenPoint = true
                continue
            }
            guard c >= 0x30, c <= 0x39 else { return nil }
            digits += 1
            let d = Double(c - 0x30)
            if seenPoint {
                scale /= 10
                fraction += d * scale
            } else {
                whole = whole * 10 + d
            }
        }
        guard digits > 0, whole <= 1e9 else { return nil }
        return whole + fraction
    }

    /// A field for an error message: at most 40 bytes, control bytes and non-ASCII as `?`.
    static func printable(_ s: ArraySlice<UInt8>) -> String {
        String(decoding: s.prefix(40).map { $0 < 0x20 || $0 >= 0x7f ? 0x3f : $0 }, as: UTF8.self) + (s.count > 40 ? "..." : "")
    }
}
