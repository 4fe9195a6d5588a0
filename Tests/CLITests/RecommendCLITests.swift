import Glibc
import MemPressureSystem
import Testing
import MemPressureTestSupport

/// `mempressure recommend`: a curve file and a budget in, the ranked options out; bad input is
/// named, not trapped on.
@Suite("recommend from the command line")
struct RecommendCLITests {
    /// A curve where trimming everything keeps every app alive at a cost a little above a
    /// resume with nothing taken, and a relaunch costs ten times that.
    func writeCurve(_ dir: TemporaryDirectory) throws -> String {
        let mib = 1 << 20
        var cycles: [String] = [], relaunches: [String] = []
        for (trim, fp, ready) in [(0, 50 * mib, 5.0), (100, 5 * mib, 8.0)] {
            for restore in ["eager", "lazy"] {
                cycles.append(#"{"trim": \#(trim), "restore": "\#(restore)", "condition": "none", "readyMs": \#(ready), "fullMs": \#(ready), "footprintBytes": \#(fp), "dirtyBytes": \#(fp)}"#)
                relaunches.append(#"{"trim": \#(trim), "restore": "\#(restore)", "cache": "warm", "mode": "\#(restore)", "readyMs": 100}"#)
            }
        }
        let path = "\(dir.path)/curve.json"
        try writeText(#"{"cycles": [\#(cycles.joined(separator: ","))], "relaunches": [\#(relaunches.joined(separator: ","))]}"#, to: path)
        return path
    }

    @Test("with room for 3 apps of 10, a full trim has the lowest expected wait, and every option is listed in JSON")
    func ranks() async throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let curve = try writeCurve(dir)
        let r = try await runMempressure(["recommend", "--curve", curve, "--room", "3", "--seeds", "3"])
        #expect(r.status == 0, "\(r.standardError)")
        #expect(r.standardOutput.contains("Lowest expected wait: trim 100%"), "\(r.standardOutput)")
        let j = try await runMempressure(["recommend", "--curve", curve, "--budget", "150m", "--seeds", "3", "--json"])
        #expect(j.status == 0, "\(j.standardError)")
        #expect(j.standardOutput.split(separator: "\"trim\"", omittingEmptySubsequences: false).count - 1 == 4, "\(j.standardOutput)")
    }

    @Test("a missing curve, one that is not a curve, and a missing budget are named")
    func badInput() async throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let missing = try await runMempressure(["recommend", "--curve", "\(dir.path)/none.json", "--room", "3"])
        #expect(missing.status == 1 && missing.standardError.contains("none.json"), "\(missing.standardError)")
        try writeText("{\"cycles\": 7}", to: "\(dir.path)/garbage.json")
        let garbage = try await runMempressure(["recommend", "--curve", "\(dir.path)/garbage.json", "--room", "3"])
        #expect(garbage.status == 1 && garbage.standardError.contains("not a resume-bench curve"), "\(garbage.standardError)")
        let nobudget = try await runMempressure(["recommend", "--curve", "\(dir.path)/garbage.json"])
        #expect(nobudget.status == 64 && nobudget.standardError.contains("give the budget"), "\(nobudget.standardError)")
        // A room of less than a byte, and a curve whose every time is absurd: named, not trapped on.
        let curve = try writeCurve(dir)
        let tiny = try await runMempressure(["recommend", "--curve", curve, "--room", "0.0000000001"])
        #expect(tiny.status == 1 && tiny.standardError.contains("less than a byte"), "\(tiny.standardError)")
        let absurd = #"{"cycles": [{"trim": 0, "restore": "eager", "condition": "none", "readyMs": 1e308, "fullMs": -5, "footprintBytes": 18446744073709551615, "dirtyBytes": 1}], "relaunches": [{"trim": 0, "restore": "eager", "cache": "warm", "readyMs": 1e300}]}"#
        try writeText(absurd, to: "\(dir.path)/absurd.json")
        let a = try await runMempressure(["recommend", "--curve", "\(dir.path)/absurd.json", "--room", "1000"])
        #expect(a.status == 1 && a.standardError.contains("no complete point") && a.standardError.contains("left out"), "\(a.standardError)")
    }
}
