import Glibc

/// An app-switching trace: which app the user switches to, one switch after another, and when
/// (seconds since the trace began) when the trace says. The switching benchmark replays it
/// against real apps; the generators below make one from a seed, the reader from a file.
///
/// Pure value code: the same seed gives the same trace in any process (SplitMix64; no hashed
/// collection or system random number decides anything).
public struct SwitchTrace: Sendable, Hashable, Codable {
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
    /// One element per switch, when the trace gives usage sessions: the index (from 0) of the
    /// session the switch belongs to; non-decreasing, starting at 0, each session one more than
    /// the one before. A session is one use of the phone: its first switch opens an app from the
    /// home screen. Between two sessions the user puts the phone away (screen off), so a replay
    /// sends the foreground app to the background there, before the next session's first
    /// switch (the trace does not say when in the gap the screen went off). Even across
    /// sessions a switch never goes to the app of the switch before.
    public var sessions: [Int]?

    public init(name: String, apps: [String], switches: [Int], times: [Double]? = nil, sessions: [Int]? = nil) {
        self.name = name
        self.apps = apps
        self.switches = switches
        self.times = times
        self.sessions = sessions
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

    /// A day of app switching in usage sessions, timed, modelled on the published statistics of
    /// the LSApp dataset (M. Aliannejadi, H. Zamani, F. Crestani, W. B. Croft, "Context-Aware
    /// Target Apps Selection and Recommendation for Enhancing Personal Mobile Assistants", ACM
    /// TOIS 39(3), 2021, doi:10.1145/3447678; 87 apps, 76,247 sessions of 292 users). Each
    /// session is one use of the phone; between sessions the screen is off (see
    /// ``SwitchTrace/sessions``). Per session, each figure drawn independently of the others
    /// unless said:
    ///
    /// - Unique apps k = 1 + X, X negative binomial with r = 1.4632, p = 0.5536 (mean 1.18,
    ///   variance 1.46²), truncated so that k ≤ `apps.count`: reproduces LSApp's 2.18 ± 1.46
    ///   unique apps per session (mean ± sd); 42% of sessions use one app.
    /// - The k apps: drawn one after another without repetition, each by Zipf popularity among
    ///   the apps not drawn yet (the app of rank i, 1-based in the order of `apps`, weighs
    ///   1 / i^alpha, as in ``zipf(apps:alpha:switches:seed:)``); the first never the app in the
    ///   foreground when the previous session ended (drawn among the others, which is drawing
    ///   again until it differs), so that no switch goes to the app already in the foreground,
    ///   not even across the screen-off.
    /// - Switches m: 1 when k = 1 (the session opens its app from the home screen and stays
    ///   there); otherwise m = k + R, R (the returns to an app already used) negative binomial
    ///   with r = 0.1743, p = 0.02986 (mean 5.664, sd 13.77; 54% of these sessions use each app
    ///   once), at most 2,000 a session (a bound the distribution reaches with probability under
    ///   10⁻²⁰). With the k above this reproduces LSApp's 5.46 ± 11.2 switches per session: the
    ///   sessions of two or more apps (58%) must then average 8.70 switches with sd 13.8, of
    ///   which k gives 3.04 ± 1.39 and R the rest. A lognormal R of the same moments has so
    ///   heavy a tail that the sd of a trace's sessions strays far from 11.2 (over 20,000
    ///   sessions, from 9.7 to 13 in nine runs out of ten, with sessions of up to 1,500
    ///   switches); this R's exponential tail keeps it from 10.7 to 11.7.
    /// - The order of the switches: the first two open the session's first two apps (in the
    ///   order drawn); each later one opens the next app not yet used with probability (apps
    ///   left) / (switches left), so every app is used and the first uses fall uniformly among
    ///   the switches, and otherwise returns to an app already used, other than the foreground
    ///   one, by Zipf popularity among them. No switch goes to the app already in the
    ///   foreground.
    /// - Session length, from the session's first switch to the screen going off (its last
    ///   switch plus that app's dwell): lognormal with median 106 s, LSApp's median session of
    ///   1:46, and sigma 1.0, an assumption (LSApp publishes no spread of the length): half the
    ///   sessions last 54 s to 208 s, the mean is 175 s, one in twenty exceeds 9.2 minutes.
    /// - The foreground dwell of each switch: the session length split in exponential shares
    ///   (uniform spacings: the m dwells are the gaps between m − 1 uniform points in the
    ///   session).
    /// - The screen-off gap to the next session: lognormal with median 432 s and sigma 1.2, an
    ///   assumption (LSApp publishes none), chosen for a mean of 14.8 minutes: what D. Hintze et
    ///   al. ("Diversity in Locked and Unlocked Mobile Device Usage", UbiComp 2014 Adjunct,
    ///   doi:10.1145/2638728.2641697) give over a 16-hour waking day, 57 sessions and 117
    ///   minutes of use a day: (960 − 117) / 57 = 14.8 minutes between sessions.
    ///
    /// The first switch is at time 0. Every time is multiplied by `timeScale` (a replay at 0.01
    /// plays a 16-hour day in under 10 minutes); a `timeScale` not above 0, or not finite, is
    /// taken as 1. `sessions` ≤ 0, or no apps, give an empty trace; one app gives one session
    /// of one switch (a second would switch to the app already in the foreground). An alpha that
    /// makes weights not finite gives those apps no weight; when no app left to draw has weight
    /// the first one in the order of `apps` is taken. Every loop is bounded.
    public static func day(apps: [String], alpha: Double, sessions: Int, seed: UInt64, timeScale: Double) -> SwitchTrace {
        LSAppDay.generate(apps: apps, alpha: alpha, sessions: sessions, seed: seed, timeScale: timeScale).trace
    }
}

/// The model of ``SwitchTraceGenerator/day(apps:alpha:sessions:seed:timeScale:)``, its
/// parameters and its samplers (all driven by one SplitMix64).
enum LSAppDay {
    /// Unique apps per session, less one: negative binomial of mean 1.18 and variance 1.46².
    static let extraAppsMean = 1.18
    static let extraAppsVariance = 1.46 * 1.46
    static let extraAppsR = extraAppsMean * extraAppsMean / (extraAppsVariance - extraAppsMean)
    static let extraAppsP = extraAppsR / (extraAppsR + extraAppsMean)
    /// Switches of a session of two or more apps beyond one each: negative binomial of mean
    /// 5.664 and sd 13.774 (what k leaves of LSApp's 5.46 ± 11.2 switches a session).
    static let revisitsMean = 5.664
    static let revisitsVariance = 13.774 * 13.774
    static let revisitsR = revisitsMean * revisitsMean / (revisitsVariance - revisitsMean)
    static let revisitsP = revisitsR / (revisitsR + revisitsMean)
    static let maxSwitchesPerSession = 2000
    /// Session length (seconds): lognormal with this median and sigma.
    static let lengthMedian = 106.0
    static let lengthSigma = 1.0
    /// Screen-off gap between sessions (seconds): lognormal with this median and sigma.
    static let gapMedian = 432.0
    static let gapSigma = 1.2

    /// The trace and each session's length (first switch to screen off, scaled like the times).
    static func generate(apps: [String], alpha: Double, sessions: Int, seed: UInt64, timeScale: Double) -> (trace: SwitchTrace, lengths: [Double]) {
        let n = apps.count
        let scale = timeScale.isFinite && timeScale > 0 ? timeScale : 1
        let count = n == 0 ? 0 : n == 1 ? min(1, max(0, sessions)) : max(0, sessions)
        let weights = (0..<n).map { i -> Double in
            let w = 1 / pow(Double(i + 1), alpha)
            return w.isFinite && w > 0 ? w : 0
        }
        var g = SplitMix64(seed: seed)
        var switches: [Int] = [], times: [Double] = [], sessionOf: [Int] = [], lengths: [Double] = []
        var start = 0.0
        for session in 0..<count {
            let k = 1 + negativeBinomial(r: extraAppsR, p: extraAppsP, atMost: n - 1, using: &g)
            // The session's apps, in the order drawn.
            var chosen: [Int] = []
            chosen.reserveCapacity(k)
            while chosen.count < k {
                let candidates = (0..<n).filter { i in !chosen.contains(i) && !(chosen.isEmpty && i == switches.last) }
                chosen.append(draw(among: candidates, weights: weights, using: &g))
            }
            let m = k == 1 ? 1 : max(k, min(maxSwitchesPerSession, k + negativeBinomial(r: revisitsR, p: revisitsP, atMost: maxSwitchesPerSession, using: &g)))
            var order = Array(chosen.prefix(2))
            order.reserveCapacity(m)
            var used = order.count
            while order.count < m {
                let appsLeft = k - used, switchesLeft = m - order.count
                if appsLeft > 0, uniform(&g) * Double(switchesLeft) < Double(appsLeft) {
                    order.append(chosen[used])
                    used += 1
                } else {
                    let current = order[order.count - 1]
                    order.append(draw(among: chosen[..<used].filter { $0 != current }, weights: weights, using: &g))
                }
            }
            let length = lognormal(median: lengthMedian, sigma: lengthSigma, using: &g)
            let shares = (0..<m).map { _ in -log(1 - uniform(&g)) }
            let total = shares.reduce(0, +)
            var t = start
            for (app, share) in zip(order, shares) {
                switches.append(app)
                times.append(t * scale)
                sessionOf.append(session)
                t += length * (total > 0 ? share / total : 1 / Double(m))
            }
            lengths.append(length * scale)
            start += length + lognormal(median: gapMedian, sigma: gapSigma, using: &g)
        }
        let name = "day(LSApp, alpha \(alpha), \(n) apps, \(count) sessions, time ×\(scale), seed \(seed))"
        return (SwitchTrace(name: name, apps: apps, switches: switches, times: times, sessions: sessionOf), lengths)
    }

    /// A negative binomial draw (failures before the r-th success of chance p; mean
    /// r(1 − p)/p): its distribution function inverted at one uniform draw, at most `cap` (the
    /// mass beyond goes to `cap`, which also bounds the loop).
    static func negativeBinomial(r: Double, p: Double, atMost cap: Int, using g: inout SplitMix64) -> Int {
        let u = uniform(&g)
        var x = 0
        var pmf = exp(r * log(p))
        var cdf = pmf
        while x < cap, cdf <= u {
            pmf *= (Double(x) + r) / Double(x + 1) * (1 - p)
            cdf += pmf
            x += 1
        }
        return x
    }

    /// One of `candidates` (not empty), by weight; the first candidate when none has weight.
    static func draw(among candidates: [Int], weights: [Double], using g: inout SplitMix64) -> Int {
        var total = 0.0
        for c in candidates { total += weights[c] }
        let u = uniform(&g) * total
        guard total > 0, total.isFinite else { return candidates[0] }
        var sum = 0.0
        var last = candidates[0]
        for c in candidates where weights[c] > 0 {
            sum += weights[c]
            last = c
            if u < sum { return c }
        }
        return last
    }

    static func uniform(_ g: inout SplitMix64) -> Double { Double.random(in: 0..<1, using: &g) }

    /// Standard normal, by Box–Muller (one of the pair).
    static func normal(using g: inout SplitMix64) -> Double {
        let u1 = 1 - uniform(&g), u2 = uniform(&g)
        return (-2 * log(u1)).squareRoot() * cos(2 * Double.pi * u2)
    }

    static func lognormal(median: Double, sigma: Double, using g: inout SplitMix64) -> Double {
        median * exp(sigma * normal(using: &g))
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
