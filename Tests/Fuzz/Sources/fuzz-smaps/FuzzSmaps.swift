// /proc/PID/smaps and smaps_rollup: the same bytes through both parsers; what parses is built
// into a process's VM report and rendered as text, CSV and JSON; what does not is worded.

import FuzzDriver
import FuzzSupport
import MemPressureSystem
import MemPressureVMTracker

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = input(data, size)
    do {
        let regions = try SmapsParser.parse(bytes, pid: fixedStat.pid)
        renderEveryWay(ProcessSnapshot(stat: fixedStat, regions: regions, capturedAt: fixedTime))
    } catch {
        blackHole(error.description)
    }
    do {
        let totals = try SmapsParser.parseRollup(bytes, pid: fixedStat.pid)
        renderEveryWay(ProcessSnapshot(stat: fixedStat, regions: [], totals: totals, detail: .rollup, capturedAt: fixedTime))
    } catch {
        blackHole(error.description)
    }
    return 0
}

/// The executable's entry point (SwiftPM links `main` to `<module>_main`): libFuzzer's driver.
@_cdecl("fuzz_smaps_main")
public func fuzzMain(_ argc: CInt, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>) -> CInt {
    fuzz_driver_run(argc, argv)
}
