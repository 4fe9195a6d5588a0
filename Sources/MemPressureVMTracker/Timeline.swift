/// Something that happened to a process of a watched app between two snapshots.

import MemPressureSystem
public struct Marker: Codable, Sendable, Hashable, CustomStringConvertible {
    public enum Kind: String, Codable, Sendable, Hashable {
        /// A new process joined the app (a child was started).
        case newChild
        /// A process left the app (exited).
        case exited
        /// Stopped by a signal (SIGSTOP, SIGTSTP) or a tracer.
        case stopped
        /// Continued after being stopped.
        case continued
        /// Frozen by the cgroup freezer.
        case frozen
        /// Thawed by the cgroup freezer.
        case thawed
        /// A note from outside (for example a lifecycle change reported by a supervisor).
        case note
    }

    public var kind: Kind
    public var pid: Int32
    public var name: String
    public var detail: String?

    public init(kind: Kind, pid: Int32, name: String, detail: String? = nil) {
        self.kind = kind
        self.pid = pid
        self.name = name
        self.detail = detail
    }

    public var description: String {
        let what: String
        switch kind {
        case .newChild: what = "started"
        case .exited: what = "exited"
        case .stopped: what = "stopped"
        case .continued: what = "continued"
        case .frozen: what = "frozen"
        case .thawed: what = "thawed"
        case .note: what = "note"
        }
        return "\(name)[\(pid)] \(what)\(detail.map { " (\($0))" } ?? "")"
    }
}

/// One row of a timeline.
public struct TimelineEntry: Codable, Sendable, Hashable {
    /// Seconds since the first snapshot.
    public var t: Double
    public var capturedAt: Timestamp
    public var processCount: Int
    public var totals: Totals
    /// What changed since the previous entry.
    public var markers: [Marker]
    public var notes: [String]
}

/// Snapshots of one app at an interval (`mempressure watch --json`).
public struct Timeline: Codable, Sendable, Hashable {
    public static let currentFormatVersion = 1
    public var formatVersion = Self.currentFormatVersion
    public var pid: Int32
    public var name: String
    public var app: String
    public var intervalSeconds: Double
    public var entries: [TimelineEntry]

    public init(pid: Int32, name: String, app: String, intervalSeconds: Double, entries: [TimelineEntry] = []) {
        self.pid = pid
        self.name = name
        self.app = app
        self.intervalSeconds = intervalSeconds
        self.entries = entries
    }
}

/// Takes successive snapshots of an app and reports what changed in between: processes that
/// started or exited, were stopped or continued, frozen or thawed.
///
/// State is seen only at snapshot instants: a process stopped and continued between two
/// snapshots leaves no marker.
public struct Watcher: Sendable {
    public let snapshotter: Snapshotter
    public let definition: AppDefinition
    public var options: SnapshotOptions
    /// Set once the app's root process is gone; later steps return nil.
    public private(set) var finished = false

    private struct Seen: Sendable {
        var name: String
        var stopped: Bool
        var frozen: Bool?
    }

    private var previous: [ProcessKey: Seen]?
    private var firstCapture: Timestamp?

    struct ProcessKey: Hashable, Sendable {
        var pid: Int32
        var startTicks: UInt64
    }

    public init(snapshotter: Snapshotter = Snapshotter(), definition: AppDefinition, options: SnapshotOptions = .detailed) {
        self.snapshotter = snapshotter
        self.definition = definition
        self.options = options
    }

    /// Takes the next snapshot. Returns nil once the app's root process has exited, or a cgroup
    /// or supervised app has no process left (the entry that reports the exit is returned by the
    /// step that saw it). A process that is not there at the first step is an error
    /// (`ProcError.noSuchProcess`, `LookupError.noSupervisedApp`...): there is nothing to watch.
    public mutating func step() throws -> (snapshot: AppSnapshot?, entry: TimelineEntry)? {
        guard !finished else { return nil }
        let snapshot: AppSnapshot
        do {
            snapshot = try snapshotter.app(definition, options: options)
        } catch let error as ProcError {
            switch error {
            case .noSuchProcess, .processExited, .zombie:
                guard previous != nil else { throw error }
                return (nil, finish(error.description))
            default:
                throw error
            }
        } catch let error as LookupError {
            // A cgroup or supervised app with no process left has ended too.
            switch error {
            case .emptyApp, .noSupervisedApp:
                guard previous != nil else { throw error }
                return (nil, finish(error.description))
            default:
                throw error
            }
        }
        if firstCapture == nil { firstCapture = snapshot.capturedAt }

        var current: [ProcessKey: Seen] = [:]
        for p in snapshot.processes {
            current[ProcessKey(pid: p.pid, startTicks: p.stat.startTicks)] = Seen(
                name: p.name, stopped: p.stat.isStopped, frozen: freezerState(p.pid))
        }
        var markers: [Marker] = []
        if let previous {
            for (key, now) in current {
                guard let before = previous[key] else {
                    let parent = snapshot.processes.first { $0.pid == key.pid }?.stat.ppid
                    markers.append(Marker(kind: .newChild, pid: key.pid, name: now.name, detail: parent.map { "parent \($0)" }))
                    continue
                }
                if now.stopped != before.stopped {
                    markers.append(Marker(kind: now.stopped ? .stopped : .continued, pid: key.pid, name: now.name))
                }
                if let f = now.frozen, let g = before.frozen, f != g {
                    markers.append(Marker(kind: f ? .frozen : .thawed, pid: key.pid, name: now.name))
                }
            }
            for (key, before) in previous where current[key] == nil {
                markers.append(Marker(kind: .exited, pid: key.pid, name: before.name))
            }
        }
        markers.sort { ($0.pid, $0.kind.rawValue) < ($1.pid, $1.kind.rawValue) }
        previous = current
        let entry = TimelineEntry(
            t: firstCapture!.seconds(to: snapshot.capturedAt), capturedAt: snapshot.capturedAt,
            processCount: snapshot.processes.count, totals: Totals(snapshot.totals), markers: markers,
            notes: snapshot.skipped.map(\.description))
        return (snapshot, entry)
    }

    /// The last entry, once the app has ended: every process seen before has exited.
    private mutating func finish(_ note: String) -> TimelineEntry {
        finished = true
        let now = Timestamp.now()
        var markers: [Marker] = []
        for (key, seen) in previous ?? [:] {
            markers.append(Marker(kind: .exited, pid: key.pid, name: seen.name))
        }
        markers.sort { $0.pid < $1.pid }
        return TimelineEntry(
            t: firstCapture.map { $0.seconds(to: now) } ?? 0, capturedAt: now, processCount: 0, totals: Totals(), markers: markers,
            notes: [note])
    }

    /// Whether the process's cgroup v1 freezer (or v2 `cgroup.freeze`) has it frozen; nil when
    /// the machine has no freezer or the process is not in a freezer cgroup.
    func freezerState(_ pid: Int32) -> Bool? {
        var buffer = ReadBuffer(capacity: 4096)
        do {
            let dir = try snapshotter.proc.open(pid)
            try dir.read("cgroup", into: &buffer)
        } catch {
            return nil
        }
        guard let path = buffer.withBytes({ Snapshotter.cgroupPath(fromProcCgroup: $0, controller: "freezer") }), path != "/" else {
            return nil
        }
        let root = snapshotter.cgroupRoot
        let v1State = "\(root)/freezer\(path)/freezer.state"
        do {
            if ProcFS.isFile(v1State) {
                try ProcFS.readFile(v1State, into: &buffer)
                return buffer.withBytes { b in !b.starts(with: "THAWED".utf8) }  // FREEZING or FROZEN
            }
            if ProcFS.isFile("\(root)\(path)/cgroup.freeze") {
                try ProcFS.readFile("\(root)\(path)/cgroup.events", into: &buffer)
                return buffer.withBytes { b in b.split(separator: 0x0a).contains { $0.elementsEqual("frozen 1".utf8) } }
            }
        } catch {
            return nil  // the cgroup went away between the two reads
        }
        return nil
    }
}
