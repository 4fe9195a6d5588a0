import MemPressureLifecycleProtocol
import MemPressureSystem
import MemPressureMonitor
import MemPressureValues

// The log's words: what each payload says to a person, as the log has always said it (its JSON's
// `name` and `detail`, and what `mempressure` prints). Nothing decides on these words: decisions
// and tests switch on the payload.

extension SupervisorEvent {
    /// The short name the event carries: the callback acknowledged, the task, the pressure level
    /// or source, the app command, or what a note is about ("ended", "forgotten", "command",
    /// "recovered").
    public var name: String? {
        switch payload {
        case .callback(let c): c.rawValue
        case .expirationHandlerRan: "expirationHandler"
        case .notificationDelivered: "notification"
        case .othersEnded: "ended"
        case .notificationQueued(let kind): kind
        case .task(let t):
            switch t {
            case .began(_, _, let name), .ended(_, let name), .endedDuringCrashReport(let name), .expirationRequested(_, let name): name
            case .forgotten: nil
            }
        case .crashReport(let r): r.taskName
        case .pressureLevel(let c): c.level.description
        case .pressureSource(let s), .pressureSourceChanged(let s): s.name
        case .appCommand(let command, _): command
        case .commandChanged: "command"
        case .forgotten: "forgotten"
        case .recovered: "recovered"
        case .unrecognized(let u): u.name
        case .state, .ready, .launch, .connected, .exit, .crash, .warning, .error, .impostor, .protocolFailure, .policy: nil
        }
    }

    /// What happened, in words.
    public var detail: String? {
        switch payload {
        case .state, .callback, .connected: nil
        case .expirationHandlerRan(let task): "task \(task)"
        case .notificationDelivered(let kind): kind
        case .ready(let state): state.rawValue
        case .launch(let command): command.joined(separator: " ")
        case .exit(let status, let reason): status.description + (reason.map { ": jetsam, \($0.rawValue)" } ?? "")
        case .crash(let status, let output): status.description + (output.map { "; its last output: \($0)" } ?? "")
        case .othersEnded(let count): "\(count) other process(es) of the app ended with it (SIGKILL)"
        // "sent" alone, as logs have always said it: the callback, written to the channel.
        case .warning(.sent): "sent"
        case .warning(.signalled(let sig)): "sent: signal \(sig) (\(MemoryWarningAction.name(ofSignal: sig)))"
        case .warning(.commandRan(let status)): "command ran: \(status)"
        case .warning(.notSent(let why)): "not sent: \(why.words)"
        case .notificationQueued: "queued: suspended"
        case .task(let t): Self.detail(of: t)
        case .crashReport(let r):
            "background task \(r.task) ('\(r.taskName)') still running \(r.limitSeconds) s after entering the background: terminated"
                + (r.stack == nil ? "; no call stack (the app did not report one)" : "")
        case .error(let f): f.description
        case .impostor(let i): Self.detail(of: i, app: app)
        case .protocolFailure(let p): Self.detail(of: p)
        case .pressureLevel(let c): "\(c.source): \(c.reading)"
        case .pressureSource(let s): s.description
        case .pressureSourceChanged(let s): s.detail
        case .appCommand(_, let answer): answer
        case .commandChanged(let to, let from): "from now on runs \(to.joined(separator: " ")) (was \(from.joined(separator: " ")))"
        case .forgotten(.asked): "forgotten"
        case .forgotten(.madeRoom(let app, let limit)): "forgotten to make room for \(app): at most \(limit) apps are kept"
        case .recovered(let line): line
        case .policy(let r): Self.detail(of: r, app: app)
        case .unrecognized(let u): u.detail
        }
    }

    /// The call stack a crash report carries.
    public var stack: [String]? {
        switch payload {
        case .crashReport(let r): r.stack
        case .unrecognized(let u): u.stack
        default: nil
        }
    }

    private static func detail(of t: BackgroundTaskEvent) -> String {
        switch t {
        case .began(let id, let thread, _): "began (id \(id), thread \(thread))"
        case .ended(let id, _): "ended (id \(id))"
        case .endedDuringCrashReport: "ended while its call stack was taken: not terminated"
        case .forgotten(let count): "\(count) background task(s) forgotten with the control channel"
        case .expirationRequested(let id, _): "asked to run the expiration handler of task \(id)"
        }
    }

    private static func detail(of i: Impostor, app: String?) -> String {
        switch i {
        case .controlConnection(let pid, let uid): "connection from pid \(pid) (uid \(uid)), which this supervisor did not launch: refused"
        case .badHello: "first message was not a valid hello for \(app ?? "the app")"
        case .adminConnection(let uid): "admin connection from uid \(uid) refused"
        }
    }

    private static func detail(of p: ProtocolFailure) -> String {
        switch p {
        case .channelClosed(let why): "control channel closed: \(why); the app keeps running without callbacks"
        case .connectionReplaced: "a second connection replaces the first"
        case .adminFlood(let limit): "admin client sent more than \(limit) requests without waiting for answers: disconnected"
        case .adminIdle(let seconds): "admin connection idle for \(ByteFormat.fixed(seconds, 0)) s without a complete request: closed"
        }
    }

    private static func detail(of r: PolicyRecord, app: String?) -> String? {
        switch r {
        case .kill(let k): k.stillExitingAfterSeconds.map { "still exiting \($0) s after SIGKILL" }
        case .freezeDry(let f):
            "freeze-dried: \(Format.bytes(f.writtenBytes)) written to swap"
                + (f.residentBeforeBytes.flatMap { b in f.residentAfterBytes.map { ", resident \(Format.bytes(b)) -> \(Format.bytes($0))" } } ?? "")
        case .softLimitWarning(let l): "over its soft \(l.limit.rawValue) limit: \(Format.bytes(l.footprintBytes)) > \(Format.bytes(l.limitBytes))"
        case .note(let n): detail(of: n, app: app)
        case .failure(.readingFailed(let reading, let failure)):
            "jetsam: \(failing(reading, failure)): no decision is made on it until it can be read again"
        case .failure(.pressureStreamEnded): "jetsam: the pressure stream ended (its monitor stopped): no more episodes are started"
        case .failure(.reportNotWritten(let episode, let directory, let cause)):
            "jetsam: cannot write the report of episode \(episode) to \(directory): \(cause)"
        }
    }

    private static func detail(of n: PolicyNote, app: String?) -> String {
        switch n {
        case .wokenBy(let events, let polled, let interval):
            "jetsam looks at memory at each wake of the pressure monitor: kernel events from "
                + (events.isEmpty ? "no source (none offers one here)" : events.joined(separator: ", "))
                + (polled.isEmpty ? "" : "; every \(Format.seconds(interval)) from \(polled.joined(separator: ", ")) (no kernel event for it: polled)")
        case .kernelOOMKillerHeld(let cgroup):
            "jetsam holds the kernel's OOM killer of \(cgroup) (oom_kill_disable 1): a task at the limit waits for jetsam's decision"
        case .kernelOOMKillerNotHeld(let why): "jetsam: \(why)"
        case .readingWorksAgain(let reading, let failure): "jetsam: can read again what failed before (\(failing(reading, failure)))"
        case .noSwap: "jetsam: no swap on this machine: freeze-dry is off (suspended apps are killed instead)"
        case .overLimitNotKilled(let limit, let cause): "jetsam: \(app ?? "an app") is over its \(limit.rawValue) limit but was not killed: \(cause)"
        }
    }

    /// A failing reading, in words.
    static func failing(_ reading: WatchedReading, _ failure: String) -> String {
        switch reading {
        case .memory: "memory could not be measured (\(failure))"
        case .underOOM: "\(failure): a task waiting at the limit cannot be seen"
        }
    }
}

extension SupervisorFault: CustomStringConvertible {
    public var description: String {
        switch self {
        case .suspend(let cause): "suspend: \(cause)"
        case .resume(let cause): "resume: \(cause)"
        case .stopNotSeen(let stopped, let seconds):
            "still \(stopped ? "running" : "stopped") \(ByteFormat.fixed(seconds, 1)) s after being \(stopped ? "suspended" : "resumed")"
        case .kill(let cause): "kill: \(cause)"
        case .oomScore(let cause): "oom_score_adj: \(cause)"
        case .letRun(let cause), .watchdog(let cause), .cgroupRemoval(let cause), .shutdown(let cause), .unclassified(let cause): cause
        case .launch(let cause): "launch: \(cause)"
        case .warningCommand(let cause): "memory warning command: \(cause)"
        case .readinessProbe(let cause): "readiness probe: \(cause)"
        case .noCallbacks(.channelFailed): "its control channel failed: supervised without callbacks"
        case .noCallbacks(.didNotConnect(let seconds)): "it did not connect within \(seconds) s: supervised without callbacks"
        case .callbackNotDelivered(let c): "\(c.rawValue) not delivered: its control channel is closed"
        case .callbackNotAcknowledged(let c, .channelClosed): "\(c.rawValue) not acknowledged: its control channel was closed for breaking the protocol"
        case .callbackNotAcknowledged(let c, .timedOut(let seconds)): "\(c.rawValue) not acknowledged within \(seconds) s"
        case .notReading(let what): "could not send \(what): the app is not reading its control channel"
        case .command(let verb, let cause): "\(verb.rawValue): \(cause)"
        case .othersRunOn(let cause): "\(cause): they run on, outside the supervisor's control"
        case .runRecord(let path, let cause): "cannot update \(path): \(cause)"
        case .abort(let cause): "abort: \(cause)"
        case .connectionsNotClosed(let count): "\(count) connection(s) not closed \(Int(SupervisorFault.connectionCloseTimeout)) s after shutdown"
        case .adminAnswerThread(let cause): "admin connection dropped: cannot start a thread to answer on: \(cause)"
        case .adminConnectionsFull(let limit, let refused): "admin connection refused: \(limit) open already (\(refused) refused so far)"
        }
    }
}
