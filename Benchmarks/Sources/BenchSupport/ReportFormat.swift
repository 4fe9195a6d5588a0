// How the reports write their figures: milliseconds to a sensible precision, MiB, p50 / p90 /
// p99, ratios (tiny ones in scientific notation).

import Foundation
import MemPressureSystem

/// Milliseconds: 3 decimals under 1, 2 under 100, else 1.
public func ms(_ x: Double) -> String { ByteFormat.fixed(x, x < 1 ? 3 : x < 100 ? 2 : 1) }

/// Bytes in MiB, one decimal.
public func mib(_ b: UInt64) -> String { ByteFormat.fixed(Double(b) / 1048576, 1) + " MiB" }

/// "p50 / p90 / p99" in milliseconds.
public func triple(_ p: Percentiles) -> String { "\(ms(p.p50)) / \(ms(p.p90)) / \(ms(p.p99))" }

/// A ratio: 3 decimals under 1, 2 above, scientific under 0.01.
public func ratioText(_ x: Double) -> String { x < 0.01 ? String(format: "%.2e", x) : ByteFormat.fixed(x, x < 1 ? 3 : 2) }

/// The median of `xs` (0 for none).
public func median(_ xs: [Double]) -> Double { Percentiles(xs).p50 }

extension Plot {
    /// One condition's figures for `latencies`: p50 and p99 of each measure, in its order.
    public struct Timed: Sendable {
        public var name: String
        /// Which of the two series it is in: a resume (first) or a relaunch (second).
        public var isResume: Bool
        public var figures: [Percentiles]

        public init(name: String, isResume: Bool, figures: [Percentiles]) {
            self.name = name
            self.isResume = isResume
            self.figures = figures
        }
    }

    /// The p50 of each measure and condition as a dot, with a bar from p50 to p99, the
    /// measures one block each; log scale. The series are resumes and relaunches (`series`
    /// names them).
    public static func latencies(name: String, title: String, measures: [String], conditions: [Timed], series: (String, String)) -> Plot {
        var rows: [[PlotValue]] = []
        var row = 0
        for (m, measure) in measures.enumerated().reversed() {
            for c in conditions.reversed() {
                let p = c.figures[m]
                rows.append([.int(row), .text("\(c.name): \(measure)"), .number(p.p50), .number(p.p99), .int(c.isResume ? 0 : 1),
                             .text("\(ms(p.p50)) (p99 \(ms(p.p99))) ms")])
                row += 1
            }
            row += 1  // a gap between measures
        }
        let low = rows.compactMap { if case .number(let x) = $0[2] { return x } else { return nil } }.min() ?? 0.01
        let high = rows.compactMap { if case .number(let x) = $0[3] { return x } else { return nil } }.max() ?? 1
        var p = Plot(name: name, title: title, width: 960, height: 120 + 22 * row)
        p.data("t", columns: ["row", "label", "p50", "p99", "relaunch", "text"], rows: rows)
        p.command("set logscale x 10")
        p.command("set xrange [\(max(low / 3, 1e-3)):\(high * 25)]")
        p.command("set yrange [-1:\(row)]")
        p.command("set xlabel 'milliseconds (log scale)'")
        p.command("set ytics scale 0 nomirror")
        p.command("set xtics nomirror")
        p.command("set grid noytics")
        p.command("set lmargin 32")
        p.command("set key inside top right horizontal")
        p.command("plot $t using ($5 == 0 ? $3 : NaN):1:3:4 with xerrorbars pt 7 ps 0.9 lc rgb '#4a7bd0' title '\(series.0)', \\\n     $t using ($5 > 0 ? $3 : NaN):1:3:4 with xerrorbars pt 7 ps 0.9 lc rgb '#d04a4a' title '\(series.1)', \\\n     $t using 4:1:6:ytic(2) with labels left offset 0.8,0 font 'sans,9' notitle")
        return p
    }
}
