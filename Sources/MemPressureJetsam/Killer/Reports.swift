import MemPressureLifecycle
import FoundationEssentials
import MemPressureLifecycleProtocol
import MemPressureSystem
import MemPressureMonitor
import MemPressureVMTracker

/// Why a file of episodes could not be read.
public enum EpisodeFileError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The file could not be opened or read (or is a FIFO, device, symbolic link, too large).
    case unreadable(FileOpenError)
    case notJSON(path: String)
    case notOurs(path: String)
    case unsupportedVersion(path: String, Int)
    case malformed(path: String, String)
    case empty(path: String)

    public var description: String {
        switch self {
        case .unreadable(let e): "\(e)"
        case .notJSON(let path): "\(path): not valid JSON"
        case .notOurs(let path): "\(path): not a jetsam episode report (no \"kind\": \"mempressure-jetsam-episode\"), nor a scenario log with episodes"
        case .unsupportedVersion(let path, let v): "\(path): episode format version \(v); this mempressure reads versions \(JetsamEpisode.readableFormatVersions.lowerBound) to \(JetsamEpisode.readableFormatVersions.upperBound)"
        case .malformed(let path, let reason): "\(path): a malformed episode: \(reason)"
        case .empty(let path): "\(path): holds no episodes"
        }
    }
}

extension JetsamEpisode {
    /// The episodes in a file: one episode report, an array of them, or a scenario log
    /// (`mempressure run --json`) with its `episodes`.
    public static func load(_ path: String) throws(EpisodeFileError) -> [JetsamEpisode] {
        try load(PathBytes(path.utf8))
    }

    /// The most read from a file of episodes (reports of thousands of kills stay well below).
    public static let maximumFileBytes = 256 << 20

    /// `load(_:)` for a path given as its exact bytes, opened safely (`RegularFile`).
    public static func load(_ pathBytes: PathBytes) throws(EpisodeFileError) -> [JetsamEpisode] {
        let path = pathBytes.description
        let bytes: [UInt8]
        do {
            bytes = try RegularFile.read(pathBytes, maxBytes: maximumFileBytes)
        } catch {
            throw .unreadable(error)
        }
        let data = Data(bytes)
        // What kind of document is it? Look before decoding the whole.
        struct Peek: Decodable {
            var kind: String?
            var formatVersion: Int?
            var episodes: [PeekEpisode]?
        }
        struct PeekEpisode: Decodable {
            var kind: String?
            var formatVersion: Int?
        }
        func check(_ kind: String?, _ version: Int?) throws(EpisodeFileError) {
            guard kind == "mempressure-jetsam-episode" else { throw .notOurs(path: path) }
            guard let version, readableFormatVersions.contains(version) else { throw .unsupportedVersion(path: path, version ?? 0) }
        }
        let episodes: [JetsamEpisode]
        do {
            let first = bytes.first { $0 != 0x20 && $0 != 0x0a && $0 != 0x09 && $0 != 0x0d }
            if first == UInt8(ascii: "[") {
                let list: [PeekEpisode]
                do {
                    list = try JSONInput.decode([PeekEpisode].self, from: data)
                } catch {
                    throw EpisodeFileError.notOurs(path: path)
                }
                for e in list { try check(e.kind, e.formatVersion) }
                episodes = try JSONInput.decode([JetsamEpisode].self, from: data)
            } else {
                let peek: Peek
                do {
                    peek = try JSONInput.decode(Peek.self, from: data)
                } catch DecodingError.dataCorrupted(let c) where c.codingPath.isEmpty {
                    throw EpisodeFileError.notJSON(path: path)
                } catch {
                    // JSON, but a field of the wrong kind ("formatVersion": "x").
                    throw EpisodeFileError.malformed(path: path, plainDescription(of: error))
                }
                if let inner = peek.episodes, peek.kind == nil {
                    for e in inner { try check(e.kind, e.formatVersion) }
                    struct Log: Decodable { var episodes: [JetsamEpisode] }
                    episodes = try JSONInput.decode(Log.self, from: data).episodes
                } else {
                    try check(peek.kind, peek.formatVersion)
                    episodes = [try JSONInput.decode(JetsamEpisode.self, from: data)]
                }
            }
        } catch let e as EpisodeFileError {
            throw e
        } catch {
            throw .malformed(path: path, plainDescription(of: error))
        }
        guard !episodes.isEmpty else { throw .empty(path: path) }
        return episodes
    }

    /// The report as text: memory, apps, the timeline, the victims with their explanations.
    public func renderText() -> String {
        var out = "Jetsam episode \(number), \(startedAt), policy \(policy.name.rawValue)\n"
        out += "Trigger: \(trigger.level) from \(trigger.source) at t=\(ByteFormat.fixed(trigger.t, 3)) s: \(trigger.detail)\n"
        out += "Memory: budget \(ByteFormat.human(memoryBefore.budgetBytes)), used \(ByteFormat.human(memoryBefore.usedBytes)), "
        out += "available \(ByteFormat.human(memoryBefore.availableBytes)); target \(ByteFormat.human(targetAvailableBytes)) available (\(memoryBefore.source))\n"
        if let after = memoryAfter {
            out += "After: available \(ByteFormat.human(after.availableBytes)), in \(ByteFormat.fixed((end ?? start) - start, 3)) s. "
        }
        out += "Outcome: \(outcome).\n"
        if let b = kernelOOMKillsBefore ?? kernelOOMKillsAfter {
            out += "Kernel cgroup OOM kills: \(b) before, \(kernelOOMKillsAfter.map(String.init) ?? "?") after.\n"
        }
        if let largestApp { out += "Largest app: \(largestApp)\n" }
        if let outside = memoryOutsideAppsBytes { out += "Memory of the device outside its apps: \(Format.bytes(outside)) (page cache and files of ended apps, kernel memory)\n" }

        var apps = TextTable([
            .init("App", .left), .init("PID"), .init("State", .left), .init("Footprint"), .init("Purgeable"), .init("Resident"),
            .init("Lifetime max"), .init("In state"), .init("", .left),
        ])
        for a in self.apps {
            apps.append([
                a.name, a.pid.map(String.init) ?? "-", a.state.rawValue, ByteFormat.human(a.footprintBytes), ByteFormat.human(a.purgeableBytes),
                ByteFormat.human(a.residentBytes), ByteFormat.human(a.lifetimeMaxFootprintBytes), ByteFormat.fixed(a.secondsInState, 1) + " s",
                a.isProtected ? "protected" : "",
            ])
        }
        out += "\nApps when it began:\n" + apps.render()

        var timeline = TextTable([.init("t (s)"), .init("What", .left), .init("App", .left), .init("Bytes"), .init("", .left)])
        for e in self.timeline {
            timeline.append([ByteFormat.fixed(e.t, 3), e.kind.rawValue, e.app ?? "", e.bytes.map { ByteFormat.human($0) } ?? "", e.detail])
        }
        out += "\nTimeline:\n" + timeline.render()

        if !victims.isEmpty {
            var t = TextTable([
                .init("Rank"), .init("App", .left), .init("PID"), .init("State", .left), .init("Reason", .left), .init("Footprint"),
                .init("Given back"), .init("Needed", .left), .init("Event to kill"), .init("Latest event to kill"),
            ])
            for v in victims {
                t.append([
                    "\(v.rank)", v.name, "\(v.pid)", v.state.rawValue, v.reason.rawValue, ByteFormat.human(v.footprintBytes), ByteFormat.human(v.reclaimedBytes),
                    v.needed ? "yes" : "no (in hindsight)", ByteFormat.fixed(v.secondsFromEvent * 1000, 2) + " ms",
                    v.secondsFromLatestEvent.map { ByteFormat.fixed($0 * 1000, 2) + " ms" } ?? "-",
                ])
            }
            out += "\nVictims:\n" + t.render()
            for v in victims { out += "  \(v.name): \(v.explanation)\n" }
        }
        if !freezes.isEmpty {
            var t = TextTable([.init("App", .left), .init("PID"), .init("Footprint"), .init("Written to swap"), .init("Resident before"), .init("after")])
            for f in freezes {
                t.append([f.name, "\(f.pid)", ByteFormat.human(f.footprintBytes), ByteFormat.human(f.bytes), ByteFormat.human(f.residentBefore), ByteFormat.human(f.residentAfter)])
            }
            out += "\nFreeze-dried:\n" + t.render()
        }
        return out
    }
}

/// `mempressure jetsam replay`: every recorded decision of the episodes, under each policy.
public struct ReplayReport: Sendable, Hashable, Codable {
    public var formatVersion = 1
    public var decisions: [Entry]

    public struct Entry: Sendable, Hashable, Codable {
        public var episode: Int
        /// Which decision of the episode (from 1).
        public var decision: Int
        /// Who the recorded killer took at this decision (nil: it took no one).
        public var recorded: String?
        public var replay: JetsamReplay
    }

    /// Every decision of `episodes` under the policies named, each episode with the tunables it
    /// was recorded with (its high-memory threshold, sample age, ...), so that a file holding
    /// episodes of differently tuned killers replays each as it was decided.
    public init(_ episodes: [JetsamEpisode], policyNames: [JetsamPolicyName] = JetsamPolicyName.allCases) throws(RankingError) {
        var out: [Entry] = []
        for e in episodes {
            let policies = JetsamPolicy.all(policyNames, tunedLike: e.policy)
            for (i, d) in e.decisions.enumerated() {
                out.append(Entry(episode: e.number, decision: i + 1, recorded: d.victim, replay: try JetsamReplay(d.input, policies: policies)))
            }
        }
        decisions = out
    }

    public func renderText() -> String {
        guard !decisions.isEmpty else { return "No decisions were recorded (the episodes ended with warnings or freeze-dry).\n" }
        var out = ""
        for d in decisions {
            out += "Episode \(d.episode), decision \(d.decision): \(ByteFormat.human(d.replay.neededBytes)) needed at \(d.replay.level)"
            out += d.recorded.map { "; the killer took \($0)" } ?? "" 
            out += "\n" + d.replay.table() + "\n"
        }
        return out
    }
}
