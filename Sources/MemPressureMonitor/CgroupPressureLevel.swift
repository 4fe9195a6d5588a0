import Glibc
import MemPressureSystem
import MemPressureValues

/// A cgroup v1 memory.pressure_level notification: an eventfd registered through
/// cgroup.event_control, signalled when the kernel sees "medium" (warning) or "critical"
/// pressure in the cgroup.
final class CgroupPressureLevel: PressureSource, @unchecked Sendable {
    static let sourceName = "cgroup v1 memory.pressure_level"
    let name = CgroupPressureLevel.sourceName
    private let eventFD: CInt
    private let levelFile: String
    private var event: HeldEvent

    var pollDescriptors: [(fd: CInt, events: Int16)] { [(eventFD, Int16(POLLIN))] }

    /// Registers an eventfd for `kernelLevel` ("medium", "critical") of `cgroup`.
    init(cgroup: String, kernelLevel: String, level: PressureLevel) throws(SystemCallError) {
        eventFD = try CgroupEventControl.register(cgroup: cgroup, file: "memory.pressure_level", [kernelLevel])
        levelFile = "\(cgroup)/memory.pressure_level"
        event = HeldEvent(level: level, what: "the kernel reported \(kernelLevel) pressure in \(cgroup)")
    }

    func update(revents: [Int16], at time: Double, _ c: PressureConfiguration) -> SourceUpdate {
        guard let fired = revents.first, fired != 0 else { return SourceUpdate() }
        if let failure = HeldEvent.pollFailure(fired) { return SourceUpdate(stopped: failure) }
        // The eventfd is signalled once more when the cgroup is removed: that is not pressure.
        guard access(levelFile, F_OK) == 0 else { return SourceUpdate(stopped: "its file went away") }
        CgroupEventControl.drain(eventFD)
        event.fired(at: time)
        return SourceUpdate(events: [event.what])
    }

    func level(at time: Double, _ c: PressureConfiguration) -> (PressureLevel, String) { event.level(at: time, c) }

    func close() { Glibc.close(eventFD) }

    static func open(_ c: PressureConfiguration, cgroup: String, isV2: Bool) -> (sources: [any PressureSource], status: PressureSourceStatus) {
        if isV2 {
            return ([], .init(name: sourceName, available: false, detail: "\(cgroup) is a cgroup v2 group"))
        }
        guard ProcFS.isFile("\(cgroup)/memory.pressure_level") else {
            return ([], .init(name: sourceName, available: false, detail: "\(cgroup) has no memory.pressure_level"))
        }
        return PressureSources.openEach(
            sourceName,
            [(PressureLevel.warning, "medium"), (.critical, "critical")].map { level, kernelLevel in
                ("\(kernelLevel) -> \(level)", { () throws(SystemCallError) -> any PressureSource in
                    try CgroupPressureLevel(cgroup: cgroup, kernelLevel: kernelLevel, level: level)
                })
            },
            describe: { "eventfd for " + $0.joined(separator: ", ") }, refused: "registration refused")
    }
}
