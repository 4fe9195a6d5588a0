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
        // part/whole*100 is at most 2^64*100 (finite) and never negative; a part far above its
        // whole (an smaps Rss above Size) prints as such instead of trapping in a conversion.
        return fixed(Double(part) / Double(whole) * 100, 0) + "%"
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
