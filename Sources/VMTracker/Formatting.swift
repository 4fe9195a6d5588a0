/// Byte counts for people: binary units with two decimals ("8.71 MiB"), as VM Tracker showed them.
public enum ByteFormat {
    public static func human(_ bytes: UInt64) -> String {
        if bytes < 1024 { return "\(bytes) B" }
        let units = ["KiB", "MiB", "GiB", "TiB", "PiB", "EiB"]
        var value = Double(bytes) / 1024
        var unit = 0
        while value >= 1024, unit < units.count - 1 {
            value /= 1024
            unit += 1
        }
        return fixed(value, 2) + " " + units[unit]
    }

    /// "+1.50 MiB" / "-4.00 KiB" / "0 B".
    public static func signed(_ delta: Int64) -> String {
        if delta == 0 { return "0 B" }
        let magnitude = delta == Int64.min ? UInt64(Int64.max) + 1 : UInt64(abs(delta))
        return (delta > 0 ? "+" : "-") + human(magnitude)
    }

    /// A percentage with no decimals ("15%"), or "-" when the whole is zero.
    public static func percent(_ part: UInt64, of whole: UInt64) -> String {
        guard whole > 0 else { return "-" }
        return "\(Int((Double(part) / Double(whole) * 100).rounded()))%"
    }

    /// `value` with exactly `decimals` digits after the point, without Foundation.
    public static func fixed(_ value: Double, _ decimals: Int) -> String {
        guard value.isFinite else { return "\(value)" }
        var scale = 1.0
        for _ in 0..<decimals { scale *= 10 }
        let negative = value < 0
        let scaled = (abs(value) * scale).rounded()
        guard scaled < 9.0e18 else { return "\(value)" }
        let n = UInt64(scaled)
        let s = UInt64(scale)
        var text = "\(n / s)"
        if decimals > 0 {
            let frac = String(n % s)
            text += "." + String(repeating: "0", count: decimals - frac.count) + frac
        }
        return (negative && n > 0 ? "-" : "") + text
    }
}

/// A plain-text table with aligned columns.
public struct TextTable: Sendable {
    public enum Alignment: Sendable { case left, right }

    public struct Column: Sendable {
        public var title: String
        public var alignment: Alignment
        public init(_ title: String, _ alignment: Alignment = .right) {
            self.title = title
            self.alignment = alignment
        }
    }

    public var columns: [Column]
    public var rows: [[String]] = []

    public init(_ columns: [Column]) { self.columns = columns }

    public mutating func append(_ row: [String]) { rows.append(row) }

    public func render() -> String {
        // Widths in Unicode scalars: paths are escaped to printable text, and counting
        // grapheme clusters (String.count) costs far more for tables of tens of thousands of rows.
        let cellWidths = rows.map { $0.map(\.unicodeScalars.count) }
        var widths = columns.map { $0.title.unicodeScalars.count }
        for row in cellWidths {
            for (i, w) in row.enumerated() where i < widths.count { widths[i] = max(widths[i], w) }
        }
        var out = ""
        out.reserveCapacity((widths.reduce(0, +) + 2 * widths.count + 1) * (rows.count + 1))
        func append(_ cells: [String], _ cellWidths: [Int]) {
            for (i, column) in columns.enumerated() {
                let cell = i < cells.count ? cells[i] : ""
                let pad = widths[i] - (i < cellWidths.count ? cellWidths[i] : 0)
                if i > 0 { out += "  " }
                if column.alignment == .right {
                    if pad > 0 { out += String(repeating: " ", count: pad) }
                    out += cell
                } else {
                    out += cell
                    if pad > 0 && i < columns.count - 1 { out += String(repeating: " ", count: pad) }
                }
            }
            out += "\n"
        }
        append(columns.map(\.title), columns.map { $0.title.unicodeScalars.count })
        for (row, w) in zip(rows, cellWidths) { append(row, w) }
        return out
    }
}

/// RFC 4180 CSV.
public enum CSV {
    public static func field(_ text: String) -> String {
        if text.contains(where: { $0 == "," || $0 == "\"" || $0 == "\n" || $0 == "\r" }) {
            return "\"" + text.replacingOccurrences(of: "\"", with: "\"\"") + "\""
        }
        return text
    }

    public static func line(_ fields: [String]) -> String {
        fields.map(field).joined(separator: ",") + "\n"
    }
}

extension String {
    func replacingOccurrences(of target: String, with replacement: String) -> String {
        guard !target.isEmpty else { return self }
        var out = ""
        var rest = Substring(self)
        while let r = rest.firstRange(of: target) {
            out += rest[rest.startIndex..<r.lowerBound]
            out += replacement
            rest = rest[r.upperBound...]
        }
        return out + rest
    }
}
