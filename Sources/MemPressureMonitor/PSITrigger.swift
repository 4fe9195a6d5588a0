import Glibc
import MemPressureSystem
import MemPressureValues
import SystemPackage

/// A PSI trigger (/proc/pressure/memory, or a cgroup v2's memory.pressure): the kernel wakes
/// poll(2) with POLLPRI when tasks stalled on memory longer than the threshold within the
/// window. "some" (some task stalled) raises warning, "full" (all tasks stalled) critical.
final class PSITrigger: PressureSource, @unchecked Sendable {
    let name: String
    private let fd: CInt
    private var event: HeldEvent

    var pollDescriptors: [(fd: CInt, events: Int16)] { [(fd, Int16(POLLPRI))] }

    /// Registers the trigger "KIND STALL WINDOW" on `file`.
    init(file: String, kind: String, stallMicroseconds: Int, windowMicroseconds: Int, level: PressureLevel, name: String) throws(SystemCallError) {
        let fd = Glibc.open(file, O_RDWR | O_NONBLOCK | O_CLOEXEC)
        guard fd >= 0 else { throw SystemCallError("open", errno: Errno(rawValue: errno), subject: file) }
        let trigger = "\(kind) \(stallMicroseconds) \(windowMicroseconds)"
        let rc = trigger.withCString { write(fd, $0, strlen($0) + 1) }
        guard rc >= 0 else {
            let e = errno
            Glibc.close(fd)
            throw SystemCallError("write", errno: Errno(rawValue: e), subject: "\(file) trigger '\(trigger)'")
        }
        self.fd = fd
        self.name = name
        event = HeldEvent(level: level, what: "\(kind) memory stall above \(stallMicroseconds) µs in \(windowMicroseconds / 1000) ms")
    }

    func update(revents: [Int16], at time: Double, _ c: PressureConfiguration) -> SourceUpdate {
        guard let fired = revents.first, fired != 0 else { return SourceUpdate() }
        if let failure = HeldEvent.pollFailure(fired) { return SourceUpdate(stopped: failure) }
        event.fired(at: time)
        return SourceUpdate(events: [event.what])
    }

    func level(at time: Double, _ c: PressureConfiguration) -> (PressureLevel, String) { event.level(at: time, c) }

    func close() { Glibc.close(fd) }

    /// The machine's triggers, or the cgroup v2's own.
    static func open(_ c: PressureConfiguration, cgroupV2: Bool) -> (sources: [any PressureSource], status: PressureSourceStatus) {
        let own = c.cgroup.flatMap { cgroupV2 ? $0 : nil }
        let file = own.map { "\($0)/memory.pressure" } ?? "\(c.procRoot)/pressure/memory"
        let name = own != nil ? "psi (cgroup v2 memory.pressure)" : "psi (/proc/pressure/memory)"
        guard c.usePSI else {
            return ([], .init(name: name, available: false, detail: "disabled by configuration"))
        }
        guard ProcFS.isFile(file) else {
            return ([], .init(name: name, available: false, detail: "\(file) does not exist (kernel without CONFIG_PSI, or psi=0)"))
        }
        let window = c.psiWindowMicroseconds
        let triggers = [(PressureLevel.warning, "some", c.psiWarningStallMicroseconds), (.critical, "full", c.psiCriticalStallMicroseconds)]
        return PressureSources.openEach(
            name,
            triggers.map { level, kind, stall in
                ("\(kind) \(stall) µs per \(window) µs -> \(level)", { () throws(SystemCallError) -> any PressureSource in
                    try PSITrigger(file: file, kind: kind, stallMicroseconds: stall, windowMicroseconds: window, level: level, name: name)
                })
            },
            describe: { "triggers: " + $0.joined(separator: "; ") }, refused: "triggers refused")
    }
}
