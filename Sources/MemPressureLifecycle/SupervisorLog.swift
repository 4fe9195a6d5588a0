import MemPressureSystem

// MARK: Log

extension Supervisor {
    /// The log, oldest first (at most `logLimit` events: the newest).
    public var log: [SupervisorEvent] { logEvents.all }

    /// How many of the oldest events the bounded log has let go.
    public var droppedLogEvents: Int { logEvents.dropped }

    /// Every log event from now on (with `replaying`, the log so far first), until shutdown;
    /// after it, a finished stream. A consumer that falls more than `logLimit` events behind
    /// loses the oldest of them (the stream keeps the newest); one that stops reading (its
    /// stream dropped, its task cancelled) is forgotten.
    public func logStream(replaying: Bool = false) -> AsyncStream<SupervisorEvent> {
        let (stream, continuation) = AsyncStream<SupervisorEvent>.makeStream(bufferingPolicy: .bufferingNewest(configuration.logLimit))
        if replaying { for e in logEvents.all { continuation.yield(e) } }
        if phase == .closed {
            continuation.finish()
        } else {
            logSubscribers.add(continuation)
        }
        return stream
    }

    /// How many consumers read the log and the samples now.
    nonisolated package var streamConsumers: (log: Int, samples: Int) { (logSubscribers.count, sampleSubscribers.count) }

    /// Appends an event to the log (policies record their decisions here, beside the core's).
    public func record(_ e: SupervisorEvent) {
        metrics.observe(e)
        logEvents.append(e)
        logSubscribers.yield(e)
    }

    /// Records what happened to the app (stamped now, with its current PID).
    func record(_ payload: SupervisorEvent.Payload, _ a: AppRecord? = nil) {
        record(SupervisorEvent(t: now(), app: a?.name, pid: a?.pid, payload))
    }
}
