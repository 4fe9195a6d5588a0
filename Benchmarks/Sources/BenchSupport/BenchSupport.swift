// Shared by the benchmark harnesses: timing, reports, plots.

import Foundation
import Glibc
import LinuxSystem

/// Samples of named measurements, in the order they were first taken.
public struct Measurements: Sendable {
    private var samples: [String: [Double]] = [:]
    private var order: [String] = []

    public init() {}

    public mutating func record(_ name: String, _ seconds: Double) {
        if samples[name] == nil { order.append(name) }
        samples[name, default: []].append(seconds)
    }

    public mutating func time(_ name: String, _ body: () throws -> Void) rethrows {
        let start = monotonicSeconds()
        try body()
        record(name, monotonicSeconds() - start)
    }

    public mutating func time(_ name: String, _ body: () async throws -> Void) async rethrows {
        let start = monotonicSeconds()
        try await body()
        record(name, monotonicSeconds() - start)
    }

    public func median(_ name: String) -> Double? {
        guard let s = samples[name]?.sorted(), !s.isEmpty else { return nil }
        return s.count % 2 == 1 ? s[s.count / 2] : (s[s.count / 2 - 1] + s[s.count / 2]) / 2
    }

    public func summaries() -> [Measurement] {
        order.map { name in
            let s = samples[name]!
            return Measurement(name: name, samples: s, medianSeconds: median(name)!, minSeconds: s.min()!)
        }
    }
}

public struct Measurement: Codable, Sendable {
    public var name: String
    public var samples: [Double]
    public var medianSeconds: Double
    public var minSeconds: Double
}

/// A horizontal bar chart as SVG: one bar per row, labelled, with its value printed.
public func barChart(title: String, rows: [(label: String, value: Double, highlight: Bool)], unit: String, decimals: Int = 1) -> String {
    let width = 900.0, barLeft = 430.0, rowHeight = 22.0
    let maxValue = max(rows.map(\.value).max() ?? 1, 1e-12)
    var out = "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"\(Int(width))\" height=\"\(Int(Double(rows.count) * rowHeight + 40))\" font-family=\"sans-serif\" font-size=\"12\">\n"
    out += "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n"
    out += "<text x=\"10\" y=\"16\" font-weight=\"bold\">\(escapeXML(title))</text>\n"
    for (i, r) in rows.enumerated() {
        let y = 28 + Double(i) * rowHeight
        let w = max(1, (width - barLeft - 90) * r.value / maxValue)
        out += "<text x=\"\(Int(barLeft - 6))\" y=\"\(Int(y + 14))\" text-anchor=\"end\">\(escapeXML(r.label))</text>\n"
        out += "<rect x=\"\(Int(barLeft))\" y=\"\(Int(y + 3))\" width=\"\(Int(w))\" height=\"\(Int(rowHeight - 6))\" fill=\"\(r.highlight ? "#999" : "#4a7bd0")\"/>\n"
        out += "<text x=\"\(Int(barLeft + w + 4))\" y=\"\(Int(y + 14))\">\(ByteFormat.fixed(r.value, decimals))\(unit)</text>\n"
    }
    return out + "</svg>\n"
}

public func escapeXML(_ s: String) -> String {
    var out = ""
    for c in s {
        switch c {
        case "&": out += "&amp;"
        case "<": out += "&lt;"
        case ">": out += "&gt;"
        default: out.append(c)
        }
    }
    return out
}

public struct BenchError: Error, CustomStringConvertible {
    public var description: String
    public init(_ d: String) { description = d }
}

public func log(_ tool: String, _ text: String) {
    let line = "\(tool): \(text)\n"
    _ = line.withCString { write(2, $0, strlen($0)) }
}

public func writeText(_ text: String, to path: String) throws {
    try ProcFS.writeFile(path, Array(text.utf8))
}

public func kernelRelease() -> String {
    var u = utsname()
    uname(&u)
    return withUnsafeBytes(of: u.release) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
}

public var onlineCPUs: Int { Int(sysconf(Int32(_SC_NPROCESSORS_ONLN))) }

/// A benchmark's report: the JSON holds every sample; the Markdown and the SVG are rendered
/// from it (so `--render-only` can rebuild them without measuring).
public protocol RenderedReport: Codable {
    func markdown() -> String
    func svg() -> String
}

/// Writes `OUTPUT/NAME.json`, `.md` and `.svg`, and prints the Markdown.
public func writeReport(_ report: some RenderedReport, to output: String, named name: String, tool: String) throws {
    let encoder = JSONEncoder()
    encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
    try writeText(String(decoding: try encoder.encode(report), as: UTF8.self) + "\n", to: "\(output)/\(name).json")
    try writeText(report.markdown(), to: "\(output)/\(name).md")
    try writeText(report.svg(), to: "\(output)/\(name).svg")
    log(tool, "wrote \(output)/\(name).{md,json,svg}")
    print(report.markdown())
}

/// The report a previous run wrote to `OUTPUT/NAME.json`.
public func readReport<Report: RenderedReport>(_ type: Report.Type, from output: String, named name: String) throws -> Report {
    try JSONDecoder().decode(type, from: Data(try ProcFS.readBytes("\(output)/\(name).json")))
}
