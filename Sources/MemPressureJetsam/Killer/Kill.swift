import MemPressureLifecycle
import FoundationEssentials
import Glibc
import MemPressureLifecycleProtocol
import MemPressureSystem
import MemPressureMonitor
import Synchronization

extension JetsamEngine {
    // MARK: A kill

    /// The kernel's OOM kills in the device and the memory outside its apps (nil: cannot be told).
    struct OpeningReadings {
        var kernelOOMKills: UInt64?
        var memoryOutsideApps: UInt64?
    }

    /// What one kill did and gave back.
    struct KillOutcome {
        var receipt: KillReceipt
        /// The SIGKILL, at its time, and the exit (or "still exiting") once waited for.
        var killEntry: JetsamEpisode.Entry
        var exitEntry: JetsamEpisode.Entry
        var exited: Bool
        /// Available memory gained against `before`.
        var reclaimed: UInt64
        /// Memory once the victim exited (or the cooldown ended); nil if it could not be read.
        var after: MemoryStatus?
        /// Read just after the SIGKILL when asked (`readingOpening`): an episode's opening record.
        var opening: OpeningReadings?
    }

    /// Kills the app (SIGKILL through the supervisor) and measures what it gave back: an app in a
    /// cgroup of its own gives back its footprint read from the cgroup at the SIGKILL, once it
    /// has exited. Otherwise, available memory gained at once (with process_mrelease most of its
    /// memory is back when kill returns) and once it has exited (the cooldown at most); the
    /// larger of the two, as others' growth only hides some. `before` is what was free when the
    /// decision was made: not measured again here, the SIGKILL would wait for it.
    /// With `readingOpening`, what the episode's opening record needs is read just after the
    /// SIGKILL, before the wait for the exit.
    func killAndMeasure(
        _ name: String, pid: Int32, state: LifecycleState, reason: KillReason, before: MemoryStatus, what: String, readingOpening: Bool = false
    ) async throws(SupervisorError) -> KillOutcome {
        let receipt = try await device.kill(name, pid: pid, reason: reason, expectedState: state)
        let opening = readingOpening ? await openingReadings() : nil
        let killedAt = await logTime(ofMonotonic: receipt.signalledAt)
        let atOnce = await measure()
        let exited = await device.waitForExit(name, pid: pid, timeout: configuration.cooldownSeconds)
        let final = await measure()
        var reclaimed: UInt64 = 0
        if exited, let charged = receipt.chargedBytes {
            // The app is a cgroup: its footprint read from it at the SIGKILL is what came back once
            // its processes were gone (another app growing meanwhile does not hide it).
            reclaimed = charged
        } else {
            for case .measured(let m) in [atOnce, final] {
                reclaimed = max(reclaimed, m.availableBytes &- min(m.availableBytes, before.availableBytes))
            }
        }
        // What is free now is the reading after the exit, only: never the earlier one instead.
        var after: MemoryStatus?
        if case .measured(let m) = final { after = m }
        let exitEntry = await entry(
            exited ? .exit : .note, app: name, pid: pid, bytes: reclaimed,
            exited ? "exited: \(Format.bytes(reclaimed)) given back" : "still exiting \(Format.seconds(configuration.cooldownSeconds)) after SIGKILL: \(Format.bytes(reclaimed)) given back so far")
        return KillOutcome(
            receipt: receipt,
            killEntry: .init(t: killedAt, kind: .kill, app: name, pid: pid, bytes: nil, detail: "\(what): SIGKILL\(receipt.memoryReleased ? ", memory released (process_mrelease)" : "")"),
            exitEntry: exitEntry, exited: exited, reclaimed: reclaimed, after: after, opening: opening)
    }

    /// The kill's event in the supervisor's log, once what it gave back is known (the log stays
    /// in time order; the episode's timeline has the SIGKILL at its time).
    func record(_ k: KillOutcome, reason: KillReason, rank: Int, footprintBytes: UInt64, explanation: String) async {
        let kill = KillRecord(
            reason: reason, rank: rank, policy: policy.name.rawValue, footprintBytes: footprintBytes, reclaimedBytes: k.reclaimed,
            explanation: explanation, stillExitingAfterSeconds: k.exited ? nil : configuration.cooldownSeconds)
        await record(.kill(kill), app: k.receipt.app, pid: k.receipt.pid)
    }
}
