import MemPressureLifecycle
import FoundationEssentials
import Glibc
import MemPressureLifecycleProtocol
import MemPressureSystem
import MemPressureMonitor
import Synchronization

extension JetsamEngine {
    // MARK: Measuring

    enum Measurement {
        case measured(MemoryStatus)
        case failed(String)
    }

    /// Reads the device's memory; a failure is said once when it starts (and once when it
    /// works again), never guessed around.
    func measure() async -> Measurement {
        do {
            let status = try await device.memoryStatus()
            await readingWorks(.memory)
            return .measured(status)
        } catch {
            await readingFailed(.memory, "\(error)")
            return .failed("\(error)")
        }
    }

    func target(_ s: MemoryStatus) -> UInt64 {
        UInt64(Double(s.budgetBytes) * configuration.targetAvailableShare)
    }

    /// The apps as the ranker sees them, on readings no older than the policy allows (stale
    /// ones are read again first), with the views they come from. Apps not running, and apps
    /// being taken down, are left out; a frozen-dry app still in the stay it was frozen in is
    /// protected.
    func snapshots() async -> [(view: AppView, snapshot: JetsamAppSnapshot)] {
        var views = await device.apps()
        for (i, v) in views.enumerated() where v.pid != nil && !v.isDying && (v.latest == nil || (v.sampleAgeSeconds ?? .infinity) > policy.maxSampleAgeSeconds * 0.75) {
            if let fresh = await device.refreshSample(v.name) { views[i] = fresh }
        }
        // Forget freeze-drys of stays that are over.
        frozen = frozen.filter { key in views.contains { $0.name == key.name && Self.stay($0) == key } }
        return views.compactMap { v in
            guard let pid = v.pid, v.state != .notRunning, !v.isDying, let latest = v.latest else { return nil }
            let frozenNow = frozen.contains(Self.stay(v))
            // Inside didEnterBackground the app is saving its state: a kill now would lose it.
            // The callback's timeout bounds this.
            let saving = v.callbacksInProgress.contains(.didEnterBackground)
            return (v, JetsamAppSnapshot(
                name: v.name, pid: pid, state: v.state, footprintBytes: latest.footprintBytes, purgeableBytes: latest.purgeableBytes,
                residentBytes: latest.residentBytes, lifetimeMaxFootprintBytes: v.lifetimeMaxFootprintBytes,
                secondsInState: v.secondsInState, secondsSinceActive: v.secondsSinceActive, secondsSinceLaunch: v.secondsSinceLaunch, activations: v.activations,
                isProtected: configuration.protected.contains(v.name) || frozenNow || saving, relaunchSeconds: Validation.median(v.launchToReadySeconds),
                sampleAgeSeconds: v.sampleAgeSeconds ?? .infinity))
        }
    }

    /// The stay in the background an app is in: a suspended app's freeze-dry holds for it.
    static func stay(_ v: AppView) -> StayKey {
        StayKey(name: v.name, generation: v.generation, stay: v.state == .suspended ? v.backgroundStay : -1)
    }
}
