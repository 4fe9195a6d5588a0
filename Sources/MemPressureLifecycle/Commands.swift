import Glibc
import MemPressureLifecycleProtocol
import MemPressureSystem
import SystemPackage

// MARK: Commands
//
// Commands on one app run one at a time (a per-app lock): the public entry points take it, and
// carry out the steps `LifecycleMachine` plans for the app's state. Every step that awaits is
// followed by a check that the same run of the app is still alive before its state changes: an
// app can exit or crash during any callback.

extension Supervisor {
    /// Starts the app; returns once it is inactive and (for a client) has run didFinishLaunching.
    public func launch(_ name: String) async throws(SupervisorError) {
        try await run(.launch, name)
    }

    /// Brings the app to the foreground (launching it first if it is not running).
    public func activate(_ name: String) async throws(SupervisorError) {
        try await run(.activate, name)
    }

    /// Interrupts an active app: active -> inactive.
    public func deactivate(_ name: String) async throws(SupervisorError) {
        try await run(.deactivate, name)
    }

    /// Sends the app to the background; returns once it is suspended, or not running (it
    /// overran a background task, exited or crashed meanwhile: background then does not throw),
    /// or back in the foreground (another command activated it while its tasks ran).
    /// With `waitForSuspension: false` it returns once didEnterBackground was delivered; the
    /// app is suspended when its background tasks have ended, as before.
    ///
    /// The wait for background tasks does not hold the app's lock: the app can be activated or
    /// terminated meanwhile.
    public func background(_ name: String, waitForSuspension: Bool = true) async throws(SupervisorError) {
        try await run(.background, name, waitForSuspension: waitForSuspension)
    }

    /// Terminates the app: running apps get willTerminate and SIGTERM (SIGKILL after the grace
    /// period); suspended apps are killed without notice.
    public func terminate(_ name: String) async throws(SupervisorError) {
        try await run(.terminate, name)
    }

    /// Terminates (if running) and launches the app again.
    public func relaunch(_ name: String) async throws(SupervisorError) {
        try await run(.relaunch, name)
    }

    /// Takes the app's lock, plans `verb` from its state and carries the plan out. Once shutdown
    /// has begun no command starts (`.shuttingDown`), but for the shutdown's own terminates
    /// (`byShutdown`): neither one given before (checked again once it has the lock, which it may
    /// have waited for) nor one given after.
    func run(_ verb: LifecycleVerb, _ name: String, waitForSuspension: Bool = true, byShutdown: Bool = false) async throws(SupervisorError) {
        let a = try app(name)
        guard !isStopping || byShutdown else { throw .shuttingDown(refused: Command.Verb(verb), app: name) }
        await lock(name)
        guard !isStopping || byShutdown else {
            unlock(name)
            throw .shuttingDown(refused: Command.Verb(verb), app: name)
        }
        var run = CommandRun(verb: verb, holdsLock: true)
        do throws(SupervisorError) {
            let steps: [LifecycleStep]
            do {
                steps = try LifecycleMachine.plan(verb, from: a.state, waitForSuspension: waitForSuspension)
            } catch {
                throw SupervisorError.wrongState(app: name, state: a.state, operation: .lifecycle(verb))
            }
            try await perform(steps[...], on: a, &run)
        } catch {
            if run.holdsLock { unlock(name) }
            throw error
        }
        if run.holdsLock { unlock(name) }
    }

    /// What one command carries through its steps.
    struct CommandRun {
        var verb: LifecycleVerb
        var holdsLock: Bool
        /// The run of the app the command acts on (set at start, and by a launch).
        var generation = 0
        /// The stay in the background the command waits in.
        var backgroundPeriod = 0
        /// Set when the run and the stay were fixed by the command this run continues (a
        /// detached remainder): they are not read from the app again.
        var pinned = false
        /// Its teardown (terminate, relaunch), once the first teardown step began it.
        var teardown: TeardownRun?
    }

    private func perform(_ steps: ArraySlice<LifecycleStep>, on a: AppRecord, _ run: inout CommandRun) async throws(SupervisorError) {
        if !run.pinned {
            run.generation = a.generation
            run.backgroundPeriod = a.backgroundPeriod
        }
        var index = steps.startIndex
        while index < steps.endIndex {
            let step = steps[index]
            index += 1
            switch step {
            case .detach:
                // The command returns; the rest goes on by itself, taking the lock when it needs it.
                let rest = steps[index...]
                let verb = run.verb
                let name = a.name
                // The rest acts on the run and the stay this command began, whatever came since.
                let (pinnedRun, pinnedStay) = (run.generation, run.backgroundPeriod)
                Task {
                    var detached = CommandRun(verb: verb, holdsLock: false, generation: pinnedRun, backgroundPeriod: pinnedStay, pinned: true)
                    do {
                        try await self.perform(rest, on: a, &detached)
                    } catch {
                        self.record(SupervisorEvent(t: self.now(), app: name, .error(.command(verb, cause: "\(error)"))))
                    }
                    if detached.holdsLock { self.unlock(name) }
                }
                return
            case .teardown(let step):
                // The run the command began with, from its first teardown step on.
                if run.teardown == nil, a.generation == run.generation { run.teardown = teardown(of: a, as: .expected(nil)) }
                var alive = false
                if var t = run.teardown {
                    alive = try await carryOut(step, on: a, &t)
                    run.teardown = t
                }
                if !alive {
                    // The app is gone: the rest of the teardown has nothing to act on.
                    while index < steps.endIndex, case .teardown = steps[index] { index += 1 }
                }
                continue
            default:
                break
            }
            // A lifecycle step acts on the run it began with.
            if step != .spawn, !a.isAlive(run.generation) {
                if LifecycleMachine.exitFails(run.verb) { throw .exited(app: a.name, during: Self.during(step), status: a.exitStatus) }
                return
            }
            switch step {
            case .spawn:
                try spawn(a)
                run.generation = a.generation
            case .connect:
                await connect(a, run.generation)
                if !a.isAlive(run.generation) { throw .exited(app: a.name, during: "launch", status: a.exitStatus) }
            case .callback(let c):
                await deliver(c, to: a)
                // A program without the client: where a client would be told it launched or
                // comes back to the foreground, its readiness probe must pass. A launch whose
                // probe does not pass fails (the app stays inactive); a return to the foreground
                // goes on, as it does for a client that did not acknowledge willEnterForeground
                // (the fault is logged): stopping there would leave it let run in the background
                // with no stay and nothing to suspend it again.
                if c == .didFinishLaunching {
                    try await probeReady(a, run.generation, limit: configuration.launchTimeout, for: run.verb)
                } else if c == .willEnterForeground {
                    do {
                        try await probeReady(a, run.generation, limit: configuration.launchTimeout, for: run.verb)
                    } catch {
                        if case .shuttingDown = error { throw error }
                    }
                }
            case .enter(let state):
                transition(a, to: state)
            case .beginBackgroundStay:
                a.backgroundPeriod += 1
                a.expiredTasks = []
                a.backgroundEnteredAt = monotonicSeconds()
                run.backgroundPeriod = a.backgroundPeriod
                scheduleTaskTimers(a)
            case .endBackgroundStay:
                a.backgroundEnteredAt = nil
                a.backgroundPeriod += 1  // its timers no longer apply
            case .resume:
                try await resume(a)
            case .deliverQueuedNotifications:
                await deliverQueuedNotifications(a)
            case .awaitBackgroundTasks:
                guard a.state == .backgroundRunning else { return }
                if run.holdsLock {
                    unlock(a.name)
                    run.holdsLock = false
                }
                let generation = run.generation
                let period = run.backgroundPeriod
                // Wait for the background tasks to end, or for the limit to take the app down.
                _ = await waitFor(a.name, timeout: configuration.backgroundTaskLimit + configuration.terminateGrace + 5) {
                    $0.tasks == 0 || !$0.alive || $0.generation != generation || $0.backgroundPeriod != period
                }
                await lock(a.name)
                run.holdsLock = true
                // Meanwhile the app may have been activated, terminated, or taken down.
                guard a.isAlive(generation), a.backgroundPeriod == period, a.state == .backgroundRunning else { return }
            case .suspend:
                try await suspend(a)
                guard a.isAlive(run.generation), a.state == .backgroundRunning else { return }
            case .detach, .teardown:
                break  // handled above
            }
            // What an awaiting step left: the app may have exited meanwhile.
            if !a.isAlive(run.generation) {
                if LifecycleMachine.exitFails(run.verb) { throw .exited(app: a.name, during: Self.during(step), status: a.exitStatus) }
                return
            }
        }
    }

    /// How a step is named in an error about an app that exited during it.
    static func during(_ step: LifecycleStep) -> String {
        switch step {
        case .spawn, .connect: "launch"
        case .callback(let c): c.rawValue
        case .resume: "resume"
        case .deliverQueuedNotifications: "the delivery of queued notifications"
        case .suspend: "suspension"
        case .awaitBackgroundTasks: "its background tasks"
        case .enter(let s): "the transition to \(s.rawValue)"
        case .beginBackgroundStay, .endBackgroundStay, .detach, .teardown: "the command"
        }
    }

    /// Starts the app's process (it is inactive from then on, once `.enter(.inactive)` runs).
    private func spawn(_ a: AppRecord) throws(SupervisorError) {
        let name = a.name
        a.generation += 1
        let generation = a.generation
        a.token = Self.makeToken()
        a.hello = false
        a.hadChannel = false
        a.callbacksInProgress = [:]
        a.connection = nil
        a.acks = [:]
        a.readyCount = 0
        a.tasks = [:]
        a.expiredTasks = []
        a.backgroundEnteredAt = nil
        a.queued = []
        a.exitStatus = nil
        a.terminating = false
        a.killReason = nil
        a.othersKilled = 0
        a.commandAnswers = [:]
        var members = AppMembers.processGroup
        if let cgroups {
            let group = cgroups.app(name)
            do {
                try group.create()
            } catch {
                record(.error(.launch(cause: "\(error)")), a)
                throw .cgroup(error)
            }
            members = .cgroup(group)
            // A group left by a run whose removal failed is used again: only kills from now on
            // are this run's (`kernelOOMKills()`).
            if let memory = group.memory, !cgroups.isV2 { a.oomKillsAtLaunch = DeviceCgroups.oomKills(memory, isV2: false) }
        }
        var env = a.spec.environment ?? [:]
        env[ControlProtocol.socketVariable] = socket.path
        env[ControlProtocol.appVariable] = name
        env[ControlProtocol.tokenVariable] = a.token
        func undo(_ error: any Error) {
            if case .cgroup(let group) = members { _ = group.remove() }  // just made, empty
            record(.error(.launch(cause: "\(error)")), a)
        }
        let pipe: (write: CInt, run: CInt)
        do {
            pipe = try output.open("\(name)-\(generation).log")
        } catch {
            undo(error)
            throw .system(error)
        }
        let process: AppProcess
        do {
            defer { close(pipe.write) }
            process = try AppProcess.spawn(launcher: launcher, members: members, command: a.spec.command, environment: env, output: pipe.write)
        } catch {
            _ = output.finish(pipe.run)
            undo(error)
            throw .launch(app: name, error)
        }
        a.output = pipe.run
        a.process = process
        if case .processGroup = members {
            // Without a cgroup, the guardian and the next supervisor know the app by its leader.
            guardian.watch(processGroupOf: process.handle)
            runRecord.apps.append(.init(name: name, pid: process.pid, startTicks: process.startTicks))
            saveRunRecord()
        }
        record(.launch(command: a.spec.command), a)
        a.lastSample = UsageSample.read(pid: process.pid)
        a.stateSince = monotonicSeconds()
        let events = self.events
        let reaper: @Sendable () -> Void = {
            let (status, ending) = process.waitForEnd()
            events.yield(.exited(app: name, generation: generation, status: status, ending: ending))
        }
        do {
            try startThread(reaper)
        } catch {
            // Nothing would reap the app or report its exit: it must not run on. Killed and
            // reaped here (SIGKILL ends it at once), it exits like an app that crashed at launch.
            record(.error(.launch(cause: "cannot start the thread that waits for the app: \(error)")), a)
            _ = process.killApp(releaseMemory: false)
            let (status, ending) = process.waitForEnd()
            events.yield(.exited(app: name, generation: generation, status: status, ending: ending))
            throw .system(error)
        }
    }

    /// Waits for the client to connect and say hello; a program that does not is supervised
    /// without callbacks from then on.
    private func connect(_ a: AppRecord, _ generation: Int) async {
        guard a.isClient else { return }
        let failures = a.channelFailures
        let connected = await waitFor(a.name, timeout: configuration.connectTimeout) {
            $0.hello || !$0.alive || $0.generation != generation || $0.channelFailures > failures
        }
        guard a.isAlive(generation), !(connected && a.hello) else { return }
        record(.error(.noCallbacks(a.channelFailures > failures ? .channelFailed : .didNotConnect(seconds: configuration.connectTimeout))), a)
    }

    static func makeToken() -> String {
        (0..<4).map { _ in String(UInt32.random(in: 0...UInt32.max), radix: 16) }.joined()
    }

    /// Waits until the app reports ready `count` times in its current run.
    public func waitForReady(_ name: String, count: Int = 1, timeout: Double = 60) async throws(SupervisorError) {
        let a = try app(name)
        let generation = a.generation
        let ok = await waitFor(name, timeout: timeout) { $0.readyCount >= count || !$0.alive || $0.generation != generation }
        guard ok, a.readyCount >= count else { throw .timedOut(app: name, waitingFor: "report ready (\(count))", seconds: timeout) }
    }

    /// Waits until the app is in `state`.
    public func waitForState(_ name: String, _ state: LifecycleState, timeout: Double = 60) async throws(SupervisorError) {
        _ = try app(name)
        let ok = await waitFor(name, timeout: timeout) { $0.state == state }
        guard ok else { throw .timedOut(app: name, waitingFor: "reach \(state.rawValue)", seconds: timeout) }
    }
}
