// The daemon under test: `mempressure supervise`, started by the benchmark as its own child
// (BenchSupport.ChildProcess: its own process group, signalled only through its pidfd) in a
// private scratch directory, driven only through its admin socket (AppLifecycle.AdminClient, as
// `mempressure app` does), and read from outside: /proc/PID/{status,fd,task}, its runtime
// directory, its cgroups and its children. Stopped with SIGTERM through the pidfd, SIGKILL after a
// grace; what it leaves is checked.

import MemPressureLifecycle
import BenchSupport
import FoundationEssentials
import Glibc
import MemPressureLifecycleProtocol
import MemPressureSystem

/// One configuration of the daemon: its flags, and the bounds they set.
struct DaemonSettings: Codable, Sendable {
    /// "defaults" or "tight".
    var name: String
    /// `--max-apps` (nil: the default, `SupervisorConfiguration.maximumApps`).
    var maxApps: Int?
    /// `--log-limit` (nil: the default, `SupervisorConfiguration.logLimit`).
    var logLimit: Int?

    /// The bounds in force (the defaults read from `SupervisorConfiguration` itself).
    var appBound: Int { maxApps ?? SupervisorConfiguration().maximumApps }
    var logBound: Int { logLimit ?? SupervisorConfiguration().logLimit }

    var flags: [String] {
        var f: [String] = []
        if let maxApps { f += ["--max-apps", "\(maxApps)"] }
        if let logLimit { f += ["--log-limit", "\(logLimit)"] }
        return f
    }
}

/// What the benchmark reads of the daemon from outside at one moment.
struct Outside: Codable, Sendable, Equatable {
    var residentBytes: UInt64
    var peakResidentBytes: UInt64
    var residentAnonBytes: UInt64
    var descriptors: Int
    /// Every thread of the daemon.
    var threads: Int
    /// Those parked in futex(2): libdispatch's idle pool workers (the Swift concurrency pool),
    /// which the pool itself bounds and retires after 5 s without work (the daemon's 1 s
    /// sampling loop keeps waking them, so a worker added under load tends to stay).
    var parkedThreads: Int
    var runtimeEntries: Int
    /// Child cgroups of its device cgroups (one per app not yet removed).
    var cgroups: Int
    /// Its child processes (the guardian, and each app while it runs).
    var children: Int

    /// The counts that must come back to the baseline once every app has ended, by name.
    var returning: [(name: String, value: Int)] {
        [("descriptors", descriptors), ("threads (not parked)", threads - parkedThreads), ("runtime-directory entries", runtimeEntries), ("cgroups", cgroups),
         ("child processes", children)]
    }

    /// One of `returning`, by name.
    func count(_ name: String) -> Int { returning.first { $0.name == name }?.value ?? 0 }

    /// The counts of `returning` above the same counts of `baseline`, by name.
    func above(_ baseline: Outside) -> [String] {
        zip(returning, baseline.returning).compactMap { now, then in now.value > then.value ? now.name : nil }
    }

    /// Whether the counts of `returning` are those of `other`.
    func sameCounts(_ other: Outside) -> Bool { returning.map(\.value) == other.returning.map(\.value) }
}

final class Daemon {
    let settings: DaemonSettings
    let process: ChildProcess
    /// The private scratch directory (the runtime directory is `run` in it).
    let scratch: CheckedDirectory
    let runtimeDirectory: String
    let command: [String]

    /// Starts `mempressure supervise --dir SCRATCH/run [--budget B] FLAGS` (`waitUntilAnswering`
    /// then waits for its admin socket), with `MALLOC_CONF=mallocConf` in its environment if given
    /// (through env(1), which execs it: the same PID).
    init(settings: DaemonSettings, build: String, budget: String?, mallocConf: String?, scratch: CheckedDirectory) throws {
        self.settings = settings
        self.scratch = scratch
        runtimeDirectory = "\(scratch.path)/run"
        var argv = ["\(build)/mempressure", "supervise", "--dir", runtimeDirectory]
        if let budget { argv += ["--budget", budget] }
        argv += settings.flags
        if let mallocConf { argv = ["/usr/bin/env", "MALLOC_CONF=\(mallocConf)"] + argv }
        command = argv
        process = try ChildProcess(name: "mempressure supervise (\(settings.name))", tool: "soak-bench", argv: argv, logPath: "\(scratch.path)/supervise.log")
    }

    /// Waits (up to 60 s) until its admin socket answers `status`.
    func waitUntilAnswering() throws {
        let deadline = monotonicSeconds() + 60
        while true {
            try process.checkAlive("before answering on its admin socket")
            do {
                _ = try status()
                return
            } catch {
                guard monotonicSeconds() < deadline else {
                    throw BenchError("\(process.name) did not answer on \(runtimeDirectory)/admin.sock within 60 s (\(error)); its log:\n\(process.logTail())")
                }
            }
            try Task.checkCancellation()
            pause(0.02)  // not listening yet: nothing to wait on
        }
    }

    var pid: Int32 { process.pid }

    // MARK: The admin socket

    /// One command; its answer's state (nil for commands that have none).
    @discardableResult
    func perform(_ command: Command) throws -> LifecycleState? {
        do {
            return try AdminClient.call(.perform(command), as: LifecycleState.self, directory: runtimeDirectory, timeout: 120)
        } catch {
            try process.checkAlive("during \(command.verb.rawValue) \(command.app ?? "")")
            throw BenchError("\(command.verb.rawValue) \(command.app ?? ""): \(error)")
        }
    }

    func status() throws -> AdminStatus {
        guard let s = try AdminClient.call(.status, as: AdminStatus.self, directory: runtimeDirectory, timeout: 30) else {
            throw BenchError("status: an answer without a result")
        }
        return s
    }

    /// The app records it reports (`apps`).
    func apps() throws -> [AppReport] {
        do {
            return try AdminClient.call(.apps, as: [AppReport].self, directory: runtimeDirectory, timeout: 60) ?? []
        } catch {
            try process.checkAlive("during apps")
            throw BenchError("apps: \(error)")
        }
    }

    /// The events its log holds (`log`), and the answer's size in bytes.
    func logEvents() throws -> (events: [SupervisorEvent], bytes: Int) {
        let answer: [UInt8]
        do {
            answer = try AdminClient.send(.log, directory: runtimeDirectory, timeout: 60)
        } catch {
            try process.checkAlive("during log")
            throw BenchError("log: \(error)")
        }
        let response = try JSONDecoder().decode(AdminResponse<[SupervisorEvent]>.self, from: Data(answer))
        guard response.ok, let events = response.result else { throw BenchError("log: refused: \(response.error ?? "no result")") }
        return (events, answer.count)
    }

    // MARK: From outside

    func outside() throws -> Outside {
        let status = try process.status()
        guard let rss = status.residentBytes, let hwm = status.peakResidentBytes, let anon = status.residentAnonBytes, let threads = status.threads else {
            throw BenchError("/proc/\(pid)/status lacks VmRSS, VmHWM, RssAnon or Threads")
        }
        return Outside(
            residentBytes: rss, peakResidentBytes: hwm, residentAnonBytes: anon, descriptors: try descriptors().count, threads: threads,
            parkedThreads: threadStates()["futex"] ?? 0, runtimeEntries: try runtimeEntries().count, cgroups: appCgroups().count,
            children: try children().count)
    }

    /// Its threads by what they wait in: the system call of /proc/PID/task/TID/syscall, named
    /// for the ones a supervisor's threads block in ("running" when not in one).
    func threadStates() -> [String: Int] {
        let names: [Int: String] = [
            0: "read", 7: "poll", 202: "futex", 232: "epoll_wait", 281: "epoll_pwait", 288: "accept4", 130: "rt_sigsuspend",
            247: "waitid", 61: "wait4", 35: "nanosleep", 230: "clock_nanosleep", 1: "write", 44: "sendto", 46: "sendmsg", 271: "ppoll",
        ]
        var states: [String: Int] = [:]
        let tasks: [[UInt8]]
        do {
            tasks = try ProcFS.listDirectory("/proc/\(pid)/task")
        } catch {
            return states
        }
        for task in tasks {
            let text: String
            do {
                text = String(decoding: try ProcFS.readBytes("/proc/\(pid)/task/\(String(decoding: task, as: UTF8.self))/syscall"), as: UTF8.self)
            } catch {
                continue  // ended meanwhile
            }
            let first = text.split(separator: " ").first.map { $0.trimmingCharacters(in: .whitespacesAndNewlines) } ?? "?"
            let state = Int(first).map { names[$0] ?? "syscall \($0)" } ?? first
            states[state, default: 0] += 1
        }
        return states
    }

    /// Its open descriptors: what each names (`readlink /proc/PID/fd/N`: a path, `socket:[…]`,
    /// `pipe:[…]`, `anon_inode:[pidfd]`, ...).
    func descriptors() throws -> [String] {
        let dir = "/proc/\(pid)/fd"
        return try ProcFS.listDirectory(dir).map { name in
            let path = "\(dir)/\(String(decoding: name, as: UTF8.self))"
            var target = [CChar](repeating: 0, count: 4096)
            let n = readlink(path, &target, target.count - 1)
            return n < 0 ? "(closed meanwhile)" : String(decoding: target.prefix(n).map { UInt8(bitPattern: $0) }, as: UTF8.self)
        }
    }

    /// Descriptors by kind: the part of the target before `[` or, for files, the file's name.
    func descriptorKinds() throws -> [String: Int] {
        var kinds: [String: Int] = [:]
        for target in try descriptors() {
            let kind: String
            if let bracket = target.firstIndex(of: "[") {
                kind = String(target[..<bracket]) + (target.hasPrefix("anon_inode:") ? String(target[bracket...]) : "")
            } else {
                kind = target.hasPrefix("/") ? String(target.split(separator: "/").last ?? "/") : target
            }
            kinds[kind, default: 0] += 1
        }
        return kinds
    }

    /// The names in its runtime directory.
    func runtimeEntries() throws -> [String] {
        try ProcFS.listDirectory(runtimeDirectory).map { String(decoding: $0, as: UTF8.self) }.sorted()
    }

    /// Its device cgroups: `mempressure-PID-*` under each v1 hierarchy (memory, freezer) and the
    /// v2 root.
    func deviceCgroups() -> [String] { Self.deviceCgroups(of: pid) }

    static func deviceCgroups(of pid: Int32) -> [String] {
        var found: [String] = []
        for hierarchy in ["/sys/fs/cgroup/memory", "/sys/fs/cgroup/freezer", "/sys/fs/cgroup/unified", "/sys/fs/cgroup"] where ProcFS.isDirectory(hierarchy) {
            let names: [[UInt8]]
            do {
                names = try ProcFS.listDirectory(hierarchy)
            } catch {
                continue
            }
            for name in names {
                let text = String(decoding: name, as: UTF8.self)
                if text.hasPrefix("mempressure-\(pid)-") && ProcFS.isDirectory("\(hierarchy)/\(text)") { found.append("\(hierarchy)/\(text)") }
            }
        }
        return found.sorted()
    }

    /// The cgroups below its device cgroups (the apps').
    func appCgroups() -> [String] {
        var found: [String] = []
        for device in deviceCgroups() {
            do {
                for name in try ProcFS.listDirectory(device) {
                    let path = "\(device)/\(String(decoding: name, as: UTF8.self))"
                    if ProcFS.isDirectory(path) { found.append(path) }
                }
            } catch {
                continue  // removed meanwhile
            }
        }
        return found
    }

    /// Its child processes: "PID NAME" each.
    func children() throws -> [String] {
        var found: [String] = []
        for child in try ProcFS().pids() {
            do {
                let stat = try readStat(child)
                if stat.ppid == pid { found.append("\(child) \(try readStatus(child).name)") }
            } catch {
                continue  // gone meanwhile
            }
        }
        return found
    }

    // MARK: Stopping

    /// How the daemon was stopped, and what it left.
    struct Stop: Codable, Sendable {
        /// Seconds from SIGTERM to its exit (or to the SIGKILL).
        var seconds: Double
        /// "with status N" or "on signal N".
        var exit: String
        var exitedCleanly: Bool
        /// Whether SIGKILL was needed (it did not exit within the grace).
        var killed: Bool
        /// `mempressure-PID-*` cgroups left once it (and, after a SIGKILL, its guardian) had gone.
        var cgroupsLeft: [String]
        /// Whether it removed its runtime directory itself.
        var runtimeDirectoryRemoved: Bool
        /// What it said it left behind (`mempressure: left behind: ...` lines of its log).
        var leftBehind: [String]
    }

    /// SIGTERM through its pidfd; SIGKILL after `grace` seconds. Never checks for cancellation
    /// (it runs in the cleanup of an interrupted run too). Then waits (up to 10 s) for its
    /// cgroups to be gone (after a SIGKILL its guardian removes them) and reaps what was orphaned.
    func stop(grace: Double) -> Stop {
        let start = monotonicSeconds()
        var killed = false
        if process.exitStatus == nil {
            do {
                try process.signal(SIGTERM)
            } catch {
                log("soak-bench", "SIGTERM to \(process.name) (pid \(pid)): \(error)")  // exited already: reaped below
            }
            while !reaped() && monotonicSeconds() - start < grace { pause(0.01) }
            if !reaped() {
                log("soak-bench", "\(process.name) (pid \(pid)) did not exit within \(Int(grace)) s of SIGTERM: SIGKILL")
                process.kill()
                killed = true
            }
        }
        let seconds = monotonicSeconds() - start
        let deadline = monotonicSeconds() + 10
        var left = Self.deviceCgroups(of: pid)
        while !left.isEmpty && monotonicSeconds() < deadline {
            reapOrphans()
            pause(0.05)
            left = Self.deviceCgroups(of: pid)
        }
        reapOrphans()
        let status = process.exitStatus ?? -1
        let said = process.logTail(lines: 200).split(separator: "\n").map { $0.trimmingCharacters(in: .whitespaces) }
            .filter { $0.hasPrefix("mempressure: left behind:") }
        return Stop(
            seconds: seconds, exit: describe(status), exitedCleanly: !killed && status == 0, killed: killed, cgroupsLeft: left,
            runtimeDirectoryRemoved: !ProcFS.isDirectory(runtimeDirectory) && access(runtimeDirectory, F_OK) != 0, leftBehind: said)
    }

    /// Whether it has exited (reaped now if it just did).
    private func reaped() -> Bool {
        if process.exitStatus != nil { return true }
        do {
            try process.checkAlive("")
            return false
        } catch {
            return true
        }
    }
}
