import BenchSupport
import CachePolicies
import LinuxSystem

extension PurgeableBench {
    // MARK: Simulator

    func measureSimulator() -> [SimulatorSpeed] {
        let trace = TraceGenerator.zipf(objects: objects, alpha: 1.0, requests: requests, seed: 7)
        var speeds: [String: [Double]] = [:]
        for _ in 0..<rounds {
            for r in Simulator.run(PolicyKind.allCases, capacity: objects / 10, trace: trace, unit: .objects) {
                speeds[r.policy, default: []].append(r.requestsPerSecond)
            }
        }
        return PolicyKind.allCases.map { k in
            let s = speeds[k.rawValue]!.sorted()
            return SimulatorSpeed(policy: k.rawValue, requestsPerSecond: s[s.count / 2])
        }
    }
}

struct SimulatorSpeed: Codable {
    var policy: String
    var requestsPerSecond: Double
}

extension Report {
    func simulatorMarkdown() -> String {
        var out = ""
        out += "\n## Simulator speed (Zipf 1.0, cache of 10% of the objects)\n\n| policy | requests per second |\n|---|---:|\n"
        for s in simulator { out += "| \(s.policy) | \(ByteFormat.fixed(s.requestsPerSecond / 1e6, 2)) M |\n" }
        return out
    }
}
