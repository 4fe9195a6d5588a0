// `mempressure cache simulate --trace FILE.csv`: the CSV trace parsed, its figures computed, and
// a small cache of each policy run over it (by objects and by bytes).

import CachePolicies
import FuzzDriver
import FuzzSupport

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let trace: Trace
    do {
        trace = try TraceReader.parse(Array(input(data, size)), name: "fuzz.csv")
    } catch {
        blackHole(error.description)
        return 0
    }
    blackHole((trace.uniqueKeys, trace.uniqueBytes))
    for unit in CapacityUnit.allCases {
        let capacity = unit == .objects ? 4 : 4096
        for result in Simulator.run(PolicyKind.allCases, capacity: capacity, trace: trace, unit: unit) {
            guard result.hits + result.misses == trace.requests.count else { fatalError("\(result.policy): hits and misses do not add up") }
            blackHole((result.missRatio, result.byteMissRatio))
        }
    }
    return 0
}

/// The executable's entry point (SwiftPM links `main` to `<module>_main`): libFuzzer's driver.
@_cdecl("fuzz_trace_main")
public func fuzzMain(_ argc: CInt, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>) -> CInt {
    fuzz_driver_run(argc, argv)
}
