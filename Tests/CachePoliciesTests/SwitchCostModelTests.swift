import FoundationEssentials
import MemPressureCachePolicies
import Testing

/// The join behind `mempressure recommend`: survival replayed under a budget, the expected wait
/// per switch, and the options read from a resume-bench curve.
@Suite("switch cost model")
struct SwitchCostModelTests {
    let mib: UInt64 = 1 << 20

    @Test("a budget kills as jetsam's ios policy does: a high-memory app before a less recently used small one")
    func highMemoryFirst() {
        // Budget 75 MiB, the critical line at 95%: 71.25 MiB. Launching app 2 brings 80 MiB:
        // app 1 (60 MiB, high memory) goes although app 0 was used longer ago.
        let trace = SwitchTrace(name: "t", apps: ["a", "b", "c"], switches: [0, 1])
        let sizes: [UInt64] = [10 * mib, 60 * mib, 10 * mib]
        let s = SwitchCostModel.replay(trace, activeBytes: sizes, backgroundBytes: sizes, budgetBytes: 75 * mib)
        #expect(s.resumes == 1 && s.relaunches == 1, "app 0 was kept and resumed; app 1 was killed and relaunched: \(s)")
        #expect(s.kills == 2, "app 1 in the warm-up, then app 2 (the least recently used) for app 1's relaunch: \(s)")
    }

    @Test("least recently used first within a band; room for everything, no kill; sessions replay alike")
    func leastRecentlyUsed() {
        let trace = SwitchTrace(name: "t", apps: ["a", "b", "c"], switches: [0, 1, 2, 0])
        let sizes = [UInt64](repeating: 40 * mib, count: 3)
        let tight = SwitchCostModel.replay(trace, activeBytes: sizes, backgroundBytes: sizes, budgetBytes: 100 * mib)
        #expect(tight.resumes == 0 && tight.relaunches == 4, "each switch finds its app the least recently used, so killed: \(tight)")
        let roomy = SwitchCostModel.replay(trace, activeBytes: sizes, backgroundBytes: sizes, budgetBytes: 200 * mib)
        #expect(roomy.resumes == 4 && roomy.kills == 0 && roomy.meanKept == 2)
        // Smaller in the background than active: two fit beside the foreground app (90 MiB
        // under the line of 95), also across a screen-off (all three in the background).
        let small = [UInt64](repeating: 25 * mib, count: 3)
        let sessions = SwitchTrace(name: "t", apps: ["a", "b", "c"], switches: [0, 1, 2, 0], sessions: [0, 0, 1, 1])
        let s = SwitchCostModel.replay(sessions, activeBytes: [UInt64](repeating: 40 * mib, count: 3), backgroundBytes: small, budgetBytes: 100 * mib)
        #expect(s.resumes == 4 && s.kills == 0, "\(s)")
    }

    @Test("the expected wait weighs resumes and relaunches by how often each happened; its interval holds it and is reproducible by seed")
    func expectedWait() throws {
        let replays = [SwitchCostModel.Survival(resumes: 3, relaunches: 1), SwitchCostModel.Survival(resumes: 1, relaunches: 3)]
        let fixed = try #require(SwitchCostModel.expectedWait(replays: replays, resumeMs: [10, 10], relaunchMs: [90, 90]))
        #expect(fixed.mean == 50)
        #expect(fixed.low <= 50 && fixed.high >= 50 && fixed.low >= 10 && fixed.high <= 90)
        let a = SwitchCostModel.expectedWait(replays: replays, resumeMs: [8, 12, 9], relaunchMs: [80, 100], seed: 7)
        let b = SwitchCostModel.expectedWait(replays: replays, resumeMs: [8, 12, 9], relaunchMs: [80, 100], seed: 7)
        #expect(a == b)
        let spread = try #require(a)
        #expect(spread.high > spread.low, "costs that vary give an interval of some width: \(spread)")
        #expect(spread.low <= spread.mean && spread.mean <= spread.high)
        #expect(SwitchCostModel.expectedWait(replays: [], resumeMs: [1], relaunchMs: [1]) == nil)
        #expect(SwitchCostModel.expectedWait(replays: replays, resumeMs: [], relaunchMs: [1]) == nil, "resumes happened but no resume was measured")
    }

    @Test("options from a curve: RAM in the background per swap, lazy restores with lazy relaunches, zram left out without its memory; the cheaper option ranks first")
    func curveOptions() throws {
        func resume(_ trim: Int, _ restore: String, _ condition: String, ready: Double, footprint: UInt64, dirty: UInt64, zram: UInt64? = nil) -> String {
            #"{"trim": \#(trim), "restore": "\#(restore)", "condition": "\#(condition)", "readyMs": \#(ready), "fullMs": \#(ready * 2), "footprintBytes": \#(footprint), "dirtyBytes": \#(dirty)\#(zram.map { #", "zramMemoryBytes": \#($0)"# } ?? "")}"#
        }
        func relaunch(_ trim: Int, _ restore: String, _ mode: String, ready: Double) -> String {
            #"{"trim": \#(trim), "restore": "\#(restore)", "cache": "warm", "mode": "\#(mode)", "readyMs": \#(ready), "fullMs": 200}"#
        }
        var cycles: [String] = [], relaunches: [String] = []
        for (trim, fp) in [(0, 50 * mib), (100, 20 * mib)] {
            for restore in ["eager", "lazy"] {
                cycles.append(resume(trim, restore, "none", ready: trim == 0 ? 5 : 50, footprint: fp, dirty: fp))
                cycles.append(resume(trim, restore, "swap", ready: 150, footprint: fp, dirty: 1 * mib))
                cycles.append(resume(trim, restore, "zram", ready: 80, footprint: fp, dirty: 1 * mib, zram: trim == 0 ? nil : 10 * mib))
                relaunches.append(relaunch(trim, restore, "eager", ready: 100))
                relaunches.append(relaunch(trim, restore, "lazy", ready: 40))
            }
        }
        let json = #"{"machine": "test", "cycles": [\#(cycles.joined(separator: ","))], "relaunches": [\#(relaunches.joined(separator: ","))]}"#
        let curve = try JSONDecoder().decode(SwitchCostModel.Curve.self, from: Data(json.utf8))
        let (options, notes) = curve.options()
        // 2 trims × (eager restore with eager and with lazy relaunch, lazy with lazy) × 3 swaps,
        // less zram at trim 0, whose memory was not measured.
        #expect(options.count == 2 * 3 * 3 - 3, "\(options.map { "\($0.trim) \($0.restore) \($0.relaunch) \($0.swap)" })")
        #expect(notes.contains { $0.contains("zram") })
        let zram = try #require(options.first { $0.trim == 100 && $0.swap == "zram" && $0.restore == "eager" && $0.relaunch == "eager" })
        #expect(options.first { $0.trim == 100 && $0.swap == "zram" && $0.restore == "eager" && $0.relaunch == "lazy" }?.relaunchMs == [40])
        #expect(zram.backgroundBytes == 11 * mib, "what stayed resident and what zram took")
        let lazy = try #require(options.first { $0.trim == 0 && $0.restore == "lazy" && $0.swap == "none" })
        #expect(lazy.relaunchMs == [40] && lazy.backgroundBytes == 50 * mib && lazy.activeBytes == 50 * mib)
        #expect(curve.options(untilFull: true).options.first { $0.trim == 0 && $0.restore == "lazy" && $0.swap == "none" }?.resumeMs == [10])

        // Room for 2.5 apps of 10: with nothing taken at trim 0 most switches relaunch; a 100%
        // trim keeps more alive; a swap file keeps all (its resume dearer than a lazy relaunch).
        let usage = SwitchCostModel.Usage(apps: 10, sessions: 20, alpha: 1, seeds: [1, 2, 3])
        let ranked = SwitchCostModel.rank(options, usage: usage, budgetBytes: 125 * mib, resamples: 200)
        #expect(ranked.count == options.count)
        #expect(zip(ranked, ranked.dropFirst()).allSatisfy { $0.wait.mean <= $1.wait.mean })
        func find(_ trim: Int, _ swap: String) -> SwitchCostModel.Ranked? {
            ranked.first { $0.option.trim == trim && $0.option.swap == swap && $0.option.restore == "eager" && $0.option.relaunch == "eager" }
        }
        let none0 = try #require(find(0, "none")), none100 = try #require(find(100, "none")), swap = try #require(find(0, "swap file"))
        #expect(none100.resumeShare > none0.resumeShare && none100.meanKept > none0.meanKept)
        #expect(swap.resumeShare == 1 && swap.wait.mean == 150)
        #expect(SwitchCostModel.rank(options, usage: usage, budgetBytes: 125 * mib, resamples: 200) == ranked, "the same inputs, the same ranking")
    }
}
