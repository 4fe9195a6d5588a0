// Plots are drawn by gnuplot (Debian's gnuplot-nox), not written by hand: each report's plot is a
// gnuplot script kept beside the report (Reports/NAME.gp) holding its data inline, so that
// `cd Reports && gnuplot NAME.gp` redraws Reports/NAME.svg from nothing but the script.

import Foundation
import Glibc
import MemPressureSystem

/// One plot: a gnuplot script with its data inline (datablocks), rendered to `NAME.svg`.
public struct Plot: Sendable {
    public var name: String
    public var title: String
    public var width: Int
    public var height: Int
    private var blocks: [String] = []
    private var commands: [String] = []

    public init(name: String, title: String, width: Int = 900, height: Int = 500) {
        self.name = name
        self.title = title
        self.width = width
        self.height = height
    }

    /// A datablock `$NAME`: one row per line, columns separated by tabs, strings quoted.
    /// The first row is a comment naming the columns.
    public mutating func data(_ block: String, columns: [String], rows: [[PlotValue]]) {
        var text = "$\(block) << EOD\n# " + columns.joined(separator: "\t") + "\n"
        for row in rows { text += row.map(\.gnuplot).joined(separator: "\t") + "\n" }
        blocks.append(text + "EOD\n")
    }

    /// A string as a gnuplot string literal (for titles and labels in commands).
    public static func quoted(_ s: String) -> String { PlotValue.text(s).gnuplot }

    /// A gnuplot command (`set ...`, `plot ...`), written as is.
    public mutating func command(_ line: String) { commands.append(line) }

    /// The whole script: terminal and output first, then the data, then the commands.
    public var script: String {
        var s = "# \(title)\n# Drawn by the benchmark harness; redraw with: gnuplot \(name).gp\n"
        s += "set terminal svg size \(width),\(height) dynamic noenhanced font 'sans,11' background rgb 'white'\n"
        s += "set output '\(name).svg'\n"
        s += "set title \(PlotValue.text(title).gnuplot)\n"
        s += "set grid back lc rgb '#dddddd'\nset key noautotitle\nset border lc rgb '#555555'\n"
        s += blocks.joined()
        s += commands.joined(separator: "\n") + "\n"
        return s
    }

    /// A horizontal bar chart, one bar per row, its value printed beside it; highlighted rows
    /// (the baseline, say) in grey.
    public static func bars(name: String, title: String, rows: [(label: String, value: Double, highlight: Bool)], unit: String, decimals: Int = 1) -> Plot {
        var p = Plot(name: name, title: title, width: 900, height: max(160, 40 + 24 * rows.count + 40))
        p.data("bars", columns: ["row", "label", "value", "highlight", "text"], rows: rows.enumerated().map { i, r in
            [.int(rows.count - 1 - i), .text(r.label), .number(r.value), .int(r.highlight ? 1 : 0), .text(ByteFormat.fixed(r.value, decimals) + unit)]
        })
        let top = max(rows.map(\.value).max() ?? 1, 1e-12) * 1.18
        p.command("set style fill solid 0.9 noborder")
        p.command("set xrange [0:\(top)]")
        p.command("set yrange [-0.6:\(Double(rows.count) - 0.4)]")
        p.command("set ytics scale 0 nomirror")
        p.command("set xtics nomirror")
        p.command("set grid noytics")
        p.command("set lmargin \(max(10, (rows.map(\.label.count).max() ?? 0) + 3))")
        p.command("plot $bars using (0):1:(0):3:($1-0.35):($1+0.35):($4 > 0 ? 0x999999 : 0x4a7bd0):ytic(2) with boxxyerror lc rgb variable, \\\n     $bars using 3:1:5 with labels left offset 0.5,0 font 'sans,10'")
        return p
    }
}

/// A value in a datablock.
public enum PlotValue: Sendable {
    case number(Double)
    case int(Int)
    case text(String)
    case missing

    var gnuplot: String {
        switch self {
        case .number(let x): return x.isFinite ? "\(x)" : "NaN"
        case .int(let n): return "\(n)"
        case .missing: return "NaN"
        case .text(let s):
            // Double-quoted. gnuplot's data reader has no escape for a quote inside a string: a
            // double quote becomes a single one; control bytes become spaces.
            var out = "\""
            for u in s.unicodeScalars {
                switch u {
                case "\"": out += "'"
                default: out.unicodeScalars.append(u.value < 0x20 || u.value == 0x7f ? " " : u)
                }
            }
            return out + "\""
        }
    }
}

public enum PlotError: Error, CustomStringConvertible {
    case gnuplotMissing
    case gnuplotFailed(script: String, status: Int32, message: String)

    public var description: String {
        switch self {
        case .gnuplotMissing:
            return "gnuplot not found: plots are drawn by gnuplot (apt-get install -y gnuplot-nox, which `make bench-deps` does)"
        case let .gnuplotFailed(script, status, message):
            return "gnuplot failed on \(script) (status \(status)): \(message)"
        }
    }
}

/// Writes `OUTPUT/NAME.gp` and `OUTPUT/NAME.svg`, which gnuplot draws from it. gnuplot writes
/// its SVG as any program does (through whatever link is at the name), so it runs in a private
/// directory of its own; the SVG is then put into OUTPUT safely (`CheckedDirectory`).
public func render(_ plot: Plot, in output: String) throws {
    let directory = try CheckedDirectory.open(output)
    let script = "\(output)/\(plot.name).gp"
    try directory.replaceFile("\(plot.name).gp", with: Array(plot.script.utf8), mode: 0o644)
    let candidates: [String] = ["/usr/bin/gnuplot", "/usr/local/bin/gnuplot"]
    guard let gnuplot = candidates.first(where: { access($0, X_OK) == 0 }) else {
        throw PlotError.gnuplotMissing
    }
    let scratch = try CheckedDirectory.makeUnique(prefix: "mempressure-plot-")
    defer { scratch.removeTree() }
    try scratch.replaceFile("\(plot.name).gp", with: Array(plot.script.utf8))
    let process = Process()
    process.executableURL = URL(fileURLWithPath: gnuplot)
    process.arguments = ["\(plot.name).gp"]
    process.currentDirectoryURL = URL(fileURLWithPath: scratch.path)
    let errors = Pipe()
    process.standardError = errors
    process.standardOutput = FileHandle.nullDevice
    try process.run()
    let message = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
    process.waitUntilExit()
    // gnuplot prints warnings to stderr and still exits 0; a warning is a bug in the script.
    guard process.terminationStatus == 0, message.isEmpty else {
        throw PlotError.gnuplotFailed(script: script, status: process.terminationStatus, message: message.trimmingCharacters(in: .whitespacesAndNewlines))
    }
    try scratch.copyFile("\(plot.name).svg", maxBytes: 64 << 20, to: directory, as: "\(plot.name).svg", mode: 0o644)
}
