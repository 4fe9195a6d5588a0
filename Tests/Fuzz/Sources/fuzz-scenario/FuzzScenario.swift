// `mempressure run SCENARIO.json`: decoded and validated as `Scenario.load` does, the errors
// worded, and the supervisor configuration a valid scenario asks for derived. Nothing is run.

import MemPressureLifecycle
import FoundationEssentials
import FuzzDriver
import FuzzSupport
import MemPressureScenarios

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let scenario: Scenario
    do {
        scenario = try JSONDecoder().decode(Scenario.self, from: Data(input(data, size)))
    } catch let error as DecodingError {
        blackHole(ScenarioError.notAScenario(path: "fuzz.json", error).description)
        return 0
    } catch {
        blackHole("\(error)")
        return 0
    }
    do {
        try scenario.validate()
    } catch {
        blackHole(error.description)
        return 0
    }
    blackHole(scenario.configuration())
    for step in scenario.steps { blackHole((step.verb, step.app)) }
    return 0
}

/// The executable's entry point (SwiftPM links `main` to `<module>_main`): libFuzzer's driver.
@_cdecl("fuzz_scenario_main")
public func fuzzMain(_ argc: CInt, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>) -> CInt {
    fuzz_driver_run(argc, argv)
}
