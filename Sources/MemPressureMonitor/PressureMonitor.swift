import CMemoryPressure
import Glibc
import MemPressureSystem
import MemPressureValues
import Synchronization

/// Watches every memory-pressure source the machine has — PSI triggers (/proc/pressure/memory,
/// and a cgroup v2's memory.pressure), cgroup v1 memory.pressure_level notifications through an
/// eventfd, a cgroup's working set against its limit (woken on v1 by usage thresholds, reclaim
/// and OOM notifications), and /proc/meminfo MemAvailable as the fallback — and merges them into
/// one level with hysteresis: the highest level any source reports, where a judged reading drops
/// only below its threshold minus `hysteresis` and an event holds its level for
/// `eventHoldSeconds`. Every reading is judged by the one judgement (`PressureConfiguration.judge`).
///
/// The sources are read by one thread blocked in poll(2) on their descriptors, so that a kernel
/// event is answered as it comes; the poll interval is its timeout, for what the kernel offers no
/// event for. `events()` delivers every change of level, in order, to each subscriber; `wakes()`
/// every wake of the thread, changed or not, with what woke it.
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
        var wakeSubscribers: [UInt64: AsyncStream<PressureWake>.Continuation] = [:]
        /// A source's note now, and its detail before the first.
        var notes: [String: (base: String, note: String)] = [:]
    }

    private let state: Mutex<State>
    private let stopFD: CInt
    private let thread = Mutex<OSThread?>(nil)
    private let pressureSources: [any PressureSource]

    /// How many changes of level `history` keeps: the latest 1,000. A monitor lives as long as
    /// the service it serves, so its history must not grow without bound.
    public static let historyLimit = 1000

    /// Starts watching. Sources that cannot be opened are reported in `sources`, not thrown.
    public init(configuration: PressureConfiguration = PressureConfiguration()) {
        self.configuration = configuration
        let (opened, statuses) = PressureSources.open(configuration)
        state = Mutex(State(sources: statuses))
        pressureSources = opened
        stopFD = mp_eventfd(0)
        do {
            let t = try OSThread { [self] in run() }
            thread.withLock { $0 = t }
        } catch {
            // This initializer does not throw (every caller starts a monitor without `try`):
            // without a thread nothing is watched, and every source says so, with the reason,
            // in `sources` and `sourceChanges()`.
            for status in statuses where status.available {
                sourceFailed(status.name, "cannot start the monitor's thread: \(error)")
            }
        }
    }

    /// Stops the thread and finishes every subscriber's stream.
    public func stop() {
        var one: UInt64 = 1
        _ = write(stopFD, &one, 8)
        thread.withLock { t -> OSThread? in defer { t = nil }; return t }?.join()
        let (subscribers, sourceSubscribers, wakeSubscribers) = state.withLock { s in
            defer {
                s.subscribers.removeAll()
                s.sourceSubscribers.removeAll()
                s.wakeSubscribers.removeAll()
            }
            return (Array(s.subscribers.values), Array(s.sourceSubscribers.values), Array(s.wakeSubscribers.values))
        }
        for c in subscribers { c.finish() }
        for c in sourceSubscribers { c.finish() }
        for c in wakeSubscribers { c.finish() }
    }

    deinit {
        close(stopFD)
        for source in pressureSources { source.close() }
    }

    /// The merged level now.
    public var level: PressureLevel { state.withLock { $0.level } }

    /// The changes of level so far, oldest first: the latest `historyLimit` of them.
    public var history: [PressureEvent] { state.withLock { $0.history } }

    /// Every change of level from now on, in order.
    public func events() -> AsyncStream<PressureEvent> { makeSubscription(\.subscribers) }

    /// Every wake of the monitor's thread from now on — a kernel event, or the poll interval
    /// running out — with the merged level after it: for a subscriber that must look at memory
    /// whenever the kernel says something, not only when the level changes (jetsam). A consumer
    /// more than `wakeBufferLimit` wakes behind loses the oldest: only the latest matter.
    public func wakes() -> AsyncStream<PressureWake> { makeSubscription(\.wakeSubscribers, limit: Self.wakeBufferLimit) }

    /// How many undelivered wakes a `wakes()` stream holds.
    public static let wakeBufferLimit = 64

    /// A new stream registered in `subscribers` until its consumer goes away. It holds at most
    /// `historyLimit` undelivered changes (a consumer that far behind loses the oldest): a
    /// subscriber that stops reading cannot make a long-running service grow without bound.
    private func makeSubscription<Element>(
        _ subscribers: WritableKeyPath<State, [UInt64: AsyncStream<Element>.Continuation]>, limit: Int = PressureMonitor.historyLimit
    ) -> AsyncStream<Element> {
        // A key path literal to a stored property: immutable, safe to use from any thread.
        nonisolated(unsafe) let subscribers = subscribers
        let (stream, continuation) = AsyncStream<Element>.makeStream(bufferingPolicy: .bufferingNewest(limit))
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
                    try await Task.sleep(for: Seconds.duration(timeout))
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
        let timeoutMilliseconds = max(10, Seconds.milliseconds(configuration.pollInterval))
        var lastEmittedSource = ""
        // A source that stopped (its cgroup removed, its trigger dropped) is not polled any more,
        // rather than spin or read its last gasp as pressure; it is still updated (and says so).
        var stopped = [Bool](repeating: false, count: pressureSources.count)
        while true {
            // Each source's descriptors (asked again every time: a source may re-arm), then the
            // stop eventfd.
            var fds: [pollfd] = []
            var ranges: [Range<Int>] = []
            for (i, source) in pressureSources.enumerated() {
                let first = fds.count
                if !stopped[i] {
                    for d in source.pollDescriptors { fds.append(pollfd(fd: d.fd, events: d.events, revents: 0)) }
                }
                ranges.append(first..<fds.count)
            }
            fds.append(pollfd(fd: stopFD, events: Int16(POLLIN), revents: 0))
            let n = fds.withUnsafeMutableBufferPointer { p in retryOnInterrupt { poll(p.baseAddress, nfds_t(p.count), timeoutMilliseconds) } }
            if n < 0 { break }
            if fds.last!.revents != 0 { break }
            let now = monotonicSeconds()
            var kernelEvents: [String] = []
            for (i, source) in pressureSources.enumerated() {
                let update = source.update(revents: fds[ranges[i]].map(\.revents), at: now, configuration)
                kernelEvents += update.events.map { "\(source.name): \($0)" }
                if let note = update.note { sourceNote(source.name, note) }
                if let why = update.stopped {
                    stopped[i] = true
                    sourceFailed(source.name, why)
                }
            }
            // Woken on a descriptor (a kernel event, or a set of thresholds armed again after
            // one), or by the poll interval running out.
            let wakeup: PressureWakeup = n > 0 ? .event : .poll
            // The merged level: the highest any source holds now.
            var best: (PressureLevel, String, String) = (.normal, lastEmittedSource, "")
            for source in pressureSources {
                let (level, detail) = source.level(at: now, configuration)
                if level > best.0 { best = (level, source.name, detail) }
            }
            let (changed, wakeSubscribers) = state.withLock { s -> ((PressureEvent, [AsyncStream<PressureEvent>.Continuation])?, [AsyncStream<PressureWake>.Continuation]) in
                let wakeSubscribers = Array(s.wakeSubscribers.values)
                guard best.0 != s.level else { return (nil, wakeSubscribers) }
                s.level = best.0
                let event = PressureEvent(
                    level: best.0, source: best.1, detail: best.2.isEmpty ? "no source above its threshold" : best.2, time: now, wakeup: wakeup)
                s.history.append(event)
                if s.history.count > Self.historyLimit { s.history.removeFirst(s.history.count - Self.historyLimit) }
                return ((event, Array(s.subscribers.values)), wakeSubscribers)
            }
            if let (event, subscribers) = changed {
                lastEmittedSource = event.source
                for c in subscribers { c.yield(event) }
            }
            let wake = PressureWake(time: now, wakeup: wakeup, events: kernelEvents, level: best.0)
            for c in wakeSubscribers { c.yield(wake) }
        }
    }

    /// A source goes on working, but its status must say something from now on (said once), or
    /// no longer ("").
    private func sourceNote(_ name: String, _ note: String) {
        let changed = state.withLock { s -> (PressureSourceStatus, [AsyncStream<PressureSourceStatus>.Continuation])? in
            guard let i = s.sources.firstIndex(where: { $0.name == name }), s.sources[i].available, (s.notes[name]?.note ?? "") != note else { return nil }
            let base = s.notes[name]?.base ?? s.sources[i].detail
            s.notes[name] = note.isEmpty ? nil : (base, note)
            s.sources[i].detail = note.isEmpty ? base : "\(base); note: \(note)"
            return (s.sources[i], Array(s.sourceSubscribers.values))
        }
        if let (status, subscribers) = changed {
            for c in subscribers { c.yield(status) }
        }
    }

    private func sourceFailed(_ name: String, _ why: String) {
        let changed = state.withLock { s -> (PressureSourceStatus, [AsyncStream<PressureSourceStatus>.Continuation])? in
            guard let i = s.sources.firstIndex(where: { $0.name == name }) else { return nil }
            if s.sources[i].available {
                s.sources[i].detail = "stopped: \(why) (was: \(s.sources[i].detail))"
                s.sources[i].available = false
                s.sources[i].wakeup = nil
            }
            return (s.sources[i], Array(s.sourceSubscribers.values))
        }
        if let (status, subscribers) = changed {
            for c in subscribers { c.yield(status) }
        }
    }

    /// Every change of a source's status from now on (a source stopping because its file went
    /// away or poll reported an error on it, or saying what it cannot do meanwhile).
    public func sourceChanges() -> AsyncStream<PressureSourceStatus> { makeSubscription(\.sourceSubscribers) }

    // MARK: Sources

    /// Which sources a monitor with `configuration` would use, without starting one.
    package static func detectSources(_ configuration: PressureConfiguration = PressureConfiguration()) -> [PressureSourceStatus] {
        let (opened, statuses) = PressureSources.open(configuration)
        for source in opened { source.close() }
        return statuses
    }
}
