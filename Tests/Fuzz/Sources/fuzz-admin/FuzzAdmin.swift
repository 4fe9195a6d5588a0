// The admin socket: the bytes a client sends, split into lines as the supervisor splits them,
// each line decoded as an `AdminRequest` and validated; refusals worded with their error code,
// and a decoded request encoded back (what `mempressure ctl` sends) must decode to itself.

import MemPressureLifecycle
import FoundationEssentials
import FuzzDriver
import FuzzSupport
import MemPressureLifecycleProtocol

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    var splitter = LineSplitter()
    let lines: [Substring]
    do {
        lines = try splitter.feed(input(data, size))
    } catch {
        blackHole(error.description)
        return 0
    }
    for line in lines {
        let request: AdminRequest
        do {
            request = try JSONDecoder().decode(AdminRequest.self, from: Data(line.utf8))
        } catch let error as CommandError {
            blackHole((SupervisorError.invalidCommand(error).code, "not a request: \(error)"))
            continue
        } catch {
            blackHole("not a request: \(error)")
            continue
        }
        if case .perform(let command) = request {
            do {
                try command.validate()
            } catch {
                blackHole((SupervisorError.invalidCommand(error).code, error.description))
                continue
            }
        }
        let encoded = encodeJSON(request)
        do {
            let again = try JSONDecoder().decode(AdminRequest.self, from: Data(encoded.utf8))
            guard again == request else { fatalError("an admin request encodes to a different request: \(encoded)") }
        } catch {
            fatalError("an admin request's own encoding does not decode: \(error): \(encoded)")
        }
    }
    return 0
}

/// The executable's entry point (SwiftPM links `main` to `<module>_main`): libFuzzer's driver.
@_cdecl("fuzz_admin_main")
public func fuzzMain(_ argc: CInt, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>) -> CInt {
    fuzz_driver_run(argc, argv)
}
