// /proc/PID/status: parsed, then rendered as JSON and as a text table and CSV of its sizes.

import FuzzDriver
import FuzzSupport
import MemPressureSystem
import MemPressureVMTracker

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    do {
        let status = try ProcessStatus.parse(input(data, size), pid: fixedStat.pid)
        blackHole(encodeJSON(status))
        let sizes = [
            status.peakVirtualBytes, status.peakResidentBytes, status.residentBytes, status.residentAnonBytes,
            status.residentFileBytes, status.residentShmemBytes, status.swapBytes,
        ]
        var table = TextTable([.init("Name", .left), .init("Uid"), .init("Threads")] + sizes.map { _ in .init("Bytes") })
        table.append([status.name, status.uid.map { "\($0)" } ?? "-", status.threads.map { "\($0)" } ?? "-"] + sizes.map { $0.map(ByteFormat.human) ?? "-" })
        blackHole(table.render())
        checkCSV(CSV.line([status.name] + sizes.map { $0.map { "\($0)" } ?? "" }))
        var snapshot = ProcessSnapshot(stat: fixedStat, status: status, regions: [], totals: MemoryCounters(), detail: .rollup, capturedAt: fixedTime)
        snapshot.stat.name = PathBytes(status.name.utf8)
        renderEveryWay(snapshot)
    } catch {
        blackHole(error.description)
    }
    return 0
}

/// The executable's entry point (SwiftPM links `main` to `<module>_main`): libFuzzer's driver.
@_cdecl("fuzz_status_main")
public func fuzzMain(_ argc: CInt, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>) -> CInt {
    fuzz_driver_run(argc, argv)
}
