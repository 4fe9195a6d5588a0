import CMemoryPressure
import Glibc
import LinuxSystem
import PressureValues
import SystemPackage

/// A cgroup v1 memory.pressure_level notification: an eventfd registered through
/// cgroup.event_control, signalled when the kernel sees "medium" (warning) or "critical"
/// pressure in the cgroup.
final class CgroupPressureLevel: PressureSource, @unchecked Sendable {
    static let sourceName = "cgroup v1 memory.pressure_level"
    let name = CgroupPressureLevel.sourceName
    private let eventFD: CInt
    private let levelFD: CInt
    private let levelFile: String
    private var event: HeldEvent

    var pollDescriptor: (fd: CInt, events: Int16)? { (eventFD, Int16(POLLIN)) }

    /// Registers an eventfd for `kernelLevel` ("medium", "critical") of `cgroup`.
    init(cgroup: String, kernelLevel: String, level: PressureLevel) throws(SystemCallError) {
        let efd = mp_eventfd(0)
        guard efd >= 0 else { throw SystemCallError("eventfd", errno: Errno(rawValue: errno)) }
        let levelFile = "\(cgroup)/memory.pressure_level"
        let pfd = Glibc.open(levelFile, O_RDONLY | O_CLOEXEC)
        guard pfd >= 0 else {
            let e = errno
            Glibc.close(efd)
            throw SystemCallError("open", errno: Errno(rawValue: e), subject: levelFile)
        }
        let control = "\(cgroup)/cgroup.event_control"
        let cfd = Glibc.open(control, O_WRONLY | O_CLOEXEC)
        guard cfd >= 0 else {
            let e = errno
            Glibc.close(efd)
            Glibc.close(pfd)
            throw SystemCallError("open", errno: Errno(rawValue: e), subject: control)
        }
        defer { Glibc.close(cfd) }
        let line = "\(efd) \(pfd) \(kernelLevel)"
        let rc = line.withCString { write(cfd, $0, strlen($0)) }
        guard rc >= 0 else {
            let e = errno
            Glibc.close(efd)
            Glibc.close(pfd)
            throw SystemCallError("write", errno: Errno(rawValue: e), subject: "\(control) '\(line)'")
        }
        eventFD = efd
        levelFD = pfd
        self.levelFile = levelFile
        event = HeldEvent(level: level, what: "the kernel reported \(kernelLevel) pressure in \(cgroup)")
    }

    func update(revents: Int16, at time: Double, _ c: PressureConfiguration) -> String? {
        guard revents != 0 else { return nil }
        if let failure = HeldEvent.pollFailure(revents) { return failure }
        // The eventfd is signalled once more when the cgroup is removed: that is not pressure.
        guard access(levelFile, F_OK) == 0 else { return "its file went away" }
        var counter: UInt64 = 0
        _ = read(eventFD, &counter, 8)  // drain the eventfd
        event.fired(at: time)
        return nil
    }

    func level(at time: Double, _ c: PressureConfiguration) -> (PressureLevel, String) { event.level(at: time, c) }

    func close() {
        Glibc.close(eventFD)
        Glibc.close(levelFD)
    }

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
