/// An HTTP header that lists values with qualities (Accept, Accept-Encoding: `a;q=0.5, b`), read
/// leniently: a value without `q` has quality 1, a `q` that is not a number has 0 (a client that
/// garbles it is not taken at its word), and qualities are clamped to 0...1.
package enum QualityList {
    /// Each value of `header`, lower-cased and without its parameters, with its quality.
    package static func parse(_ header: String) -> [(value: String, quality: Double)] {
        var items: [(value: String, quality: Double)] = []
        for range in header.split(separator: ",") {
            let parts = range.split(separator: ";")
            guard let value = parts.first?.trimmingSpaces.lowercased(), !value.isEmpty else { continue }
            var quality = 1.0
            for parameter in parts.dropFirst() {
                let pair = parameter.split(separator: "=", maxSplits: 1)
                guard pair.count == 2, pair[0].trimmingSpaces.lowercased() == "q" else { continue }
                quality = Double(pair[1].trimmingSpaces).map { $0.isFinite ? min(max($0, 0), 1) : 0 } ?? 0
            }
            items.append((value, quality))
        }
        return items
    }
}

extension Substring {
    fileprivate var trimmingSpaces: Substring {
        var s = self
        while let c = s.first, c == " " || c == "\t" { s.removeFirst() }
        while let c = s.last, c == " " || c == "\t" { s.removeLast() }
        return s
    }
}
