/// The machine's memory and memory pressure at one instant: the header above `mempressure top`
/// and its JSON `machine` object. The MemPressureMonitor module reads it (`MachineMemory.read`).
public struct MachineMemory: Codable, Sendable, Hashable {
    /// `MemTotal`, `MemAvailable`, `SwapTotal` and `SwapFree` of /proc/meminfo; nil when the
    /// kernel did not print the field or the file could not be read (see `notes`).
    public var memTotalBytes: UInt64?
    public var memAvailableBytes: UInt64?
    public var swapTotalBytes: UInt64?
    public var swapFreeBytes: UInt64?
    /// The machine's memory pressure stall information (/proc/pressure/memory), nil when the
    /// kernel has none (built without CONFIG_PSI, or booted with psi=0): `notes` says why.
    public var psi: PressureStall?
    /// What could not be read, one line each.
    public var notes: [String]

    public init(
        memTotalBytes: UInt64? = nil, memAvailableBytes: UInt64? = nil, swapTotalBytes: UInt64? = nil,
        swapFreeBytes: UInt64? = nil, psi: PressureStall? = nil, notes: [String] = []
    ) {
        self.memTotalBytes = memTotalBytes
        self.memAvailableBytes = memAvailableBytes
        self.swapTotalBytes = swapTotalBytes
        self.swapFreeBytes = swapFreeBytes
        self.psi = psi
        self.notes = notes
    }
}
