/// Which apps a device keeps alive over an app-switching trace, and what the user then waits for
/// per switch: the join of a resume-cost curve (resume-bench: what a resume and a relaunch cost
/// at each trim level and swap configuration) with survival under a memory budget.
///
/// Survival is replayed, not measured here: the trace is played against a device of
/// `budgetBytes` whose background apps hold their background footprint and whose foreground app
/// holds its active one; whenever the apps alive hold more than `criticalShare` of the budget,
/// apps in the background are killed as jetsam's `ios` policy kills (`JetsamPolicy.ios`):
/// high-memory apps (a background footprint of `highMemoryShare` of the budget or more) before
/// the others, the least recently used first within each, until they fit. The model app and the
/// switching benchmark's apps run no background task, so every app in the background is
/// suspended: the bands reduce to these two. What it leaves out (the time an allocation
/// waits, apps killed inside didEnterBackground, the kernel's own reclaim) is what the
/// switching benchmark measures on real processes; `Reports/resume-relaunch.md` compares the two.
///
/// Pure value code: the same inputs and seed give the same figures in any process.
public enum SwitchCostModel {
    /// What one replay of a trace gave.
    public struct Survival: Sendable, Hashable, Codable {
        /// Switches that found their app alive (a resume) or killed (a relaunch); the first use
        /// of each app, before any switch found it (the warm-up launches every app once), is a
        /// launch and counts as neither.
        public var resumes: Int
        public var relaunches: Int
        /// Kills the budget forced, the warm-up's included.
        public var kills: Int
        /// Apps alive in the background, averaged over the switches (Fleet's "cached apps kept",
        /// per switch rather than per second: the model has no clock).
        public var meanKept: Double

        public init(resumes: Int = 0, relaunches: Int = 0, kills: Int = 0, meanKept: Double = 0) {
            self.resumes = resumes
            self.relaunches = relaunches
            self.kills = kills
            self.meanKept = meanKept
        }

        /// Resumes among the switches (0 with none).
        public var resumeShare: Double {
            let n = resumes + relaunches
            return n == 0 ? 0 : Double(resumes) / Double(n)
        }
    }

    /// Replays `trace` on a device of `budgetBytes`. `activeBytes[i]` and `backgroundBytes[i]`
    /// are what app `i` (in `trace.apps` order) holds in the foreground and in the background.
    /// Every app is launched once first, in order, each going to the background as the next
    /// comes up (as the switching benchmark's warm-up does), with kills as needed; at a session
    /// boundary the foreground app goes to the background (the screen off).
    public static func replay(
        _ trace: SwitchTrace, activeBytes: [UInt64], backgroundBytes: [UInt64], budgetBytes: UInt64,
        highMemoryShare: Double = 0.25, criticalShare: Double = 0.95
    ) -> Survival {
        let n = trace.apps.count
        guard n > 0, activeBytes.count == n, backgroundBytes.count == n, budgetBytes > 0 else { return Survival() }
        var alive = [Bool](repeating: false, count: n)
        var lastUsed = [Int](repeating: -1, count: n)
        var foreground: Int? = nil
        var clock = 0
        var survival = Survival()
        let line = Double(budgetBytes) * criticalShare
        let high = Double(budgetBytes) * highMemoryShare

        func held() -> Double {
            var total = 0.0
            for i in 0..<n where alive[i] { total += Double(i == foreground ? activeBytes[i] : backgroundBytes[i]) }
            return total
        }
        func enforce() {
            while held() > line {
                // The victim: a high-memory background app if any, else any; the least recently
                // used first; ties (never, with one clock) by index.
                var victim: Int? = nil
                for i in 0..<n where alive[i] && i != foreground {
                    guard let v = victim else {
                        victim = i
                        continue
                    }
                    let iHigh = Double(backgroundBytes[i]) >= high, vHigh = Double(backgroundBytes[v]) >= high
                    if iHigh != vHigh {
                        if iHigh { victim = i }
                    } else if lastUsed[i] < lastUsed[v] {
                        victim = i
                    }
                }
                guard let v = victim else { return }  // the foreground app alone: never killed
                alive[v] = false
                survival.kills += 1
            }
        }
        func bringUp(_ app: Int) {
            foreground = app
            alive[app] = true
            clock += 1
            lastUsed[app] = clock
            enforce()
        }

        for app in 0..<n { bringUp(app) }
        foreground = nil
        var kept = 0.0
        var session = -1
        for (k, app) in trace.switches.enumerated() where app >= 0 && app < n {
            if let sessions = trace.sessions, k < sessions.count, sessions[k] != session {
                session = sessions[k]
                foreground = nil  // the screen went off: the foreground app is in the background
            }
            if alive[app] { survival.resumes += 1 } else { survival.relaunches += 1 }
            bringUp(app)
            kept += Double((0..<n).filter { alive[$0] && $0 != app }.count)
        }
        let switches = survival.resumes + survival.relaunches
        survival.meanKept = switches == 0 ? 0 : kept / Double(switches)
        return survival
    }

    /// A mean with its percentile-bootstrap interval.
    public struct Estimate: Sendable, Hashable, Codable {
        public var mean: Double
        public var low: Double
        public var high: Double

        public init(mean: Double, low: Double, high: Double) {
            self.mean = mean
            self.low = low
            self.high = high
        }
    }

    /// The expected wait per switch: over the replays (one per seed), each resume costing a
    /// resume and each relaunch a relaunch, both at the mean of their measured samples. The
    /// interval is a 95% percentile bootstrap (`resamples`, seeded): the replays resampled
    /// (the usage varies by seed) and, independently, each set of samples (the costs vary by
    /// round). Nil without replays, or without samples for a kind of switch that happened.
    public static func expectedWait(
        replays: [Survival], resumeMs: [Double], relaunchMs: [Double], resamples: Int = 2000, seed: UInt64 = 1
    ) -> Estimate? {
        guard !replays.isEmpty else { return nil }
        let resumes = replays.reduce(0) { $0 + $1.resumes }, relaunches = replays.reduce(0) { $0 + $1.relaunches }
        guard resumes + relaunches > 0, resumes == 0 || !resumeMs.isEmpty, relaunches == 0 || !relaunchMs.isEmpty else { return nil }
        func mean(_ xs: [Double]) -> Double { xs.isEmpty ? 0 : xs.reduce(0, +) / Double(xs.count) }
        func wait(_ rs: [Survival], _ resume: Double, _ relaunch: Double) -> Double {
            let a = rs.reduce(0) { $0 + $1.resumes }, b = rs.reduce(0) { $0 + $1.relaunches }
            return a + b == 0 ? 0 : (Double(a) * resume + Double(b) * relaunch) / Double(a + b)
        }
        let point = wait(replays, mean(resumeMs), mean(relaunchMs))
        var rng = SplitMix64(seed: seed)
        func pick<T>(_ xs: [T]) -> [T] {
            xs.isEmpty ? [] : (0..<xs.count).map { _ in xs[Int(rng.next() % UInt64(xs.count))] }
        }
        var samples: [Double] = []
        samples.reserveCapacity(max(1, resamples))
        for _ in 0..<max(1, resamples) {
            samples.append(wait(pick(replays), mean(pick(resumeMs)), mean(pick(relaunchMs))))
        }
        samples.sort()
        func q(_ p: Double) -> Double { samples[min(samples.count - 1, max(0, Int((Double(samples.count - 1) * p).rounded())))] }
        return Estimate(mean: point, low: q(0.025), high: q(0.975))
    }
}

extension SwitchCostModel {
    /// One way to run an app: its trim level, its restore mode and the device's swap, with
    /// what it then costs (from the resume-cost curve).
    public struct Option: Sendable, Hashable, Codable {
        public var trim: Int
        public var restore: String
        /// How the app relaunches after a kill: "eager" or "lazy" (the first screen before
        /// ready).
        public var relaunch: String
        /// "none", "zram" or "swap file".
        public var swap: String
        /// What the app holds in the foreground, and what it costs the device's RAM in the
        /// background (for a freeze-dried app, what stays resident plus what zram takes for it).
        public var activeBytes: UInt64
        public var backgroundBytes: UInt64
        /// Measured waits (ms, one per round): a resume until ready, a relaunch until ready.
        public var resumeMs: [Double]
        public var relaunchMs: [Double]

        public init(trim: Int, restore: String, relaunch: String = "eager", swap: String, activeBytes: UInt64, backgroundBytes: UInt64, resumeMs: [Double], relaunchMs: [Double]) {
            self.trim = trim
            self.restore = restore
            self.relaunch = relaunch
            self.swap = swap
            self.activeBytes = activeBytes
            self.backgroundBytes = backgroundBytes
            self.resumeMs = resumeMs
            self.relaunchMs = relaunchMs
        }

        /// The swap in words: "no swap", "zram", "a swap file".
        public var swapText: String { swap == "none" ? "no swap" : swap == "swap file" ? "a swap file" : swap }
    }

    /// An option and what it gives on the usage pattern.
    public struct Ranked: Sendable, Hashable, Codable {
        public var option: Option
        public var replays: [Survival]
        public var wait: Estimate
        public var resumeShare: Double
        public var meanKept: Double
    }

    /// A usage pattern: `apps` apps of the option's shape, used as the generated days of
    /// `SwitchTraceGenerator.day` say (one per seed).
    public struct Usage: Sendable, Hashable, Codable {
        public var apps: Int
        public var sessions: Int
        public var alpha: Double
        public var seeds: [UInt64]

        public init(apps: Int = 10, sessions: Int = 20, alpha: Double = 1, seeds: [UInt64] = Array(1...10)) {
            self.apps = apps
            self.sessions = sessions
            self.alpha = alpha
            self.seeds = seeds
        }

        public var traces: [SwitchTrace] {
            let names = (1...max(1, apps)).map { "app\($0)" }
            return seeds.map { SwitchTraceGenerator.day(apps: names, alpha: alpha, sessions: sessions, seed: $0, timeScale: 1) }
        }
    }

    /// How many options after the first of `ranked` (lowest mean first, as `rank` gives them)
    /// have an interval that reaches the first's: options these days cannot tell from the best.
    public static func tiedWithBest(_ ranked: [Ranked]) -> Int {
        guard let best = ranked.first else { return 0 }
        return ranked.dropFirst().filter { $0.wait.low <= best.wait.high }.count
    }

    /// Every option replayed on the usage pattern and a device of `budgetBytes`, the lowest
    /// expected wait per switch first (ties by trim, restore, relaunch, swap: a fixed order).
    /// A budget of 0 replays nothing: no option then.
    public static func rank(_ options: [Option], usage: Usage, budgetBytes: UInt64, resamples: Int = 2000) -> [Ranked] {
        let traces = usage.traces
        var out: [Ranked] = []
        for o in options {
            let replays = traces.map { t in
                replay(t, activeBytes: Array(repeating: o.activeBytes, count: t.apps.count), backgroundBytes: Array(repeating: o.backgroundBytes, count: t.apps.count), budgetBytes: budgetBytes)
            }
            guard let wait = expectedWait(replays: replays, resumeMs: o.resumeMs, relaunchMs: o.relaunchMs, resamples: resamples) else { continue }
            let resumes = replays.reduce(0) { $0 + $1.resumes }, all = replays.reduce(0) { $0 + $1.resumes + $1.relaunches }
            let kept = replays.reduce(0.0) { $0 + $1.meanKept } / Double(max(1, replays.count))
            out.append(Ranked(option: o, replays: replays, wait: wait, resumeShare: all == 0 ? 0 : Double(resumes) / Double(all), meanKept: kept))
        }
        return out.sorted {
            ($0.wait.mean, $0.option.trim, $0.option.restore, $0.option.relaunch, $0.option.swap) < ($1.wait.mean, $1.option.trim, $1.option.restore, $1.option.relaunch, $1.option.swap)
        }
    }
}

extension SwitchCostModel {
    /// What the options are made from: the rounds of a resume-cost curve as resume-bench writes
    /// them (`Reports/resume-relaunch.json`; only these fields are read).
    public struct Curve: Decodable, Sendable {
        public struct Resume: Decodable, Sendable {
            public var trim: Int
            public var restore: String
            public var condition: String
            public var readyMs: Double
            public var fullMs: Double
            public var footprintBytes: UInt64
            public var dirtyBytes: UInt64
            public var invalid: String?
            public var decodeCost: Int?
            public var zramMemoryBytes: UInt64?
        }
        public struct Relaunch: Decodable, Sendable {
            public var trim: Int
            public var restore: String
            public var cache: String
            public var mode: String?
            public var readyMs: Double
            /// Until everything was built; nil in curves before it was measured (an eager
            /// relaunch's ready, then).
            public var fullMs: Double?
            public var decodeCost: Int?
        }
        public var machine: String?
        public var cycles: [Resume]
        public var relaunches: [Relaunch]

        /// The longest wait a curve may give (ms): an hour. A round beyond it, negative or not a
        /// number is refused (`options` leaves it out and says so).
        public static let maximumWaitMs = 3_600_000.0
        /// The most an app may hold (bytes): 1 TiB.
        public static let maximumBytes: UInt64 = 1 << 40

        /// What the app holds in the foreground: the median footprint of its rounds at the
        /// lowest trim with nothing taken, eager restore (nothing freed, nothing taken). The
        /// unit of `--room`. Nil if the curve has no such round.
        public var activeBytes: UInt64? {
            let main = cycles.filter { $0.decodeCost == nil && $0.condition == "none" && $0.footprintBytes <= Self.maximumBytes }
            guard let low = main.map(\.trim).min() else { return nil }
            let xs = main.filter { $0.trim == low && $0.restore == "eager" }.map(\.footprintBytes).sorted()
            let all = xs.isEmpty ? main.filter { $0.trim == low }.map(\.footprintBytes).sorted() : xs
            return all.isEmpty ? nil : all[all.count / 2]
        }

        /// Every trim × restore × swap the curve measured: resumes after nothing taken (no
        /// swap), after a freeze-dry to zram and to a swap file; each against the relaunch of
        /// the app's kind — eager restore with eager relaunch, lazy restore with lazy relaunch,
        /// and eager restore with lazy relaunch when the curve has lazy relaunches — page cache
        /// warm. RAM in the background: the median footprint with nothing taken; after a
        /// freeze-dry, what stayed resident plus, for zram, the memory the device took. The
        /// waits are until ready (the user's first screen), or with `untilFull` until
        /// everything is rebuilt (a lazy restore's or a lazy relaunch's rest included). An
        /// option without rounds, zram without its memory measured, and rounds out of range
        /// (`maximumWaitMs`, `maximumBytes`) are left out; `notes` says so.
        public func options(untilFull: Bool = false) -> (options: [Option], notes: [String]) {
            var out: [Option] = [], notes: [String] = []
            func median(_ xs: [UInt64]) -> UInt64 { xs.isEmpty ? 0 : xs.sorted()[xs.count / 2] }
            func sane(_ ms: Double) -> Bool { ms.isFinite && ms >= 0 && ms <= Self.maximumWaitMs }
            let all = cycles.filter { $0.decodeCost == nil }
            let main = all.filter {
                sane($0.readyMs) && sane($0.fullMs) && $0.footprintBytes <= Self.maximumBytes && $0.dirtyBytes <= Self.maximumBytes
                    && ($0.zramMemoryBytes ?? 0) <= Self.maximumBytes
            }
            if main.count < all.count { notes.append("\(all.count - main.count) resume rounds left out: a time not from 0 to \(Int(Self.maximumWaitMs)) ms, or a size above 1 TiB") }
            let goodRelaunches = relaunches.filter { $0.decodeCost == nil && sane($0.readyMs) && sane($0.fullMs ?? 0) }
            if goodRelaunches.count < relaunches.filter({ $0.decodeCost == nil }).count { notes.append("relaunch rounds with a time not from 0 to \(Int(Self.maximumWaitMs)) ms left out") }
            guard let active = activeBytes else { return ([], notes + ["the curve has no resume with nothing taken: no option"]) }
            let trims = Array(Set(main.map(\.trim))).sorted()
            let hasLazy = goodRelaunches.contains { $0.mode == "lazy" }
            if !hasLazy { notes.append("the curve has no lazy relaunches: every option relaunches eagerly") }
            for trim in trims {
                for (restore, mode) in [("eager", "eager"), ("eager", "lazy"), ("lazy", "lazy")] where mode == "eager" || hasLazy {
                    // Relaunches are measured in the block of the app's restore mode.
                    let relaunch = goodRelaunches.filter { $0.trim == trim && $0.restore == restore && $0.cache == "warm" && ($0.mode ?? "eager") == mode }
                        .map { untilFull ? ($0.fullMs ?? $0.readyMs) : $0.readyMs }
                    let none = main.filter { $0.trim == trim && $0.restore == restore && $0.condition == "none" }
                    for (condition, swap) in [("none", "none"), ("zram", "zram"), ("swap", "swap file")] {
                        let rounds = main.filter { $0.trim == trim && $0.restore == restore && $0.condition == condition && $0.invalid == nil }
                        guard !rounds.isEmpty, !relaunch.isEmpty, !none.isEmpty else { continue }
                        let background: UInt64
                        switch condition {
                        case "none":
                            background = median(none.map(\.footprintBytes))
                        case "zram":
                            let device = rounds.compactMap(\.zramMemoryBytes)
                            guard !device.isEmpty else {
                                if trim == trims[0], restore == "eager", mode == "eager" { notes.append("zram left out: the curve did not measure the memory zram takes") }
                                continue
                            }
                            background = median(rounds.map(\.dirtyBytes)) + median(device)  // each at most 1 TiB: no overflow
                        default:
                            background = median(rounds.map(\.dirtyBytes))
                        }
                        out.append(
                            Option(
                                trim: trim, restore: restore, relaunch: mode, swap: swap, activeBytes: max(active, background), backgroundBytes: background,
                                resumeMs: rounds.map { untilFull ? $0.fullMs : $0.readyMs }, relaunchMs: relaunch))
                    }
                }
            }
            return (out, notes)
        }
    }
}
