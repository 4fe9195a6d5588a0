import MemPressureLifecycle
import MemPressureSystem

extension JetsamEpisode {
    /// How an episode ended. Written (format 2) as an object: `{"result": "recovered", "kills": 2,
    /// "text": "recovered after 2 kill(s)"}` (`text`, its words, is for people: never read back);
    /// format 1 wrote only the words, which `init(words:)` reads.
    public enum Outcome: Sendable, Hashable, CustomStringConvertible {
        /// Enough was free again after this step: nobody was killed.
        case sufficed(Step)
        /// Enough was free again after these kills.
        case recovered(kills: Int)
        /// The ranking left no one to kill (the foreground app spared, everyone else protected or
        /// gone) and memory was still short by these bytes; the decision's explanation says why.
        case nothingLeftToKill(shortByBytes: UInt64, explanation: String)
        /// The ranker refused to decide (its error, in its words).
        case noDecision(reason: String)
        /// `count` kills in a row failed (the victim exited, changed state or was already dying
        /// since the reading): the last one's app and error.
        case failedKills(count: Int, app: String, error: String)
        /// Memory could not be measured after this step: the episode stopped (no decision on
        /// partial data).
        case notMeasured(after: Step)
        /// The supervisor began to shut down.
        case shuttingDown
        /// It stopped with memory still short (the kill limit of one episode).
        case stillShort
        /// An app over its own limit was killed.
        case overLimit(PerAppLimit)
        /// A format-1 outcome whose words this version does not know, as written.
        case unrecognized(String)

        /// A step of an episode.
        public enum Step: String, Sendable, Hashable, Codable, CaseIterable {
            case warnings
            case freezeDry = "freeze-dry"
            case kill
            case failedKill
        }

        public var description: String {
            switch self {
            case .sufficed(let step): "\(step.rawValue) sufficed: nobody killed"
            case .recovered(let kills): "recovered after \(kills) kill(s)"
            case .nothingLeftToKill(let bytes, let explanation): "nothing left to kill: still short by \(Format.bytes(bytes)) (\(explanation))"
            case .noDecision(let reason): "no decision: \(reason)"
            case .failedKills(let count, let app, let error): "stopped: \(count) kills in a row failed (the last: \(app): \(error))"
            case .notMeasured(let step): "memory could not be measured after \(Self.words(step)): stopped (no decision on partial data)"
            case .shuttingDown: "stopped: the supervisor is shutting down"
            case .stillShort: "stopped: still short"
            case .overLimit(let limit): "killed over its \(limit.rawValue) limit"
            case .unrecognized(let words): words
            }
        }

        /// A step as the words of an outcome say it.
        private static func words(_ step: Step) -> String {
            switch step {
            case .warnings: "warnings"
            case .freezeDry: "freeze-dry"
            case .kill: "a kill"
            case .failedKill: "a failed kill"
            }
        }

        /// A format-1 outcome, from its words; words it does not know are kept as `.unrecognized`.
        /// The bytes memory was short by are read to the tenth of a MiB they were written with.
        public init(words: String) {
            self = Self.parse(words) ?? .unrecognized(words)
        }

        private static func parse(_ w: String) -> Outcome? {
            for step in Step.allCases {
                if w == "\(step.rawValue) sufficed: nobody killed" { return .sufficed(step) }
                if w == "memory could not be measured after \(words(step)): stopped (no decision on partial data)" { return .notMeasured(after: step) }
            }
            switch w {
            case "stopped: the supervisor is shutting down": return .shuttingDown
            case "stopped: still short": return .stillShort
            default: break
            }
            for limit in PerAppLimit.allCases where w == "killed over its \(limit.rawValue) limit" { return .overLimit(limit) }
            if let n = w.droppingPrefix("recovered after")?.droppingSuffix(" kill(s)").flatMap({ Int($0.dropFirst()) }) { return .recovered(kills: n) }
            if let reason = w.droppingPrefix("no decision: ") { return .noDecision(reason: reason) }
            if let rest = w.droppingPrefix("nothing left to kill: still short by "), let open = rest.firstRange(of: " MiB (") {
                let number = rest[..<open.lowerBound]
                guard let mib = Double(number), mib >= 0, mib < 1e12, let explanation = String(rest[open.upperBound...]).droppingSuffix(")") else { return nil }
                return .nothingLeftToKill(shortByBytes: UInt64((mib * 1_048_576).rounded()), explanation: explanation)
            }
            if let rest = w.droppingPrefix("stopped: "), let split = rest.firstRange(of: " kills in a row failed (the last: "), let count = Int(rest[..<split.lowerBound]),
                let last = String(rest[split.upperBound...]).droppingSuffix(")"), let colon = last.firstRange(of: ": ") {
                return .failedKills(count: count, app: String(last[..<colon.lowerBound]), error: String(last[colon.upperBound...]))
            }
            return nil
        }
    }
}

extension JetsamEpisode.Outcome: Codable {
    private enum Key: String, CodingKey { case result, step, kills, shortByBytes, explanation, reason, count, app, error, after, limit, words, text }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: Key.self)
        switch self {
        case .sufficed(let step):
            try c.encode("sufficed", forKey: .result)
            try c.encode(step, forKey: .step)
        case .recovered(let kills):
            try c.encode("recovered", forKey: .result)
            try c.encode(kills, forKey: .kills)
        case .nothingLeftToKill(let bytes, let explanation):
            try c.encode("nothingLeftToKill", forKey: .result)
            try c.encode(bytes, forKey: .shortByBytes)
            try c.encode(explanation, forKey: .explanation)
        case .noDecision(let reason):
            try c.encode("noDecision", forKey: .result)
            try c.encode(reason, forKey: .reason)
        case .failedKills(let count, let app, let error):
            try c.encode("failedKills", forKey: .result)
            try c.encode(count, forKey: .count)
            try c.encode(app, forKey: .app)
            try c.encode(error, forKey: .error)
        case .notMeasured(let step):
            try c.encode("notMeasured", forKey: .result)
            try c.encode(step, forKey: .after)
        case .shuttingDown: try c.encode("shuttingDown", forKey: .result)
        case .stillShort: try c.encode("stillShort", forKey: .result)
        case .overLimit(let limit):
            try c.encode("overLimit", forKey: .result)
            try c.encode(limit, forKey: .limit)
        case .unrecognized(let words):
            try c.encode("unrecognized", forKey: .result)
            try c.encode(words, forKey: .words)
        }
        try c.encode(description, forKey: .text)
    }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: Key.self)
        let result = try c.decode(String.self, forKey: .result)
        switch result {
        case "sufficed": self = .sufficed(try c.decode(Step.self, forKey: .step))
        case "recovered": self = .recovered(kills: try c.decode(Int.self, forKey: .kills))
        case "nothingLeftToKill":
            self = .nothingLeftToKill(shortByBytes: try c.decode(UInt64.self, forKey: .shortByBytes), explanation: try c.decode(String.self, forKey: .explanation))
        case "noDecision": self = .noDecision(reason: try c.decode(String.self, forKey: .reason))
        case "failedKills":
            self = .failedKills(count: try c.decode(Int.self, forKey: .count), app: try c.decode(String.self, forKey: .app), error: try c.decode(String.self, forKey: .error))
        case "notMeasured": self = .notMeasured(after: try c.decode(Step.self, forKey: .after))
        case "shuttingDown": self = .shuttingDown
        case "stillShort": self = .stillShort
        case "overLimit": self = .overLimit(try c.decode(PerAppLimit.self, forKey: .limit))
        case "unrecognized": self = .unrecognized(try c.decode(String.self, forKey: .words))
        default: throw DecodingError.dataCorruptedError(forKey: .result, in: c, debugDescription: "unknown episode result '\(result)'")
        }
    }
}
