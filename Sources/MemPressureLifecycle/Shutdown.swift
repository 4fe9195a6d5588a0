import Glibc
import MemPressureSystem
import MemPressureMonitor
import SystemPackage

// MARK: Shutdown

extension Supervisor {
    /// Ends everything at once, for an interrupted run (Ctrl-C): the policies stop, every app is
    /// killed through its pidfd (no callbacks, no waiting behind a command), then the cleanup
    /// of `shutdown()`. No command starts once it has begun.
    public func abort() async {
        if phase == .running { phase = .stopping }
        for t in policyTasks { t.cancel() }
        for name in order {
            guard let a = records[name], var t = teardown(of: a, as: .expected(nil)) else { continue }
            do {
                try await carryOut(Teardown.abort, on: a, &t)
            } catch {
                record(.error(.abort(cause: "\(error)")), a)
            }
        }
        for name in order where records[name]?.process != nil {
            _ = await waitFor(name, timeout: 5) { !$0.alive }
        }
        await shutdown()
    }

    /// Stops the policies, terminates every app, closes every connection, removes the cgroups,
    /// the sockets and the runtime directory. No command starts once it has begun (one that
    /// waited for its app's lock is refused when it gets it): they fail with `.shuttingDown`.
    public func shutdown() async {
        // Once: a second caller (an abort racing the end of a run) waits for the first.
        if let running = shutdownTask {
            await running.value
            return
        }
        let task = Task { await self.shutdownOnce() }
        shutdownTask = task
        await task.value
    }

    private func shutdownOnce() async {
        if phase == .running { phase = .stopping }
        for t in policyTasks { t.cancel() }
        for t in policyTasks { await t.value }
        policyTasks.removeAll()
        // A memory-warning command or readiness probe still running ends now (SIGKILL through its pidfd; what waits
        // for it then ends the rest of its process group and reaps it, and the log says so).
        let commands = helperCommands
        for (pid, command) in commands {
            do {
                try command.handle.signal(SIGKILL)
            } catch where error.errno == .noSuchProcess {
                // It has exited already; what waits for it ends its group all the same.
            } catch {
                // Not signalled: what waits for it kills it at its timeout; the log says why now.
                let cause = "cannot end it at shutdown: \(error)"
                let fault: SupervisorFault = command.kind == .readinessProbe ? .readinessProbe(cause: cause) : .warningCommand(cause: cause)
                record(SupervisorEvent(t: now(), pid: pid, .error(fault)))
            }
        }
        for (_, command) in commands { await command.ending.value }
        for name in order {
            do {
                try await run(.terminate, name, byShutdown: true)
            } catch {
                record(SupervisorEvent(t: now(), app: name, .error(.shutdown(cause: "\(error)"))))
                leftovers.append("\(name): \(error)")
            }
        }
        phase = .closed
        metrics.close(at: now())
        pressureMonitor?.stop()
        // The sampler and the pressure loops stop; the event streams' loops go on until their
        // streams finish below: a connection's reader reports it closed through them (cancelled
        // now, a close reported late under load was dropped and the wait below ran out).
        for t in loopTasks { t.cancel() }
        onlySocketEvents = true
        socket.close()
        admin?.close()
        // Each connection's reader sees the shutdown and reports it closed; its descriptor is
        // closed then (an admin one after its last answer). Wait for that (quick, unless the
        // machine is very busy: at most `connectionCloseTimeout`).
        for fd in channels.descriptors { ControlSocket.disconnect(fd) }
        for fd in adminConnections.descriptors { ControlSocket.disconnect(fd) }
        await waitForConnectionsClosed(timeout: SupervisorFault.connectionCloseTimeout)
        if !channels.isEmpty || !adminConnections.isEmpty {
            let fault = SupervisorFault.connectionsNotClosed(count: channels.count + adminConnections.count)
            record(SupervisorEvent(t: now(), .error(fault)))
            leftovers.append(fault.description)
        }
        adminEvents.finish()
        for failure in cgroups?.removeAll() ?? [] {
            record(SupervisorEvent(t: now(), .error(.cgroupRemoval(cause: "\(failure)"))))
            leftovers.append("\(failure)")
        }
        if let failure = guardian.failure {
            leftovers.append(failure)
        }
        if let ending = guardian.dismiss() { leftovers.append(ending) }
        logSubscribers.finishAll()
        sampleSubscribers.finishAll()
        events.finish()
        // The streams' loops end once they have handled what was sent before (not cancelled: a
        // cancelled loop drops what its stream still holds).
        // The apps' output files (removed as each run ended; any left now), then the lock, then
        // the directory.
        output.stop()
        lock.release()
        rmdir(runtimeDirectory)
    }

    private func waitForConnectionsClosed(timeout: Double) async {
        guard !channels.isEmpty || !adminConnections.isEmpty else { return }
        await withCheckedContinuation { continuation in
            drainWaiters.append(continuation)
            Task { [weak self] in
                do { try await Task.sleep(for: Seconds.duration(timeout)) } catch { return }
                await self?.resumeDrainWaiters()
            }
        }
    }

    func connectionClosed() {
        if channels.isEmpty && adminConnections.isEmpty { resumeDrainWaiters() }
    }

    private func resumeDrainWaiters() {
        let w = drainWaiters
        drainWaiters = []
        for c in w { c.resume() }
    }
}
