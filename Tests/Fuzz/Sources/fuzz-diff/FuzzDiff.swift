// `mempressure diff`: the input is two VM reports (JSON) separated by a NUL byte (without one,
// the input is diffed against itself). Each is decoded as the CLI decodes it and rendered in
// every format; the diff is computed and rendered as text and JSON.

import FoundationEssentials
import FuzzDriver
import FuzzSupport
import MemPressureSystem
import MemPressureVMTracker

func decodeReport(_ bytes: UnsafeRawBufferPointer) -> VMReport? {
    do {
        let report = try JSONDecoder().decode(VMReport.self, from: Data(bytes))
        guard report.formatVersion <= VMReport.currentFormatVersion else { return nil }
        return report
    } catch {
        blackHole("\(error)")
        return nil
    }
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = input(data, size)
    let split = bytes.firstIndex(of: 0) ?? size
    let first = UnsafeRawBufferPointer(rebasing: bytes[0..<split])
    let second = split < size ? UnsafeRawBufferPointer(rebasing: bytes[(split + 1)...]) : first
    guard let a = decodeReport(first) else { return 0 }
    renderEveryWay(a)
    guard let b = decodeReport(second) else { return 0 }
    if split < size { renderEveryWay(b) }
    let diff = ReportDiff(from: a, to: b)
    blackHole(diff.renderText())
    blackHole(encodeJSON(diff))
    let back = ReportDiff(from: b, to: a)
    blackHole(back.renderText())
    return 0
}

/// The executable's entry point (SwiftPM links `main` to `<module>_main`): libFuzzer's driver.
@_cdecl("fuzz_diff_main")
public func fuzzMain(_ argc: CInt, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>) -> CInt {
    fuzz_driver_run(argc, argv)
}
