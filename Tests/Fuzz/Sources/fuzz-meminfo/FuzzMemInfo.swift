// /proc/meminfo: parsed, then rendered as JSON and as a text table and CSV of its fields, with
// the share of MemTotal that is available (what the MemAvailable pressure source computes).

import FuzzDriver
import FuzzSupport
import MemPressureSystem
import MemPressureVMTracker

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = input(data, size)
    let info = MemInfo.parse(bytes)
    let (total, available) = MemInfo.totalAndAvailable(bytes)
    guard total == info.totalBytes, available == info.availableBytes else { fatalError("totalAndAvailable disagrees with parse") }
    blackHole(encodeJSON(info))
    let fields = [
        info.totalBytes, info.freeBytes, info.availableBytes, info.buffersBytes, info.cachedBytes, info.swapCachedBytes,
        info.activeBytes, info.inactiveBytes, info.shmemBytes, info.swapTotalBytes, info.swapFreeBytes, info.dirtyBytes,
    ]
    var table = TextTable(fields.map { _ in .init("Bytes") } + [.init("Available")])
    table.append(fields.map { $0.map(ByteFormat.human) ?? "-" } + [ByteFormat.percent(available ?? 0, of: total ?? 0)])
    blackHole(table.render())
    checkCSV(CSV.line(fields.map { $0.map { "\($0)" } ?? "" }))
    return 0
}

/// The executable's entry point (SwiftPM links `main` to `<module>_main`): libFuzzer's driver.
@_cdecl("fuzz_meminfo_main")
public func fuzzMain(_ argc: CInt, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>) -> CInt {
    fuzz_driver_run(argc, argv)
}
