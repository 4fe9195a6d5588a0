import MemPressureLifecycle
import MemPressureLifecycleProtocol
import Glibc
import MemPressureSystem
import SystemPackage
import Testing
import MemPressureTestSupport
import MemPressureWorkloadProtocol

let workload = buildDirectory + "/mempressure-workload"

/// A small WorkloadApp: a few MiB of everything, its data in a directory of the test's own.
func workloadCommand(_ dir: TemporaryDirectory, _ extra: [String] = []) -> [String] {
    [workload, "--data-dir", dir.path, "--state-mb", "1", "--image-cache-mb", "2", "--image-kb", "256", "--backing-mb", "1", "--assets-mb", "1", "--decode-cost", "16"] + extra
}


/// The callbacks the app acknowledged, by name (a notification handled is "notification", an
/// expiration handler run "expirationHandler").
func callbacks(_ log: [SupervisorEvent], _ app: String = "A") -> [String] {
    log.filter { $0.app == app }.compactMap {
        switch $0.payload {
        case .callback(let c): c.rawValue
        case .notificationDelivered: "notification"
        case .expirationHandlerRan: "expirationHandler"
        default: nil
        }
    }
}

func states(_ log: [SupervisorEvent], _ app: String = "A") -> [String] {
    log.filter { $0.app == app && $0.kind == .state }.compactMap(\.to?.rawValue)
}

/// Reads /proc/PID/stat: the state letter and CPU ticks.
func procStat(_ pid: Int32) throws -> ProcessStat {
    let bytes = try ProcFS.readBytes("/proc/\(pid)/stat")
    return try bytes.withUnsafeBytes { try ProcessStat.parse($0, pid: pid) }
}

/// A minimal client written against the protocol alone (Python): acknowledges callbacks,
/// begins a background task that never ends on every didEnterBackground, answers expire,
/// report-stack and notifications, and exits with status 3 on the callback named by its argument.
let protocolClient = """
    import os, socket, sys, threading
    s = socket.socket(socket.AF_UNIX)
    s.connect(os.environ['MEMPRESSURE_SOCKET'])
    def send(line): s.sendall((line + '\\n').encode())
    send('hello 1 %s %s' % (os.environ['MEMPRESSURE_APP'], os.environ['MEMPRESSURE_TOKEN']))
    die_on = sys.argv[1] if len(sys.argv) > 1 else ''
    task = 0
    for line in s.makefile('r'):
        words = line.split()
        if words[0] == 'callback':
            if words[1] == die_on: os._exit(3)
            if words[1] == 'didEnterBackground':
                task += 1
                send('task-begin %d %d upload' % (task, threading.get_native_id()))
            send('ack ' + words[1])
        elif words[0] == 'expire': send('expired ' + words[1])
        elif words[0] == 'report-stack': send('stack-end')
        elif words[0] == 'notification': send('notified ' + words[1])
    """

func protocolClientCommand(dieOn callback: String = "") -> [String] {
    ["/usr/bin/env", "python3", "-c", protocolClient, callback]
}


@Suite("supervisor", .serialized)
struct SupervisorTests {
    @Test("each transition produces exactly the expected callbacks, in order")
    func transitions() async throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let s = try Supervisor(configuration: supervisorConfiguration())
        try await s.register(AppSpec(name: "A", command: workloadCommand(dir)))
        try await s.launch("A")
        #expect(try await s.state(of: "A") == .inactive)
        try await s.activate("A")
        try await s.waitForReady("A")
        try await s.deactivate("A")
        try await s.activate("A")
        try await s.background("A")
        #expect(try await s.state(of: "A") == .suspended)
        try await s.activate("A")
        try await s.waitForReady("A", count: 2)
        try await s.terminate("A")
        #expect(try await s.state(of: "A") == .notRunning)
        let log = await s.log
        await s.shutdown()
        #expect(callbacks(log) == [
            "didFinishLaunching", "didBecomeActive", "willResignActive", "didBecomeActive", "willResignActive",
            "didEnterBackground", "willEnterForeground", "didBecomeActive", "willTerminate",
        ])
        #expect(states(log) == [
            "inactive", "active", "inactive", "active", "inactive", "backgroundRunning", "suspended", "backgroundRunning",
            "inactive", "active", "notRunning",
        ])
        #expect(log.filter { $0.app == "A" && $0.kind == .ready }.count == 2)
        #expect(log.contains { $0.app == "A" && $0.kind == .exit })
        #expect(!log.contains { $0.kind == .crash || $0.kind == .error }, "\(log.filter { $0.kind == .error })")
    }

    @Test("the model app draws a frame at launch and on every resume with --frame-kb (a resume's fixed cost), none without; a return from inactive is not a resume")
    func framesOnLaunchAndResume() async throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let s = try Supervisor(configuration: supervisorConfiguration())
        try await withCleanup({ await s.shutdown() }) {
            try await s.register(AppSpec(name: "A", command: workloadCommand(dir, ["--frame-kb", "64"])))
            try await s.register(AppSpec(name: "B", command: workloadCommand(dir)))
            func frames(_ app: String) async throws -> UInt64 { try await WorkloadRequest.state.send { try await s.command(app, $0) }.frames }
            try await s.activate("A")
            try await s.waitForReady("A")
            #expect(try await frames("A") == 1, "one frame at launch")
            try await s.deactivate("A")
            try await s.activate("A")
            #expect(try await frames("A") == 1, "inactive and back is not a resume: no frame")
            for resume in 1...2 {
                try await s.background("A")
                try await s.activate("A")
                try await s.waitForReady("A", count: 1 + resume)
                #expect(try await frames("A") == UInt64(1 + resume), "a frame on resume \(resume)")
            }
            try await s.activate("B")
            try await s.waitForReady("B")
            try await s.background("B")
            try await s.activate("B")
            try await s.waitForReady("B", count: 2)
            #expect(try await frames("B") == 0, "no --frame-kb: no frame")
        }
    }

    @Test("a lazy relaunch builds the first screen before ready and the rest after; a lazy restore rebuilds the first screen before ready; eager ones build everything before")
    func lazyRelaunch() async throws {
        let lazyDir = try TemporaryDirectory(), eagerDir = try TemporaryDirectory()
        defer {
            lazyDir.remove()
            eagerDir.remove()
        }
        let s = try Supervisor(configuration: supervisorConfiguration())
        try await withCleanup({ await s.shutdown() }) {
            // 8 images, 1 backing store, 4 model chunks; the first screen is a quarter of each:
            // 2 images, 0 stores, 1 chunk.
            let shape = ["--model-mb", "4", "--first-screen", "0.25", "--trim", "1"]
            try await s.register(AppSpec(name: "L", command: workloadCommand(lazyDir, shape + ["--relaunch", "lazy", "--restore", "lazy"])))
            try await s.register(AppSpec(name: "E", command: workloadCommand(eagerDir, shape + ["--relaunch", "eager", "--restore", "eager"])))
            func restored(_ app: String) async throws -> WorkloadRebuild { try await WorkloadRequest.restored.send { try await s.command(app, $0) } }
            func counts(_ r: WorkloadRebuild) -> [Int] { [r.images, r.stores, r.modelChunks, r.beforeReady] }

            try await s.activate("L")
            try await s.waitForReady("L")
            #expect(counts(try await restored("L")) == [8, 1, 4, 3], "a lazy relaunch: the first screen (3) before ready, all built by the end")
            try await s.activate("E")
            try await s.waitForReady("E")
            #expect(counts(try await restored("E")) == [0, 0, 0, 0], "an eager relaunch built everything in didFinishLaunching: nothing after")

            for app in ["L", "E"] {
                try await s.background(app)
                try await s.activate(app)
                try await s.waitForReady(app, count: 2)
            }
            #expect(counts(try await restored("L")) == [8, 1, 4, 3], "a lazy restore after a full trim: the first screen before ready, the rest after")
            #expect(counts(try await restored("E")) == [8, 1, 4, 13], "an eager restore: everything before ready")
        }
    }

    @Test("a suspended app is stopped and uses no CPU; on resume it gets one coalesced notification per kind", arguments: [SuspendMethod.sigstop, .freezer])
    func suspension(method: SuspendMethod) async throws {
        if method == .freezer && !ProcFS.isFile("/sys/fs/cgroup/freezer/cgroup.procs") && !ProcFS.isFile("/sys/fs/cgroup/cgroup.controllers") {
            Issue.record("this machine has no cgroup freezer: the freezer case cannot run here")
            return
        }
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let s = try Supervisor(configuration: supervisorConfiguration { $0.suspendMethod = method })
        try await s.register(AppSpec(name: "A", command: workloadCommand(dir, ["--spin"])))
        try await s.register(AppSpec(name: "B", command: workloadCommand(dir, ["--spin"])))
        try await s.activate("A")
        try await s.activate("B")
        try await s.background("A")
        let pid = try #require(try await s.pid(of: "A"))
        let other = try #require(try await s.pid(of: "B"))
        let stopped = try procStat(pid)
        if method == .sigstop {
            #expect(stopped.isStopped, "SIGSTOP: state \(stopped.stateLetter)")
        }
        // Wait for the real event: the running app B spends at least 20 more ticks of CPU.
        let bStart = try procStat(other)
        let deadline = monotonicSeconds() + 30
        while try procStat(other).userTicks + procStat(other).systemTicks < bStart.userTicks + bStart.systemTicks + 20, monotonicSeconds() < deadline {
            sched_yield()
        }
        let after = try procStat(pid)
        #expect(after.userTicks + after.systemTicks == stopped.userTicks + stopped.systemTicks, "no CPU while suspended")
        #expect(try procStat(other).userTicks > bStart.userTicks, "while the running app's CPU time moved")

        try await s.notify(.app("A"), kind: "localeChanged", value: "fr_FR")
        try await s.notify(.app("A"), kind: "timeZoneChanged", value: "Europe/Paris")
        try await s.notify(.app("A"), kind: "localeChanged", value: "de_DE")
        try await s.activate("A")
        let log = await s.log
        await s.shutdown()
        let delivered = log.filter { $0.app == "A" }.compactMap { if case .notificationDelivered(let kind) = $0.payload { kind } else { nil } }
        #expect(delivered == ["localeChanged", "timeZoneChanged"], "one per kind, in the order they first happened")
        let afterResume = Array(callbacks(log).drop { $0 != "didEnterBackground" }.dropFirst())
        #expect(afterResume == ["notification", "notification", "willEnterForeground", "didBecomeActive"])
        #expect(log.filter { $0.app == "A" && $0.kind == .notification }.map(\.payload) == [
            .notificationQueued(kind: "localeChanged"), .notificationQueued(kind: "timeZoneChanged"), .notificationQueued(kind: "localeChanged"),
        ], "each queued while suspended")
    }

    @Test("a background task that overruns: expiration handler first, then termination with a crash report naming the function")
    func overrun() async throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let s = try Supervisor(configuration: supervisorConfiguration {
            $0.backgroundTaskLimit = 2
            $0.expirationWarning = 1
        })
        try await s.register(AppSpec(name: "A", command: workloadCommand(dir, ["--background-task", "60", "--ignore-expiration"])))
        try await s.activate("A")
        try await s.background("A")
        #expect(try await s.state(of: "A") == .notRunning)
        let log = await s.log
        await s.shutdown()
        let events = log.filter { $0.app == "A" }.map(\.payload)
        let expire = try #require(events.firstIndex { if case .task(.expirationRequested(1, "uploadPhotos")) = $0 { true } else { false } })
        let handler = try #require(events.firstIndex(of: .expirationHandlerRan(task: 1)))
        let report = try #require(events.firstIndex { if case .crashReport = $0 { true } else { false } })
        #expect(expire < handler && handler < report, "\(events)")
        guard case .crashReport(let crash) = events[report] else { return }
        #expect(crash.task == 1 && crash.taskName == "uploadPhotos" && crash.limitSeconds == 2)
        let stack = try #require(crash.stack, "the crash report carries the task thread's stack")
        #expect(stack.contains { $0.contains("uploadPhotos") }, "\(stack)")
        #expect(log.contains { $0.app == "A" && $0.kind == .crash })
    }

    @Test("a background task that ends in time lets the app suspend")
    func taskInTime() async throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let s = try Supervisor(configuration: supervisorConfiguration { $0.backgroundTaskLimit = 20 })
        try await s.register(AppSpec(name: "A", command: workloadCommand(dir, ["--background-task", "0.3"])))
        try await s.activate("A")
        try await s.background("A")
        #expect(try await s.state(of: "A") == .suspended)
        let log = await s.log
        await s.shutdown()
        #expect(log.contains { $0.payload == .task(.ended(id: 1, name: "uploadPhotos")) })
        #expect(!log.contains { $0.kind == .crashReport })
    }

    @Test("memory warnings reach running apps and never suspended ones")
    func warnings() async throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let s = try Supervisor(configuration: supervisorConfiguration())
        try await s.register(AppSpec(name: "A", command: workloadCommand(dir)))
        try await s.register(AppSpec(name: "B", command: workloadCommand(dir)))
        try await s.activate("A")
        try await s.activate("B")
        try await s.background("B")
        await s.warn(.all)
        try await s.activate("B")
        let log = await s.log
        await s.shutdown()
        #expect(callbacks(log, "A").filter { $0 == "didReceiveMemoryWarning" }.count == 1)
        #expect(!callbacks(log, "B").contains("didReceiveMemoryWarning"), "not while suspended, nor queued for resume")
        #expect(log.contains { $0.app == "B" && $0.payload == .warning(.notSent(.suspended)) })
    }

    @Test("programs without the client library are supervised without callbacks")
    func plainProgram() async throws {
        let s = try Supervisor(configuration: supervisorConfiguration())
        try await s.register(AppSpec(name: "P", command: ["/bin/sleep", "60"], client: false))
        try await s.activate("P")
        try await s.background("P")
        let pid = try #require(try await s.pid(of: "P"))
        #expect(try procStat(pid).isStopped)
        try await s.terminate("P")
        let log = await s.log
        await s.shutdown()
        #expect(callbacks(log, "P").isEmpty)
        #expect(states(log, "P") == ["inactive", "active", "inactive", "backgroundRunning", "suspended", "notRunning"])
    }

    @Test("bad apps are reported and affect only themselves: missing, crashing, garbage, flood, impostor")
    func badApps() async throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let s = try Supervisor(configuration: supervisorConfiguration { $0.connectTimeout = 5 })
        try await s.register(AppSpec(name: "missing", command: ["/nonexistent/program"]))
        try await s.register(AppSpec(name: "crasher", command: ["/bin/sh", "-c", "kill -SEGV $$"]))
        let garbage = "import os, socket, time; s = socket.socket(socket.AF_UNIX); s.connect(os.environ['MEMPRESSURE_SOCKET']); s.sendall(b'\\xff\\xfe garbage\\n'); s.recv(10); time.sleep(60)"
        try await s.register(AppSpec(name: "garbage", command: ["/usr/bin/env", "python3", "-c", garbage]))
        let flood = "import os, socket, time; s = socket.socket(socket.AF_UNIX); s.connect(os.environ['MEMPRESSURE_SOCKET']); s.sendall(b'hello 1 flood ' + os.environ['MEMPRESSURE_TOKEN'].encode() + b'\\n' + b'ready\\n' * 100000); s.recv(10); time.sleep(60)"
        try await s.register(AppSpec(name: "flood", command: ["/usr/bin/env", "python3", "-c", flood]))
        try await s.register(AppSpec(name: "good", command: workloadCommand(dir)))

        await #expect(throws: SupervisorError.self) { try await s.launch("missing") }
        await #expect(throws: SupervisorError.self) { try await s.launch("crasher") }
        try await s.launch("garbage")
        try await s.launch("flood")

        // An impostor: this test process connects to the socket.
        let impostor = try UnixSocket.connect(to: await s.socketPath)
        do {
            try impostor.sendAll(Array("hello 1 good faketoken\n".utf8))
        } catch {
            // The supervisor closes a connection from a process it did not launch as soon as it
            // accepts it: the hello may find the connection already closed.
            guard error.errno == .brokenPipe || error.errno == .connectionReset else { throw error }
        }
        var byte: UInt8 = 0
        #expect(recv(impostor.descriptor, &byte, 1, 0) <= 0, "the supervisor closes an impostor's connection")
        impostor.close()

        // The supervisor still works for a good app.
        try await s.activate("good")
        try await s.waitForReady("good")
        try await s.terminate("good")
        let log = await s.log
        await s.shutdown()
        #expect(log.contains { if case .error(.launch) = $0.payload { $0.app == "missing" } else { false } })
        #expect(log.contains { if case .crash(.signaled(SIGSEGV), _) = $0.payload { $0.app == "crasher" } else { false } })
        #expect(log.contains { if case .protocolFailure(.channelClosed(.protocolError)) = $0.payload { $0.app == "garbage" } else { false } })
        #expect(log.contains { $0.app == "flood" && $0.payload == .protocolFailure(.channelClosed(.flood(limit: 1000))) })
        #expect(log.contains { if case .impostor(.controlConnection(getpid(), getuid())) = $0.payload { $0.pid == getpid() } else { false } })
        #expect(callbacks(log, "good") == ["didFinishLaunching", "didBecomeActive", "willTerminate"])
    }

    @Test("an app that exits during a callback fails the command and is left not running", arguments: ["didFinishLaunching", "didBecomeActive", "willEnterForeground"])
    func exitDuringCallback(callback: String) async throws {
        let s = try Supervisor(configuration: supervisorConfiguration())
        try await s.register(AppSpec(name: "A", command: protocolClientCommand(dieOn: callback)))
        if callback == "willEnterForeground" {
            // Foreground, then background with a task (so it stays backgroundRunning), then back.
            try await s.activate("A")
            let background = Task { try await s.background("A") }
            try await s.waitForState("A", .backgroundRunning, timeout: 20)
            await #expect(throws: SupervisorError.self) { try await s.activate("A") }
            try await background.value
        } else {
            await #expect(throws: SupervisorError.self) { try await s.activate("A") }
        }
        #expect(try await s.state(of: "A") == .notRunning)
        #expect(try await s.pid(of: "A") == nil)
        let log = await s.log
        await s.shutdown()
        #expect(states(log).last == "notRunning", "\(states(log))")
        #expect(!states(log).contains("active") || callback == "willEnterForeground")
        #expect(log.contains { if case .crash(.exited(3), _) = $0.payload { $0.app == "A" } else { false } })
    }

    @Test("each stay in the background has its own task limit: a timer of an earlier stay does not apply")
    func backgroundPeriods() async throws {
        let limit = 3.0
        let s = try Supervisor(configuration: supervisorConfiguration {
            $0.backgroundTaskLimit = limit
            $0.expirationWarning = 2.5  // expire 0.5 s after entering the background
        })
        try await s.register(AppSpec(name: "A", command: protocolClientCommand()))
        try await s.activate("A")
        let events = await s.logStream()
        // First stay: wait for its expiration request (a real event), then come back.
        let firstStay = Task { try await s.background("A") }
        let expired = await first(of: events, within: 20) { $0.app == "A" && $0.kind == .expire }
        #expect(expired != nil)
        try await s.activate("A")
        try await firstStay.value
        #expect(try await s.state(of: "A") == .active)
        // Second stay: the task never ends, so the limit takes the app down, counted from now.
        try await s.background("A")
        #expect(try await s.state(of: "A") == .notRunning)
        let log = await s.log
        await s.shutdown()
        let entries = log.filter { $0.app == "A" && $0.kind == .state && $0.to == .backgroundRunning }
        #expect(entries.count == 2)
        let report = try #require(log.first { $0.app == "A" && $0.kind == .crashReport })
        let secondEntry = try #require(entries.last)
        #expect(report.t - secondEntry.t >= limit, "killed \(report.t - secondEntry.t) s into the second stay")
        #expect(report.stack == [], "the client answered report-stack with no frames")
    }

    @Test("notification values are made safe for the line protocol: no control bytes, at most 1 KiB")
    func notificationValues() async throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let s = try Supervisor(configuration: supervisorConfiguration())
        try await s.register(AppSpec(name: "A", command: workloadCommand(dir)))
        try await s.activate("A")
        let value = "fr_FR\u{0}\n\r\u{7}" + String(repeating: "é", count: 3000)
        try await s.notify(.app("A"), kind: "localeChanged", value: value)
        try await s.notify(.app("A"), kind: "timeZoneChanged", value: "Europe/Paris")
        let log = await s.log
        #expect(callbacks(log).filter { $0 == "notification" }.count == 2, "the app took both and kept its channel")
        #expect(!log.contains { $0.kind == .`protocol` || $0.kind == .error }, "\(log.filter { $0.kind == .`protocol` || $0.kind == .error })")
        try await s.terminate("A")
        await s.shutdown()
    }

    /// A client of the supervisor's admin socket whose reads give up after 30 s.
    private func adminClient(_ s: Supervisor) async throws -> UnixSocket {
        let connection = try UnixSocket.connect(to: try #require(await s.adminSocketPath))
        var timeout = timeval(tv_sec: 30, tv_usec: 0)
        setsockopt(connection.descriptor, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        return connection
    }

    @Test("a client still connected at shutdown is disconnected and its close handled, not left to the timeout")
    func adminClientOpenAtShutdown() async throws {
        let s = try Supervisor(configuration: supervisorConfiguration())
        try await s.serveAdmin()
        let connection = try await adminClient(s)
        defer { connection.close() }
        try connection.sendAll(Array((#"{"command":"status"}"# + "\n").utf8))
        // The answer says the supervisor holds the connection; the client keeps it open.
        let answered = await withCheckedContinuation { continuation in
            TestThread.detached {
                var buffer = [UInt8](repeating: 0, count: 4096)
                let n = buffer.withUnsafeMutableBytes { raw in
                    do {
                        return try connection.read(into: raw)
                    } catch {
                        return 0  // the receive timeout or an error: no answer (the expectation fails)
                    }
                }
                continuation.resume(returning: n > 0)
            }
        }
        #expect(answered)
        await s.shutdown()
        let leftovers = await s.leftovers
        #expect(leftovers.isEmpty, "\(leftovers)")
        let log = await s.log
        #expect(!log.contains { $0.kind == .error }, "\(log.filter { $0.kind == .error })")
    }

    @Test("the admin socket answers pipelined requests in order, and after the client stops sending")
    func adminPipelining() async throws {
        let s = try Supervisor(configuration: supervisorConfiguration())
        try await s.serveAdmin()
        let connection = try await adminClient(s)
        defer { connection.close() }
        let requests = #"{"command":"status"}"# + "\nnot json\n" + #"{"command":"activate","app":"nobody"}"# + "\n" + #"{"command":"apps"}"# + "\n"
        try connection.sendAll(Array(requests.utf8))
        shutdown(connection.descriptor, Int32(SHUT_WR))  // done sending: the answers must still come
        let answers = await withCheckedContinuation { continuation in
            TestThread.detached {
                var bytes: [UInt8] = []
                var buffer = [UInt8](repeating: 0, count: 4096)
                while true {
                    let n = buffer.withUnsafeMutableBytes { raw in
                        do {
                            return try connection.read(into: raw)
                        } catch {
                            return 0  // the receive timeout: no more answers
                        }
                    }
                    if n == 0 { break }
                    bytes += buffer[0..<n]
                }
                continuation.resume(returning: String(decoding: bytes, as: UTF8.self))
            }
        }
        await s.shutdown()
        let lines = answers.split(separator: "\n")
        try #require(lines.count == 4, "\(answers)")
        #expect(lines[0].hasPrefix(#"{"ok":true"#) && lines[0].contains("runtimeDirectory"))
        #expect(lines[1].hasPrefix(#"{"error":"not a request"#) && lines[1].contains(#""errorCode":"notARequest""#))
        #expect(lines[2] == #"{"error":"no app named nobody","errorCode":"noSuchApp","ok":false}"#)
        #expect(lines[3] == #"{"ok":true,"result":[]}"#)
    }

    @Test("the admin socket says which failure it is: a client tells an app that is gone from one in the wrong state")
    func adminErrorCodes() async throws {
        let s = try Supervisor(configuration: supervisorConfiguration())
        try await s.serveAdmin()
        let directory = await s.runtimeDirectory
        try await s.register(AppSpec(name: "P", command: ["/bin/sleep", "60"], client: false))
        try await s.register(AppSpec(name: "crasher", command: ["/bin/sh", "-c", "kill -SEGV $$"]))
        let cases: [(AdminRequest, AdminErrorCode, String)] = [
            (.perform(.activate("nobody")), .noSuchApp, "no app named nobody"),
            (.perform(.deactivate("P")), .wrongState, "P is not active (notRunning)"),
            (.perform(.launch("crasher", registering: nil)), .exited, "crasher exited during launch: killed by signal 11 (SIGSEGV)"),
            (.perform(.wait(seconds: -1)), .invalidCommand, "wait must be a non-negative number of seconds"),
            (.perform(.notify(.all, kind: "two words", value: "")), .invalidNotificationKind, "notification kind must be a word: 'two words'"),
        ]
        for (request, code, message) in cases {
            switch await adminCall(request, directory: directory) {
            case .failure(.refused(let refusedCode, let refusedMessage)):
                #expect(refusedCode == code, "\(request)")
                #expect(refusedMessage == message)
            case let other:
                Issue.record("\(request): \(other)")
            }
        }
        await s.shutdown()
    }

    @Test("no command starts once shutdown begins: one waiting for the app's lock is refused when it gets it, later ones at once, and nothing is launched")
    func noCommandAfterShutdownBegins() async throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let gate = "\(dir.path)/gate"
        try #require(mkfifo(gate, 0o600) == 0)
        let s = try Supervisor(configuration: supervisorConfiguration { $0.callbackTimeout = 60 })
        try await s.serveAdmin()
        let directory = await s.runtimeDirectory
        try await s.register(AppSpec(name: "A", command: workloadCommand(dir, ["--background-gate", gate])))
        try await s.register(AppSpec(name: "B", command: ["/bin/sleep", "60"], client: false))
        try await s.activate("A")
        // A goes to the background and stops inside didEnterBackground, at its gate: the
        // command holds A's lock.
        let backgrounding = Task { try await s.background("A") }
        try await s.waitForState("A", .backgroundRunning, timeout: 20)
        // A relaunch given before shutdown waits for the lock...
        let relaunch = Task { try await s.relaunch("A") }
        #expect(await s.waitForQueuedCommands("A", count: 1, timeout: 20))
        // ... and shutdown begins: its terminate of A queues behind the relaunch.
        let shutdown = Task { await s.shutdown() }
        #expect(await s.waitForQueuedCommands("A", count: 2, timeout: 20))
        // A command given now is refused at once, through the API and the admin socket.
        await #expect(throws: SupervisorError.shuttingDown(refused: .activate, app: "B")) { try await s.activate("B") }
        await #expect(throws: SupervisorError.shuttingDown(refused: .launch, app: "C")) {
            try await s.perform(.launch("C", registering: AppSpec(name: "C", command: ["/bin/sleep", "60"], client: false)))
        }
        switch await adminCall(.perform(.launch("B", registering: nil)), directory: directory) {
        case .failure(.refused(let code, let message)):
            #expect(code == .shuttingDown)
            #expect(message == "the supervisor is shutting down: launch B refused")
        case let other:
            Issue.record("admin launch during shutdown: \(other)")
        }
        // The gate opens (O_RDWR: the byte waits in the FIFO if A has not opened it yet): the
        // background command goes on, the relaunch gets the lock and is refused.
        let fd = open(gate, O_RDWR | O_CLOEXEC)
        try #require(fd >= 0)
        defer { close(fd) }
        var byte: UInt8 = 1
        #expect(write(fd, &byte, 1) == 1)
        await #expect(throws: SupervisorError.shuttingDown(refused: .relaunch, app: "A")) { try await relaunch.value }
        try await backgrounding.value
        await shutdown.value
        let log = await s.log
        #expect(log.filter { $0.kind == .launch }.map(\.app) == ["A"], "nothing launched once shutdown began")
        #expect(log.contains { $0.app == "A" && $0.payload == .callback(.willTerminate) }, "the shutdown's own terminate ran")
        #expect(!(await s.isRegistered("C")))
        #expect(try await s.pid(of: "A") == nil)
        #expect(try await s.pid(of: "B") == nil)
    }

    @Test("an app killed in the background and launched again is not seen as backgrounded")
    func backgroundedEndsWithTheRun() async throws {
        let s = try Supervisor(configuration: supervisorConfiguration())
        try await s.register(AppSpec(name: "P", command: ["/bin/sleep", "60"], client: false))
        try await s.activate("P")
        try await s.background("P")
        let suspended = try #require(await s.view(of: "P"))
        #expect(suspended.state == .suspended && suspended.secondsSinceBackgrounded != nil)
        let pid = try #require(suspended.pid)
        _ = try await s.kill("P", pid: pid, reason: .vmPageShortage)
        #expect(await s.waitForExit("P", pid: pid, timeout: 10))
        #expect(await s.view(of: "P")?.secondsSinceBackgrounded == nil, "not running: in no stay in the background")
        try await s.activate("P")
        let active = try #require(await s.view(of: "P"))
        #expect(active.state == .active && active.pid != pid)
        #expect(active.secondsSinceBackgrounded == nil, "the new run was never in the background")
        await s.shutdown()
    }

    @Test("a stream's consumer that stops reading is forgotten; after shutdown the log and samples streams end")
    func streamConsumers() async throws {
        let s = try Supervisor(configuration: supervisorConfiguration())
        try await s.register(AppSpec(name: "P", command: ["/bin/sleep", "60"], client: false))
        let log = await s.logStream()
        let samples = await s.samples()
        let readers = [Task { for await _ in log {} }, Task { for await _ in samples {} }]
        #expect(s.streamConsumers.log == 1 && s.streamConsumers.samples == 1)
        for reader in readers {
            reader.cancel()
            await reader.value
        }
        #expect(s.streamConsumers.log == 0 && s.streamConsumers.samples == 0, "cancelled readers are forgotten")
        try await s.activate("P")
        await s.shutdown()
        // After shutdown: the log so far, then the end.
        let events = await s.log
        #expect(events.contains { $0.app == "P" && $0.kind == .launch })
        let replayed = await collect(await s.logStream(replaying: true), within: 10)
        #expect(replayed == events, "the replayed log, then the end of the stream")
        #expect(await collect(await s.logStream(), within: 10) == [])
        #expect(await collect(await s.samples(), within: 10) == [])
        #expect(s.streamConsumers.log == 0 && s.streamConsumers.samples == 0)
    }

    @Test("a page-out advises the app's anonymous memory through its pidfd, and only in the state asked for")
    func pageOut() async throws {
        let s = try Supervisor(configuration: supervisorConfiguration())
        try await s.register(AppSpec(name: "P", command: ["/bin/sleep", "60"], client: false))
        try await s.activate("P")
        let pid = try #require(try await s.pid(of: "P"))
        await #expect(throws: SupervisorError.wrongState(app: "P", state: .active, operation: .pageOut)) { try await s.pageOut("P", pid: pid) }
        try await s.background("P")
        // Without swap the anonymous pages stay, but the advice is given (process_madvise).
        let result = try await s.pageOut("P", pid: pid)
        #expect(result.advisedBytes > 0)
        await #expect(throws: SupervisorError.staleTarget(app: "P", expectedPID: pid + 1, currentPID: pid)) { try await s.pageOut("P", pid: pid + 1) }
        await s.shutdown()
    }

    @Test("a cgroup the machine does not let us create is a clear error")
    func cgroupRefused() async throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        #expect(throws: SupervisorError.self) {
            try Supervisor(configuration: supervisorConfiguration {
                $0.budgetBytes = 64 << 20
                $0.cgroupRoot = dir.path  // not a cgroup file system
            })
        }
    }

    @Test("a PID reused after an app exits is never signalled", .enabled(if: getuid() == 0 && ProcFS.isFile("/proc/sys/kernel/ns_last_pid"), "needs root to choose the next PID"))
    func pidReuse() async throws {
        let s = try Supervisor(configuration: supervisorConfiguration())
        try await s.register(AppSpec(name: "short", command: ["/bin/sleep", "60"], client: false))
        try await s.activate("short")
        let oldPID = try #require(try await s.pid(of: "short"))
        try await s.background("short")  // stopped
        // Kill it behind the supervisor's back (a crash) and let the supervisor reap it.
        #expect(kill(oldPID, SIGKILL) == 0)
        try await s.waitForState("short", .notRunning, timeout: 10)
        // Start another process on the same PID.
        var reused: Int32 = 0
        var other: TestChild?
        for _ in 0..<20 where reused != oldPID {
            try ProcFS.writeFileInPlace("/proc/sys/kernel/ns_last_pid", Array("\(oldPID - 1)".utf8))
            other = try TestChild(["/bin/sleep", "60"])
            reused = other!.pid
            if reused != oldPID { other!.kill() }
        }
        try #require(reused == oldPID, "could not place a process on PID \(oldPID)")
        // Every way the supervisor could signal the old app: none reaches the new process.
        try await s.terminate("short")
        await s.warn(.all)
        #expect(try procStat(reused).state != UInt8(ascii: "Z"), "still alive")
        #expect(!(try procStat(reused).isStopped))
        other!.kill()
        await s.shutdown()
    }
}

/// One request over the supervisor's real admin socket, through `AdminClient` (which blocks: it
/// runs on a thread of its own).
func adminCall(_ request: AdminRequest, directory: String) async -> Result<LifecycleState?, AdminClient.Failure> {
    await withCheckedContinuation { continuation in
        TestThread.detached {
            continuation.resume(returning: Result { () throws(AdminClient.Failure) in
                try AdminClient.call(request, as: LifecycleState.self, directory: directory)
            })
        }
    }
}

/// A child process of the test, started with posix_spawn and reaped by `kill()`.
struct TestChild {
    let pid: Int32

    init(_ command: [String]) throws {
        var pid: pid_t = 0
        let argv = command.map { strdup($0) } + [nil]
        defer { for p in argv { free(p) } }
        let rc = posix_spawn(&pid, command[0], nil, nil, argv, environ)
        guard rc == 0 else { throw TestFailure("posix_spawn: \(rc)") }
        self.pid = pid
    }

    func kill() {
        Glibc.kill(pid, SIGKILL)  // our own child
        var status: Int32 = 0
        waitpid(pid, &status, 0)
    }
}
