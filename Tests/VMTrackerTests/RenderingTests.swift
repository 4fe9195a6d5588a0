import MemPressureSystem
import Testing
import MemPressureTestSupport
import MemPressureVMTracker

/// The fields of CSV text as a reader splits them (RFC 4180, byte by byte).
func readCSV(_ text: String) -> [[String]] {
    var records: [[String]] = []
    var fields: [String] = []
    var field: [UInt8] = []
    var inQuotes = false
    let b = Array(text.utf8)
    var i = 0
    while i < b.count {
        let c = b[i]
        if inQuotes {
            if c == 0x22, i + 1 < b.count, b[i + 1] == 0x22 {
                field.append(0x22)
                i += 1
            } else if c == 0x22 {
                inQuotes = false
            } else {
                field.append(c)
            }
        } else if c == 0x22 && field.isEmpty {
            inQuotes = true
        } else if c == 0x2c {
            fields.append(String(decoding: field, as: UTF8.self))
            field = []
        } else if c == 0x0a {
            fields.append(String(decoding: field, as: UTF8.self))
            records.append(fields)
            fields = []
            field = []
        } else {
            field.append(c)
        }
        i += 1
    }
    return records
}

@Suite("rendering hostile text")
struct RenderingTests {
    // Found with the CSV check of the fuzz harness (Tests/Fuzz, fuzz-smaps), on the input
    // Corpus/fuzz-smaps/regression-csv-combining-mark: a file name holding a comma or a quote
    // followed by a combining mark (valid UTF-8, so printed as it is) is one `Character` that
    // the old Character comparison did not see, so the field went out unquoted and split the
    // record; a "\r\n" likewise.
    @Test("CSV quotes a comma, quote or line break even when a combining mark follows it", arguments: [
        "a,\u{301}b", "a\"\u{301}b", "a\r\nb", "\"\u{301}", ",\u{301}",
    ])
    func csvFieldByBytes(text: String) {
        let line = CSV.line(["x", text, "y"])
        #expect(readCSV(line) == [["x", text, "y"]])
    }

    @Test("a mapped file whose name holds ',' and '\"' before combining marks keeps vm --csv's columns")
    func csvOfOddPath() throws {
        let path = Array("/tmp/a,\u{301}b\"\u{301}c".utf8)
        let regions = try SmapsParser.parse(smapsRecord("1000-2000", "r--p", inode: 12, path: path))
        let stat = ProcessStat(pid: 4242, name: "odd", ppid: 1)
        let snapshot = ProcessSnapshot(stat: stat, regions: regions, capturedAt: Timestamp(secondsSinceEpoch: 0))
        let app = AppSnapshot(definition: .process(4242), name: "odd", rootPID: 4242, capturedAt: snapshot.capturedAt, processes: [snapshot], skipped: [])
        for includeRegions in [false, true] {
            let records = readCSV(VMReport(app, includeRegions: includeRegions).renderCSV())
            try #require(records.count == 2)
            #expect(records[1].count == records[0].count)
            let pathColumn = try #require(records[0].firstIndex(of: "path"))
            #expect(records[1][pathColumn] == String(decoding: path, as: UTF8.self))
        }
    }
}

@Suite("rendering reports read back from JSON")
struct DecodedReportRenderingTests {
    // Found reviewing what fuzz-diff renders (each decoded report; Tests/Fuzz) and reproduced
    // there with Corpus/fuzz-diff/regression-region-count-overflow: the summary's "*All*" row
    // summed the type rows' region counts with a trapping `+`, and a report file may claim any
    // counts.
    @Test("region counts that overflow when summed print saturated instead of trapping")
    func regionCountOverflow() throws {
        var report = try JSONDecoderForTests.decode(VMReport.self, from: try Fixtures.readFile("\(Fixtures.directory)/reports/before.json"))
        report.types = Array(report.types.prefix(2))
        for i in report.types.indices { report.types[i].regionCount = Int.max }
        let text = report.renderText()
        #expect(text.contains("\(Int.max)"))
        report.types[0].regionCount = Int.min
        report.types[1].regionCount = -1
        #expect(report.renderText().contains("\(Int.min)"))
    }
}
