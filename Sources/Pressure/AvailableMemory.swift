import LinuxSystem
import PressureValues

/// The fallback: /proc/meminfo MemAvailable against MemTotal, read at every poll interval,
/// judged by the one judgement.
final class AvailableMemory: PressureSource, @unchecked Sendable {
    static let sourceName = "MemAvailable (/proc/meminfo)"
    let name = AvailableMemory.sourceName
    private let reader: MemoryStatusReader
    private var level: PressureLevel = .normal
    private var detail = ""
    private var buffer = ReadBuffer(capacity: 8192)

    init(procRoot: String) {
        reader = MemoryStatusReader(cgroup: nil, procRoot: procRoot)
    }

    func update(revents: Int16, at time: Double, _ c: PressureConfiguration) -> String? {
        do {
            let judgement = c.judge(MemoryEvidence(status: try reader.read(&buffer).status), current: level)
            level = judgement.level
            detail = judgement.detail
        } catch {
            // Keeps its last reading.
        }
        return nil
    }

    func level(at time: Double, _ c: PressureConfiguration) -> (PressureLevel, String) { (level, detail) }

    static func open(_ c: PressureConfiguration) -> (sources: [any PressureSource], status: PressureSourceStatus) {
        let meminfo = "\(c.procRoot)/meminfo"
        guard ProcFS.isFile(meminfo) else {
            return ([], .init(name: sourceName, available: false, detail: "\(meminfo) missing"))
        }
        return ([AvailableMemory(procRoot: c.procRoot)], .init(
            name: sourceName, available: true,
            detail: "warning below \(Int(c.availableWarningFraction * 100))% of MemTotal, critical below \(Int(c.availableCriticalFraction * 100))%"))
    }
}
