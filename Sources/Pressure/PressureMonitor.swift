import CMemoryPressure
import Synchronization
import SystemPackage
import VMTracker

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// How tight memory is.
public enum PressureLevel: Int, Sendable, Hashable, Comparable, Codable, CustomStringConvertible {
    case normal = 0
    case warning = 1
    case critical = 2

    public static func < (a: PressureLevel, b: PressureLevel) -> Bool { a.rawValue < b.rawValue }

    public var description: String {
        switch self {
        case .normal: "normal"
        case .warning: "warning"
        case .critical: "critical"
        }
    }
}

/// A change of the merged level, with the source that caused it.
public struct PressureEvent: Sendable, Hashable, Codable {
    public var level: PressureLevel
    /// The source whose reading set the level ("psi", "cgroup-v1 pressure_level", ...).
    public var source: String
    /// What the source saw ("usage 61.2 MiB of 64.0 MiB (95.6%)").
    public var detail: String
    /// Monotonic seconds.
    public var time: Double
}

/// Where pressure can be read, whether this machine offers it, and why not.
public struct PressureSourceStatus: Sendable, Hashable, Codable, CustomStringConvertible {
    public var name: String
    public var available: Bool
    public var detail: String
    public var description: String { "\(name): \(available ? "in use" : "not available") (\(detail))" }
}

/// What the monitor watches and its thresholds.
public struct PressureConfiguration: Sendable {
    /// A memory cgroup to watch (a directory: v1 `.../memory/NAME` or v2 `.../NAME`); nil for
    /// the whole machine.
    public var cgroup: String?
    /// PSI triggers: stall microseconds within the window (1 s) that raise warning ("some": some
    /// task stalled) and critical ("full": all tasks stalled).
    public var psiWarningStallMicroseconds = 70_000
    public var psiCriticalStallMicroseconds = 100_000
    public var psiWindowMicroseconds = 1_000_000
    /// Usage of the cgroup's limit that raises warning and critical; the level drops again only
    /// below the threshold minus `hysteresis`.
    public var usageWarningFraction = 0.80
    public var usageCriticalFraction = 0.95
    /// MemAvailable below these shares of MemTotal raises warning and critical.
    public var availableWarningFraction = 0.15
    public var availableCriticalFraction = 0.05
    public var hysteresis = 0.05
    /// How long an event (a PSI trigger, a pressure_level notification) keeps its level.
    public var eventHoldSeconds = 2.0
    /// How often usage and MemAvailable are read.
    public var pollInterval = 0.25
    public var procRoot = "/proc"
    public var usePSI = true

    public init(cgroup: String? = nil) {
        self.cgroup = cgroup
    }
}

/// Watches every memory-pressure source the machine has — PSI triggers (/proc/pressure/memory,
/// and a cgroup v2's memory.pressure), cgroup v1 memory.pressure_level notifications through an
/// eventfd, a cgroup's usage against its limit, and /proc/meminfo MemAvailable as the fallback —
/// and merges them into one level with hysteresis: the highest level any source reports, where a
/// polled source drops only below its threshold minus `hysteresis` and an event holds its level
/// for `eventHoldSeconds`.
///
/// The sources are read by one thread blocked in poll(2) on their descriptors (with the poll
/// interval as timeout); `events()` delivers every change of level, in order, to each subscriber.
public final class PressureMonitor: Sendable {
    public let configuration: PressureConfiguration
    /// Which sources are in use and why others are not: what was found at start, updated when
    /// a source fails later (its file went away, poll reported an error).
    public var sources: [PressureSourceStatus] { state.withLock { $0.sources } }

    private struct State {
        var level: PressureLevel = .normal
        var subscribers: [UInt64: AsyncStream<PressureEvent>.Continuation] = [:]
        var nextSubscriber: UInt64 = 0
        var history: [PressureEvent] = []
        var sources: [PressureSourceStatus] = []
        var sourceSubscribers: [UInt64: AsyncStream<PressureSourceStatus>.Continuation] = [:]
    }

    private let state: Mutex<State>
    private let stopFD: CInt
    private let thread = Mutex<OSThread?>(nil)
    private let watchers: [Watcher]

    /// Starts watching. Sources that cannot be opened are reported in `sources`, not thrown.
    public init(configuration: PressureConfiguration = PressureConfiguration()) {
        self.configuration = configuration
        var statuses: [PressureSourceStatus] = []
        var watchers: [Watcher] = []
        Self.openSources(configuration, &watchers, &statuses)
        state = Mutex(State(sources: statuses))
        self.watchers = watchers
        stopFD = mp_eventfd(0)
        let t = OSThread { [self] in run() }
        thread.withLock { $0 = t }
    }

    /// Stops the thread and finishes every subscriber's stream.
    public func stop() {
        var one: UInt64 = 1
        _ = write(stopFD, &one, 8)
        thread.withLock { t -> OSThread? in defer { t = nil }; return t }?.join()
        let (subscribers, sourceSubscribers) = state.withLock { s in
            defer {
                s.subscribers.removeAll()
                s.sourceSubscribers.removeAll()
            }
            return (Array(s.subscribers.values), Array(s.sourceSubscribers.values))
        }
        for c in subscribers { c.finish() }
        for c in sourceSubscribers { c.finish() }
    }

    deinit {
        close(stopFD)
        for w in watchers { w.close() }
    }

    /// The merged level now.
    public var level: PressureLevel { state.withLock { $0.level } }

    /// Every change of level recorded so far.
    public var history: [PressureEvent] { state.withLock { $0.history } }

    /// Every change of level from now on, in order.
    public func events() -> AsyncStream<PressureEvent> { makeSubscription(\.subscribers) }

    /// A new unbounded stream registered in `subscribers` until its consumer goes away.
    private func makeSubscription<Element>(_ subscribers: WritableKeyPath<State, [UInt64: AsyncStream<Element>.Continuation]>) -> AsyncStream<Element> {
        // A key path literal to a stored property: immutable, safe to use from any thread.
        nonisolated(unsafe) let subscribers = subscribers
        let (stream, continuation) = AsyncStream<Element>.makeStream(bufferingPolicy: .unbounded)
        let id = state.withLock { s -> UInt64 in
            let id = s.nextSubscriber
            s.nextSubscriber += 1
            s[keyPath: subscribers][id] = continuation
            return id
        }
        continuation.onTermination = { [weak self] _ in
            _ = self?.state.withLock { $0[keyPath: subscribers].removeValue(forKey: id) }
        }
        return stream
    }

    /// Calls `handler` with every change of level, in order, from a task of its own: how
    /// in-process subscribers (caches) hear about memory pressure. For example, a process with
    /// purgeable caches: `monitor.subscribe { if $0.level >= .warning { MemoryEvents.shared.post(.memoryWarning) } }`.
    /// Returns the task; cancel it to unsubscribe.
    @discardableResult
    public func subscribe(_ handler: @escaping @Sendable (PressureEvent) -> Void) -> Task<Void, Never> {
        let stream = events()
        return Task {
            for await event in stream { handler(event) }
        }
    }

    /// Waits until the merged level is at least `level`; returns the event that got it there
    /// (or a synthesized one if it already was), or nil after `timeout` seconds.
    public func waitForLevel(atLeast level: PressureLevel, timeout: Double) async -> PressureEvent? {
        let stream = events()  // subscribe first: no change between the check and the wait is lost
        if let last = history.last, last.level >= level, self.level >= level { return last }
        return await withTaskGroup(of: PressureEvent?.self) { group in
            group.addTask {
                for await event in stream where event.level >= level { return event }
                return nil
            }
            group.addTask {
                do {
                    try await Task.sleep(for: .seconds(timeout))
                } catch {
                    return nil  // cancelled because the event came
                }
                return nil
            }
            let first = await group.next() ?? nil
            group.cancelAll()
            return first
        }
    }

    // MARK: The thread

    private func run() {
        var fds = watchers.compactMap { w -> pollfd? in
            guard let fd = w.fd else { return nil }
            return pollfd(fd: fd, events: Int16(w.pollEvents), revents: 0)
        }
        fds.append(pollfd(fd: stopFD, events: Int16(POLLIN), revents: 0))
        let timeoutMilliseconds = Int32(max(10, configuration.pollInterval * 1000))
        var lastEmittedSource = ""
        var reportedFailures: Set<String> = []
        while true {
            let n = fds.withUnsafeMutableBufferPointer { poll($0.baseAddress, nfds_t($0.count), timeoutMilliseconds) }
            if n < 0 && errno != EINTR { break }
            if fds.last!.revents != 0 { break }
            let now = monotonicSeconds()
            var fdIndex = 0
            for w in watchers {
                if w.fd != nil {
                    let revents = Int32(fds[fdIndex].revents)
                    if revents & Int32(POLLERR | POLLHUP | POLLNVAL) != 0 || (revents != 0 && !w.isStillValid) {
                        // The source is gone (its cgroup was removed, the trigger was dropped):
                        // stop polling it rather than spin or read its last gasp as pressure.
                        fds[fdIndex].fd = -1
                        let why = revents & Int32(POLLERR | POLLHUP | POLLNVAL) != 0 ? "poll reported \(Self.describe(revents))" : "its file went away"
                        sourceFailed(w.name, why)
                    } else if revents != 0 {
                        w.eventFired(at: now)
                    }
                    fdIndex += 1
                }
                w.refresh(at: now, configuration)
                if let failure = w.failure, !reportedFailures.contains(w.name) {
                    reportedFailures.insert(w.name)
                    sourceFailed(w.name, failure)
                }
            }
            // The merged level: the highest any source holds now.
            var best: (PressureLevel, String, String) = (.normal, lastEmittedSource, "")
            for w in watchers {
                let (level, detail) = w.current(at: now, configuration)
                if level > best.0 { best = (level, w.name, detail) }
            }
            let changed = state.withLock { s -> (PressureEvent, [AsyncStream<PressureEvent>.Continuation])? in
                guard best.0 != s.level else { return nil }
                s.level = best.0
                let event = PressureEvent(level: best.0, source: best.1, detail: best.2.isEmpty ? "no source above its threshold" : best.2, time: now)
                s.history.append(event)
                return (event, Array(s.subscribers.values))
            }
            if let (event, subscribers) = changed {
                lastEmittedSource = event.source
                for c in subscribers { c.yield(event) }
            }
        }
    }

    private func sourceFailed(_ name: String, _ why: String) {
        let changed = state.withLock { s -> (PressureSourceStatus, [AsyncStream<PressureSourceStatus>.Continuation])? in
            guard let i = s.sources.firstIndex(where: { $0.name == name }) else { return nil }
            if s.sources[i].available {
                s.sources[i].detail = "stopped: \(why) (was: \(s.sources[i].detail))"
                s.sources[i].available = false
            }
            return (s.sources[i], Array(s.sourceSubscribers.values))
        }
        if let (status, subscribers) = changed {
            for c in subscribers { c.yield(status) }
        }
    }

    /// Every change of a source's status from now on (a source stopping because its file went
    /// away or poll reported an error on it).
    public func sourceChanges() -> AsyncStream<PressureSourceStatus> { makeSubscription(\.sourceSubscribers) }

    static func describe(_ revents: Int32) -> String {
        var names: [String] = []
        if revents & Int32(POLLERR) != 0 { names.append("POLLERR") }
        if revents & Int32(POLLHUP) != 0 { names.append("POLLHUP") }
        if revents & Int32(POLLNVAL) != 0 { names.append("POLLNVAL") }
        return names.joined(separator: "|")
    }

    // MARK: Sources

    private static func openSources(_ c: PressureConfiguration, _ watchers: inout [Watcher], _ statuses: inout [PressureSourceStatus]) {
        let cgroup = c.cgroup
        let isV2 = cgroup.map { ProcFS.isFile("\($0)/cgroup.controllers") } ?? false

        // PSI: the machine's, or the cgroup v2's own.
        let psiFile = cgroup != nil && isV2 ? "\(cgroup!)/memory.pressure" : "\(c.procRoot)/pressure/memory"
        let psiName = cgroup != nil && isV2 ? "psi (cgroup v2 memory.pressure)" : "psi (/proc/pressure/memory)"
        if !c.usePSI {
            statuses.append(.init(name: psiName, available: false, detail: "disabled by configuration"))
        } else if !ProcFS.isFile(psiFile) {
            statuses.append(.init(name: psiName, available: false, detail: "\(psiFile) does not exist (kernel without CONFIG_PSI, or psi=0)"))
        } else {
            var opened: [String] = []
            var failure: String?
            for (level, kind, stall) in [(PressureLevel.warning, "some", c.psiWarningStallMicroseconds), (.critical, "full", c.psiCriticalStallMicroseconds)] {
                do {
                    watchers.append(try EventWatcher.psi(file: psiFile, kind: kind, stallMicroseconds: stall, windowMicroseconds: c.psiWindowMicroseconds, level: level, name: psiName))
                    opened.append("\(kind) \(stall) µs per \(c.psiWindowMicroseconds) µs -> \(level)")
                } catch {
                    failure = "\(error)"
                }
            }
            statuses.append(.init(
                name: psiName, available: !opened.isEmpty,
                detail: opened.isEmpty ? "triggers refused: \(failure ?? "?")" : "triggers: " + opened.joined(separator: "; ")))
        }

        if let cgroup {
            if isV2 {
                statuses.append(.init(name: "cgroup v1 memory.pressure_level", available: false, detail: "\(cgroup) is a cgroup v2 group"))
            } else if !ProcFS.isFile("\(cgroup)/memory.pressure_level") {
                statuses.append(.init(name: "cgroup v1 memory.pressure_level", available: false, detail: "\(cgroup) has no memory.pressure_level"))
            } else {
                var opened: [String] = []
                var failure: String?
                for (level, kernelLevel) in [(PressureLevel.warning, "medium"), (.critical, "critical")] {
                    do {
                        watchers.append(try EventWatcher.pressureLevel(cgroup: cgroup, kernelLevel: kernelLevel, level: level))
                        opened.append("\(kernelLevel) -> \(level)")
                    } catch {
                        failure = "\(error)"
                    }
                }
                statuses.append(.init(
                    name: "cgroup v1 memory.pressure_level", available: !opened.isEmpty,
                    detail: opened.isEmpty ? "registration refused: \(failure ?? "?")" : "eventfd for " + opened.joined(separator: ", ")))
            }
            let usage = isV2 ? "\(cgroup)/memory.current" : "\(cgroup)/memory.usage_in_bytes"
            let limit = isV2 ? "\(cgroup)/memory.max" : "\(cgroup)/memory.limit_in_bytes"
            if ProcFS.isFile(usage) && ProcFS.isFile(limit) {
                watchers.append(UsageWatcher(usageFile: usage, limitFile: limit))
                statuses.append(.init(
                    name: "cgroup usage against its limit", available: true,
                    detail: "\(usage) / \(limit): warning at \(Int(c.usageWarningFraction * 100))%, critical at \(Int(c.usageCriticalFraction * 100))%"))
            } else {
                statuses.append(.init(name: "cgroup usage against its limit", available: false, detail: "\(usage) or \(limit) missing"))
            }
        } else {
            statuses.append(.init(name: "cgroup", available: false, detail: "no cgroup given: watching the whole machine"))
        }

        let meminfo = "\(c.procRoot)/meminfo"
        if ProcFS.isFile(meminfo) {
            watchers.append(AvailableWatcher(file: meminfo))
            statuses.append(.init(
                name: "MemAvailable (/proc/meminfo)", available: true,
                detail: "warning below \(Int(c.availableWarningFraction * 100))% of MemTotal, critical below \(Int(c.availableCriticalFraction * 100))%"))
        } else {
            statuses.append(.init(name: "MemAvailable (/proc/meminfo)", available: false, detail: "\(meminfo) missing"))
        }
    }

    /// The level a cgroup usage fraction gives, from `current`, with the configuration's
    /// thresholds and hysteresis (what the usage source computes at every poll).
    public static func level(usageFraction: Double, current: PressureLevel, configuration c: PressureConfiguration) -> PressureLevel {
        thresholdLevel(usageFraction, current: current, warning: c.usageWarningFraction, critical: c.usageCriticalFraction, hysteresis: c.hysteresis, rising: true)
    }

    /// Which sources a monitor with `configuration` would use, without starting one.
    public static func detectSources(_ configuration: PressureConfiguration = PressureConfiguration()) -> [PressureSourceStatus] {
        var watchers: [Watcher] = []
        var statuses: [PressureSourceStatus] = []
        openSources(configuration, &watchers, &statuses)
        for w in watchers { w.close() }
        return statuses
    }
}

// MARK: - Watchers (used only by the monitor's thread after init)

class Watcher: @unchecked Sendable {
    let name: String
    init(name: String) { self.name = name }
    var fd: CInt? { nil }
    var pollEvents: Int32 { 0 }
    /// False once the source's file is gone (checked when its descriptor fires).
    var isStillValid: Bool { true }
    /// Why a polled source stopped reading (set by `refresh`), nil while it works.
    var failure: String?
    func eventFired(at time: Double) {}
    func refresh(at time: Double, _ c: PressureConfiguration) {}
    func current(at time: Double, _ c: PressureConfiguration) -> (PressureLevel, String) { (.normal, "") }
    func close() {}
}

/// An edge-triggered source: a PSI trigger (POLLPRI) or a pressure_level eventfd (POLLIN).
final class EventWatcher: Watcher, @unchecked Sendable {
    private let descriptor: CInt
    private let extra: CInt?
    private let events: Int32
    private let level: PressureLevel
    private let what: String
    private let watchedFile: String?
    private var lastEvent: Double?

    private init(name: String, fd: CInt, extra: CInt?, events: Int32, level: PressureLevel, what: String, watchedFile: String? = nil) {
        self.watchedFile = watchedFile
        descriptor = fd
        self.extra = extra
        self.events = events
        self.level = level
        self.what = what
        super.init(name: name)
    }

    override var fd: CInt? { descriptor }
    override var pollEvents: Int32 { events }

    /// A v1 cgroup's eventfd is signalled once more when the cgroup is removed: that is not
    /// pressure.
    override var isStillValid: Bool { watchedFile.map { access($0, F_OK) == 0 } ?? true }

    override func eventFired(at time: Double) {
        if events == Int32(POLLIN) {
            var counter: UInt64 = 0
            _ = read(descriptor, &counter, 8)  // drain the eventfd
        }
        lastEvent = time
    }

    override func current(at time: Double, _ c: PressureConfiguration) -> (PressureLevel, String) {
        guard let last = lastEvent, time - last <= c.eventHoldSeconds else { return (.normal, "") }
        return (level, what)
    }

    override func close() {
        Glibc.close(descriptor)
        if let extra { Glibc.close(extra) }
    }

    static func psi(file: String, kind: String, stallMicroseconds: Int, windowMicroseconds: Int, level: PressureLevel, name: String) throws -> EventWatcher {
        let fd = open(file, O_RDWR | O_NONBLOCK | O_CLOEXEC)
        guard fd >= 0 else { throw SystemCallError("open", errno: Errno(rawValue: errno), subject: file) }
        let trigger = "\(kind) \(stallMicroseconds) \(windowMicroseconds)"
        let rc = trigger.withCString { write(fd, $0, strlen($0) + 1) }
        guard rc >= 0 else {
            let e = errno
            Glibc.close(fd)
            throw SystemCallError("write", errno: Errno(rawValue: e), subject: "\(file) trigger '\(trigger)'")
        }
        return EventWatcher(
            name: name, fd: fd, extra: nil, events: Int32(POLLPRI), level: level,
            what: "\(kind) memory stall above \(stallMicroseconds) µs in \(windowMicroseconds / 1000) ms")
    }

    static func pressureLevel(cgroup: String, kernelLevel: String, level: PressureLevel) throws -> EventWatcher {
        let efd = mp_eventfd(0)
        guard efd >= 0 else { throw SystemCallError("eventfd", errno: Errno(rawValue: errno)) }
        let levelFile = "\(cgroup)/memory.pressure_level"
        let pfd = open(levelFile, O_RDONLY | O_CLOEXEC)
        guard pfd >= 0 else {
            let e = errno
            Glibc.close(efd)
            throw SystemCallError("open", errno: Errno(rawValue: e), subject: levelFile)
        }
        let control = "\(cgroup)/cgroup.event_control"
        let cfd = open(control, O_WRONLY | O_CLOEXEC)
        guard cfd >= 0 else {
            let e = errno
            Glibc.close(efd)
            Glibc.close(pfd)
            throw SystemCallError("open", errno: Errno(rawValue: e), subject: control)
        }
        defer { Glibc.close(cfd) }
        let line = "\(efd) \(pfd) \(kernelLevel)"
        let rc = line.withCString { write(cfd, $0, strlen($0)) }
        guard rc >= 0 else {
            let e = errno
            Glibc.close(efd)
            Glibc.close(pfd)
            throw SystemCallError("write", errno: Errno(rawValue: e), subject: "\(control) '\(line)'")
        }
        return EventWatcher(
            name: "cgroup v1 memory.pressure_level", fd: efd, extra: pfd, events: Int32(POLLIN), level: level,
            what: "the kernel reported \(kernelLevel) pressure in \(cgroup)", watchedFile: levelFile)
    }
}

/// A polled source: a cgroup's usage against its limit.
final class UsageWatcher: Watcher, @unchecked Sendable {
    private let usageFile: String
    private let limitFile: String
    private var level: PressureLevel = .normal
    private var detail = ""
    private var buffer = ReadBuffer(capacity: 4096)

    init(usageFile: String, limitFile: String) {
        self.usageFile = usageFile
        self.limitFile = limitFile
        super.init(name: "cgroup usage against its limit")
    }

    private func number(_ path: String) -> UInt64? {
        do {
            try ProcFS.readFile(path, into: &buffer)
        } catch {
            return nil  // the cgroup went away: no reading, the level decays
        }
        return buffer.withBytes { b in
            let text = b.prefix { $0 != 0x0a && $0 != 0x20 }
            if text.elementsEqual("max".utf8) { return UInt64.max }
            var v: UInt64 = 0
            for c in text {
                guard c >= 0x30, c <= 0x39, v < UInt64.max / 10 else { return nil }
                v = v * 10 + UInt64(c - 0x30)
            }
            return text.isEmpty ? nil : v
        }
    }

    override func refresh(at time: Double, _ c: PressureConfiguration) {
        guard let usage = number(usageFile), let limit = number(limitFile), limit > 0, limit < UInt64(1) << 62 else {
            level = .normal
            if access(usageFile, F_OK) != 0 { failure = "\(usageFile) went away (the cgroup was removed)" }
            return
        }
        let fraction = Double(usage) / Double(limit)
        level = thresholdLevel(fraction, current: level, warning: c.usageWarningFraction, critical: c.usageCriticalFraction, hysteresis: c.hysteresis, rising: true)
        detail = "usage \(ByteFormat.human(usage)) of \(ByteFormat.human(limit)) (\(ByteFormat.fixed(fraction * 100, 1))%)"
    }

    override func current(at time: Double, _ c: PressureConfiguration) -> (PressureLevel, String) { (level, detail) }
}

/// The fallback: /proc/meminfo MemAvailable against MemTotal.
final class AvailableWatcher: Watcher, @unchecked Sendable {
    private let file: String
    private var level: PressureLevel = .normal
    private var detail = ""
    private var buffer = ReadBuffer(capacity: 8192)

    init(file: String) {
        self.file = file
        super.init(name: "MemAvailable (/proc/meminfo)")
    }

    override func refresh(at time: Double, _ c: PressureConfiguration) {
        do {
            try ProcFS.readFile(file, into: &buffer)
        } catch {
            return
        }
        let (total, available) = buffer.withBytes { MemInfo.totalAndAvailable($0) }
        guard let total, let available, total > 0 else { return }
        let fraction = Double(available) / Double(total)
        level = thresholdLevel(fraction, current: level, warning: c.availableWarningFraction, critical: c.availableCriticalFraction, hysteresis: c.hysteresis, rising: false)
        detail = "MemAvailable \(ByteFormat.human(available)) of \(ByteFormat.human(total)) (\(ByteFormat.fixed(fraction * 100, 1))%)"
    }

    override func current(at time: Double, _ c: PressureConfiguration) -> (PressureLevel, String) { (level, detail) }
}

/// A level from a fraction with hysteresis. `rising`: higher fractions are worse (usage);
/// otherwise lower ones are (available memory).
func thresholdLevel(_ x: Double, current: PressureLevel, warning: Double, critical: Double, hysteresis: Double, rising: Bool) -> PressureLevel {
    func above(_ threshold: Double, leaving: Bool) -> Bool {
        let t = leaving ? (rising ? threshold - hysteresis : threshold + hysteresis) : threshold
        return rising ? x >= t : x <= t
    }
    if above(critical, leaving: current == .critical) { return .critical }
    if above(warning, leaving: current >= .warning) { return .warning }
    return .normal
}

/// /proc/meminfo's "Key:   value kB" lines.
public enum MemInfo {
    public static func totalAndAvailable(_ bytes: UnsafeRawBufferPointer) -> (total: UInt64?, available: UInt64?) {
        var total: UInt64?
        var available: UInt64?
        for line in bytes.split(separator: 0x0a) {
            guard let colon = line.firstIndex(of: 0x3a) else { continue }
            let key = line[line.startIndex..<colon]
            let isTotal = key.elementsEqual("MemTotal".utf8)
            let isAvailable = key.elementsEqual("MemAvailable".utf8)
            guard isTotal || isAvailable else { continue }
            var v: UInt64 = 0
            var digits = 0
            // "   16318124 kB": spaces, at most 15 digits (so that kB * 1024 cannot overflow).
            var valid = true
            for c in line[line.index(after: colon)...].drop(while: { $0 == 0x20 || $0 == 0x09 }) {
                guard c >= 0x30 && c <= 0x39 else { break }
                guard digits < 15 else {
                    valid = false
                    break
                }
                v = v * 10 + UInt64(c - 0x30)
                digits += 1
            }
            guard valid, digits > 0 else { continue }
            if isTotal { total = v * 1024 } else { available = v * 1024 }
        }
        return (total, available)
    }
}
