import MemPressureLifecycle
import FoundationEssentials
import Glibc
import MemPressureLifecycleProtocol
import MemPressureSystem
import MemPressureScenarios
import SystemPackage
import Testing
import MemPressureTestSupport

/// A fake admin server (Python) that drops to uid 65534 ("nobody") before it binds `path`, or
/// after (in a directory of root's: SO_PEERCRED names whoever called listen()), listens,
/// accepts one connection and prints how many bytes it received before the client closed it.
let fakeServer = """
    import os, socket, sys
    path, when = sys.argv[1], sys.argv[2]
    def drop(): os.setgid(65534); os.setuid(65534)
    s = socket.socket(socket.AF_UNIX)
    if when == 'before-bind': drop()
    s.bind(path)
    if when == 'before-listen': drop()
    s.listen(4)
    print('listening', flush=True)
    c, _ = s.accept()
    n = 0
    while True:
        b = c.recv(65536)
        if not b: break
        n += len(b)
    print('received %d' % n, flush=True)
    """

/// Runs the fake server as a child, with its standard output on a pipe.
final class FakeServer: @unchecked Sendable {
    let pid: Int32
    let output: Int32

    init(path: String, dropBeforeBind: Bool) throws {
        var fds: [Int32] = [0, 0]
        guard pipe(&fds) == 0 else { throw TestFailure("pipe: errno \(errno)") }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_adddup2(&actions, fds[1], 1)
        posix_spawn_file_actions_addclose(&actions, fds[0])
        let args: [String] = ["/usr/bin/env", "python3", "-c", fakeServer, path, dropBeforeBind ? "before-bind" : "before-listen"]
        let argv: [UnsafeMutablePointer<CChar>?] = args.map { strdup($0) } + [nil]
        defer { for p in argv { free(p) } }
        var pid: pid_t = 0
        let rc = posix_spawn(&pid, "/usr/bin/env", &actions, nil, argv, environ)
        close(fds[1])
        guard rc == 0 else {
            close(fds[0])
            throw TestFailure("posix_spawn: \(rc)")
        }
        self.pid = pid
        output = fds[0]
    }

    /// The next line it prints (blocking; the server prints before it waits).
    func line() -> String {
        var bytes: [UInt8] = []
        var b: UInt8 = 0
        while read(output, &b, 1) == 1, b != 0x0a { bytes.append(b) }
        return String(decoding: bytes, as: UTF8.self)
    }

    /// Kills (our own child) and reaps it.
    func stop() {
        do {
            try ChildSignals.send(SIGKILL, to: pid)
        } catch let error as SystemCallError where error.errno == .noSuchProcess {
            // Exited already: only the reaping is left.
        } catch {
            Issue.record("cannot kill the fake server (pid \(pid)): \(error)")
        }
        var status: Int32 = 0
        _ = waitpid(pid, &status, 0)
        close(output)
    }
}

func adminSend(_ request: AdminRequest, directory: String, timeout: Double? = nil) async -> Result<[UInt8], AdminClient.Failure> {
    await withCheckedContinuation { continuation in
        TestThread.detached {
            continuation.resume(returning: Result { () throws(AdminClient.Failure) in
                try AdminClient.send(request, directory: directory, timeout: timeout)
            })
        }
    }
}

func threadCount() throws -> Int {
    let text = String(decoding: try ProcFS.readBytes("/proc/self/status"), as: UTF8.self)
    guard let line = text.split(separator: "\n").first(where: { $0.hasPrefix("Threads:") }),
        let n = Int(line.dropFirst("Threads:".count).filter { $0 != " " && $0 != "\t" })
    else { throw TestFailure("no Threads line in /proc/self/status") }
    return n
}

@Suite("hostile input and a hostile machine: directory, sockets, names", .serialized)
struct HostileTests {
    @Test("a runtime directory given as a symbolic link is refused, and its target's mode is unchanged")
    func symlinkedDirectoryRefused() async throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let target = "\(dir.path)/target"
        let link = "\(dir.path)/link"
        try #require(mkdir(target, 0o755) == 0)
        try #require(chmod(target, 0o755) == 0)
        try #require(symlink(target, link) == 0)
        do {
            let s = try Supervisor(configuration: supervisorConfiguration { $0.runtimeDirectory = link })
            await s.shutdown()
            Issue.record("a supervisor started in a symlinked directory")
        } catch {
            #expect("\(error)" == "\(link) is a symbolic link or not a directory: refused as a runtime directory")
        }
        var st = stat()
        try #require(stat(target, &st) == 0)
        #expect(st.st_mode & 0o7777 == 0o755, "the target's mode was changed to \(String(st.st_mode & 0o7777, radix: 8))")
        #expect(try ProcFS.listDirectory(target).isEmpty)
        // A directory others may write in is refused as well, and not changed.
        let open = "\(dir.path)/open"
        try #require(mkdir(open, 0o700) == 0 && chmod(open, 0o777) == 0)
        #expect(throws: SupervisorError.self) { try Supervisor(configuration: supervisorConfiguration { $0.runtimeDirectory = open }) }
        try #require(stat(open, &st) == 0)
        #expect(st.st_mode & 0o7777 == 0o777)
    }

    @Test("the client refuses a socket served by another user before it sends anything", arguments: [false, true])
    func impostorServerRefused(directoryOfNobody: Bool) async throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let runtime = "\(dir.path)/rt"
        try #require(mkdir(runtime, 0o700) == 0)
        // Either the directory is nobody's (and so is the server), or the directory is ours and
        // only the server runs as nobody (bound as root, listening as nobody: SO_PEERCRED).
        if directoryOfNobody { try #require(chown(runtime, 65534, 65534) == 0 && chmod(dir.path, 0o755) == 0) }
        let server = try FakeServer(path: "\(runtime)/admin.sock", dropBeforeBind: directoryOfNobody)
        defer { server.stop() }
        guard server.line() == "listening" else {
            Issue.record("the fake server did not start (python3 and setuid to 65534 are needed)")
            return
        }
        let result = await adminSend(.perform(.launch("A", registering: AppSpec(name: "A", command: ["/bin/secret", "--password", "hunter2"]))), directory: runtime)
        switch result {
        case .failure(.untrustedDirectory(let refusal)) where directoryOfNobody:
            #expect("\(refusal)" == "\(runtime) belongs to uid 65534, not this user (uid 0) or root: refused as a runtime directory")
            // The server was never connected to: nothing to compare, it still waits.
        case .failure(.untrustedServer(let path, let uid, _)) where !directoryOfNobody:
            #expect(path == "\(runtime)/admin.sock" && uid == 65534)
            #expect(server.line() == "received 0", "the client sent nothing to the impostor")
        case let other:
            Issue.record("the client trusted a server of uid 65534: \(other)")
        }
    }

    @Test("the client times out against a server that accepts but never answers")
    func clientTimesOut() async throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let listener = try UnixSocket.listen(at: "\(dir.path)/admin.sock")
        defer { listener.close() }
        let result = await within(60) { await adminSend(.apps, directory: dir.path, timeout: 0.5) }
        switch result {
        case .failure(.timedOut(let path, let seconds))?:
            #expect(path == "\(dir.path)/admin.sock" && seconds == 0.5)
        case let other:
            Issue.record("expected a timeout: \(String(describing: other))")
        }
    }

    @Test("admin connections beyond the cap get a one-line refusal; the threads stay bounded; an idle one is closed")
    func adminConnectionsCapped() async throws {
        let s = try Supervisor(configuration: supervisorConfiguration { $0.adminIdleTimeout = 2 })
        try await s.serveAdmin()
        let path = try #require(await s.adminSocketPath)
        let before = try threadCount()
        var opened: [UnixSocket] = []
        let total = 300
        for _ in 0..<total { opened.append(try UnixSocket.connect(to: path, timeout: 10)) }
        let connections = opened
        defer { for c in connections { c.close() } }
        // Every connection beyond the 64 the supervisor serves gets one line, then EOF.
        let refused = await within(60) { () -> Int? in
            await withCheckedContinuation { continuation in
                TestThread.detached {
                    var fds = connections.map { pollfd(fd: $0.descriptor, events: Int16(POLLIN), revents: 0) }
                    var answers = 0
                    var done = Set<Int32>()
                    while answers < total - 64 {
                        guard poll(&fds, nfds_t(fds.count), 30_000) > 0 else { break }
                        for i in fds.indices where fds[i].revents != 0 && !done.contains(fds[i].fd) {
                            var buffer = [UInt8](repeating: 0, count: 4096)
                            let n = read(fds[i].fd, &buffer, buffer.count)
                            if n > 0, String(decoding: buffer[0..<n], as: UTF8.self).contains(#""errorCode":"tooManyConnections""#) { answers += 1 }
                            done.insert(fds[i].fd)
                            fds[i].events = 0
                        }
                    }
                    continuation.resume(returning: answers)
                }
            }
        }
        #expect(refused == total - 64)
        let during = try threadCount()
        #expect(during - before <= 64 + 16, "\(during - before) more threads for \(total) connections")
        // The served ones, idle, are closed after the idle timeout: their reads see EOF.
        let closed = await within(60) { () -> Bool? in
            await withCheckedContinuation { continuation in
                TestThread.detached {
                    var eof = 0
                    for c in connections {
                        var b: UInt8 = 0
                        var p = pollfd(fd: c.descriptor, events: Int16(POLLIN), revents: 0)
                        if poll(&p, 1, 30_000) == 1, recv(c.descriptor, &b, 1, Int32(MSG_DONTWAIT)) <= 0 { eof += 1 }
                    }
                    continuation.resume(returning: eof == total)
                }
            }
        }
        #expect(closed == true, "every connection ended: refused, or closed when idle")
        let log = await s.log
        #expect(log.contains { $0.payload == .protocolFailure(.adminIdle(seconds: 2)) })
        // The supervisor still answers.
        switch await adminSend(.apps, directory: await s.runtimeDirectory) {
        case .success(let answer): #expect(String(decoding: answer, as: UTF8.self) == #"{"ok":true,"result":[]}"# + "\n")
        case .failure(let e): Issue.record("apps after the flood: \(e)")
        }
        await s.shutdown()
    }

    @Test("app names '.', '..', 'a/b', control bytes, a leading '-' and over-long ones are refused where they enter; a NUL in argv or environment is refused")
    func badNames() async throws {
        let s = try Supervisor(configuration: supervisorConfiguration())
        for name in [".", "..", "a/b", "a\u{0}b", "a\nb", "-x", ".hidden", "", String(repeating: "a", count: 65)] {
            await #expect(throws: SupervisorError.invalidAppName(name)) { try await s.register(AppSpec(name: name, command: ["/bin/true"])) }
            await #expect(throws: SupervisorError.invalidCommand(.invalidAppName(name))) {
                try await s.perform(.launch(name, registering: AppSpec(name: name, command: ["/bin/true"])))
            }
            let scenario = Scenario(apps: [AppSpec(name: name, command: ["/bin/true"])], steps: [])
            #expect(throws: (any Error).self) { try scenario.validate() }
        }
        #expect("\(SupervisorError.invalidAppName(".."))" == #"app name ".." is not valid: 1 to 64 letters, digits, '.', '-' or '_', not starting with '.' or '-'"#)
        try await s.register(AppSpec(name: String(repeating: "a", count: 64), command: ["/bin/true"]))
        await #expect(throws: SupervisorError.invalidCommand(.nulByte(app: "N", field: "argument 1"))) {
            try await s.register(AppSpec(name: "N", command: ["/bin/echo", "a\u{0}b"]))
        }
        await #expect(throws: SupervisorError.invalidCommand(.nulByte(app: "E", field: "environment variable X"))) {
            try await s.register(AppSpec(name: "E", command: ["/bin/true"], environment: ["X": "1\u{0}2"]))
        }
        // Through the admin socket: the JSON "\u0000" does not reach exec cut short.
        try await s.serveAdmin()
        let request = #"{"command":"launch","app":"N","argv":["/bin/echo","a\u0000b"]}"#
        let r = try JSONDecoder().decode(AdminRequest.self, from: Data(request.utf8))
        switch await adminCall(r, directory: await s.runtimeDirectory) {
        case .failure(.refused(let code, let message)):
            #expect(code == .invalidCommand)
            #expect(message == "app N: its argument 1 holds a NUL byte (it cannot be passed to a program)")
        case let other:
            Issue.record("a NUL in argv: \(other)")
        }
        #expect(!(await s.isRegistered("N")))
        await s.shutdown()
    }

    @Test("an app whose control channel breaks the protocol during a callback fails the wait at once, not after the timeout")
    func garbageEndsTheWait() async throws {
        // Says hello, then answers didFinishLaunching with garbage, and runs on.
        let garbage = """
            import os, signal, socket
            s = socket.socket(socket.AF_UNIX)
            s.connect(os.environ['MEMPRESSURE_SOCKET'])
            s.sendall(('hello 1 %s %s\\n' % (os.environ['MEMPRESSURE_APP'], os.environ['MEMPRESSURE_TOKEN'])).encode())
            for line in s.makefile('r'):
                if line.startswith('callback'): s.sendall(b'%%% not the protocol %%%\\n')
            signal.pause()
            """
        let s = try Supervisor(configuration: supervisorConfiguration { $0.launchTimeout = 300 })
        try await s.register(AppSpec(name: "G", command: ["/usr/bin/env", "python3", "-c", garbage]))
        let launched = await within(120) { () -> Bool? in
            do {
                try await s.launch("G")
            } catch {
                Issue.record("launch: \(error)")
            }
            return true
        }
        #expect(launched == true, "the launch still waits for an ack that cannot come")
        let log = await s.log
        #expect(log.contains { $0.app == "G" && $0.payload == .error(.callbackNotAcknowledged(.didFinishLaunching, .channelClosed)) },
                "\(log.filter { $0.kind == .error || $0.kind == .`protocol` })")
        await s.shutdown()
    }
}
