/// Sums of kernel counters that never trap: byte counts saturate at `UInt64.max` (a corrupt or
/// hostile input must neither trap nor wrap to a small number).
extension UInt64 {
    @inlinable
    package func saturatingAdd(_ other: UInt64) -> UInt64 {
        let (sum, overflow) = addingReportingOverflow(other)
        return overflow ? .max : sum
    }
}
