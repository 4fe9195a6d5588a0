import MemPressureLifecycle
import FoundationEssentials
import Glibc
import MemPressureLifecycleProtocol
import MemPressureSystem
import MemPressureMonitor
import MemPressureValues
import Testing
import MemPressureTestSupport

/// Any JSON value, to compare documents key by key.
enum JSONValue: Codable, Equatable {
    case null
    case bool(Bool)
    case number(Double)
    case string(String)
    case array([JSONValue])
    case object([String: JSONValue])

    init(from decoder: any Decoder) throws {
        let c = try decoder.singleValueContainer()
        if c.decodeNil() {
            self = .null
        } else if let b = try? c.decode(Bool.self) {
            self = .bool(b)
        } else if let n = try? c.decode(Double.self) {
            self = .number(n)
        } else if let s = try? c.decode(String.self) {
            self = .string(s)
        } else if let a = try? c.decode([JSONValue].self) {
            self = .array(a)
        } else {
            self = .object(try c.decode([String: JSONValue].self))
        }
    }

    func encode(to encoder: any Encoder) throws {
        var c = encoder.singleValueContainer()
        switch self {
        case .null: try c.encodeNil()
        case .bool(let b): try c.encode(b)
        case .number(let n): try c.encode(n)
        case .string(let s): try c.encode(s)
        case .array(let a): try c.encode(a)
        case .object(let o): try c.encode(o)
        }
    }

    var object: [String: JSONValue]? { if case .object(let o) = self { o } else { nil } }
}

/// The keys the log had before its payloads were typed: what a reader of the first format reads.
let firstFormatKeys: Set<String> = [
    "t", "app", "pid", "kind", "from", "to", "name", "detail", "stack", "reason", "rank", "policy", "footprintBytes", "reclaimedBytes", "bytes",
    "explanation",
]

func json(_ value: some Encodable) throws -> Data {
    let encoder = JSONEncoder()
    encoder.outputFormatting = [.sortedKeys]
    return try encoder.encode(value)
}

/// The events of a fixture log: a scenario log's `events`, or the admin socket's `result`.
func fixtureEvents(_ name: String) throws -> (raw: [JSONValue], typed: [SupervisorEvent]) {
    let data = try Fixtures.readFile(Fixtures.directory + "/events/" + name)
    struct ScenarioLog: Decodable { var events: [JSONValue] }
    struct AdminAnswer: Decodable { var result: [JSONValue] }
    let raw: [JSONValue]
    if name.hasPrefix("admin") {
        raw = try JSONDecoder().decode(AdminAnswer.self, from: data).result
    } else {
        raw = try JSONDecoder().decode(ScenarioLog.self, from: data).events
    }
    return (raw, try raw.map { try JSONDecoder().decode(SupervisorEvent.self, from: json($0)) })
}

@Suite("the event log's JSON")
struct EventFormatTests {
    @Test("logs written before the payloads were typed decode, every event into its typed case, and are written back with the same keys and words",
          arguments: ["scenario-log-format1.json", "admin-log-format1.json"])
    func firstFormatLogsDecode(_ file: String) throws {
        let (raw, events) = try fixtureEvents(file)
        #expect(!events.isEmpty)
        for (original, event) in zip(raw, events) {
            if case .unrecognized = event.payload { Issue.record("not read as a typed case: \(original)") }
            if case .error(.unclassified) = event.payload { Issue.record("an error whose step is not told: \(original)") }
            // Written again: every key and value of the first form is there as it was (the typed
            // keys beside them), and it reads back the same.
            let written = try JSONDecoder().decode(JSONValue.self, from: json(event))
            for (key, value) in original.object ?? [:] {
                #expect(written.object?[key] == value, "\(key) of \(original): \(String(describing: written.object?[key]))")
            }
            #expect(try JSONDecoder().decode(SupervisorEvent.self, from: json(event)) == event)
        }
    }

    @Test("the scenario log's events are the typed cases that happened")
    func scenarioLogCases() throws {
        let events = try fixtureEvents("scenario-log-format1.json").typed
        func has(_ app: String?, _ payload: SupervisorEvent.Payload) -> Bool { events.contains { $0.app == app && $0.payload == payload } }
        #expect(has("Missing", .error(.launch(cause: "cannot launch /nonexistent/program: no such file"))))
        #expect(has("Quitter", .exit(.exited(0), killReason: nil)))
        #expect(has("Quitter", .commandChanged(to: ["/bin/sh", "-c", "exit", "3"], from: ["/bin/true"])), "the first format split at spaces")
        #expect(has("Quitter", .crash(.exited(3), lastOutput: nil)))
        #expect(has("Crasher", .crash(.signaled(SIGSEGV), lastOutput: "the last words")))
        #expect(has("Helper", .exit(.signaled(SIGTERM), killReason: nil)))
        #expect(has("Helper", .forgotten(.asked)))
        #expect(events.contains { if case .task(.began(1, _, "uploadPhotos")) = $0.payload { $0.app == "Upload" } else { false } })
        #expect(has("Upload", .task(.expirationRequested(id: 1, name: "uploadPhotos"))))
        #expect(has("Upload", .expirationHandlerRan(task: 1)))
        #expect(events.contains {
            if case .crashReport(let r) = $0.payload { $0.app == "Upload" && r.task == 1 && r.taskName == "uploadPhotos" && r.limitSeconds == 4 && r.stack != nil } else { false }
        })
        #expect(has("Upload", .crash(.signaled(SIGKILL), lastOutput: nil)))
        #expect(has("Mail", .task(.ended(id: 1, name: "uploadPhotos"))))
        #expect(has("Photos", .notificationQueued(kind: "localeChanged")))
        #expect(has("Notes", .notificationDelivered(kind: "localeChanged")))
        #expect(has("Notes", .warning(.sent)) && has("Photos", .warning(.notSent(.suspended))))
        #expect(has("Notes", .callback(.didReceiveMemoryWarning)) && has("Notes", .ready(.inactive)))
        #expect(has(nil, .policy(.note(.noSwap))))
        #expect(events.contains { if case .policy(.softLimitWarning(let l)) = $0.payload { $0.app == "Notes" && l.limit == .active && l.limitBytes == 1 << 20 } else { false } })
        #expect(events.contains { if case .policy(.note(.kernelOOMKillerHeld)) = $0.payload { true } else { false } })
        #expect(events.contains { if case .policy(.note(.wokenBy(let heard, let polled, 0.25))) = $0.payload { heard.count == 2 && polled == ["MemAvailable (/proc/meminfo)"] } else { false } })
        #expect(events.contains { if case .pressureSource(let s) = $0.payload { s.name == "cgroup usage against its limit" && s.available && s.wakeup == .event } else { false } })
        #expect(events.contains { if case .pressureLevel(let c) = $0.payload { c.level == .warning && c.source == "cgroup usage against its limit" } else { false } })
        #expect(events.contains { if case .appCommand("allocate 150000000", let answer) = $0.payload { answer.hasPrefix("dirty ") } else { false } })
        let kills = events.compactMap { if case .policy(.kill(let k)) = $0.payload { ($0.app ?? "", k) } else { nil } }
        #expect(kills.map(\.0) == ["Photos", "Maps", "Mail"] && kills.allSatisfy { $0.1.reason == .vmPageShortage && $0.1.policy == "ios" && $0.1.rank == 1 })
        for (app, _) in kills { #expect(has(app, .exit(.signaled(SIGKILL), killReason: .vmPageShortage))) }
    }

    @Test("the admin log's impostor, flood and exits")
    func adminLogCases() throws {
        let events = try fixtureEvents("admin-log-format1.json").typed
        #expect(events.contains { if case .impostor(.controlConnection(let pid, 0)) = $0.payload { $0.pid == pid } else { false } })
        #expect(events.contains { $0.payload == .protocolFailure(.adminFlood(limit: 64)) })
        #expect(events.contains { $0.app == "W" && $0.payload == .warning(.notSent(.suspended)) })
        #expect(events.contains { $0.app == "S" && $0.payload == .launch(command: ["/bin/sleep", "300"]) })
    }

    /// One event of every case the supervisor and jetsam record, with values their words carry
    /// whole (sizes in whole MiB, arguments without spaces, no poll interval without a polled
    /// source).
    static let everyCase: [SupervisorEvent.Payload] = [
        .state(from: .suspended, to: .backgroundRunning), .callback(.didEnterBackground), .expirationHandlerRan(task: 3),
        .notificationDelivered(kind: "localeChanged"), .ready(.active), .launch(command: ["/bin/sleep", "60"]), .connected,
        .exit(.signaled(SIGKILL), killReason: .perProcessLimit), .exit(.exited(0), killReason: nil), .crash(.signaled(SIGSEGV), lastOutput: "bye\n"),
        .crash(.exited(3), lastOutput: nil), .othersEnded(count: 2), .warning(.sent), .warning(.notSent(.suspended)), .notificationQueued(kind: "k"),
        .warning(.signalled(SIGUSR1)), .warning(.signalled(40)), .warning(.commandRan(.exited(0))), .warning(.commandRan(.signaled(SIGKILL))),
        .warning(.notSent(.noneChosen)), .warning(.notSent(.noChannel)), .warning(.notSent(.exited)), .warning(.notSent(.commandNotStarted)),
        .error(.warningCommand(cause: "spawn /x: ENOENT")),
        .task(.began(id: 1, thread: 77, name: "upload")), .task(.ended(id: 1, name: "upload")), .task(.endedDuringCrashReport(name: "upload")),
        .task(.forgotten(count: 2)), .task(.expirationRequested(id: 1, name: "upload")),
        .crashReport(CrashReport(task: 1, taskName: "upload", limitSeconds: 30, stack: ["main", "upload"])),
        .crashReport(CrashReport(task: 2, taskName: "sync", limitSeconds: 2.5, stack: nil)),
        .error(.suspend(cause: "SIGSTOP: ESRCH")), .error(.resume(cause: "x")), .error(.stopNotSeen(stopped: true, seconds: 5)),
        .error(.stopNotSeen(stopped: false, seconds: 5)), .error(.kill(cause: "x")), .error(.launch(cause: "cannot launch /x: no such file")),
        .error(.noCallbacks(.channelFailed)), .error(.noCallbacks(.didNotConnect(seconds: 10))), .error(.callbackNotDelivered(.willTerminate)),
        .error(.callbackNotAcknowledged(.didFinishLaunching, .channelClosed)), .error(.callbackNotAcknowledged(.didBecomeActive, .timedOut(seconds: 5))),
        .error(.notReading(what: "expire")), .error(.command(.background, cause: "x")), .error(.othersRunOn(cause: "x")),
        .error(.runRecord(path: "/run/x/supervisor.lock", cause: "x")), .error(.abort(cause: "x")), .error(.connectionsNotClosed(count: 2)),
        .error(.adminAnswerThread(cause: "x")), .error(.adminConnectionsFull(limit: 64, refused: 1000)), .error(.letRun(cause: "thaw")),
        .error(.watchdog(cause: "w")), .error(.cgroupRemoval(cause: "rmdir")), .error(.oomScore(cause: "oom_score_adj 900: EACCES")), .error(.shutdown(cause: "s")),
        .impostor(.controlConnection(pid: 9, uid: 1000)), .impostor(.badHello), .impostor(.adminConnection(uid: 1000)),
        .protocolFailure(.channelClosed(.flood(limit: 1000))), .protocolFailure(.channelClosed(.protocolError(.lineTooLong(limit: 4096)))),
        .protocolFailure(.channelClosed(.protocolError(.unknownMessage("hi")))), .protocolFailure(.channelClosed(.secondHello)),
        .protocolFailure(.channelClosed(.badHello)), .protocolFailure(.channelClosed(.notReading)),
        .protocolFailure(.connectionReplaced), .protocolFailure(.adminFlood(limit: 64)), .protocolFailure(.adminIdle(seconds: 30)),
        .pressureLevel(PressureLevelChange(level: .critical, source: "psi", reading: "full avg10 12.50%")),
        .pressureSource(PressureSourceStatus(name: "psi", available: true, detail: "triggers", wakeup: .event)),
        .pressureSource(PressureSourceStatus(name: "MemAvailable", available: false, detail: "no file")),
        .pressureSourceChanged(PressureSourceStatus(name: "psi", available: true, detail: "triggers; note: cannot read it now")),
        .appCommand(command: "allocate 1048576", answer: "dirty 2097152"), .commandChanged(to: ["/bin/sleep", "63"], from: ["/bin/sleep", "61"]),
        .forgotten(.asked), .forgotten(.madeRoom(for: "D", limit: 3)), .recovered("removed cgroup /sys/fs/cgroup/memory/mempressure-1-2/A"),
        .policy(.kill(KillRecord(reason: .vmPageShortage, rank: 2, policy: "ios", footprintBytes: 1 << 30, reclaimedBytes: 1 << 29, explanation: "rank 2"))),
        .policy(.kill(KillRecord(
            reason: .perProcessLimit, rank: 1, policy: "lru", footprintBytes: 5, reclaimedBytes: 0, explanation: "over", stillExitingAfterSeconds: 2))),
        .policy(.freezeDry(FreezeDryRecord(writtenBytes: 3 << 20, residentBeforeBytes: 8 << 20, residentAfterBytes: 5 << 20))),
        .policy(.softLimitWarning(LimitRecord(limit: .active, footprintBytes: 30 << 20, limitBytes: 16 << 20))),
        .policy(.note(.wokenBy(events: ["a", "b"], polled: ["c"], pollInterval: 0.25))), .policy(.note(.wokenBy(events: [], polled: [], pollInterval: 0))),
        .policy(.note(.kernelOOMKillerHeld(cgroup: "/sys/fs/cgroup/memory/d"))), .policy(.note(.kernelOOMKillerNotHeld(.cgroupV2("/sys/fs/cgroup/d")))),
        .policy(.note(.readingWorksAgain(.memory, failure: "x"))), .policy(.note(.readingWorksAgain(.underOOM, failure: "y"))), .policy(.note(.noSwap)),
        .policy(.note(.overLimitNotKilled(.inactive, cause: "A is no longer pid 9"))),
        .policy(.failure(.readingFailed(.memory, failure: "x"))), .policy(.failure(.pressureStreamEnded)),
        .policy(.failure(.reportNotWritten(episode: 4, directory: "/r", cause: "x"))),
    ]

    @Test("every case is written and read back the same; and from its words alone (a log of the first format), the same too")
    func everyCaseRoundTrips() throws {
        for payload in Self.everyCase {
            let event = SupervisorEvent(t: 1.5, app: "A", pid: 9, payload)
            let written = try json(event)
            let writtenText = String(decoding: written, as: UTF8.self)
            #expect(try JSONDecoder().decode(SupervisorEvent.self, from: written) == event, "\(writtenText)")
            // The first form: only the keys a reader of it knows.
            guard case .object(let all) = try JSONDecoder().decode(JSONValue.self, from: written) else { continue }
            let first = JSONValue.object(all.filter { firstFormatKeys.contains($0.key) })
            let read = try JSONDecoder().decode(SupervisorEvent.self, from: json(first))
            // An error whose words are its cause alone does not tell its step.
            var expected = event
            if case .error(let fault) = payload, fault.description == fault.cause { expected.payload = .error(.unclassified(fault.description)) }
            let firstText = String(decoding: try json(first), as: UTF8.self)
            #expect(read == expected, "from \(firstText)")
        }
    }

    @Test("an event whose words this version does not know is kept as written, not refused")
    func unknownWords() throws {
        let text = #"{"t":2,"kind":"note","name":"mystery","detail":"something new"}"#
        let event = try JSONDecoder().decode(SupervisorEvent.self, from: Data(text.utf8))
        #expect(event.payload == .unrecognized(UnrecognizedEvent(kind: .note, name: "mystery", detail: "something new")))
        #expect(String(decoding: try json(event), as: UTF8.self) == #"{"detail":"something new","kind":"note","name":"mystery","t":2}"#)
        let error = try JSONDecoder().decode(SupervisorEvent.self, from: Data(#"{"t":2,"kind":"error","detail":"it broke"}"#.utf8))
        #expect(error.payload == .error(.unclassified("it broke")))
    }
}
