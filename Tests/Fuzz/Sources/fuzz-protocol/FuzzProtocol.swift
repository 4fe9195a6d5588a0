// The control channel: the input's first byte sets the size of the reads the rest arrives in;
// the bytes are split into lines as both ends split them (after a refused line, skipping to
// the next), and each line is parsed as an app's message and as the supervisor's, and as the
// model app's command and reply (WorkloadProtocol, the text its app commands carry). A message
// that parses must print (`line`) as a line that parses back to itself.

import FuzzDriver
import FuzzSupport
import MemPressureLifecycleProtocol
import MemPressureWorkloadProtocol

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = input(data, size)
    guard let first = bytes.first else { return 0 }
    let chunk = Int(first) + 1
    var splitter = LineSplitter()
    var offset = 1
    while offset < size {
        let end = min(size, offset + chunk)
        let lines: [Substring]
        do {
            lines = try splitter.feed(UnsafeRawBufferPointer(rebasing: bytes[offset..<end]))
        } catch {
            blackHole(error.description)
            splitter = LineSplitter(skippingToNextLine: true)
            offset = end
            continue
        }
        for line in lines {
            check(line)
        }
        offset = end
    }
    return 0
}

func check(_ line: Substring) {
    roundTrip(line, "app message", { try AppMessage.parse($0) }, \.line)
    roundTrip(line, "supervisor message", { try SupervisorMessage.parse($0) }, \.line)
    roundTrip(line, "workload command", { try WorkloadCommand(line: $0) }, \.line)
    roundTrip(line, "workload reply", { try WorkloadReply(line: $0) }, \.line)
}

/// A line that parses as `what` must print as a line that parses back to the same value.
func roundTrip<Value: Equatable>(_ line: Substring, _ what: String, _ parse: (Substring) throws -> Value, _ print: (Value) -> String) {
    do {
        let value = try parse(line)
        guard try parse(Substring(print(value))) == value else {
            fatalError("\(what) \(value) prints as '\(print(value))', which parses differently")
        }
    } catch {
        blackHole(String(describing: error))
    }
}

/// The executable's entry point (SwiftPM links `main` to `<module>_main`): libFuzzer's driver.
@_cdecl("fuzz_protocol_main")
public func fuzzMain(_ argc: CInt, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>) -> CInt {
    fuzz_driver_run(argc, argv)
}
