/// One PSI file (`/proc/pressure/memory`, a cgroup v2's `memory.pressure`):
///
///     some avg10=0.31 avg60=0.12 avg300=0.03 total=113651841
///     full avg10=0.00 avg60=0.00 avg300=0.00 total=107617793
///
/// `some` is the share of time at least one task stalled waiting for memory, `full` the share
/// in which all non-idle tasks did; averages are percentages over 10, 60 and 300 seconds,
/// totals cumulative microseconds. The MemPressureMonitor module parses it (`PressureStall.parse`, the one
/// PSI parser) and judges it (`PressureConfiguration.judge`).
public struct PressureStall: Codable, Sendable, Hashable {
    public var some: Line
    /// Absent on kernels before 5.13 for the machine's CPU file; memory always has it, but a
    /// file without it still parses.
    public var full: Line?

    public struct Line: Codable, Sendable, Hashable {
        public var avg10: Double
        public var avg60: Double
        public var avg300: Double
        /// Cumulative stall time in microseconds.
        public var totalMicroseconds: UInt64

        public init(avg10: Double, avg60: Double, avg300: Double, totalMicroseconds: UInt64) {
            self.avg10 = avg10
            self.avg60 = avg60
            self.avg300 = avg300
            self.totalMicroseconds = totalMicroseconds
        }
    }

    public init(some: Line, full: Line?) {
        self.some = some
        self.full = full
    }
}
