import MemPressureLifecycleProtocol
import MemPressureSystem
import MemPressureMonitor
import MemPressureValues

// The log's JSON: one flat object per event, as it has always been — `t`, `app`, `pid`, `kind`
// and the words (`name`, `detail`, `stack`), jetsam's kill fields (`reason`, `rank`, `policy`,
// `footprintBytes`, `reclaimedBytes`, `explanation`) and a freeze's `bytes` — plus the keys
// that carry each payload's values typed (below). A reader that knows only the first form reads
// the second unchanged; a log of the first form (without the typed keys) decodes from its words
// (LegacyEvents.swift).

extension SupervisorEvent: Codable {
    enum Key: String, CodingKey {
        // The first form's keys.
        case t, app, pid, kind, from, to, name, detail, stack, reason, rank, policy, footprintBytes, reclaimedBytes, bytes, explanation
        // The typed values.
        case command, previousCommand, exitCode, signal, output, count, task, thread, taskEvent, limitSeconds
        case fault, cause, callback, seconds, stopped, verb, path, limit, refused, what
        case impostor, uid, failure, channelFailure, pressure, level, source, reading, status, forgotten, forApp
        case stillExitingAfterSeconds, residentBeforeBytes, residentAfterBytes, limitBytes, note, events, polled, pollInterval
        case cgroup, unavailable, policyFailure, episode
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: Key.self)
        try c.encode(t, forKey: .t)
        try c.encodeIfPresent(app, forKey: .app)
        try c.encodeIfPresent(pid, forKey: .pid)
        try c.encode(kind, forKey: .kind)
        try c.encodeIfPresent(name, forKey: .name)
        try c.encodeIfPresent(detail, forKey: .detail)
        try c.encodeIfPresent(stack, forKey: .stack)
        switch payload {
        case .state(let from, let to):
            try c.encode(from, forKey: .from)
            try c.encode(to, forKey: .to)
        case .callback, .notificationDelivered, .ready, .connected, .warning, .notificationQueued, .appCommand, .recovered, .unrecognized:
            break  // their words are their values
        case .expirationHandlerRan(let task):
            try c.encode(task, forKey: .task)
        case .launch(let command):
            try c.encode(command, forKey: .command)
        case .exit(let status, let reason):
            try Self.encode(status, into: &c)
            try c.encodeIfPresent(reason, forKey: .reason)
        case .crash(let status, let output):
            try Self.encode(status, into: &c)
            try c.encodeIfPresent(output, forKey: .output)
        case .othersEnded(let count):
            try c.encode(count, forKey: .count)
        case .task(let t):
            try Self.encode(t, into: &c)
        case .crashReport(let r):
            try c.encode(r.task, forKey: .task)
            try c.encode(r.limitSeconds, forKey: .limitSeconds)
        case .error(let f):
            try Self.encode(f, into: &c)
        case .impostor(let i):
            switch i {
            case .controlConnection(_, let uid):
                try c.encode("controlConnection", forKey: .impostor)
                try c.encode(uid, forKey: .uid)
            case .badHello: try c.encode("badHello", forKey: .impostor)
            case .adminConnection(let uid):
                try c.encode("adminConnection", forKey: .impostor)
                try c.encode(uid, forKey: .uid)
            }
        case .protocolFailure(let p):
            switch p {
            case .channelClosed(let why):
                try c.encode("channelClosed", forKey: .failure)
                try c.encode(why, forKey: .channelFailure)
            case .connectionReplaced: try c.encode("connectionReplaced", forKey: .failure)
            case .adminFlood(let limit):
                try c.encode("adminFlood", forKey: .failure)
                try c.encode(limit, forKey: .limit)
            case .adminIdle(let seconds):
                try c.encode("adminIdle", forKey: .failure)
                try c.encode(seconds, forKey: .seconds)
            }
        case .pressureLevel(let change):
            try c.encode("level", forKey: .pressure)
            try c.encode(change.level, forKey: .level)
            try c.encode(change.source, forKey: .source)
            try c.encode(change.reading, forKey: .reading)
        case .pressureSource(let s), .pressureSourceChanged(let s):
            if case .pressureSource = payload { try c.encode("source", forKey: .pressure) } else { try c.encode("sourceChanged", forKey: .pressure) }
            try c.encode(s, forKey: .status)
        case .commandChanged(let to, let from):
            try c.encode(to, forKey: .command)
            try c.encode(from, forKey: .previousCommand)
        case .forgotten(.asked):
            try c.encode("asked", forKey: .forgotten)
        case .forgotten(.madeRoom(let app, let limit)):
            try c.encode("madeRoom", forKey: .forgotten)
            try c.encode(app, forKey: .forApp)
            try c.encode(limit, forKey: .limit)
        case .policy(let r):
            try Self.encode(r, into: &c)
        }
    }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: Key.self)
        t = try c.decode(Double.self, forKey: .t)
        app = try c.decodeIfPresent(String.self, forKey: .app)
        pid = try c.decodeIfPresent(Int32.self, forKey: .pid)
        let kind = try c.decode(SupervisorEventKind.self, forKey: .kind)
        payload = try Self.payload(kind, c)
    }

    private static func encode(_ status: ExitStatus, into c: inout KeyedEncodingContainer<Key>) throws {
        switch status {
        case .exited(let code): try c.encode(code, forKey: .exitCode)
        case .signaled(let sig): try c.encode(sig, forKey: .signal)
        }
    }

    private static func encode(_ t: BackgroundTaskEvent, into c: inout KeyedEncodingContainer<Key>) throws {
        switch t {
        case .began(let id, let thread, _):
            try c.encode("began", forKey: .taskEvent)
            try c.encode(id, forKey: .task)
            try c.encode(thread, forKey: .thread)
        case .ended(let id, _):
            try c.encode("ended", forKey: .taskEvent)
            try c.encode(id, forKey: .task)
        case .endedDuringCrashReport:
            try c.encode("endedDuringCrashReport", forKey: .taskEvent)
        case .forgotten(let count):
            try c.encode("forgotten", forKey: .taskEvent)
            try c.encode(count, forKey: .count)
        case .expirationRequested(let id, _):
            try c.encode(id, forKey: .task)  // the kind (expire) says which
        }
    }

    private static func encode(_ f: SupervisorFault, into c: inout KeyedEncodingContainer<Key>) throws {
        try c.encode(f.word, forKey: .fault)
        try c.encodeIfPresent(f.cause, forKey: .cause)
        switch f {
        case .stopNotSeen(let stopped, let seconds):
            try c.encode(stopped, forKey: .stopped)
            try c.encode(seconds, forKey: .seconds)
        case .noCallbacks(.didNotConnect(let seconds)):
            try c.encode(seconds, forKey: .seconds)
        case .callbackNotDelivered(let callback), .callbackNotAcknowledged(let callback, .channelClosed):
            try c.encode(callback, forKey: .callback)
        case .callbackNotAcknowledged(let callback, .timedOut(let seconds)):
            try c.encode(callback, forKey: .callback)
            try c.encode(seconds, forKey: .seconds)
        case .notReading(let what): try c.encode(what, forKey: .what)
        case .command(let verb, _): try c.encode(verb, forKey: .verb)
        case .runRecord(let path, _): try c.encode(path, forKey: .path)
        case .connectionsNotClosed(let count): try c.encode(count, forKey: .count)
        case .adminConnectionsFull(let limit, let refused):
            try c.encode(limit, forKey: .limit)
            try c.encode(refused, forKey: .refused)
        default: break
        }
    }

    private static func encode(_ r: PolicyRecord, into c: inout KeyedEncodingContainer<Key>) throws {
        switch r {
        case .kill(let k):
            try c.encode(k.reason, forKey: .reason)
            try c.encode(k.rank, forKey: .rank)
            try c.encode(k.policy, forKey: .policy)
            try c.encode(k.footprintBytes, forKey: .footprintBytes)
            try c.encode(k.reclaimedBytes, forKey: .reclaimedBytes)
            try c.encode(k.explanation, forKey: .explanation)
            try c.encodeIfPresent(k.stillExitingAfterSeconds, forKey: .stillExitingAfterSeconds)
        case .freezeDry(let f):
            try c.encode(f.writtenBytes, forKey: .bytes)
            try c.encodeIfPresent(f.residentBeforeBytes, forKey: .residentBeforeBytes)
            try c.encodeIfPresent(f.residentAfterBytes, forKey: .residentAfterBytes)
        case .softLimitWarning(let l):
            try c.encode(l.limit, forKey: .limit)
            try c.encode(l.footprintBytes, forKey: .footprintBytes)
            try c.encode(l.limitBytes, forKey: .limitBytes)
        case .note(let n):
            switch n {
            case .wokenBy(let events, let polled, let interval):
                try c.encode("wokenBy", forKey: .note)
                try c.encode(events, forKey: .events)
                try c.encode(polled, forKey: .polled)
                try c.encode(interval, forKey: .pollInterval)
            case .kernelOOMKillerHeld(let cgroup):
                try c.encode("kernelOOMKillerHeld", forKey: .note)
                try c.encode(cgroup, forKey: .cgroup)
            case .kernelOOMKillerNotHeld(let why):
                try c.encode("kernelOOMKillerNotHeld", forKey: .note)
                try c.encode(why, forKey: .unavailable)
            case .readingWorksAgain(let reading, let failure):
                try c.encode("readingWorksAgain", forKey: .note)
                try c.encode(reading, forKey: .reading)
                try c.encode(failure, forKey: .cause)
            case .noSwap:
                try c.encode("noSwap", forKey: .note)
            case .overLimitNotKilled(let limit, let cause):
                try c.encode("overLimitNotKilled", forKey: .note)
                try c.encode(limit, forKey: .limit)
                try c.encode(cause, forKey: .cause)
            }
        case .failure(let f):
            switch f {
            case .readingFailed(let reading, let failure):
                try c.encode("readingFailed", forKey: .policyFailure)
                try c.encode(reading, forKey: .reading)
                try c.encode(failure, forKey: .cause)
            case .pressureStreamEnded:
                try c.encode("pressureStreamEnded", forKey: .policyFailure)
            case .reportNotWritten(let episode, let directory, let cause):
                try c.encode("reportNotWritten", forKey: .policyFailure)
                try c.encode(episode, forKey: .episode)
                try c.encode(directory, forKey: .path)
                try c.encode(cause, forKey: .cause)
            }
        }
    }
}

// MARK: Decoding: the typed keys where the event has them, else its words

extension SupervisorEvent {
    private static func payload(_ kind: SupervisorEventKind, _ c: KeyedDecodingContainer<Key>) throws -> Payload {
        func value<T: Decodable>(_ type: T.Type, _ key: Key) throws -> T? { try c.decodeIfPresent(type, forKey: key) }
        let words = EventWords(
            kind: kind, name: try value(String.self, .name), detail: try value(String.self, .detail), stack: try value([String].self, .stack))
        switch kind {
        case .state:
            return .state(from: try c.decode(LifecycleState.self, forKey: .from), to: try c.decode(LifecycleState.self, forKey: .to))
        case .launch:
            if let command = try value([String].self, .command) { return .launch(command: command) }
        case .exit, .crash:
            let status: ExitStatus? =
                if let code = try value(Int32.self, .exitCode) { .exited(code) } else if let sig = try value(Int32.self, .signal) { .signaled(sig) } else { nil }
            if let status {
                return kind == .exit ? .exit(status, killReason: try value(KillReason.self, .reason)) : .crash(status, lastOutput: try value(String.self, .output))
            }
        case .callback:
            if words.name == "expirationHandler", let task = try value(Int.self, .task) { return .expirationHandlerRan(task: task) }
        case .note:
            if let count = try value(Int.self, .count), words.name == "ended" { return .othersEnded(count: count) }
            if let to = try value([String].self, .command), let from = try value([String].self, .previousCommand) { return .commandChanged(to: to, from: from) }
            if let how = try value(String.self, .forgotten) {
                if how == "madeRoom", let app = try value(String.self, .forApp), let limit = try value(Int.self, .limit) {
                    return .forgotten(.madeRoom(for: app, limit: limit))
                }
                return .forgotten(.asked)
            }
            if let note = try value(String.self, .note), let n = try policyNote(note, c) { return .policy(.note(n)) }
        case .task, .expire:
            if let t = try taskEvent(kind, words.name, c) { return .task(t) }
        case .crashReport:
            if let task = try value(Int.self, .task), let limit = try value(Double.self, .limitSeconds) {
                return .crashReport(CrashReport(task: task, taskName: words.name ?? "", limitSeconds: limit, stack: words.stack))
            }
        case .error:
            if let word = try value(String.self, .fault), let f = try fault(word, c) { return .error(f) }
            if let word = try value(String.self, .policyFailure), let f = try policyFailure(word, c) { return .policy(.failure(f)) }
        case .impostor:
            switch try value(String.self, .impostor) {
            case "controlConnection": if let uid = try value(UInt32.self, .uid) { return .impostor(.controlConnection(pid: try value(Int32.self, .pid) ?? 0, uid: uid)) }
            case "badHello": return .impostor(.badHello)
            case "adminConnection": if let uid = try value(UInt32.self, .uid) { return .impostor(.adminConnection(uid: uid)) }
            default: break
            }
        case .protocol:
            switch try value(String.self, .failure) {
            case "channelClosed": if let why = try value(ChannelFailure.self, .channelFailure) { return .protocolFailure(.channelClosed(why)) }
            case "connectionReplaced": return .protocolFailure(.connectionReplaced)
            case "adminFlood": if let limit = try value(Int.self, .limit) { return .protocolFailure(.adminFlood(limit: limit)) }
            case "adminIdle": if let seconds = try value(Double.self, .seconds) { return .protocolFailure(.adminIdle(seconds: seconds)) }
            default: break
            }
        case .pressure:
            switch try value(String.self, .pressure) {
            case "level":
                if let level = try value(PressureLevel.self, .level), let source = try value(String.self, .source), let reading = try value(String.self, .reading) {
                    return .pressureLevel(PressureLevelChange(level: level, source: source, reading: reading))
                }
            case "source": if let s = try value(PressureSourceStatus.self, .status) { return .pressureSource(s) }
            case "sourceChanged": if let s = try value(PressureSourceStatus.self, .status) { return .pressureSourceChanged(s) }
            default: break
            }
        case .jetsam:
            if let reason = try value(KillReason.self, .reason), let rank = try value(Int.self, .rank), let policy = try value(String.self, .policy) {
                return .policy(.kill(KillRecord(
                    reason: reason, rank: rank, policy: policy, footprintBytes: try value(UInt64.self, .footprintBytes) ?? 0,
                    reclaimedBytes: try value(UInt64.self, .reclaimedBytes) ?? 0, explanation: try value(String.self, .explanation) ?? "",
                    stillExitingAfterSeconds: try value(Double.self, .stillExitingAfterSeconds) ?? words.stillExitingAfterSeconds)))
            }
        case .freeze:
            if let written = try value(UInt64.self, .bytes), let before = try value(UInt64.self, .residentBeforeBytes) {
                return .policy(.freezeDry(FreezeDryRecord(writtenBytes: written, residentBeforeBytes: before, residentAfterBytes: try value(UInt64.self, .residentAfterBytes))))
            }
            if let written = try value(UInt64.self, .bytes) { return words.freezeDry(writtenBytes: written) }
        case .warning:
            if let limit = try value(PerAppLimit.self, .limit), let footprint = try value(UInt64.self, .footprintBytes), let bytes = try value(UInt64.self, .limitBytes) {
                return .policy(.softLimitWarning(LimitRecord(limit: limit, footprintBytes: footprint, limitBytes: bytes)))
            }
        case .ready, .connected, .notification, .command:
            break  // their words are their values
        }
        return words.payload
    }

    private static func taskEvent(_ kind: SupervisorEventKind, _ name: String?, _ c: KeyedDecodingContainer<Key>) throws -> BackgroundTaskEvent? {
        let task = try c.decodeIfPresent(Int.self, forKey: .task)
        if kind == .expire { return task.map { .expirationRequested(id: $0, name: name ?? "") } }
        switch try c.decodeIfPresent(String.self, forKey: .taskEvent) {
        case "began":
            guard let task, let thread = try c.decodeIfPresent(Int32.self, forKey: .thread) else { return nil }
            return .began(id: task, thread: thread, name: name ?? "")
        case "ended": return task.map { .ended(id: $0, name: name ?? "") }
        case "endedDuringCrashReport": return .endedDuringCrashReport(name: name ?? "")
        case "forgotten": return try c.decodeIfPresent(Int.self, forKey: .count).map { .forgotten(count: $0) }
        default: return nil
        }
    }

    private static func fault(_ word: String, _ c: KeyedDecodingContainer<Key>) throws -> SupervisorFault? {
        let cause = try c.decodeIfPresent(String.self, forKey: .cause)
        let seconds = try c.decodeIfPresent(Double.self, forKey: .seconds)
        let callback = try c.decodeIfPresent(LifecycleCallback.self, forKey: .callback)
        switch word {
        case "stopNotSeen":
            guard let stopped = try c.decodeIfPresent(Bool.self, forKey: .stopped), let seconds else { return nil }
            return .stopNotSeen(stopped: stopped, seconds: seconds)
        case "channelFailed": return .noCallbacks(.channelFailed)
        case "didNotConnect": return seconds.map { .noCallbacks(.didNotConnect(seconds: $0)) }
        case "callbackNotDelivered": return callback.map { .callbackNotDelivered($0) }
        case "callbackNotAcknowledged": return callback.map { .callbackNotAcknowledged($0, seconds.map { .timedOut(seconds: $0) } ?? .channelClosed) }
        case "notReading": return try c.decodeIfPresent(String.self, forKey: .what).map { .notReading(what: $0) }
        case "connectionsNotClosed": return try c.decodeIfPresent(Int.self, forKey: .count).map { .connectionsNotClosed(count: $0) }
        case "adminConnectionsFull":
            guard let limit = try c.decodeIfPresent(Int.self, forKey: .limit), let refused = try c.decodeIfPresent(Int.self, forKey: .refused) else { return nil }
            return .adminConnectionsFull(limit: limit, refused: refused)
        default: break
        }
        guard let cause else { return nil }
        switch word {
        case "suspend": return .suspend(cause: cause)
        case "resume": return .resume(cause: cause)
        case "kill": return .kill(cause: cause)
        case "letRun": return .letRun(cause: cause)
        case "launch": return .launch(cause: cause)
        case "warningCommand": return .warningCommand(cause: cause)
        case "readinessProbe": return .readinessProbe(cause: cause)
        case "command": return try c.decodeIfPresent(LifecycleVerb.self, forKey: .verb).map { .command($0, cause: cause) }
        case "watchdog": return .watchdog(cause: cause)
        case "othersRunOn": return .othersRunOn(cause: cause)
        case "cgroupRemoval": return .cgroupRemoval(cause: cause)
        case "oomScore": return .oomScore(cause: cause)
        case "runRecord": return try c.decodeIfPresent(String.self, forKey: .path).map { .runRecord(path: $0, cause: cause) }
        case "abort": return .abort(cause: cause)
        case "shutdown": return .shutdown(cause: cause)
        case "adminAnswerThread": return .adminAnswerThread(cause: cause)
        case "unclassified": return .unclassified(cause)
        default: return nil
        }
    }

    private static func policyNote(_ word: String, _ c: KeyedDecodingContainer<Key>) throws -> PolicyNote? {
        let cause = try c.decodeIfPresent(String.self, forKey: .cause)
        switch word {
        case "wokenBy":
            guard let events = try c.decodeIfPresent([String].self, forKey: .events), let polled = try c.decodeIfPresent([String].self, forKey: .polled),
                let interval = try c.decodeIfPresent(Double.self, forKey: .pollInterval)
            else { return nil }
            return .wokenBy(events: events, polled: polled, pollInterval: interval)
        case "kernelOOMKillerHeld": return try c.decodeIfPresent(String.self, forKey: .cgroup).map { .kernelOOMKillerHeld(cgroup: $0) }
        case "kernelOOMKillerNotHeld": return try c.decodeIfPresent(KernelOOMHold.Unavailable.self, forKey: .unavailable).map { .kernelOOMKillerNotHeld($0) }
        case "readingWorksAgain":
            guard let reading = try c.decodeIfPresent(WatchedReading.self, forKey: .reading), let cause else { return nil }
            return .readingWorksAgain(reading, failure: cause)
        case "noSwap": return .noSwap
        case "overLimitNotKilled":
            guard let limit = try c.decodeIfPresent(PerAppLimit.self, forKey: .limit), let cause else { return nil }
            return .overLimitNotKilled(limit, cause: cause)
        default: return nil
        }
    }

    private static func policyFailure(_ word: String, _ c: KeyedDecodingContainer<Key>) throws -> PolicyFailure? {
        let cause = try c.decodeIfPresent(String.self, forKey: .cause)
        switch word {
        case "readingFailed":
            guard let reading = try c.decodeIfPresent(WatchedReading.self, forKey: .reading), let cause else { return nil }
            return .readingFailed(reading, failure: cause)
        case "pressureStreamEnded": return .pressureStreamEnded
        case "reportNotWritten":
            guard let episode = try c.decodeIfPresent(Int.self, forKey: .episode), let path = try c.decodeIfPresent(String.self, forKey: .path), let cause else {
                return nil
            }
            return .reportNotWritten(episode: episode, directory: path, cause: cause)
        default: return nil
        }
    }
}
