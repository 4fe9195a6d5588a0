import CMemPressureJemalloc

/// A `mallctl` call that failed: the ctl name and the errno jemalloc returned.
public struct MallctlError: Error, Sendable, Hashable, CustomStringConvertible {
    public var ctl: String
    public var code: Int32

    public init(ctl: String, code: Int32) {
        self.ctl = ctl
        self.code = code
    }

    public var description: String {
        let meaning: String
        switch code {
        case 22: meaning = "EINVAL: bad value or size"
        case 2: meaning = "ENOENT: no such ctl"
        case 1: meaning = "EPERM: not writable"
        case 14: meaning = "EFAULT: read or write failed"
        case 11: meaning = "EAGAIN: resources exhausted"
        case 12: meaning = "ENOMEM"
        case 28: meaning = "ENOSPC: too many arenas"
        default: meaning = "errno \(code)"
        }
        return "mallctl(\"\(ctl)\") failed: \(meaning)"
    }
}

/// Typed access to jemalloc's `mallctl` namespace. Every failure throws a `MallctlError`
/// naming the ctl.
package enum Mallctl {
    package static func read<T: BitwiseCopyable>(_ name: String, as type: T.Type = T.self) throws(MallctlError) -> T {
        var value = unsafe_zeroed(T.self)
        var size = MemoryLayout<T>.size
        let rc = withUnsafeMutablePointer(to: &value) { mallctl(name, $0, &size, nil, 0) }
        guard rc == 0 else { throw MallctlError(ctl: name, code: rc) }
        guard size == MemoryLayout<T>.size else { throw MallctlError(ctl: name, code: 22) }
        return value
    }

    package static func write<T: BitwiseCopyable>(_ name: String, _ value: T) throws(MallctlError) {
        var v = value
        let rc = withUnsafeMutablePointer(to: &v) { mallctl(name, nil, nil, $0, MemoryLayout<T>.size) }
        guard rc == 0 else { throw MallctlError(ctl: name, code: rc) }
    }

    /// Runs a ctl that takes no value (`arena.<i>.purge`).
    package static func run(_ name: String) throws(MallctlError) {
        let rc = mallctl(name, nil, nil, nil, 0)
        guard rc == 0 else { throw MallctlError(ctl: name, code: rc) }
    }

    /// Refreshes the statistics snapshot (`epoch`), so `stats.*` reads are current.
    package static func refreshStatistics() throws(MallctlError) {
        var current: UInt64 = 0
        var next: UInt64 = 1
        var size = MemoryLayout<UInt64>.size
        let rc = mallctl("epoch", &current, &size, &next, MemoryLayout<UInt64>.size)
        guard rc == 0 else { throw MallctlError(ctl: "epoch", code: rc) }
    }

    /// The jemalloc version string.
    package static func version() throws(MallctlError) -> String {
        let p: UnsafePointer<CChar>? = try read("version")
        return p.map { String(cString: $0) } ?? "?"
    }
}

@inline(__always)
private func unsafe_zeroed<T: BitwiseCopyable>(_ type: T.Type) -> T {
    withUnsafeTemporaryAllocation(of: T.self, capacity: 1) { buffer in
        UnsafeMutableRawPointer(buffer.baseAddress!).initializeMemory(as: UInt8.self, repeating: 0, count: MemoryLayout<T>.size)
        return UnsafeRawPointer(buffer.baseAddress!).load(as: T.self)
    }
}
