import MemPressureLifecycle

/// A supervisor configuration for tests: the executables of this build, no footprint sampling,
/// and room for a machine much busier than a device. A debug build of the model app (or a
/// Python interpreter), started beside the rest of the suite and two CPU-bound processes (`make
/// test-stress`), can take more than the defaults (10, 30 and 5 s) to connect, launch or answer;
/// a test of a timeout sets its own through `change`.
public func supervisorConfiguration(_ change: (inout SupervisorConfiguration) -> Void = { _ in }) -> SupervisorConfiguration {
    var c = SupervisorConfiguration()
    c.executableDirectory = buildDirectory
    c.sampleInterval = 0
    c.connectTimeout = 60
    c.launchTimeout = 120
    c.callbackTimeout = 30
    change(&c)
    return c
}
