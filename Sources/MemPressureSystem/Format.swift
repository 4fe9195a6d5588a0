// Deterministic text for explanations: no Foundation, no locale, integer arithmetic where it
// can be, so that the same input gives the same bytes on every machine. Jetsam's explanations and
// episodes, and the supervisor's log words for what jetsam did, are written with it.

package enum Format {
    static let mebibyte: UInt64 = 1 << 20

    /// Bytes as MiB with one decimal, rounded half up: "300.0 MiB".
    package static func bytes(_ value: UInt64) -> String {
        var whole = value / mebibyte
        var tenths = ((value % mebibyte) * 10 + mebibyte / 2) / mebibyte
        if tenths == 10 {
            whole += 1
            tenths = 0
        }
        return "\(whole).\(tenths) MiB"
    }

    /// Two byte counts made distinguishable: MiB when they differ at one decimal, exact bytes
    /// otherwise ("104857700 B" vs "104857600 B").
    package static func bytesPair(_ a: UInt64, _ b: UInt64) -> (String, String) {
        let (x, y) = (bytes(a), bytes(b))
        return x != y || a == b ? (x, y) : ("\(a) B", "\(b) B")
    }

    /// A number with a fixed count of decimals, rounded half away from zero; non-finite and huge
    /// values as Swift prints them (shortest round-tripping form, the same on every machine).
    package static func fixed(_ value: Double, decimals: Int) -> String {
        guard value.isFinite, abs(value) < 1e15 else { return value.description }
        var scale = 1.0
        var unit: UInt64 = 1
        for _ in 0..<decimals {
            scale *= 10
            unit *= 10
        }
        let scaled = roundedHalfUp(abs(value) * scale)
        let sign = value < 0 && scaled != 0 ? "-" : ""
        let whole = scaled / unit
        guard decimals > 0 else { return "\(sign)\(whole)" }
        var fraction = String(scaled % unit)
        while fraction.count < decimals { fraction = "0" + fraction }
        return "\(sign)\(whole).\(fraction)"
    }

    /// Seconds: three decimals under 1 s, two under 10 s, one beyond ("0.250 s", "1.20 s",
    /// "600.0 s").
    package static func seconds(_ value: Double) -> String {
        let magnitude = abs(value)
        let decimals = magnitude < 1 ? 3 : (magnitude < 10 ? 2 : 1)
        return fixed(value, decimals: decimals) + " s"
    }

    /// Two durations made distinguishable: the exact value when the rounded texts agree.
    package static func secondsPair(_ a: Double, _ b: Double) -> (String, String) {
        let (x, y) = (seconds(a), seconds(b))
        return x != y || a == b ? (x, y) : ("\(a.description) s", "\(b.description) s")
    }

    /// A share as a percentage with one decimal: "12.5%".
    package static func percent(_ share: Double) -> String {
        fixed(share * 100, decimals: 1) + "%"
    }

    /// A probability with two decimals: "0.63".
    package static func probability(_ value: Double) -> String {
        fixed(value, decimals: 2)
    }

    /// A name quoted for explanations.
    package static func quoted(_ name: String) -> String { "\"\(name)\"" }

    /// "A", "A and B", "A, B and C", or the first `limit` and "and N more".
    package static func list(_ items: [String], limit: Int = 8) -> String {
        if items.count > limit {
            return items.prefix(limit).joined(separator: ", ") + " and \(items.count - limit) more"
        }
        switch items.count {
        case 0: return "none"
        case 1: return items[0]
        default: return items.dropLast().joined(separator: ", ") + " and " + items[items.count - 1]
        }
    }

    /// An ordinal: "1st", "2nd", "3rd", "11th".
    package static func ordinal(_ n: Int) -> String {
        let suffix: String
        switch (n % 10, n % 100) {
        case (_, 11...13): suffix = "th"
        case (1, _): suffix = "st"
        case (2, _): suffix = "nd"
        case (3, _): suffix = "rd"
        default: suffix = "th"
        }
        return "\(n)\(suffix)"
    }
}

/// A non-negative finite value below 2^64 rounded half up, with integer conversions only (no
/// libm: this module links nothing but the standard library).
package func roundedHalfUp(_ value: Double) -> UInt64 {
    guard value > 0 else { return 0 }
    guard value < 0x1p64 else { return .max }
    let whole = UInt64(value)  // truncates
    // Below 2^52 the fraction is exact; above it every Double is whole.
    return value - Double(whole) >= 0.5 ? whole + 1 : whole
}
