// What the fuzz targets share: the input as a buffer, a fixed process to hang parsed data on,
// and every output format of a report, exercised the way the CLI produces them.

import FoundationEssentials
import MemPressureSystem
import MemPressureVMTracker

/// The fuzz input as a raw buffer (libFuzzer may pass a non-nil pointer with size 0).
public func input(_ data: UnsafePointer<UInt8>, _ size: Int) -> UnsafeRawBufferPointer {
    UnsafeRawBufferPointer(start: size > 0 ? data : nil, count: size)
}

/// A process to attach parsed regions, totals or status to (no /proc is read).
public let fixedStat = ProcessStat(pid: 4242, name: "fuzzed", state: UInt8(ascii: "S"), ppid: 1)
public let fixedTime = Timestamp(secondsSinceEpoch: 1_700_000_000, nanoseconds: 500_000)

/// The JSON the CLI prints (`encodeJSON` in mempressure: pretty, sorted keys, slashes as they are).
public func encodeJSON(_ value: some Encodable) -> String {
    let encoder = JSONEncoder()
    encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
    do {
        return String(decoding: try encoder.encode(value), as: UTF8.self)
    } catch {
        // The report types hold strings and integers only: encoding them cannot fail.
        fatalError("encoding \(type(of: value)) failed: \(error)")
    }
}

/// Builds the VM report of one process from `snapshot` and renders it as `mempressure vm`
/// does in each format, with and without regions, under every sort order; the JSON must
/// decode back to the same report (what `mempressure diff` reads).
public func renderEveryWay(_ snapshot: ProcessSnapshot) {
    let app = AppSnapshot(
        definition: .process(snapshot.pid), name: snapshot.name, rootPID: snapshot.pid, capturedAt: snapshot.capturedAt,
        processes: [snapshot], skipped: [])
    for sort in [SortKey.dirty, .address] {
        for includeRegions in [false, true] {
            let report = VMReport(app, includeRegions: includeRegions, sort: sort)
            renderEveryWay(report)
        }
    }
}

/// Text (short and full paths), CSV and JSON of a report; the JSON decoded back must be equal.
public func renderEveryWay(_ report: VMReport) {
    blackHole(report.renderText())
    blackHole(report.renderText(fullPaths: true))
    checkCSV(report.renderCSV())
    let json = encodeJSON(report)
    let decoded: VMReport
    do {
        decoded = try JSONDecoder().decode(VMReport.self, from: Data(json.utf8))
    } catch {
        fatalError("a report's own JSON does not decode: \(error)")
    }
    // The JSON carries the time to the microsecond (Timestamp.description).
    var expected = report
    expected.capturedAt.nanoseconds -= expected.capturedAt.nanoseconds % 1000
    guard decoded == expected else { fatalError("a report's JSON decodes to a different report:\n\(json)") }
}

/// Checks CSV output as a reader sees it (RFC 4180, byte by byte): quotes only around whole
/// fields, doubled inside them, no bare CR, and every record with as many fields as the header.
public func checkCSV(_ text: String) {
    let b = Array(text.utf8)
    var counts: [Int] = []
    var fields = 1
    var inQuotes = false
    var atFieldStart = true
    var i = 0
    func fail(_ why: String) -> Never { fatalError("CSV output is malformed (\(why)):\n\(text)") }
    while i < b.count {
        let c = b[i]
        if inQuotes {
            if c == 0x22 {
                if i + 1 < b.count && b[i + 1] == 0x22 {
                    i += 2
                    continue
                }
                inQuotes = false
                i += 1
                guard i == b.count || b[i] == 0x2c || b[i] == 0x0a else { fail("text after a closing quote") }
                continue
            }
            i += 1
            continue
        }
        switch c {
        case 0x22:
            guard atFieldStart else { fail("a quote inside an unquoted field") }
            inQuotes = true
            atFieldStart = false
        case 0x2c:
            fields += 1
            atFieldStart = true
        case 0x0a:
            counts.append(fields)
            fields = 1
            atFieldStart = true
        case 0x0d:
            fail("a bare carriage return")
        default:
            atFieldStart = false
        }
        i += 1
    }
    guard !inQuotes else { fail("an unterminated quoted field") }
    guard b.isEmpty || b.last == 0x0a else { fail("no final newline") }
    guard let header = counts.first, counts.allSatisfy({ $0 == header }) else { fail("records of different lengths: \(counts)") }
}

/// Keeps a result alive so the optimizer cannot drop the work that made it.
@inline(never)
public func blackHole<T>(_ value: T) {
    withExtendedLifetime(value) {}
}
