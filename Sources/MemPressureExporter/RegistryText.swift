import Prometheus

/// The families of a swift-prometheus registry (what a process emits through swift-metrics:
/// purgeable caches, the supervisor) in either exposition format, in a stable order.
///
/// swift-prometheus 2.4.1 renders the Prometheus text format 0.0.4 only, families in the order
/// of a Swift dictionary (seeded per process) and series in the order of another. Its text is
/// read back here, family by family, and written again: families sorted by name, the series of
/// counters and gauges sorted (a histogram's lines keep their order: buckets ascend), and for
/// OpenMetrics a counter family typed under its name without `_total` and its samples given
/// `_total`, HELP re-escaped (OpenMetrics also escapes `"`).
enum RegistryText {
    private struct Family {
        var name: String
        var type: MetricType = .unknown
        var help: [UInt8]?
        var samples: [ArraySlice<UInt8>] = []
    }

    /// Appends the families of `registry` to `writer`, leaving out any whose name (without
    /// `_total`) the writer already wrote: a response never holds one family twice.
    static func append(_ registry: PrometheusCollectorRegistry, to writer: inout ExpositionWriter) {
        var text: [UInt8] = []
        registry.emit(into: &text)
        var families: [String: Family] = [:]
        for line in text.split(separator: UInt8(ascii: "\n")) {
            if line.starts(with: "# HELP ".utf8) || line.starts(with: "# TYPE ".utf8) {
                let rest = line.dropFirst(7)
                let nameEnd = rest.firstIndex(of: UInt8(ascii: " ")) ?? rest.endIndex
                let name = String(decoding: rest[..<nameEnd], as: UTF8.self)
                let value = rest[nameEnd...].dropFirst()
                if line.starts(with: "# HELP ".utf8) {
                    families[name, default: Family(name: name)].help = unescapeHelp(value)
                } else {
                    families[name, default: Family(name: name)].type = MetricType(rawValue: String(decoding: value, as: UTF8.self)) ?? .unknown
                }
                continue
            }
            if line.first == UInt8(ascii: "#") { continue }
            // A sample belongs to the family whose name starts it (histograms add suffixes).
            let end = line.firstIndex { $0 == UInt8(ascii: "{") || $0 == UInt8(ascii: " ") } ?? line.endIndex
            var name = String(decoding: line[..<end], as: UTF8.self)
            if families[name] == nil {
                for suffix in ["_bucket", "_count", "_sum"] where name.hasSuffix(suffix) {
                    let base = String(name.dropLast(suffix.count))
                    if families[base] != nil {
                        name = base
                        break
                    }
                }
            }
            families[name, default: Family(name: name)].samples.append(line)
        }
        for key in families.keys.sorted() {
            guard var family = families[key] else { continue }
            let base = family.type == .counter && family.name.hasSuffix("_total") ? String(family.name.dropLast(6)) : family.name
            if writer.familyNames.contains(base) || writer.familyNames.contains(family.name) { continue }
            if family.type == .counter || family.type == .gauge { family.samples.sort { $0.lexicographicallyPrecedes($1) } }
            var out: [UInt8] = []
            let typedName = writer.format == .openMetrics ? base : family.name
            // swift-metrics has no help text: promtool wants one for every family.
            let help = family.help ?? Array("\(family.name), emitted through swift-metrics.".utf8)
            out.append(contentsOf: "# HELP \(typedName) ".utf8)
            Exposition.appendEscapedHelp(help, format: writer.format, to: &out)
            out.append(UInt8(ascii: "\n"))
            out.append(contentsOf: "# TYPE \(typedName) \(family.type.rawValue)\n".utf8)
            for sample in family.samples {
                if writer.format == .openMetrics, family.type == .counter, !family.name.hasSuffix("_total") {
                    // The sample is named as the family: OpenMetrics wants `_total` after it.
                    out.append(contentsOf: family.name.utf8)
                    out.append(contentsOf: "_total".utf8)
                    out.append(contentsOf: sample.dropFirst(family.name.utf8.count))
                } else {
                    out.append(contentsOf: sample)
                }
                out.append(UInt8(ascii: "\n"))
            }
            writer.append(raw: out)
        }
    }

    /// HELP text as swift-prometheus wrote it (`\\` for a backslash), unescaped.
    private static func unescapeHelp(_ text: ArraySlice<UInt8>) -> [UInt8] {
        var out: [UInt8] = []
        var escaped = false
        for byte in text {
            if escaped {
                out.append(byte == UInt8(ascii: "n") ? UInt8(ascii: "\n") : byte)
                escaped = false
            } else if byte == UInt8(ascii: "\\") {
                escaped = true
            } else {
                out.append(byte)
            }
        }
        return out
    }
}
