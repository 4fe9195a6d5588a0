import CMemoryPressure
import Glibc
import LinuxSystem
import PressureValues
import Synchronization

/// Watches every memory-pressure source the machine has — PSI triggers (/proc/pressure/memory,
/// and a cgroup v2's memory.pressure), cgroup v1 memory.pressure_level notifications through an
/// eventfd, a cgroup's usage against its limit, and /proc/meminfo MemAvailable as the fallback —
/// and merges them into one level with hysteresis: the highest level any source reports, where a
/// polled source drops only below its threshold minus `hysteresis` and an event holds its level
/// for `eventHoldSeconds`. Every reading is judged by the one judgement (`PressureConfiguration.judge`).
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
        for source in pressureSources { source.close() }
    }

    /// The merged level now.
    public var level: PressureLevel { state.withLock { $0.level } }

    /// The changes of level so far, oldest first: the latest `historyLimit` of them.
    public var history: [PressureEvent] { state.withLock { $0.history } }

    /// Every change of level from now on, in order.
    public func events() -> AsyncStream<PressureEvent> { makeSubscription(\.subscribers) }

    /// A new stream registered in `subscribers` until its consumer goes away. It holds at most
    /// `historyLimit` undelivered changes (a consumer that far behind loses the oldest): a
    /// subscriber that stops reading cannot make a long-running service grow without bound.
    private func makeSubscription<Element>(_ subscribers: WritableKeyPath<State, [UInt64: AsyncStream<Element>.Continuation]>) -> AsyncStream<Element> {
        // A key path literal to a stored property: immutable, safe to use from any thread.
        nonisolated(unsafe) let subscribers = subscribers
        let (stream, continuation) = AsyncStream<Element>.makeStream(bufferingPolicy: .bufferingNewest(Self.historyLimit))
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
        // One pollfd per source with a descriptor (its index in `polled`), then the stop eventfd.
        var fds: [pollfd] = []
        let polled: [Int?] = pressureSources.map { source in
            guard let d = source.pollDescriptor else { return nil }
            fds.append(pollfd(fd: d.fd, events: d.events, revents: 0))
            return fds.count - 1
        }
        fds.append(pollfd(fd: stopFD, events: Int16(POLLIN), revents: 0))
        let timeoutMilliseconds = max(10, Seconds.milliseconds(configuration.pollInterval))
        var lastEmittedSource = ""
        while true {
            let n = fds.withUnsafeMutableBufferPointer { p in retryOnInterrupt { poll(p.baseAddress, nfds_t(p.count), timeoutMilliseconds) } }
            if n < 0 { break }
            if fds.last!.revents != 0 { break }
            let now = monotonicSeconds()
            for (source, index) in zip(pressureSources, polled) {
                if let why = source.update(revents: index.map { fds[$0].revents } ?? 0, at: now, configuration) {
                    // Gone (its cgroup was removed, the trigger was dropped): stop polling it
                    // rather than spin or read its last gasp as pressure.
                    if let index { fds[index].fd = -1 }
                    sourceFailed(source.name, why)
                }
            }
            // The merged level: the highest any source holds now.
            var best: (PressureLevel, String, String) = (.normal, lastEmittedSource, "")
            for source in pressureSources {
                let (level, detail) = source.level(at: now, configuration)
                if level > best.0 { best = (level, source.name, detail) }
            }
            let changed = state.withLock { s -> (PressureEvent, [AsyncStream<PressureEvent>.Continuation])? in
                guard best.0 != s.level else { return nil }
                s.level = best.0
                let event = PressureEvent(level: best.0, source: best.1, detail: best.2.isEmpty ? "no source above its threshold" : best.2, time: now)
                s.history.append(event)
                if s.history.count > Self.historyLimit { s.history.removeFirst(s.history.count - Self.historyLimit) }
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

    // MARK: Sources

    /// Which sources a monitor with `configuration` would use, without starting one.
    package static func detectSources(_ configuration: PressureConfiguration = PressureConfiguration()) -> [PressureSourceStatus] {
        let (opened, statuses) = PressureSources.open(configuration)
        for source in opened { source.close() }
        return statuses
    }
}
