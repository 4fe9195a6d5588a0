// /proc/PID/stat: parsed, then the process (its name, state, parent) rendered in a VM report
// as text, CSV and JSON.

import FuzzDriver
import FuzzSupport
import MemPressureSystem
import MemPressureVMTracker

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    do {
        let stat = try ProcessStat.parse(input(data, size), pid: nil)
        blackHole((stat.isKernelThread, stat.isZombie, stat.isStopped, stat.stateLetter))
        renderEveryWay(ProcessSnapshot(stat: stat, regions: [], totals: MemoryCounters(), detail: .rollup, capturedAt: fixedTime))
    } catch {
        blackHole(error.description)
    }
    return 0
}

/// The executable's entry point (SwiftPM links `main` to `<module>_main`): libFuzzer's driver.
@_cdecl("fuzz_stat_main")
public func fuzzMain(_ argc: CInt, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>) -> CInt {
    fuzz_driver_run(argc, argv)
}
