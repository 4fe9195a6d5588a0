import Glibc
import MemPressureSystem
import MemPressureHogClient
import MemPressureRegionTags
import Testing
import MemPressureTestSupport

/// The region registry is a directory every user can write to: what is planted there must be
/// skipped without being read, and what processes that are gone left behind must go.
@Suite("region registry: planted and stale files")
struct RegistryTests {
    static func selfStat() throws -> ProcessStat {
        try ProcFS.readBytes("/proc/self/stat").withUnsafeBytes { try ProcessStat.parse($0, pid: nil) }
    }

    static func exists(_ path: String) -> Bool {
        var st = stat()
        return lstat(path, &st) == 0
    }

    @Test("a FIFO, a link to /dev/zero, another user's file are skipped with a reason, never read")
    func planted() throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let registry = RegionRegistry(directory: dir.path)
        let me = try Self.selfStat()
        let uid = getuid()
        let entry = "\(dir.path)/\(me.pid)"

        #expect(registry.lookup(for: me, ownerUID: uid) == .unpublished)

        try #require(mkfifo(entry, 0o600) == 0)
        guard case .skipped(let fifo) = registry.lookup(for: me, ownerUID: uid) else { Issue.record("a FIFO was not skipped"); return }
        #expect(fifo == "\(entry): is a FIFO, not a regular file")
        unlink(entry)

        try #require(symlink("/dev/zero", entry) == 0)
        guard case .skipped(let link) = registry.lookup(for: me, ownerUID: uid) else { Issue.record("a link was not skipped"); return }
        #expect(link == "\(entry): is a symbolic link, not a regular file")
        unlink(entry)

        let text = "\(RegionRegistry.formatLine)\npid \(me.pid)\nstart-ticks \(me.startTicks)\nregion 1000 2000 planted\n"
        try writeText(text, to: entry)
        #expect(registry.lookup(for: me, ownerUID: uid) == .tags([RegionTag(start: 0x1000, end: 0x2000, name: "planted")]))
        if geteuid() == 0 {
            // Another user's file, claiming root's process: skipped.
            try #require(chown(entry, 65534, 65534) == 0)
            guard case .skipped(let foreign) = registry.lookup(for: me, ownerUID: 0) else { Issue.record("another user's file was used"); return }
            #expect(foreign == "\(entry): owned by uid 65534, not by uid 0 or root")
            try #require(chown(entry, 0, 0) == 0)
        }

        // Too large: refused on its size, before reading.
        try writeText(text + String(repeating: "x", count: RegionRegistry.maximumFileBytes), to: entry)
        guard case .skipped(let large) = registry.lookup(for: me, ownerUID: uid) else { Issue.record("a huge file was read"); return }
        #expect(large.hasPrefix("\(entry): larger than"))

        // Left by an earlier process with this PID: skipped and removed.
        try writeText("\(RegionRegistry.formatLine)\npid \(me.pid)\nstart-ticks \(me.startTicks + 1)\n", to: entry)
        guard case .skipped(let stale) = registry.lookup(for: me, ownerUID: uid) else { Issue.record("a stale file was used"); return }
        #expect(stale == "\(entry): left by an earlier process with this PID, removed")
        #expect(!Self.exists(entry))
    }

    /// A hog holding purgeable memory, publishing into `registry`, started and ready.
    struct PublishingHog {
        let handle: ProcessHandle

        init(registry: String) throws {
            let executable = try Hog.executablePath()
            var pipe: [CInt] = [0, 0]
            guard Glibc.pipe(&pipe) == 0 else { throw TestFailure("pipe: errno \(errno)") }
            for fd in pipe { _ = fcntl(fd, F_SETFD, FD_CLOEXEC) }
            var actions = posix_spawn_file_actions_t()
            posix_spawn_file_actions_init(&actions)
            defer { posix_spawn_file_actions_destroy(&actions) }
            posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
            posix_spawn_file_actions_adddup2(&actions, pipe[1], 1)
            let arguments = [executable, "--purgeable-cache", "1048576", "--wait", "signal"]
            let environment = ["MEMPRESSURE_REGISTRY=\(registry)"] + (0..<Int.max).lazy.prefix { environ[$0] != nil }.map { String(cString: environ[$0]!) }
            let argv = arguments.map { strdup($0) } + [nil]
            let envp = environment.map { strdup($0) } + [nil]
            defer { (argv + envp).forEach { free($0) } }
            var pid: pid_t = 0
            // The test runner's threads block signals (SIGTERM among them); the hog must not inherit that.
            let rc = withShellSignals { posix_spawn(&pid, executable, &actions, $0, argv, envp) }
            close(pipe[1])
            defer { close(pipe[0]) }
            guard rc == 0 else { throw TestFailure("posix_spawn \(executable): errno \(rc)") }
            handle = try ProcessHandle(pid: pid)
            // It says "ready {...}" once it holds (and has published) its memory.
            var line: [UInt8] = []
            var byte: UInt8 = 0
            while line.last != 0x0a, retryOnInterrupt({ read(pipe[0], &byte, 1) }) == 1 { line.append(byte) }
            guard line.starts(with: "ready ".utf8) else {
                var cleanup = ""
                do {
                    try handle.signal(SIGKILL)
                    _ = try handle.wait(for: WEXITED)
                } catch {
                    cleanup = "; and it could not be killed and reaped: \(error)"
                }
                throw TestFailure("the hog did not get ready: \(String(decoding: line, as: UTF8.self))\(cleanup)")
            }
        }

        /// Ends it with SIGTERM (it cannot withdraw its file then) and reaps it.
        func terminate() throws {
            try handle.signal(SIGTERM)
            _ = try handle.wait(for: WEXITED)
        }

        /// `terminate()` for cleanup code: a failure is recorded as the test's.
        func end() {
            do {
                try terminate()
            } catch {
                Issue.record("the hog (pid \(handle.pid)) could not be ended: \(error)")
            }
        }
    }

    @Test("a registry file is its process's user's alone (mode 0600): another user cannot read root's region addresses and call stacks, as it cannot read root's /proc/PID/maps",
          .enabled(if: canSwitchUser, "needs root and setpriv(1) to act as another user"))
    func privateFiles() async throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        try #require(chmod(dir.path, 0o755) == 0)  // the registry is reachable by everyone, as in /dev/shm
        let registry = "\(dir.path)/registry"
        let hog = try PublishingHog(registry: registry)
        defer { hog.end() }
        let file = "\(registry)/\(hog.handle.pid)"
        var st = stat()
        try #require(lstat(file, &st) == 0, "the hog published its purgeable regions")
        #expect(st.st_mode & 0o777 == 0o600, "mode \(String(st.st_mode & 0o777, radix: 8))")
        #expect(st.st_uid == 0)
        do {
            let read = try await Attacker.run("cat \(file)")
            Issue.record("another user read root's registry file: \(read.prefix(200))")
        } catch {
            #expect("\(error)".contains("Permission denied"), "\(error)")
        }
        // The directory, made by the first writer, is shared: sticky, open to every user.
        try #require(lstat(registry, &st) == 0)
        #expect(st.st_mode & 0o7777 == 0o1777)
    }

    @Test("the registry file of a process ended by SIGTERM is removed by the next writer")
    func staleRemoved() throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let registry = "\(dir.path)/registry"
        let first = try PublishingHog(registry: registry)
        let firstFile = "\(registry)/\(first.handle.pid)"
        #expect(Self.exists(firstFile), "the hog published its purgeable regions")
        try first.terminate()
        #expect(Self.exists(firstFile), "a process ended by SIGTERM cannot withdraw its file")

        let second = try PublishingHog(registry: registry)
        defer { second.end() }
        #expect(Self.exists("\(registry)/\(second.handle.pid)"))
        #expect(!Self.exists(firstFile), "the next writer removed the file of the process that is gone")
    }
}
