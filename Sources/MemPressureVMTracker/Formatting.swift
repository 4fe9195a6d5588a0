import MemPressureSystem

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

    /// Cells and titles are kept printable (`printableText`): a name from a report file or a
    /// process cannot put control characters on the terminal.
    public init(_ columns: [Column]) {
        self.columns = columns.map { Column(printableText($0.title), $0.alignment) }
    }

    public mutating func append(_ row: [String]) { rows.append(row.map { printableText($0) }) }

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

    /// Where each column ends in a rendered line, in scalars (two spaces between columns).
    public func columnEnds() -> [Int] {
        var widths = columns.map { $0.title.unicodeScalars.count }
        for row in rows {
            for (i, cell) in row.enumerated() where i < widths.count { widths[i] = max(widths[i], cell.unicodeScalars.count) }
        }
        var ends: [Int] = []
        var end = -2
        for w in widths {
            end += 2 + w
            ends.append(end)
        }
        return ends
    }

    /// Moves the column at `from`, with its cells, to `to`.
    public mutating func moveColumn(from: Int, to: Int) {
        guard from != to, columns.indices.contains(from), columns.indices.contains(to) else { return }
        columns.insert(columns.remove(at: from), at: to)
        for i in rows.indices where rows[i].indices.contains(from) && rows[i].count == columns.count {
            rows[i].insert(rows[i].remove(at: from), at: to)
        }
    }
}

/// RFC 4180 CSV.
public enum CSV {
    /// The field, quoted when it holds a comma, a quote or a line break. The test is on bytes:
    /// a comma or quote followed by a combining mark is one `Character` that equals neither (so
    /// is "\r\n"), and a path may hold any of them; the same for doubling the quotes.
    public static func field(_ text: String) -> String {
        guard text.utf8.contains(where: { $0 == 0x2c || $0 == 0x22 || $0 == 0x0a || $0 == 0x0d }) else { return text }
        var out = "\""
        for scalar in text.unicodeScalars {
            if scalar == "\"" { out.unicodeScalars.append(scalar) }
            out.unicodeScalars.append(scalar)
        }
        out += "\""
        return out
    }

    public static func line(_ fields: [String]) -> String {
        fields.map(field).joined(separator: ",") + "\n"
    }
}

extension ByteFormat {
    /// A byte count the kernel may not report: `human(bytes)`, or "n/a" when it is unknown
    /// (never "0 B", which would claim a measurement).
    public static func human(orUnknown bytes: UInt64?) -> String {
        bytes.map { human($0) } ?? "n/a"
    }
}
