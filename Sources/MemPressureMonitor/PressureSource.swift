import Glibc
import MemPressureSystem
import MemPressureValues

/// One place memory pressure can be read: kernel events the monitor's poll(2) waits on (a PSI
/// trigger, a cgroup v1 notification), or a value read at every poll interval (MemAvailable, a
/// cgroup v2's usage), or both (a cgroup v1's working set). One file each.
///
/// A source is opened before the monitor's thread starts and used only by that thread after.
protocol PressureSource: AnyObject, Sendable {
    /// The name of its status in `PressureMonitor.sources` (PSI's two triggers share one).
    var name: String { get }
    /// The descriptors poll(2) waits on now, with the events it waits for; empty for a source
    /// read at every poll interval only. Asked again before every poll: a source may change
    /// them (a set of thresholds armed again).
    var pollDescriptors: [(fd: CInt, events: Int16)] { get }
    /// Takes what poll reported on each of `pollDescriptors` as they were when poll was called
    /// (all 0 when nothing happened on them) and reads what the source reads at `time`.
    func update(revents: [Int16], at time: Double, _ c: PressureConfiguration) -> SourceUpdate
    /// The level the source holds at `time`, and what it saw ("" at normal).
    func level(at time: Double, _ c: PressureConfiguration) -> (PressureLevel, String)
    /// Closes its descriptors (and stops what it started).
    func close()
}

/// What one update of a source found.
struct SourceUpdate {
    /// What the kernel signalled on the source's descriptors ("usage threshold"), one entry each.
    var events: [String] = []
    /// Why the source stopped working, once, when it does: the monitor stops polling it and
    /// reports it.
    var stopped: String?
    /// Something the source's status must say from now on while it goes on working (a reading
    /// that failed, a set of thresholds that could not be armed again); "" when that is over.
    var note: String?
}

extension PressureSource {
    /// A source read at every poll interval has no descriptor.
    var pollDescriptors: [(fd: CInt, events: Int16)] { [] }
    /// ... and nothing to close.
    func close() {}
}

/// Every source a configuration asks for.
enum PressureSources {
    /// Opens the sources `c` asks for. Each gives one status, in the order
    /// `PressureMonitor.sources` lists them; a source that cannot be opened says why there.
    static func open(_ c: PressureConfiguration) -> (sources: [any PressureSource], statuses: [PressureSourceStatus]) {
        var sources: [any PressureSource] = []
        var statuses: [PressureSourceStatus] = []
        func add(_ opened: (sources: [any PressureSource], status: PressureSourceStatus)) {
            sources += opened.sources
            statuses.append(opened.status)
        }
        let isV2 = c.cgroup.map { ProcFS.isFile("\($0)/cgroup.controllers") } ?? false
        add(PSITrigger.open(c, cgroupV2: isV2))
        if let cgroup = c.cgroup {
            add(CgroupPressureLevel.open(c, cgroup: cgroup, isV2: isV2))
            add(CgroupUsage.open(c, cgroup: cgroup, isV2: isV2))
        } else {
            statuses.append(.init(name: "cgroup", available: false, detail: "no cgroup given: watching the whole machine"))
        }
        add(AvailableMemory.open(c))
        return (sources, statuses)
    }
}

extension PressureSources {
    /// Opens the descriptors of one source, one per level (PSI's "some" and "full" triggers,
    /// pressure_level's "medium" and "critical"): the source is available when any opened.
    /// `describe` words the status from the labels of those that opened; `refused` starts it
    /// when none did.
    static func openEach(
        _ name: String, _ attempts: [(label: String, open: () throws(SystemCallError) -> any PressureSource)],
        describe: ([String]) -> String, refused: String
    ) -> (sources: [any PressureSource], status: PressureSourceStatus) {
        var sources: [any PressureSource] = []
        var opened: [String] = []
        var failure: SystemCallError?
        for attempt in attempts {
            do throws(SystemCallError) {
                sources.append(try attempt.open())
                opened.append(attempt.label)
            } catch {
                failure = error
            }
        }
        return (sources, PressureSourceStatus(
            name: name, available: !opened.isEmpty, detail: opened.isEmpty ? "\(refused): \(failure.map(\.description) ?? "?")" : describe(opened),
            wakeup: .event))
    }
}

/// What an edge-triggered source holds: the level of its last event, for `eventHoldSeconds`.
struct HeldEvent {
    let level: PressureLevel
    /// What the event means ("some memory stall above ...").
    let what: String
    private var last: Double?

    init(level: PressureLevel, what: String) {
        self.level = level
        self.what = what
    }

    mutating func fired(at time: Double) { last = time }

    func level(at time: Double, _ c: PressureConfiguration) -> (PressureLevel, String) {
        guard let last, time - last <= c.eventHoldSeconds else { return (.normal, "") }
        return (level, what)
    }

    /// Why the source is gone, if poll reported an error on its descriptor (POLLERR, POLLHUP,
    /// POLLNVAL: its cgroup was removed, the trigger was dropped).
    static func pollFailure(_ revents: Int16) -> String? {
        var names: [String] = []
        if revents & Int16(POLLERR) != 0 { names.append("POLLERR") }
        if revents & Int16(POLLHUP) != 0 { names.append("POLLHUP") }
        if revents & Int16(POLLNVAL) != 0 { names.append("POLLNVAL") }
        return names.isEmpty ? nil : "poll reported \(names.joined(separator: "|"))"
    }
}
