import LinuxSystem

/// The fallback: /proc/meminfo MemAvailable against MemTotal, read at every poll interval.
final class AvailableMemory: PressureSource, @unchecked Sendable {
    static let sourceName = "MemAvailable (/proc/meminfo)"
    let name = AvailableMemory.sourceName
    private let file: String
    private var reading = PolledLevel()
    private var buffer = ReadBuffer(capacity: 8192)

    init(file: String) {
        self.file = file
    }

    func update(revents: Int16, at time: Double, _ c: PressureConfiguration) -> String? {
        do {
            try ProcFS.readFile(file, into: &buffer)
        } catch {
            return nil  // keeps its last reading
        }
        let (total, available) = buffer.withBytes { MemInfo.totalAndAvailable($0) }
        guard let total, let available, total > 0 else { return nil }
        reading.read("MemAvailable", available, of: total, warning: c.availableWarningFraction, critical: c.availableCriticalFraction, c, rising: false)
        return nil
    }

    func level(at time: Double, _ c: PressureConfiguration) -> (PressureLevel, String) { reading.current }

    static func open(_ c: PressureConfiguration) -> (sources: [any PressureSource], status: PressureSourceStatus) {
        let meminfo = "\(c.procRoot)/meminfo"
        guard ProcFS.isFile(meminfo) else {
            return ([], .init(name: sourceName, available: false, detail: "\(meminfo) missing"))
        }
        return ([AvailableMemory(file: meminfo)], .init(
            name: sourceName, available: true,
            detail: "warning below \(Int(c.availableWarningFraction * 100))% of MemTotal, critical below \(Int(c.availableCriticalFraction * 100))%"))
    }
}
