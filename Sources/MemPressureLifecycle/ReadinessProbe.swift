import Glibc
import MemPressureSystem

/// How the supervisor tells that a program without the client library is working
/// (`AppSpec.ready`): a command it runs, like a Kubernetes exec probe, until the command exits 0.
/// A client reports ready itself; any other program (redis-server, postgres, a browser) is ready
/// when its probe passes — `redis-cli ping` and a data check, `pg_isready` and a query, a page
/// fetched from the program. What a program needs to be an app is configuration, not code.
///
/// The probe runs where a client would be told it launched (a launch returns once it passes) and
/// where it would be told it comes back to the foreground (an activation from the background,
/// after the resume of a suspended program, returns once it passes), so the time a launch or a
/// resume takes is the time until the program answers, as its users see it. Each pass is a
/// `ready` event, as a client's report is. It runs as the supervisor's helper (outside the app's
/// cgroup, in a process group of its own, output to /dev/null) with `MEMPRESSURE_APP` and
/// `MEMPRESSURE_PID` in its environment; a try that outlives `timeout` is killed with its group,
/// and the guardian ends it should the supervisor die.
///
/// Not passed within `launchTimeout`: a launch fails (the app stays inactive, supervised); a
/// return to the foreground goes on with the fault logged, as it does for a client that did not
/// acknowledge willEnterForeground. A shutdown or a cancelled command ends the try at once.
///
/// JSON (an app's `"ready"`): `{"command": ["redis-cli", "-p", "6390", "ping"], "interval": 0.01,
/// "timeout": 5}`; `interval` and `timeout` may be left out.
public struct ReadinessProbe: Sendable, Hashable, Codable {
    /// The program and its arguments (a name without '/' is looked up in PATH).
    public var command: [String]
    /// Seconds between the end of a failed try and the next (default 0.01).
    public var interval: Double
    /// Seconds one try may run before it is killed and counts as failed (default 5).
    public var timeout: Double

    public static let defaultInterval = 0.01
    public static let defaultTimeout = 5.0

    public init(command: [String], interval: Double = ReadinessProbe.defaultInterval, timeout: Double = ReadinessProbe.defaultTimeout) {
        self.command = command
        self.interval = interval
        self.timeout = timeout
    }

    /// Checks what exec cannot carry and durations a timer cannot hold.
    public func validate(app: String) throws(CommandError) {
        guard !command.isEmpty, !command[0].isEmpty else { throw .emptyCommand(app: app) }
        for (i, argument) in command.enumerated() where argument.utf8.contains(0) {
            throw .nulByte(app: app, field: "readiness probe's argument \(i)")
        }
        guard interval.isFinite, interval >= 0, interval <= Seconds.maximum else { throw .probeDurationOutOfRange(app: app, "interval") }
        guard timeout.isFinite, timeout > 0, timeout <= Seconds.maximum else { throw .probeDurationOutOfRange(app: app, "timeout") }
    }

    private enum Key: String, CodingKey, CaseIterable { case command, interval, timeout }

    public init(from decoder: any Decoder) throws {
        try UnknownKeys.refuse(in: decoder, known: Key.self, what: "a readiness probe")
        let c = try decoder.container(keyedBy: Key.self)
        self.init(
            command: try c.decode([String].self, forKey: .command),
            interval: try c.decodeIfPresent(Double.self, forKey: .interval) ?? Self.defaultInterval,
            timeout: try c.decodeIfPresent(Double.self, forKey: .timeout) ?? Self.defaultTimeout)
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: Key.self)
        try c.encode(command, forKey: .command)
        if interval != Self.defaultInterval { try c.encode(interval, forKey: .interval) }
        if timeout != Self.defaultTimeout { try c.encode(timeout, forKey: .timeout) }
    }
}

extension Supervisor {
    /// Runs the app's readiness probe until it passes, the app's run ends, or `limit` seconds
    /// have passed; a pass counts as the app reporting ready. No probe (or a client): nothing.
    /// A shutdown, or the cancellation of the command, ends the try in progress at once and
    /// throws `shuttingDown` (the command did not complete).
    func probeReady(_ a: AppRecord, _ generation: Int, limit: Double, for verb: LifecycleVerb) async throws(SupervisorError) {
        guard !a.isClient, let probe = a.spec.ready else { return }
        let deadline = monotonicSeconds() + limit
        var tries = 0
        var last = "it did not run"
        while a.isAlive(generation) {
            // A shutdown ends the try in progress (`helperCommands`) and no other begins.
            guard !isStopping, !Task.isCancelled else { throw .shuttingDown(refused: Command.Verb(verb), app: a.name) }
            tries += 1
            guard let pid = a.process?.pid else { return }
            let handle: ProcessHandle
            do throws(SpawnError) {
                handle = try WarningCommand.start(probe.command, app: a.name, pid: pid)
            } catch {
                record(.error(.readinessProbe(cause: "\(error)")), a)
                throw .commandFailed(app: a.name, command: "start its readiness probe", answer: "\(error)")
            }
            // Should the supervisor die meanwhile, its guardian ends the probe's group too.
            guardian.watch(processGroupOf: handle)
            let timeout = min(probe.timeout, max(0.001, deadline - monotonicSeconds()))
            let ending = Task { await WarningCommand.finish(handle, timeout: timeout) }
            helperCommands[handle.pid] = (handle, Task { _ = await ending.value }, .readinessProbe)
            let ended = await withTaskCancellationHandler {
                await ending.value
            } onCancel: {
                // What waits for it then ends the rest of its group and reaps it.
                do {
                    try handle.signal(SIGKILL)
                } catch {
                    // It has exited already.
                }
            }
            helperCommands[handle.pid] = nil
            guardian.forget(processGroup: handle.pid)
            switch ended {
            case .success(.exited(0)):
                guard a.isAlive(generation) else { return }
                a.readyCount += 1
                if a.readyCount == 1, let process = a.process {
                    noteLaunchToReady(a, seconds: monotonicSeconds() - process.launchedAt)
                }
                record(.ready(a.state), a)
                checkWaiters(a.name)
                return
            case .success(let status):
                last = "\(status)"
            case .failure(let error):
                record(.error(.readinessProbe(cause: "\(error)")), a)
                last = "\(error)"
            }
            let left = deadline - monotonicSeconds()
            guard left > 0 else { break }
            do {
                try await Task.sleep(for: Seconds.duration(min(probe.interval, left)))
            } catch {
                throw .shuttingDown(refused: Command.Verb(verb), app: a.name)  // cancelled
            }
        }
        guard a.isAlive(generation) else { return }
        record(.error(.readinessProbe(cause: "not passed in \(limit) s (\(tries) tries, the last \(last))")), a)
        throw .timedOut(app: a.name, waitingFor: "pass its readiness probe", seconds: limit)
    }
}
