import MemPressureJetsam
import MemPressureLifecycle

extension LmkdConfiguration {
    /// The lmkd emulation as the benchmarks run it on the supervisor's apps. lmkd kills on low
    /// memory alone from adj 701 (`lowmem_min_oom_score`): Android's cached and previous apps.
    /// In the supervisor's bands the suspended apps begin at 500: set there, lmkd may take on low
    /// memory what jetsam would (a device's property, as on Android).
    public static var supervisedApps: LmkdConfiguration {
        var configuration = LmkdConfiguration()
        configuration.lowmemMinOomScore = Int(OOMScoreBands().suspendedLowMemory)
        return configuration
    }
}
