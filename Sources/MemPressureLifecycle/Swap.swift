import MemPressureSystem

/// Whether the machine has swap (freeze-dry writes to it).
public enum Swap {
    /// SwapTotal of /proc/meminfo, in bytes (0: no swap), or why it could not be read.
    public static func totalBytes(procRoot: String = "/proc") -> Result<UInt64, SystemCallError> {
        do {
            let text = try ProcFS.readBytes("\(procRoot)/meminfo")
            return .success(text.withUnsafeBytes { MemInfo.parse($0) }.swapTotalBytes ?? 0)
        } catch {
            return .failure(error)
        }
    }
}
