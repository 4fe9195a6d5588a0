@testable import MemPressureCachePolicies
import Testing
import MemPressureTestSupport

@Suite("app-switching traces") @CPUBound
struct SwitchTraceTests {
    let apps = (1...10).map { "App\($0)" }

    @Test("the same seed gives the same trace; another seed another")
    func deterministic() {
        let a = SwitchTraceGenerator.zipf(apps: apps, alpha: 1, switches: 500, seed: 42)
        let b = SwitchTraceGenerator.zipf(apps: apps, alpha: 1, switches: 500, seed: 42)
        let c = SwitchTraceGenerator.zipf(apps: apps, alpha: 1, switches: 500, seed: 43)
        #expect(a == b)
        #expect(a.switches != c.switches)
        let m1 = SwitchTraceGenerator.markov(apps: apps, alpha: 1, returnProbability: 0.4, switches: 500, seed: 42)
        let m2 = SwitchTraceGenerator.markov(apps: apps, alpha: 1, returnProbability: 0.4, switches: 500, seed: 42)
        #expect(m1 == m2)
        #expect(m1.switches != a.switches)
    }

    /// Pinned: a trace must not depend on the process, the run or hashing (a change to the
    /// generators that changes these changes every benchmark's trace, and must be deliberate).
    @Test("the traces of seed 42 are these")
    func pinned() {
        #expect(Array(SwitchTraceGenerator.zipf(apps: apps, alpha: 1, switches: 500, seed: 42).switches.prefix(16)) == zipfSeed42)
        #expect(Array(SwitchTraceGenerator.markov(apps: apps, alpha: 1, returnProbability: 0.4, switches: 500, seed: 42).switches.prefix(16)) == markovSeed42)
    }

    let zipfSeed42 = [4, 1, 2, 7, 0, 3, 0, 3, 1, 9, 0, 3, 0, 5, 0, 8]
    let markovSeed42 = [3, 0, 3, 0, 1, 0, 1, 3, 0, 3, 0, 3, 0, 3, 6, 3]

    @Test("no switch goes to the app already in the foreground; every switch names an app", arguments: [0.0, 0.8, 1.5])
    func noSelfSwitch(alpha: Double) {
        for trace in [
            SwitchTraceGenerator.zipf(apps: apps, alpha: alpha, switches: 2000, seed: 7),
            SwitchTraceGenerator.markov(apps: apps, alpha: alpha, returnProbability: 0.5, switches: 2000, seed: 7),
        ] {
            #expect(trace.switches.count == 2000)
            #expect(trace.switches.allSatisfy { apps.indices.contains($0) })
            #expect(zip(trace.switches, trace.switches.dropFirst()).allSatisfy { $0 != $1 })
            #expect(trace.times == nil)
        }
    }

    @Test("Zipf: the more popular app is switched to more often")
    func zipfPopularity() {
        let counts = SwitchTraceGenerator.zipf(apps: apps, alpha: 1.2, switches: 20_000, seed: 3).switchCounts
        #expect(counts[0] > counts[1])
        #expect(counts[1] > counts[4])
        #expect(counts[4] > counts[9])
        #expect(counts[9] > 0)
    }

    @Test("Markov: a switch returns to the previous app about as often as asked, and more than by chance")
    func markovReturns() {
        let s = SwitchTraceGenerator.markov(apps: apps, alpha: 1, returnProbability: 0.6, switches: 20_000, seed: 5).switches
        let returns = (2..<s.count).filter { s[$0] == s[$0 - 2] }.count
        let share = Double(returns) / Double(s.count - 2)
        // The asked 60% plus the matrix's own returns.
        #expect(share > 0.6 && share < 0.75, "\(share)")
        let zipf = SwitchTraceGenerator.zipf(apps: apps, alpha: 1, switches: 20_000, seed: 5).switches
        let zipfShare = Double((2..<zipf.count).filter { zipf[$0] == zipf[$0 - 2] }.count) / Double(zipf.count - 2)
        #expect(zipfShare < 0.4, "\(zipfShare)")
    }

    @Test("one app: at most one switch; no apps: none")
    func degenerate() {
        #expect(SwitchTraceGenerator.zipf(apps: ["A"], alpha: 1, switches: 5, seed: 1).switches == [0])
        #expect(SwitchTraceGenerator.markov(apps: ["A"], alpha: 1, returnProbability: 0.5, switches: 5, seed: 1).switches == [0])
        #expect(SwitchTraceGenerator.zipf(apps: [], alpha: 1, switches: 5, seed: 1).switches.isEmpty)
    }
}

@Suite("switch trace files") @CPUBound
struct SwitchTraceReaderTests {
    @Test("app lines; a header; CRLF, comments, empty lines and spaces")
    func apps() throws {
        let text = "app\r\nMail\r\n# lunch\n\n  Maps \nMail\nmusic.player_2-x\n"
        let trace = try SwitchTraceReader.parse(Array(text.utf8), name: "t.csv")
        #expect(trace.apps == ["Mail", "Maps", "music.player_2-x"])
        #expect(trace.switches == [0, 1, 0, 2])
        #expect(trace.times == nil)
    }

    @Test("seconds,app lines")
    func timed() throws {
        let text = "Seconds,App\n0,Mail\n1.5,Maps\n1.5,Mail\n10,Maps"
        let trace = try SwitchTraceReader.parse(Array(text.utf8), name: "t.csv")
        #expect(trace.switches == [0, 1, 0, 1])
        #expect(trace.times == [0, 1.5, 1.5, 10])
    }

    @Test("an app called app after the first line is an app")
    func headerOnlyFirst() throws {
        let trace = try SwitchTraceReader.parse(Array("Mail\napp\n".utf8), name: "t.csv")
        #expect(trace.apps == ["Mail", "app"])
    }

    @Test("a bad line is an error naming the file and the line", arguments: [
        ("Mail\nMaps,Mail,3\n", 2, "expected 'app' or 'seconds,app', found 3 fields"),
        ("Mail\n\nMy App\n", 3, "app name 'My App' is not 1 to 128 letters, digits, '.', '_' or '-'"),
        ("1,Mail\n,Maps\n", 2, "time '' is not a non-negative decimal number of seconds"),
        ("1,Mail\n-2,Maps\n", 2, "time '-2' is not a non-negative decimal number of seconds"),
        ("1,Mail\n1e3,Maps\n", 2, "time '1e3' is not a non-negative decimal number of seconds"),
        ("5,Mail\n4.5,Maps\n", 2, "time 4.5 is earlier than the line before (5.0)"),
        ("1,Mail\nMaps\n", 2, "no time, but the lines before give one"),
        ("Mail\n1,Maps\n", 2, "a time, but the lines before give none"),
        ("Mail\nMail\n", 2, "switches to 'Mail', which the line before already brought to the foreground"),
        ("Mail\n,\n", 2, "empty app name"),
        ("app\n# nothing\n", 2, "no switches in the trace"),
    ])
    func errors(text: String, line: Int, reason: String) {
        #expect(throws: TraceError(file: "t.csv", line: line, reason: reason)) {
            try SwitchTraceReader.parse(Array(text.utf8), name: "t.csv")
        }
    }
}

@Suite("a day of app switching, after LSApp") @CPUBound
struct DaySwitchTraceTests {
    let letters = ["A", "B", "C", "D", "E", "F", "G", "H", "I", "J"]

    /// Pinned, like the other generators: a change to the model or its sampling shows here.
    @Test("the day of seed 42 is this")
    func pinned() {
        let trace = SwitchTraceGenerator.day(apps: letters, alpha: 1, sessions: 8, seed: 42, timeScale: 1)
        #expect(trace.name == "day(LSApp, alpha 1.0, 10 apps, 8 sessions, time ×1.0, seed 42)")
        #expect(Array(trace.switches.prefix(20)) == daySwitches42)
        #expect(Array((trace.sessions ?? []).prefix(20)) == daySessions42)
        #expect((trace.times ?? []).prefix(20).map { Int(($0 * 1e6).rounded()) } == dayMicroseconds42)
    }

    let daySwitches42 = [1, 3, 1, 3, 1, 3, 1, 3, 1, 3, 1, 3, 1, 3, 1, 3, 1, 7, 0, 7]
    let daySessions42 = [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 2]
    /// The times in microseconds (rounded).
    let dayMicroseconds42 = [
        0, 21502894, 24615810, 48099304, 58016820, 59973129, 70221741, 78224165, 79931747, 80068815,
        93568777, 120723817, 123034338, 123073523, 123391419, 123784933, 131866104, 135665904, 359358205, 818932123,
    ]

    @Test("the same seed gives the same day; another seed another")
    func deterministic() {
        let a = SwitchTraceGenerator.day(apps: letters, alpha: 1, sessions: 200, seed: 42, timeScale: 1)
        let b = SwitchTraceGenerator.day(apps: letters, alpha: 1, sessions: 200, seed: 42, timeScale: 1)
        let c = SwitchTraceGenerator.day(apps: letters, alpha: 1, sessions: 200, seed: 43, timeScale: 1)
        #expect(a == b)
        #expect(a.switches != c.switches)
        #expect(a.times != c.times)
    }

    @Test("no switch to the foreground app, not even across sessions; times and sessions in order; every app of a session used", arguments: [0.0, 1.0, 2.0])
    func invariants(alpha: Double) {
        let (trace, lengths) = LSAppDay.generate(apps: letters, alpha: alpha, sessions: 2000, seed: 7, timeScale: 1)
        let switches = trace.switches
        let times = trace.times ?? []
        let sessions = trace.sessions ?? []
        #expect(switches.allSatisfy { letters.indices.contains($0) })
        #expect(zip(switches, switches.dropFirst()).allSatisfy { $0 != $1 })
        #expect(times.count == switches.count && sessions.count == switches.count)
        #expect(times.first == 0)
        #expect(times.allSatisfy { $0.isFinite })
        #expect(zip(times, times.dropFirst()).allSatisfy { $0 <= $1 })
        #expect(sessions.first == 0 && sessions.last == 1999)
        #expect(zip(sessions, sessions.dropFirst()).allSatisfy { $1 == $0 || $1 == $0 + 1 })
        #expect(lengths.count == 2000)
        for s in sessionRanges(sessions) {
            let session = sessions[s.lowerBound]
            var unique: [Int] = []
            for app in switches[s] where !unique.contains(app) { unique.append(app) }
            #expect(s.count >= unique.count)
            if unique.count == 1 { #expect(s.count == 1) }
            // The session's switches fit in its length; the next begins after the screen went off.
            let start = times[s.lowerBound]
            #expect(times[s.upperBound - 1] <= start + lengths[session])
            if s.upperBound < times.count { #expect(times[s.upperBound] > start + lengths[session]) }
        }
    }

    @Test("timeScale multiplies every time; a timeScale not above 0 or not finite is 1")
    func timeScale() {
        let plain = SwitchTraceGenerator.day(apps: letters, alpha: 1, sessions: 100, seed: 5, timeScale: 1)
        let fast = SwitchTraceGenerator.day(apps: letters, alpha: 1, sessions: 100, seed: 5, timeScale: 0.01)
        #expect(fast.switches == plain.switches && fast.sessions == plain.sessions)
        #expect(fast.times == plain.times?.map { $0 * 0.01 })
        #expect(fast.name == "day(LSApp, alpha 1.0, 10 apps, 100 sessions, time ×0.01, seed 5)")
        for bad in [0, -2, Double.nan, Double.infinity] {
            let t = SwitchTraceGenerator.day(apps: letters, alpha: 1, sessions: 100, seed: 5, timeScale: bad)
            #expect(t.times == plain.times && t.switches == plain.switches)
        }
    }

    @Test("no sessions, no apps: empty; one app: one switch; two apps, odd alphas: no hang, no self-switch")
    func degenerate() {
        for trace in [
            SwitchTraceGenerator.day(apps: letters, alpha: 1, sessions: 0, seed: 1, timeScale: 1),
            SwitchTraceGenerator.day(apps: letters, alpha: 1, sessions: -3, seed: 1, timeScale: 1),
            SwitchTraceGenerator.day(apps: [], alpha: 1, sessions: 5, seed: 1, timeScale: 1),
        ] {
            #expect(trace.switches.isEmpty && trace.times == [] && trace.sessions == [])
        }
        let one = SwitchTraceGenerator.day(apps: ["A"], alpha: 1, sessions: 5, seed: 1, timeScale: 1)
        #expect(one.switches == [0] && one.sessions == [0] && one.times == [0])
        for (apps, alpha) in [(["A", "B"], 1.0), (letters, 1000), (letters, -1000), (letters, .nan), (letters, .infinity)] {
            let trace = SwitchTraceGenerator.day(apps: apps, alpha: alpha, sessions: 300, seed: 9, timeScale: 1)
            #expect(trace.sessions?.last == 299)
            #expect(trace.switches.allSatisfy { apps.indices.contains($0) })
            #expect(zip(trace.switches, trace.switches.dropFirst()).allSatisfy { $0 != $1 })
        }
    }

    @Test("20,000 sessions over 87 apps have LSApp's apps, switches and length per session")
    func statistics() {
        let apps = (1...87).map { "app\($0)" }
        let (trace, lengths) = LSAppDay.generate(apps: apps, alpha: 1, sessions: 20_000, seed: 11, timeScale: 1)
        let ranges = sessionRanges(trace.sessions ?? [])
        #expect(ranges.count == 20_000)
        let uniqueApps = ranges.map { r -> Double in
            var unique: [Int] = []
            for app in trace.switches[r] where !unique.contains(app) { unique.append(app) }
            return Double(unique.count)
        }
        let switchCounts = ranges.map { Double($0.count) }
        let (appsMean, appsSD) = meanAndSD(uniqueApps)
        let (switchesMean, switchesSD) = meanAndSD(switchCounts)
        let median = lengths.sorted()[lengths.count / 2]
        #expect(abs(appsMean - 2.18) <= 0.15, "\(appsMean)")
        #expect(abs(appsSD - 1.46) <= 0.3, "\(appsSD)")
        #expect(abs(switchesMean - 5.46) <= 0.8, "\(switchesMean) ± \(switchesSD)")
        #expect(abs(median - 106) <= 15, "\(median)")
        let counts = trace.switchCounts
        #expect(counts[0] > counts[9], "\(counts.prefix(10))")
    }

    /// The switch indices of each session, in order.
    func sessionRanges(_ sessions: [Int]) -> [Range<Int>] {
        var ranges: [Range<Int>] = []
        var begin = 0
        for i in sessions.indices where i + 1 == sessions.count || sessions[i + 1] != sessions[i] {
            ranges.append(begin..<(i + 1))
            begin = i + 1
        }
        return ranges
    }

    func meanAndSD(_ values: [Double]) -> (Double, Double) {
        let mean = values.reduce(0, +) / Double(values.count)
        let variance = values.reduce(0) { $0 + ($1 - mean) * ($1 - mean) } / Double(values.count - 1)
        return (mean, variance.squareRoot())
    }
}
