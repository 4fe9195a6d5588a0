import MemPressureSystem
import MemPressureValues

/// The fallback: /proc/meminfo MemAvailable against MemTotal, read at every poll interval (the
/// kernel offers no event for it), judged by the one judgement.
final class AvailableMemory: PressureSource, @unchecked Sendable {
    static let sourceName = "MemAvailable (/proc/meminfo)"
    let name = AvailableMemory.sourceName
    private let reader: MemoryStatusReader
    private var level: PressureLevel = .normal
    private var detail = ""
    /// A reading failed (said in the status until one works).
    private var readFailing = false
    private var buffer = ReadBuffer(capacity: 8192)

    init(procRoot: String) {
        reader = MemoryStatusReader(cgroup: nil, procRoot: procRoot)
    }

    func update(revents: [Int16], at time: Double, _ c: PressureConfiguration) -> SourceUpdate {
        do {
            let judgement = c.judge(MemoryEvidence(status: try reader.read(&buffer).status), current: level)
            level = judgement.level
            detail = judgement.detail
            defer { readFailing = false }
            return SourceUpdate(note: readFailing ? "" : nil)  // "": it reads again
        } catch {
            readFailing = true
            return SourceUpdate(note: "cannot read it now (\(error)): it keeps its last reading")
        }
    }

    func level(at time: Double, _ c: PressureConfiguration) -> (PressureLevel, String) { (level, detail) }

    static func open(_ c: PressureConfiguration) -> (sources: [any PressureSource], status: PressureSourceStatus) {
        let meminfo = "\(c.procRoot)/meminfo"
        guard ProcFS.isFile(meminfo) else {
            return ([], .init(name: sourceName, available: false, detail: "\(meminfo) missing"))
        }
        return ([AvailableMemory(procRoot: c.procRoot)], .init(
            name: sourceName, available: true,
            detail: "warning below \(Int(c.availableWarningFraction * 100))% of MemTotal, critical below \(Int(c.availableCriticalFraction * 100))%; read every \(ByteFormat.fixed(c.pollInterval, 2)) s (the kernel has no event for it)",
            wakeup: .poll))
    }
}
