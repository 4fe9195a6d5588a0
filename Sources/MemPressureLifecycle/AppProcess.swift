import CMemoryPressure
import Glibc
import SystemPackage
import MemPressureSystem
import MemPressureMonitor

/// How a process ended.
public enum ExitStatus: Sendable, Hashable, Codable, CustomStringConvertible {
    case exited(Int32)
    case signaled(Int32)

    public var description: String {
        switch self {
        case .exited(let code): "exited with status \(code)"
        case .signaled(let sig): "killed by signal \(sig) (\(signalName(sig)))"
        }
    }

    public var isCleanExit: Bool { self == .exited(0) }
}

func signalName(_ sig: Int32) -> String {
    switch sig {
    case SIGKILL: "SIGKILL"
    case SIGTERM: "SIGTERM"
    case SIGSEGV: "SIGSEGV"
    case SIGABRT: "SIGABRT"
    case SIGBUS: "SIGBUS"
    case SIGILL: "SIGILL"
    case SIGFPE: "SIGFPE"
    case SIGINT: "SIGINT"
    case SIGTRAP: "SIGTRAP"
    default: "signal \(sig)"
    }
}

/// How an app's processes are held together: its cgroups, or its process group (led by its
/// main process, whose PID is the group's number).
enum AppMembers: Sendable, Hashable {
    case cgroup(AppCgroup)
    case processGroup
}

/// What became of the rest of an app when its main process ended: the other processes it had
/// started were ended (counted), or could not all be (why).
struct AppEnding: Sendable, Hashable {
    /// Other processes of the app that were still running and were killed.
    var othersEnded = 0
    /// Why some could not be ended or waited for (they are still running); nil when all were.
    var failure: String?
}

/// An app's run: its main process, held through its pidfd (`ProcessHandle`: every signal to it
/// goes through it, so once it has exited a reused PID can never be hit), and every other
/// process it starts (`members`: its cgroup, or its process group). Killing the app kills them
/// all; its run ends when they are all gone.
final class AppProcess: Sendable {
    let handle: ProcessHandle
    let members: AppMembers
    let launchedAt: Double
    /// Its start time after boot (field 22 of /proc/PID/stat), read while it is our unreaped
    /// child: with the PID, it names this process and no later one.
    let startTicks: UInt64?

    var pid: Int32 { handle.pid }

    private init(handle: ProcessHandle, members: AppMembers) {
        self.handle = handle
        self.members = members
        launchedAt = monotonicSeconds()
        startTicks = Self.startTicks(of: handle.pid)
    }

    private static func startTicks(of pid: Int32) -> UInt64? {
        do {
            let bytes = try ProcFS.readBytes("/proc/\(pid)/stat")
            return try bytes.withUnsafeBytes { (b) throws(ProcError) in try ProcessStat.parse(b, pid: pid) }.startTicks
        } catch {
            return nil
        }
    }

    /// Starts `command` through `launcher` (mempressure-exec), which joins the app's cgroups and
    /// execs it, in a process group of its own, with `output` as standard output and error.
    static func spawn(
        launcher: String, members: AppMembers, command: [String], environment: [String: String], output: CInt
    ) throws(LaunchError) -> AppProcess {
        guard let program = command.first, !program.isEmpty else { throw .noCommand }
        if program.contains("/") {
            if access(program, F_OK) != 0 { throw .programNotFound(program) }
            if access(program, X_OK) != 0 { throw .notExecutable(program) }
        }
        var args = [launcher]
        if case .cgroup(let group) = members {
            for path in group.joinPaths { args += ["--cgroup", path] }
        }
        args.append("--")
        args += command
        var options = SpawnOptions(args)
        var env = environment
        for (k, v) in Spawn.currentEnvironment where env[k] == nil { env[k] = v }
        options.environment = env
        options.standardInput = .null
        options.standardOutput = .descriptor(output)
        options.standardError = .output
        options.newProcessGroup = true
        do {
            return AppProcess(handle: try Spawn.start(options), members: members)
        } catch {
            switch error {
            case .pidfd(let pid, let e): throw .pidfd(pid: pid, e)
            default: throw .spawn(launcher: launcher, error.errno)
            }
        }
    }

    /// Sends `sig` to the main process through the pidfd. Returns false if it has already exited.
    @discardableResult
    func signal(_ sig: Int32) -> Bool {
        do {
            try handle.signal(sig)
            return true
        } catch {
            return false  // ESRCH: it has exited (the pidfd still names it, so nothing else was hit)
        }
    }

    /// Sends `sig` (SIGSTOP, SIGCONT) to every process of the app: the main one through its
    /// pidfd, the others through the cgroup (each checked through a pidfd) or the process group
    /// (whose number the unreaped main process keeps from reuse). False if the main process has
    /// exited; an error reaching the others is returned in `failure`.
    func signalApp(_ sig: Int32) -> (alive: Bool, failure: CgroupError?) {
        guard signal(sig) else { return (false, nil) }
        switch members {
        case .cgroup(let group):
            do {
                try group.members.signalAll(sig)
            } catch {
                return (true, error)
            }
        case .processGroup:
            kill(-pid, sig)
        }
        return (true, nil)
    }

    /// What a kill of the whole app did, at once.
    struct Kill: Sendable {
        /// When SIGKILL went to the main process (monotonic).
        var signalledAt: Double
        /// Whether process_mrelease freed the main process's memory at once.
        var memoryReleased: Bool
        /// Other processes of the app signalled.
        var others: Int
        var failure: CgroupError?
        /// The app's footprint read from its memory cgroup just before the SIGKILL (anonymous
        /// memory and swap: what only its processes held; nil without one, or if it could not be
        /// read): given back once its processes are gone.
        var chargedBytes: UInt64? = nil
    }

    /// SIGKILL to every process of the app: every other one first (through the cgroup, each
    /// checked through a pidfd; in a process group, counted first), then the main one through
    /// its pidfd; with `releaseMemory`, process_mrelease frees their memory at once. Nil if the
    /// main process had already exited (its other processes are then signalled all the same,
    /// and ended again by `waitForEnd`). A frozen or stopped app's processes die once let run
    /// (`letRun`).
    ///
    /// The others go first because the main process's exit can orphan the app's process group:
    /// the kernel then sends SIGHUP and SIGCONT to every stopped process in it (a SIGSTOP-suspended
    /// helper), which may end before a SIGKILL sent after the main one's reaches it, uncounted.
    func killApp(releaseMemory: Bool) -> Kill? {
        var charged: UInt64?
        if case .cgroup(let group) = members, let memory = group.memory {
            var buffer = ReadBuffer(capacity: 8192)
            do {
                charged = try CgroupMemory(directory: memory.path).readApp(&buffer).footprintBytes
            } catch {
                charged = nil  // gone or unreadable: the kill's gain is measured from the device instead
            }
        }
        let at = monotonicSeconds()
        var kill = Kill(signalledAt: at, memoryReleased: false, others: 0, failure: nil, chargedBytes: charged)
        switch members {
        case .cgroup(let group):
            do {
                kill.others = try group.members.killAll(releaseMemory: releaseMemory, rounds: 1, notCounting: [pid], sparing: pid).signalled
            } catch {
                kill.failure = error
            }
            guard signal(SIGKILL) else { return nil }
        case .processGroup:
            // Its unreaped main process keeps the group's number from reuse (`waitForEnd` reaps
            // it only once the group is empty).
            let others = Self.processes(inGroup: pid).count
            guard signal(SIGKILL) else { return nil }
            kill.others = others
            Glibc.kill(-pid, SIGKILL)
        }
        if releaseMemory {
            do {
                try handle.releaseMemory()
                kill.memoryReleased = true
            } catch {
                // ESRCH (gone already) or EINVAL: its memory comes back as it exits.
                kill.memoryReleased = error.errno == .noSuchProcess
            }
        }
        return kill
    }

    /// Blocks until the process has stopped (`stopped`) or continued: the kernel reports both
    /// to the parent (waitid WSTOPPED, WCONTINUED), which the supervisor is. False if the
    /// process exited (or was reaped) instead. Run on a thread of its own.
    func waitForStopChange(stopped: Bool) -> Bool {
        do {
            _ = try handle.wait(for: stopped ? WSTOPPED : WCONTINUED)
            return true
        } catch {
            return false  // ECHILD: reaped meanwhile
        }
    }

    /// process_madvise(MADV_PAGEOUT) over the ranges: their anonymous pages are written to
    /// swap (and clean pages dropped). Returns the bytes advised.
    func pageOut(_ ranges: [(start: UInt64, end: UInt64)]) throws(SupervisorError) -> UInt64 {
        do {
            return try handle.advise(ranges, mp_MADV_PAGEOUT, name: "MADV_PAGEOUT")
        } catch {
            throw .system(error)
        }
    }

    /// Blocks until the app's run is over (run on a thread of its own): its main process has
    /// exited, and every other process it started has been ended (SIGKILL: an app is all of its
    /// processes, and a helper left running would keep its memory) and is gone, at most
    /// `timeout` seconds after. The main process is reaped last in a process group (its
    /// unreaped PID keeps the group's number from reuse while the group is signalled).
    func waitForEnd(timeout: Double = 10) -> (ExitStatus, AppEnding) {
        let status: ExitStatus
        var ending = AppEnding()
        switch members {
        case .cgroup(let group):
            status = Self.status(handle.termination(reap: true))
            do {
                // The main process has been reaped: whatever is listed is another of the app's.
                let result = try group.members.end(thawing: group.freezer, timeout: timeout)
                ending.othersEnded = result.signalled
            } catch {
                ending.failure = "\(error)"
            }
        case .processGroup:
            status = Self.status(handle.termination(reap: false))
            ending = Self.endProcessGroup(pid, timeout: timeout)
            _ = Self.status(handle.termination(reap: true))
        }
        return (status, ending)
    }

    private static func status(_ result: Result<ProcessHandle.Termination, SystemCallError>) -> ExitStatus {
        switch result {
        case .success(.exited(let code)): .exited(code)
        case .success(.signaled(let sig)): .signaled(sig)
        case .failure: .exited(-1)
        }
    }

    /// SIGKILL to the process group `pgid` (its leader, exited but unreaped, keeps the number
    /// from reuse), and a wait until no live process is left in it.
    private static func endProcessGroup(_ pgid: Int32, timeout: Double) -> AppEnding {
        var ending = AppEnding()
        let others = processes(inGroup: pgid)
        guard !others.isEmpty else { return ending }
        ending.othersEnded = others.count
        Glibc.kill(-pgid, SIGKILL)
        let deadline = monotonicSeconds() + timeout
        var pause = 0.0005
        while !processes(inGroup: pgid).isEmpty {
            guard monotonicSeconds() < deadline else {
                ending.failure = "\(processes(inGroup: pgid).count) process(es) of process group \(pgid) still alive \(ByteFormat.fixed(timeout, 0)) s after SIGKILL"
                return ending
            }
            var ts = timespec(tv_sec: 0, tv_nsec: Int(pause * 1e9))
            nanosleep(&ts, nil)
            pause = min(pause * 2, 0.008)
        }
        return ending
    }

    /// The live processes (not zombies) of process group `pgid`, its leader left out.
    static func processes(inGroup pgid: Int32) -> [Int32] {
        let procfs = ProcFS()
        let pids: [Int32]
        do {
            pids = try procfs.pids()
        } catch {
            return []
        }
        var buffer = ReadBuffer(capacity: 4096)
        return pids.filter { pid in
            guard pid != pgid else { return false }
            do {
                try procfs.open(pid).read("stat", into: &buffer)
                let stat = try buffer.withBytes { (b) throws(ProcError) in try ProcessStat.parse(b, pid: pid) }
                return stat.processGroup == pgid && !stat.isZombie
            } catch {
                return false  // gone
            }
        }
    }
}

extension ProcessHandle {
    /// `waitForTermination` as a result.
    func termination(reap: Bool) -> Result<Termination, SystemCallError> {
        do {
            return .success(try waitForTermination(reap: reap))
        } catch {
            return .failure(error)
        }
    }
}
