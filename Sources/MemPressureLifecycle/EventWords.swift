import MemPressureLifecycleProtocol
import MemPressureSystem
import MemPressureMonitor
import MemPressureValues

/// An event as a log of the first format wrote it — its kind and its words — read back into its
/// typed case: the reverse of SupervisorEventText.swift, for logs written before the typed keys
/// existed (and for the events whose words are their values: a callback's name, a ready's state,
/// a warning's "sent", an app command and its answer).
///
/// What the words cannot give back exactly is said where it is read: a command's arguments are
/// split at spaces, a soft limit's and a freeze-dry's sizes are read to the tenth of a MiB they
/// were written with. Words it does not know make an `.unrecognized` event, never an error.
struct EventWords {
    var kind: SupervisorEventKind
    var name: String?
    var detail: String?
    var stack: [String]?

    var payload: SupervisorEvent.Payload { typed ?? .unrecognized(UnrecognizedEvent(kind: kind, name: name, detail: detail, stack: stack)) }

    private var typed: SupervisorEvent.Payload? {
        let d = detail ?? ""
        switch kind {
        case .state: return nil  // from and to are keys of their own
        case .callback:
            switch name {
            case "expirationHandler": return Int(d.droppingPrefix("task ") ?? "").map { .expirationHandlerRan(task: $0) }
            case "notification": return detail.map { .notificationDelivered(kind: $0) }
            default: return name.flatMap(LifecycleCallback.init(rawValue:)).map { .callback($0) }
            }
        case .ready: return LifecycleState(rawValue: d).map { .ready($0) }
        case .launch: return .launch(command: d.split(separator: " ").map(String.init))
        case .connected: return .connected
        case .exit:
            let (statusText, reason) = d.splitOnce(": jetsam, ")
            guard let status = Self.exitStatus(statusText) else { return nil }
            if let reason { return KillReason(rawValue: reason).map { .exit(status, killReason: $0) } }
            return .exit(status, killReason: nil)
        case .crash:
            let (statusText, output) = d.splitOnce("; its last output: ")
            return Self.exitStatus(statusText).map { .crash($0, lastOutput: output) }
        case .warning:
            if d == "sent" { return .warning(.sent) }
            if let rest = d.droppingPrefix("sent: signal "), let sig = Int32(rest.prefix { $0 != " " }) { return .warning(.signalled(sig)) }
            if let status = d.droppingPrefix("command ran: ") { return Self.exitStatus(status).map { .warning(.commandRan($0)) } }
            if let why = d.droppingPrefix("not sent: ") { return WarningSkipReason(words: why).map { .warning(.notSent($0)) } }
            return softLimit(d)
        case .notification: return d == "queued: suspended" ? name.map { .notificationQueued(kind: $0) } : nil
        case .task, .expire: return task(d).map { .task($0) }
        case .crashReport: return crashReport(d).map { .crashReport($0) }
        case .error: return jetsamFailure(d).map { .policy(.failure($0)) } ?? .error(Self.fault(d))
        case .impostor: return impostor(d).map { .impostor($0) }
        case .protocol: return protocolFailure(d).map { .protocolFailure($0) }
        case .pressure: return pressure(d)
        case .command: return name.map { .appCommand(command: $0, answer: d) }
        case .note: return note(d)
        case .jetsam: return nil  // its fields are keys of their own
        case .freeze: return nil  // its bytes are a key of its own
        }
    }

    /// "still exiting 2.0 s after SIGKILL": a kill's victim that had not exited within the cooldown.
    var stillExitingAfterSeconds: Double? {
        detail?.droppingPrefix("still exiting ").flatMap { $0.droppingSuffix(" s after SIGKILL") }.flatMap(Double.init)
    }

    /// A freeze of the first format: its bytes, and its resident memory before and after as written.
    func freezeDry(writtenBytes: UInt64) -> SupervisorEvent.Payload {
        let resident = detail.flatMap { $0.splitOnce(", resident ").1 }.map { $0.splitOnce(" -> ") }
        return .policy(.freezeDry(FreezeDryRecord(
            writtenBytes: writtenBytes, residentBeforeBytes: resident.flatMap { Self.mebibytes($0.0) }, residentAfterBytes: resident?.1.flatMap(Self.mebibytes))))
    }

    // MARK: The words of each kind

    /// `ExitStatus.description`: "exited with status 3", "killed by signal 9 (SIGKILL)".
    static func exitStatus(_ text: String) -> ExitStatus? {
        if let code = text.droppingPrefix("exited with status ").flatMap(Int32.init) { return .exited(code) }
        if let rest = text.droppingPrefix("killed by signal "), let sig = Int32(rest.prefix { $0 != " " }) { return .signaled(sig) }
        return nil
    }

    /// "300.0 MiB" (Format.bytes), to the tenth of a MiB it was written with.
    static func mebibytes(_ text: String) -> UInt64? {
        guard let number = text.droppingSuffix(" MiB").flatMap(Double.init), number >= 0, number < 1e12 else { return nil }
        return UInt64((number * 1_048_576).rounded())
    }

    private func softLimit(_ d: String) -> SupervisorEvent.Payload? {
        guard let rest = d.droppingPrefix("over its soft ") else { return nil }
        let (which, sizes) = rest.splitOnce(" limit: ")
        let (footprint, limit) = (sizes ?? "").splitOnce(" > ")
        guard let which = PerAppLimit(rawValue: which), let f = Self.mebibytes(footprint), let l = limit.flatMap(Self.mebibytes) else { return nil }
        return .policy(.softLimitWarning(LimitRecord(limit: which, footprintBytes: f, limitBytes: l)))
    }

    private func task(_ d: String) -> BackgroundTaskEvent? {
        let taskName = name ?? ""
        if kind == .expire {
            return d.droppingPrefix("asked to run the expiration handler of task ").flatMap(Int.init).map { .expirationRequested(id: $0, name: taskName) }
        }
        if let rest = d.droppingPrefix("began (id ").flatMap({ $0.droppingSuffix(")") }) {
            let (id, thread) = rest.splitOnce(", thread ")
            guard let id = Int(id), let thread = thread.flatMap(Int32.init) else { return nil }
            return .began(id: id, thread: thread, name: taskName)
        }
        if let id = d.droppingPrefix("ended (id ").flatMap({ $0.droppingSuffix(")") }).flatMap(Int.init) { return .ended(id: id, name: taskName) }
        if d == "ended while its call stack was taken: not terminated" { return .endedDuringCrashReport(name: taskName) }
        return d.droppingSuffix(" background task(s) forgotten with the control channel").flatMap(Int.init).map { .forgotten(count: $0) }
    }

    private func crashReport(_ d: String) -> CrashReport? {
        guard let rest = d.droppingPrefix("background task ") else { return nil }
        let (id, afterID) = rest.splitOnce(" ('")
        let (_, afterName) = (afterID ?? "").splitOnce("') still running ")
        let (limit, _) = (afterName ?? "").splitOnce(" s after entering the background: terminated")
        guard let id = Int(id), let limit = Double(limit) else { return nil }
        return CrashReport(task: id, taskName: name ?? "", limitSeconds: limit, stack: stack)
    }

    /// The step an error of the first format was logged by, from its words.
    static func fault(_ d: String) -> SupervisorFault {
        if let c = d.droppingPrefix("suspend: ") { return .suspend(cause: c) }
        if let c = d.droppingPrefix("resume: ") { return .resume(cause: c) }
        if let c = d.droppingPrefix("kill: ") { return .kill(cause: c) }
        if let c = d.droppingPrefix("oom_score_adj: ") { return .oomScore(cause: c) }
        if let c = d.droppingPrefix("launch: ") { return .launch(cause: c) }
        if let c = d.droppingPrefix("memory warning command: ") { return .warningCommand(cause: c) }
        if let c = d.droppingPrefix("readiness probe: ") { return .readinessProbe(cause: c) }
        if let c = d.droppingPrefix("abort: ") { return .abort(cause: c) }
        if let c = d.droppingPrefix("admin connection dropped: cannot start a thread to answer on: ") { return .adminAnswerThread(cause: c) }
        if let c = d.droppingSuffix(": they run on, outside the supervisor's control") { return .othersRunOn(cause: c) }
        if d == "its control channel failed: supervised without callbacks" { return .noCallbacks(.channelFailed) }
        if let s = d.droppingPrefix("it did not connect within ").flatMap({ $0.droppingSuffix(" s: supervised without callbacks") }).flatMap(Double.init) {
            return .noCallbacks(.didNotConnect(seconds: s))
        }
        // Older logs say 1 s (the wait before it was 10).
        for seconds in [Int(SupervisorFault.connectionCloseTimeout), 1] {
            if let n = d.droppingSuffix(" connection(s) not closed \(seconds) s after shutdown").flatMap(Int.init) { return .connectionsNotClosed(count: n) }
        }
        if let what = d.droppingPrefix("could not send ").flatMap({ $0.droppingSuffix(": the app is not reading its control channel") }) { return .notReading(what: what) }
        if let rest = d.droppingPrefix("admin connection refused: ") {
            let (limit, refused) = rest.splitOnce(" open already (")
            if let limit = Int(limit), let refused = refused.flatMap({ $0.droppingSuffix(" refused so far)") }).flatMap(Int.init) {
                return .adminConnectionsFull(limit: limit, refused: refused)
            }
        }
        for c in LifecycleCallback.allCases {
            if d == "\(c.rawValue) not delivered: its control channel is closed" { return .callbackNotDelivered(c) }
            if d == "\(c.rawValue) not acknowledged: its control channel was closed for breaking the protocol" { return .callbackNotAcknowledged(c, .channelClosed) }
            if let s = d.droppingPrefix("\(c.rawValue) not acknowledged within ").flatMap({ $0.droppingSuffix(" s") }).flatMap(Double.init) {
                return .callbackNotAcknowledged(c, .timedOut(seconds: s))
            }
        }
        if let rest = d.droppingPrefix("cannot update ") {
            let (path, cause) = rest.splitOnce(": ")
            if let cause { return .runRecord(path: path, cause: cause) }
        }
        let (first, stop) = d.splitOnce(" s after being ")
        if let stop, let s = first.droppingPrefix("still running ") ?? first.droppingPrefix("still stopped "), let seconds = Double(s),
            stop == "suspended" || stop == "resumed" {
            return .stopNotSeen(stopped: stop == "suspended", seconds: seconds)
        }
        for verb in LifecycleVerb.allCases {
            if let c = d.droppingPrefix("\(verb.rawValue): ") { return .command(verb, cause: c) }
        }
        return .unclassified(d)
    }

    private func jetsamFailure(_ d: String) -> PolicyFailure? {
        if d == "jetsam: the pressure stream ended (its monitor stopped): no more episodes are started" { return .pressureStreamEnded }
        if let what = d.droppingPrefix("jetsam: ").flatMap({ $0.droppingSuffix(": no decision is made on it until it can be read again") }) {
            return Self.reading(what).map { .readingFailed($0.0, failure: $0.1) }
        }
        guard let rest = d.droppingPrefix("jetsam: cannot write the report of episode ") else { return nil }
        let (episode, afterEpisode) = rest.splitOnce(" to ")
        let (directory, cause) = (afterEpisode ?? "").splitOnce(": ")
        guard let n = Int(episode), let cause else { return nil }
        return .reportNotWritten(episode: n, directory: directory, cause: cause)
    }

    /// A failing reading as `SupervisorEvent.failing` words it.
    private static func reading(_ what: String) -> (WatchedReading, String)? {
        if let f = what.droppingPrefix("memory could not be measured (").flatMap({ $0.droppingSuffix(")") }) { return (.memory, f) }
        if let f = what.droppingSuffix(": a task waiting at the limit cannot be seen") { return (.underOOM, f) }
        return nil
    }

    private func impostor(_ d: String) -> Impostor? {
        if let rest = d.droppingPrefix("connection from pid ").flatMap({ $0.droppingSuffix("), which this supervisor did not launch: refused") }) {
            let (pid, uid) = rest.splitOnce(" (uid ")
            guard let pid = Int32(pid), let uid = uid.flatMap(UInt32.init) else { return nil }
            return .controlConnection(pid: pid, uid: uid)
        }
        if d.hasPrefix("first message was not a valid hello for ") { return .badHello }
        return d.droppingPrefix("admin connection from uid ").flatMap { $0.droppingSuffix(" refused") }.flatMap(UInt32.init).map { .adminConnection(uid: $0) }
    }

    private func protocolFailure(_ d: String) -> ProtocolFailure? {
        if d == "a second connection replaces the first" { return .connectionReplaced }
        if let n = d.droppingPrefix("admin client sent more than ").flatMap({ $0.droppingSuffix(" requests without waiting for answers: disconnected") }).flatMap(Int.init) {
            return .adminFlood(limit: n)
        }
        if let s = d.droppingPrefix("admin connection idle for ").flatMap({ $0.droppingSuffix(" s without a complete request: closed") }).flatMap(Double.init) {
            return .adminIdle(seconds: s)
        }
        // Two forms: closed by the supervisor, or by the connection's reader.
        let why = d.droppingPrefix("control channel closed: ").map { $0.droppingSuffix("; the app keeps running without callbacks") ?? $0 }
            ?? d.droppingSuffix(": control channel closed; the app keeps running without callbacks")
        return why.flatMap(Self.channelFailure).map { .channelClosed($0) }
    }

    /// `ChannelFailure.description`, for the failures whose words say all of it.
    static func channelFailure(_ text: String) -> ChannelFailure? {
        switch text {
        case "protocol error: a second hello": return .secondHello
        case "bad hello": return .badHello
        case "not reading": return .notReading
        default: break
        }
        if let n = text.droppingPrefix("flood: more than ").flatMap({ $0.droppingSuffix(" lines in a second") }).flatMap(Int.init) { return .flood(limit: n) }
        guard let e = text.droppingPrefix("protocol error: ") else { return nil }
        switch e {
        case "empty line": return .protocolError(.emptyLine)
        case "a line that is not UTF-8 text": return .protocolError(.notUTF8)
        case "a NUL byte": return .protocolError(.nulByte)
        default: break
        }
        if let n = e.droppingPrefix("a line longer than ").flatMap({ $0.droppingSuffix(" bytes") }).flatMap(Int.init) { return .protocolError(.lineTooLong(limit: n)) }
        if let m = e.droppingPrefix("unknown message '").flatMap({ $0.droppingSuffix("'") }) { return .protocolError(.unknownMessage(m)) }
        if let m = e.droppingPrefix("unknown callback '").flatMap({ $0.droppingSuffix("'") }) { return .protocolError(.unknownCallback(m)) }
        return nil
    }

    private func pressure(_ d: String) -> SupervisorEvent.Payload? {
        guard let name else { return nil }
        if let level = PressureLevel(name: name) {
            let (source, reading) = d.splitOnce(": ")
            return .pressureLevel(PressureLevelChange(level: level, source: source, reading: reading ?? ""))
        }
        // As the supervisor started: `PressureSourceStatus.description`.
        if let rest = d.droppingPrefix("\(name): ") {
            let available = rest.hasPrefix("in use")
            guard available || rest.hasPrefix("not available") else { return nil }
            var after = rest.dropFirst(available ? 6 : 13)
            var wakeup: PressureWakeup?
            if after.hasPrefix(", woken by the kernel") {
                wakeup = .event
                after = after.dropFirst(21)
            } else if after.hasPrefix(", polled") {
                wakeup = .poll
                after = after.dropFirst(8)
            }
            if let detail = String(after).droppingPrefix(" (").flatMap({ $0.droppingSuffix(")") }) {
                return .pressureSource(PressureSourceStatus(name: name, available: available, detail: detail, wakeup: wakeup))
            }
        }
        // A change of a source's status: its detail only (a stopped source is not available).
        return .pressureSourceChanged(PressureSourceStatus(name: name, available: !d.hasPrefix("stopped"), detail: d))
    }

    private func note(_ d: String) -> SupervisorEvent.Payload? {
        switch name {
        case "ended": return d.droppingSuffix(" other process(es) of the app ended with it (SIGKILL)").flatMap(Int.init).map { .othersEnded(count: $0) }
        case "recovered": return .recovered(d)
        case "forgotten":
            if d == "forgotten" { return .forgotten(.asked) }
            guard let rest = d.droppingPrefix("forgotten to make room for ").flatMap({ $0.droppingSuffix(" apps are kept") }) else { return nil }
            let (app, limit) = rest.splitOnce(": at most ")
            return limit.flatMap(Int.init).map { .forgotten(.madeRoom(for: app, limit: $0)) }
        case "command":
            guard let rest = d.droppingPrefix("from now on runs ").flatMap({ $0.droppingSuffix(")") }) else { return nil }
            let (to, from) = rest.splitOnce(" (was ")
            return from.map { .commandChanged(to: to.split(separator: " ").map(String.init), from: $0.split(separator: " ").map(String.init)) }
        case nil: return jetsamNote(d).map { .policy(.note($0)) }
        default: return nil
        }
    }

    private func jetsamNote(_ d: String) -> PolicyNote? {
        if d == "jetsam: no swap on this machine: freeze-dry is off (suspended apps are killed instead)" { return .noSwap }
        if let cgroup = d.droppingPrefix("jetsam holds the kernel's OOM killer of ")
            .flatMap({ $0.droppingSuffix(" (oom_kill_disable 1): a task at the limit waits for jetsam's decision") }) {
            return .kernelOOMKillerHeld(cgroup: cgroup)
        }
        if let rest = d.droppingPrefix("jetsam looks at memory at each wake of the pressure monitor: kernel events from ") {
            let (events, polledPart) = rest.splitOnce("; every ")
            var polled: [String] = []
            var interval = 0.0
            if let polledPart {
                let (time, sources) = polledPart.splitOnce(" s from ")
                guard let t = Double(time), let list = sources?.droppingSuffix(" (no kernel event for it: polled)") else { return nil }
                interval = t
                polled = list.split(separator: ", ").map(String.init)
            }
            let heard = events == "no source (none offers one here)" ? [] : events.split(separator: ", ").map(String.init)
            return .wokenBy(events: heard, polled: polled, pollInterval: interval)
        }
        if let what = d.droppingPrefix("jetsam: can read again what failed before (").flatMap({ $0.droppingSuffix(")") }) {
            return Self.reading(what).map { .readingWorksAgain($0.0, failure: $0.1) }
        }
        if let rest = d.droppingPrefix("jetsam: "), let group = rest.droppingSuffix(
            " is a cgroup v2 group, which cannot hold its OOM killer (no memory.oom_control): the kernel's killer stays in charge at the limit") {
            return .kernelOOMKillerNotHeld(.cgroupV2(group))
        }
        if let rest = d.droppingPrefix("jetsam: "), case (_, let tail?) = rest.splitOnce(" is over its ") {
            let (limit, cause) = tail.splitOnce(" limit but was not killed: ")
            if let limit = PerAppLimit(rawValue: limit), let cause { return .overLimitNotKilled(limit, cause: cause) }
        }
        return nil
    }
}
