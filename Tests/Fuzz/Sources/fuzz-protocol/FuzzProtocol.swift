// The control channel: the input's first byte sets the size of the reads the rest arrives in;
// the bytes are split into lines as both ends split them (after a refused line, skipping to
// the next), and each line is parsed as an app's message and as the supervisor's. A message
// that parses must print (`line`) as a line that parses back to itself.

import FuzzDriver
import FuzzSupport
import LifecycleProtocol

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
    do {
        let message = try AppMessage.parse(line)
        guard try AppMessage.parse(Substring(message.line)) == message else {
            fatalError("app message \(message) prints as '\(message.line)', which parses differently")
        }
    } catch {
        blackHole(error.description)
    }
    do {
        let message = try SupervisorMessage.parse(line)
        guard try SupervisorMessage.parse(Substring(message.line)) == message else {
            fatalError("supervisor message \(message) prints as '\(message.line)', which parses differently")
        }
    } catch {
        blackHole(error.description)
    }
}

/// The executable's entry point (SwiftPM links `main` to `<module>_main`): libFuzzer's driver.
@_cdecl("fuzz_protocol_main")
public func fuzzMain(_ argc: CInt, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>) -> CInt {
    fuzz_driver_run(argc, argv)
}
