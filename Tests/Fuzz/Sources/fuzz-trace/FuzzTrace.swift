// `mempressure cache simulate --trace FILE`: the input parsed as each trace format (CSV, libCacheSim's
// txt and oracleGeneral), whole and in chunks whose size the input's first byte chooses (the
// streamed reader's path: the two must agree, request for request, error for error); then its
// figures computed, every policy run over it at two capacities in one pass (by objects and by
// bytes), and LRU's exact and sampled miss-ratio curves, the exact one checked against LRU.

import MemPressureCachePolicies
import FuzzDriver
import FuzzSupport

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = input(data, size)
    let chunkSize = 1 + Int(bytes.first ?? 0) % 61
    for format in TraceFormat.allCases {
        let whole: Result<Trace, TraceError>
        do {
            whole = .success(format == .csv ? try TraceReader.parse(Array(bytes), name: "fuzz") : try TraceReader.parse(Array(bytes), name: "fuzz", format: format))
        } catch {
            whole = .failure(error)
        }
        let chunked = parseInChunks(bytes, format: format, chunkSize: chunkSize)
        switch (whole, chunked) {
        case (.success(let a), .success(let b)):
            // CSV's whole parse renumbers keys densely; sizes and the pattern of keys must agree.
            guard a.requests.map(\.size) == b.requests.map(\.size), a.uniqueKeys == b.uniqueKeys else {
                fatalError("\(format): the chunked parse differs from the whole one")
            }
            if format != .csv, a.requests != b.requests { fatalError("\(format): the chunked parse differs from the whole one") }
            simulate(a)
        case (.failure(let a), .failure(let b)):
            guard a == b else { fatalError("\(format): chunked error \(b) differs from whole error \(a)") }
            blackHole(a.description)
        default:
            fatalError("\(format): one parse failed and the other did not")
        }
    }
    return 0
}

/// What the streamed reader does: the bytes handed to the parser `chunkSize` at a time.
func parseInChunks(_ bytes: UnsafeRawBufferPointer, format: TraceFormat, chunkSize: Int) -> Result<Trace, TraceError> {
    var parser = TraceParser(format: format, name: "fuzz")
    var requests: [Request] = []
    do {
        var i = 0
        while i < bytes.count {
            let end = min(bytes.count, i + chunkSize)
            try parser.consume(UnsafeRawBufferPointer(rebasing: bytes[i..<end]), into: &requests)
            i = end
        }
        try parser.finish(into: &requests)
        return .success(Trace(name: "fuzz", requests: requests))
    } catch {
        return .failure(error)
    }
}

func simulate(_ trace: Trace) {
    blackHole((trace.uniqueKeys, trace.uniqueBytes))
    for unit in CapacityUnit.allCases {
        let capacities = unit == .objects ? [1, 4] : [4096, 1 << 20]
        var source = InMemoryRequestSource(trace)
        let run: StreamedSimulation
        do {
            run = try Simulator.run(PolicyKind.allCases, capacities: capacities, source: &source, unit: unit, exactLRUCurve: unit == .objects, sampleRate: 0.5)
        } catch {
            fatalError("an in-memory source cannot fail: \(error)")
        }
        for result in run.results {
            guard result.hits + result.misses == trace.requests.count else { fatalError("\(result.policy): hits and misses do not add up") }
            blackHole((result.missRatio, result.byteMissRatio))
        }
        if let exact = run.exactLRU {
            let lru = run.results.filter { $0.policy == "lru" }.map(\.misses)
            guard exact.misses(capacities: capacities) == lru else { fatalError("the exact LRU curve differs from LRU") }
            blackHole(exact.points(upTo: 100, count: 20))
        }
        if let sampled = run.sampledLRU { blackHole(sampled.missRatios(capacities: capacities)) }
    }
}

/// The executable's entry point (SwiftPM links `main` to `<module>_main`): libFuzzer's driver.
@_cdecl("fuzz_trace_main")
public func fuzzMain(_ argc: CInt, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>) -> CInt {
    fuzz_driver_run(argc, argv)
}
