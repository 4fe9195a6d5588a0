import MemPressureLifecycle
import FoundationEssentials
import Glibc
import MemPressureLifecycleProtocol
import MemPressureSystem
import MemPressureMonitor
import MemPressureValues
import Synchronization

extension JetsamEngine {
    // MARK: Per-app limits

    func checkLimit(_ streamed: AppView) async {
        guard let limit = configuration.limits[streamed.name], !configuration.protected.contains(streamed.name), streamed.pid != nil, !streamed.isDying else { return }
        func over(_ v: AppView) -> (bytes: UInt64, limit: UInt64, which: PerAppLimit)? {
            guard let latest = v.latest else { return nil }
            let foreground = v.state == .active || v.state == .inactive
            guard let bytes = foreground ? limit.activeBytes : limit.inactiveBytes, latest.footprintBytes > bytes else { return nil }
            return (latest.footprintBytes, bytes, foreground ? .active : .inactive)
        }
        let run = RunKey(name: streamed.name, generation: streamed.generation)
        guard over(streamed) != nil else {
            softWarned.remove(run)
            return
        }
        // The streamed reading may be behind: decide on a fresh one.
        let checkedAt = monotonicSeconds()
        guard let v = await device.refreshSample(streamed.name), let pid = v.pid, !v.isDying, v.generation == streamed.generation,
            let latest = v.latest, let (bytes, limitBytes, which) = over(v)
        else { return }
        // Inside didEnterBackground the app is saving its state: not now (the sample taken as it
        // is suspended, or the next one, checks it again).
        if v.callbacksInProgress.contains(.didEnterBackground) { return }
        if limit.soft == true {
            guard softWarned.insert(run).inserted else { return }
            await record(.softLimitWarning(LimitRecord(limit: which, footprintBytes: bytes, limitBytes: limitBytes)), app: v.name, pid: pid)
            _ = await device.warn(.app(v.name), waitForAcknowledgements: true)
            return
        }
        // A failed reading is said (once) by `measure`: not killed on partial data.
        guard case .measured(let before) = await measure() else { return }
        let oomBefore = await device.kernelOOMKills()
        let explanation = "footprint \(Format.bytes(bytes)) over its \(which.rawValue) limit \(Format.bytes(limitBytes)) (state \(v.state.rawValue))"
        let k: KillOutcome
        do {
            k = try await killAndMeasure(v.name, pid: pid, state: v.state, reason: .perProcessLimit, before: before, what: explanation)
        } catch {
            // Exited, changed state or already dying meanwhile: the next reading decides again.
            await record(.note(.overLimitNotKilled(which, cause: "\(error)")), app: v.name, pid: pid)
            return
        }
        // Rank 1 of a decision of one: the limit, not the ranking, chose it.
        await record(k, reason: .perProcessLimit, rank: 1, footprintBytes: bytes, explanation: explanation)
        episodeCount += 1
        let checked = await logTime(ofMonotonic: checkedAt)
        var ep = JetsamEpisode(
            number: episodeCount, startedAt: Timestamp.now(), start: checked, end: nil,
            trigger: .init(level: level, source: .perProcessLimit, detail: explanation, t: checked, wakeup: .poll),
            policy: policy, memoryBefore: before, memoryAfter: k.after, targetAvailableBytes: 0, largestApp: v.name,
            apps: [.init(name: v.name, pid: pid, state: v.state, footprintBytes: bytes, purgeableBytes: latest.purgeableBytes,
                         residentBytes: latest.residentBytes, lifetimeMaxFootprintBytes: v.lifetimeMaxFootprintBytes, secondsInState: v.secondsInState,
                         isProtected: false)],
            timeline: [k.killEntry, k.exitEntry],
            victims: [.init(
                name: v.name, pid: pid, state: v.state, reason: .perProcessLimit, rank: 1, band: .overLimit, policy: policy.name,
                footprintBytes: bytes, purgeableBytes: latest.purgeableBytes, secondsFromEvent: k.receipt.signalledAt - checkedAt,
                secondsFromLatestEvent: k.receipt.signalledAt - checkedAt,
                reclaimedBytes: k.reclaimed, memoryReleased: k.receipt.memoryReleased, exited: k.exited, needed: true, explanation: explanation)],
            freezes: [], decisions: [], kernelOOMKillsBefore: oomBefore, kernelOOMKillsAfter: await device.kernelOOMKills(),
            outcome: .overLimit(which))
        ep.end = await device.now()
        await keep(ep)
    }
}
