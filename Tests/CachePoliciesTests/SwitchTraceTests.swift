import MemPressureCachePolicies
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
