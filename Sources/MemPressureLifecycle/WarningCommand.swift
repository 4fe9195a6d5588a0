import Glibc
import MemPressureSystem

/// An app's memory-warning command (`MemoryWarningAction.command`): started by the supervisor in
/// a process group of its own (not in the app's cgroup: it is the supervisor's helper, not the
/// app), with `MEMPRESSURE_APP` and `MEMPRESSURE_PID` in its environment and its output to
/// /dev/null; waited for, killed with its whole group after the timeout, and reaped. Nothing it
/// started outlives it: what is left in its group when it exits is killed too.
enum WarningCommand {
    static let appVariable = "MEMPRESSURE_APP"
    static let pidVariable = "MEMPRESSURE_PID"

    static func start(_ argv: [String], app: String, pid: Int32) throws(SpawnError) -> ProcessHandle {
        var options = SpawnOptions(argv)
        var environment = Spawn.currentEnvironment
        environment[appVariable] = app
        environment[pidVariable] = "\(pid)"
        options.environment = environment
        options.standardOutput = .null
        options.standardError = .null
        options.newProcessGroup = true
        options.searchPath = !(argv.first ?? "").contains("/")
        return try Spawn.start(options)
    }

    /// Waits (on a thread of its own) until the command exits, at most `timeout` seconds, then
    /// ends what is left of its group (the leader unreaped, its group number cannot have been
    /// reused) and reaps it.
    static func finish(_ handle: ProcessHandle, timeout: Double) async -> Result<ExitStatus, SystemCallError> {
        await withCheckedContinuation { (c: CheckedContinuation<Result<ExitStatus, SystemCallError>, Never>) in
            let body: @Sendable () -> Void = {
                var p = pollfd(fd: handle.descriptor, events: Int16(POLLIN), revents: 0)
                let ready = retryOnInterrupt { poll(&p, 1, Int32(min(timeout, 86_400) * 1000)) }
                if ready <= 0 { kill(-handle.pid, SIGKILL) }
                do throws(SystemCallError) {
                    _ = try handle.waitForTermination(reap: false)
                    kill(-handle.pid, SIGKILL)  // anything it left in its group (ESRCH: nothing)
                    switch try handle.waitForTermination(reap: true) {
                    case .exited(let code): c.resume(returning: .success(.exited(code)))
                    case .signaled(let sig): c.resume(returning: .success(.signaled(sig)))
                    }
                } catch {
                    c.resume(returning: .failure(error))
                }
            }
            do {
                try startThread(body)
            } catch {
                // No thread to wait on: ended and reaped here, at once.
                kill(-handle.pid, SIGKILL)
                do throws(SystemCallError) {
                    _ = try handle.waitForTermination()
                    c.resume(returning: .success(.signaled(SIGKILL)))
                } catch {
                    c.resume(returning: .failure(error))
                }
            }
        }
    }
}
