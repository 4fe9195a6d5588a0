import MemPressureLifecycle
import FoundationEssentials
import Glibc
import MemPressureLifecycleProtocol
import MemPressureSystem
import MemPressureMonitor
import MemPressureValues
import Synchronization

extension JetsamEngine {
    // MARK: An episode

    func episode(trigger: EpisodeTrigger, reevaluation: Bool) async {
        // A failed reading is said (once) by `measure`: no decision on partial data.
        guard case .measured(var status) = await measure() else { return }
        // Jetsam's look at memory: the opening reading, stamped on the log's clock later.
        let lookedAt = monotonicSeconds()
        var target = target(status)
        var forced: String?
        if trigger.source == .underOOM, status.availableBytes >= target {
            // A task waits at the limit, yet the working set says enough is free: what the
            // kernel counts as inactive file cannot be reclaimed now (dirty pages, writeback).
            // The task must not wait on: at least one kill, by the policy.
            target = min(status.budgetBytes, status.availableBytes + 1 << 20)
            forced = "a task waits at the limit although \(Format.bytes(status.availableBytes)) look available (inactive file the kernel cannot reclaim now): one kill at least"
        } else if reevaluation {
            // Nothing to do: enough is free (pressure from page cache alone, say).
            guard status.availableBytes < target else { return }
        }
        // Every app as the supervisor last read it (stale readings read again): the episode's
        // opening picture, and what its first decision ranks when nothing comes between.
        let opening = await snapshots()
        let apps = opening.map(\.snapshot)
        episodeCount += 1
        var ep = JetsamEpisode(
            number: episodeCount, startedAt: Timestamp.now(), start: 0, end: nil,
            trigger: .init(level: trigger.level, source: trigger.source, detail: trigger.detail, t: 0, wakeup: trigger.wakeup),
            policy: policy, memoryBefore: status, memoryAfter: nil, targetAvailableBytes: target,
            largestApp: apps.max { ($0.footprintBytes, $1.name) < ($1.footprintBytes, $0.name) }?.name,
            apps: apps.map {
                .init(name: $0.name, pid: $0.pid, state: $0.state, footprintBytes: $0.footprintBytes, purgeableBytes: $0.purgeableBytes,
                      residentBytes: $0.residentBytes, lifetimeMaxFootprintBytes: max($0.lifetimeMaxFootprintBytes, $0.footprintBytes),
                      secondsInState: $0.secondsInState, isProtected: $0.isProtected)
            },
            timeline: [], victims: [], freezes: [], decisions: [], kernelOOMKillsBefore: nil,
            kernelOOMKillsAfter: nil, outcome: .stillShort)
        // What only the report needs — the log clock's times, the kernel's OOM count, the memory
        // outside the apps (a read of every app's cgroup) — is read once the first SIGKILL has
        // gone when the episode goes straight to kills (critical already, or a re-evaluation),
        // before the warnings otherwise.
        var pending = OpeningRecord(trigger: trigger.time, lookedAt: lookedAt, look: "\(Format.bytes(status.availableBytes)) available of \(Format.bytes(status.budgetBytes)); target \(Format.bytes(target)) (\(status.source))", forced: forced)
        let warns = !reevaluation && severity(status) < .critical
        if warns { await record(&pending, in: &ep) }
        // The first decision ranks the opening picture unless a step in between changed the apps.
        var prefetched: [(view: AppView, snapshot: JetsamAppSnapshot)]? = warns ? nil : opening

        // 1. Warnings first, unless pressure is already critical (or warnings were sent before
        //    and memory is still short).
        if !reevaluation && severity(status) < .critical {
            // The warnings go out while the grace runs, and their acknowledgements are not waited
            // for: an app that cannot answer yet (inside another callback, or stalled at the
            // limit) holds up neither the grace nor a critical turn.
            let warned = await device.warn(.all, waitForAcknowledgements: false)
            let views = await device.apps()
            for name in warned { ep.timeline.append(await entry(.warning, app: name, pid: views.first { $0.name == name }?.pid, "memory warning sent")) }
            for v in views where v.state == .suspended { ep.timeline.append(await entry(.warning, app: v.name, pid: v.pid, "not sent: suspended")) }
            // Running, and not reached: no client, no channel, or nothing chosen for it (the
            // supervisor's log says which).
            for v in views where v.state.isRunning && !warned.contains(v.name) {
                ep.timeline.append(await entry(.warning, app: v.name, pid: v.pid, "not sent: nothing reaches it (the supervisor's log says why)"))
            }
            let graceStarted = monotonicSeconds()
            await graceUnlessCritical(configuration.warningGraceSeconds)
            if let c = criticalNoticed, c.time >= graceStarted {
                ep.timeline.append(.init(t: await logTime(ofMonotonic: c.time), kind: .note, app: nil, pid: nil, bytes: nil, detail: "critical, the grace ends: \(c.what)"))
            }
            if await recovered(after: .warnings, &ep, &status) { return }
        }

        // 2. Freeze-dry the small suspended apps (as they are now, after the grace).
        if configuration.freezeDryBelowBytes > 0, !Task.isCancelled {
            await record(&pending, in: &ep)
            switch await device.swapTotalBytes() {
            case .failure(let error):
                ep.timeline.append(await entry(.note, "cannot tell whether there is swap (\(error)): no freeze-dry in this episode"))
            case .success(0):
                if !saidNoSwap {
                    saidNoSwap = true
                    await record(.note(.noSwap))
                }
                ep.timeline.append(await entry(.note, "no swap: freeze-dry is off"))
            case .success:
                var froze = false
                for (v, a) in await snapshots() where a.state == .suspended && !a.isProtected && a.footprintBytes > 0
                    && a.footprintBytes < configuration.freezeDryBelowBytes && !Task.isCancelled {
                    do {
                        let r = try await device.pageOut(a.name, pid: a.pid, expectedState: .suspended)
                        frozen.insert(Self.stay(v))
                        froze = true
                        ep.freezes.append(.init(name: a.name, pid: a.pid, footprintBytes: a.footprintBytes, bytes: r.writtenBytes, residentBefore: r.residentBefore, residentAfter: r.residentAfter))
                        let dried = FreezeDryRecord(writtenBytes: r.writtenBytes, residentBeforeBytes: r.residentBefore, residentAfterBytes: r.residentAfter)
                        await record(.freezeDry(dried), app: a.name, pid: a.pid)
                        ep.timeline.append(await entry(.freeze, app: a.name, pid: a.pid, bytes: r.writtenBytes, "written to swap"))
                    } catch {
                        ep.timeline.append(await entry(.note, app: a.name, pid: a.pid, "freeze-dry failed: \(error)"))
                    }
                }
                if froze {
                    prefetched = nil
                    if await recovered(after: .freezeDry, &ep, &status) { return }
                }
            }
        }

        // 3. Kills, one at a time, deciding again after each on fresh readings.
        var kills = 0
        var failedKills = 0
        var outcome: JetsamEpisode.Outcome?
        while status.availableBytes < target, !Task.isCancelled, kills < 1000 {
            // The event the decision answers: the latest before it (a critical one that cut the
            // grace short, say).
            let decidedAfter = max(trigger.time, lastEvent?.time ?? trigger.time, criticalNoticed?.time ?? trigger.time)
            let candidates: [(view: AppView, snapshot: JetsamAppSnapshot)]
            if let prefetched {
                candidates = prefetched
            } else {
                candidates = await snapshots()
            }
            prefetched = nil
            // How short memory is now: under_oom read again (a kill moments ago may have let the
            // waiting task go), the working set as just measured.
            await refreshUnderOOM()
            let input = RankingInput(
                apps: candidates.map(\.snapshot), budgetBytes: status.budgetBytes, availableBytes: status.availableBytes, targetAvailableBytes: target,
                level: severity(status))
            let decision: Decision
            do {
                decision = try Ranker.decide(input, policy: policy)
            } catch {
                ep.decisions.append(.init(input: input, victim: nil, note: "no decision: \(error)"))
                outcome = .noDecision(reason: "\(error)")
                break
            }
            guard let victim = decision.victims.first else {
                ep.decisions.append(.init(input: input, victim: nil, note: decision.explanation))
                outcome = .nothingLeftToKill(shortByBytes: target - min(target, status.availableBytes), explanation: decision.explanation)
                await record(&pending, in: &ep)
                ep.timeline.append(await entry(.note, outcome?.description ?? ""))
                if let released = await releaseKernelHold() { ep.timeline.append(await entry(.note, released)) }
                break
            }
            let v = victim.snapshot
            // What was free when the decision was made (measured moments ago: after the grace or
            // freeze-dry, or after the previous kill), against which this kill's gift is counted.
            // Not measured again here: the SIGKILL would wait for it.
            let before = status
            let k: KillOutcome
            do {
                k = try await killAndMeasure(
                    v.name, pid: v.pid, state: v.state, reason: .vmPageShortage, before: before, what: "rank \(victim.rank) (\(victim.band))",
                    readingOpening: !pending.recorded)
            } catch {
                await record(&pending, in: &ep)
                // Exited, relaunched, changed state or already dying since the reading: decide
                // again on fresh data — unless that keeps happening.
                failedKills += 1
                ep.decisions.append(.init(input: input, victim: nil, note: "\(v.name) not killed: \(error)"))
                ep.timeline.append(await entry(.note, app: v.name, pid: v.pid, "not killed: \(error)"))
                if failedKills >= Self.failedKillLimit {
                    outcome = .failedKills(count: failedKills, app: v.name, error: "\(error)")
                    break
                }
                guard case .measured(let now) = await measure() else {
                    outcome = .notMeasured(after: .failedKill)
                    break
                }
                status = now
                continue
            }
            failedKills = 0
            await record(&pending, in: &ep, k.opening)
            ep.decisions.append(.init(input: input, victim: v.name, note: nil))
            ep.timeline.append(k.killEntry)
            guard let now = k.after else {
                outcome = .notMeasured(after: .kill)
                break
            }
            status = now
            kills += 1
            ep.timeline.append(k.exitEntry)
            await record(k, reason: .vmPageShortage, rank: victim.rank, footprintBytes: v.footprintBytes, explanation: victim.explanation)
            ep.victims.append(.init(
                name: v.name, pid: v.pid, state: v.state, reason: .vmPageShortage,
                rank: victim.rank, band: victim.band, policy: policy.name, footprintBytes: v.footprintBytes,
                purgeableBytes: v.purgeableBytes, secondsFromEvent: k.receipt.signalledAt - trigger.time,
                secondsFromLatestEvent: k.receipt.signalledAt - decidedAfter,
                reclaimedBytes: k.reclaimed, memoryReleased: k.receipt.memoryReleased, exited: k.exited, needed: true, explanation: victim.explanation))
        }
        await record(&pending, in: &ep)
        if let outcome {
            // How it stopped, on its timeline too (a shortage nobody can end says so above).
            if case .nothingLeftToKill = outcome {} else { ep.timeline.append(await entry(.note, outcome.description)) }
            ep.outcome = outcome
        } else {
            ep.outcome = status.availableBytes >= target ? .recovered(kills: kills) : (Task.isCancelled ? .shuttingDown : .stillShort)
        }
        await close(&ep, status)
    }

    /// What an episode's report says of its opening, recorded once (`record(_:in:_:)`).
    struct OpeningRecord {
        /// Monotonic seconds: the wake that opened it, and its opening reading of memory.
        var trigger: Double
        var lookedAt: Double
        var look: String
        var forced: String?
        var recorded = false
    }

    /// The opening of the episode, on its report: the log clock's times of the trigger and of the
    /// look, the kernel's OOM kills so far and the memory outside the apps (`readings`, read just
    /// after the first SIGKILL, which changes neither, or now). Once; first on the timeline.
    func record(_ o: inout OpeningRecord, in ep: inout JetsamEpisode, _ readings: OpeningReadings? = nil) async {
        guard !o.recorded else { return }
        o.recorded = true
        let logNow = await device.now()
        let monoNow = monotonicSeconds()
        ep.start = logNow - (monoNow - o.trigger)
        ep.trigger.t = ep.start
        let r: OpeningReadings
        if let readings { r = readings } else { r = await openingReadings() }
        ep.kernelOOMKillsBefore = r.kernelOOMKills
        ep.memoryOutsideAppsBytes = r.memoryOutsideApps
        let lookT = logNow - (monoNow - o.lookedAt)
        var first = [JetsamEpisode.Entry(t: lookT, kind: .measure, app: nil, pid: nil, bytes: ep.memoryBefore.availableBytes, detail: o.look)]
        if let forced = o.forced { first.append(.init(t: lookT, kind: .note, app: nil, pid: nil, bytes: nil, detail: forced)) }
        ep.timeline.insert(contentsOf: first, at: 0)
    }

    func openingReadings() async -> OpeningReadings {
        OpeningReadings(kernelOOMKills: await device.kernelOOMKills(), memoryOutsideApps: await device.memoryOutsideApps())
    }

    /// Measures again after `step` (the warnings, freeze-dry); when enough is free, closes the
    /// episode ("warnings sufficed: nobody killed") and says so. When memory cannot be measured,
    /// closes it too: no decision on partial data.
    func recovered(after step: JetsamEpisode.Outcome.Step, _ ep: inout JetsamEpisode, _ status: inout MemoryStatus) async -> Bool {
        guard case .measured(let s) = await measure() else {
            ep.outcome = .notMeasured(after: step)
            ep.timeline.append(await entry(.note, ep.outcome.description))
            await close(&ep, status)
            return true
        }
        status = s
        ep.timeline.append(await entry(.measure, bytes: status.availableBytes, "after \(step.rawValue): \(Format.bytes(status.availableBytes)) available"))
        guard status.availableBytes >= ep.targetAvailableBytes else { return false }
        ep.outcome = .sufficed(step)
        await close(&ep, status)
        return true
    }

    /// A monotonic time (a KillReceipt's `signalledAt`) on the supervisor's log clock.
    func logTime(ofMonotonic t: Double) async -> Double {
        await device.now() - (monotonicSeconds() - t)
    }

    /// A timeline entry, stamped with the supervisor's log clock.
    func entry(_ kind: JetsamEpisode.EntryKind, app: String? = nil, pid: Int32? = nil, bytes: UInt64? = nil, _ detail: String) async -> JetsamEpisode.Entry {
        JetsamEpisode.Entry(t: await device.now(), kind: kind, app: app, pid: pid, bytes: bytes, detail: detail)
    }

    func close(_ ep: inout JetsamEpisode, _ status: MemoryStatus) async {
        lastEpisodeRecovered = status.availableBytes >= ep.targetAvailableBytes
        if !lastEpisodeRecovered, !Task.isCancelled {
            // Still short, whatever stopped it: no new episode until something changes.
            let levelNow = level
            let stuck = (apps: Self.signature(await device.apps()), severity: severity(status))
            if level == levelNow { stuckWith = stuck }  // a change of level meanwhile clears it
        }
        ep.end = await device.now()
        ep.memoryAfter = status
        ep.kernelOOMKillsAfter = await device.kernelOOMKills()
        ep.markNeeded()
        await keep(ep)
    }

    /// Keeps a closed episode: in memory (and for `episodeUpdates()` subscribers), and on disk
    /// when there is a `reportDirectory`.
    func keep(_ ep: JetsamEpisode) async {
        // On disk first: whoever hears of the episode can read its file.
        defer { killer.add(ep) }
        if let dir = configuration.reportDirectory {
            do {
                let encoder = JSONEncoder()
                encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
                let bytes = Array(try encoder.encode(ep)) + [0x0a]
                // Made 0700 when missing; one that is there must be this user's or root's and
                // closed to others (another user could plant links in it): CheckedDirectory.
                try CheckedDirectory.open(dir, creating: true).replaceFile("episode-\(ep.number).json", with: bytes)
            } catch {
                await record(.failure(.reportNotWritten(episode: ep.number, directory: dir, cause: "\(error)")))
            }
        }
    }
}
