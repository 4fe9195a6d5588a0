// `ramp CHUNK LINE MORE LIMIT`: the model app allocates until its device's usage crosses a line,
// and says when the allocation that crossed it was made, by its own clock (CLOCK_MONOTONIC, the
// same in every process): where an end-to-end latency — from that allocation to what answers
// it — starts. WorkloadProtocol's `WorkloadRamp` describes the reply.

import Glibc
import MemPressureSystem
import SystemPackage
import MemPressureWorkloadProtocol

extension Workload {
    /// Allocates plain dirty memory `chunk` bytes at a time (whole pages, each written:
    /// `DirtyMemory`), reading the device's usage and then CLOCK_MONOTONIC after each chunk, until
    /// the usage has reached `line` bytes, then `more` bytes more; at most `limit` bytes in all.
    /// What it allocated stays held (`release` gives it back), except when the line was never
    /// reached (or a step failed): then it is released before the error is answered.
    func ramp(chunk: Int, line: Int, more: Int, limit: Int) -> WorkloadReply {
        let usage: DeviceUsage
        do {
            usage = try DeviceUsage()
        } catch {
            return .failed("ramp: \(error)")
        }
        let step = (chunk + DirtyMemory.page - 1) / DirtyMemory.page * DirtyMemory.page
        let startedAt = monotonicSeconds()
        var bytes = 0, chunks = 0, past = 0
        var beforeAt = startedAt, endedAt = startedAt
        var crossing: (at: Double, usage: UInt64)?
        var reading: UInt64 = 0
        while bytes + step <= limit, crossing == nil || past < more {
            guard dirty.allocate(step) else {
                dirty.release(bytes)
                return .failed("ramp: mmap of \(step) bytes refused after \(bytes) bytes")
            }
            bytes += step
            chunks += 1
            do {
                reading = try usage.read()
            } catch {
                dirty.release(bytes)
                return .failed("ramp: \(error)")
            }
            endedAt = monotonicSeconds()
            if crossing != nil {
                past += step
            } else if reading >= UInt64(line) {
                crossing = (endedAt, reading)
            } else {
                beforeAt = endedAt
            }
        }
        guard let crossing else {
            dirty.release(bytes)
            return .failed("ramp: the device's usage (\(usage.path)) was \(reading) bytes, still below \(line), after \(bytes) bytes (the limit)")
        }
        return .ramped(
            WorkloadRamp(
                crossedAt: crossing.at, beforeAt: beforeAt, startedAt: startedAt, endedAt: endedAt, chunks: chunks, bytes: bytes,
                usageBytes: Int(clamping: crossing.usage)))
    }
}

/// The usage of the app's device: the memory cgroup above the app's own, where its supervisor
/// put it (`memory.usage_in_bytes` on cgroup v1, `memory.current` on v2) — the counter the
/// kernel holds the device's usage thresholds against. Read again and again through one
/// descriptor, which it closes.
final class DeviceUsage {
    let path: String
    private let fd: CInt
    private var buffer = [UInt8](repeating: 0, count: 64)

    init() throws(DeviceUsageError) {
        let own: CgroupDirectory?
        do {
            own = try CgroupDirectory.of(controller: "memory")
        } catch {
            throw .cgroup(error)
        }
        guard let own, let device = own.parent, device.relativePath != "/" else {
            throw .noDevice(own.map(\.path) ?? "no memory cgroup")
        }
        path = "\(device.path)/\(device.isV2 ? "memory.current" : "memory.usage_in_bytes")"
        fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw .system(SystemCallError("open", errno: Errno(rawValue: errno), subject: path)) }
    }

    deinit { close(fd) }

    /// The usage now, in bytes.
    func read() throws(DeviceUsageError) -> UInt64 {
        let n = buffer.withUnsafeMutableBytes { raw in retryOnInterrupt { pread(fd, raw.baseAddress, raw.count, 0) } }
        guard n >= 0 else { throw .system(SystemCallError("pread", errno: Errno(rawValue: errno), subject: path)) }
        guard let value = ByteScanner.singleNumber(buffer[..<n]) else { throw .notANumber(path) }
        return value
    }
}

/// Why the device's usage cannot be read.
enum DeviceUsageError: Error, CustomStringConvertible {
    case cgroup(CgroupError)
    /// The app is not in a memory cgroup below another (its own is this path, or it has none).
    case noDevice(String)
    case system(SystemCallError)
    case notANumber(String)

    var description: String {
        switch self {
        case .cgroup(let e): "\(e)"
        case .noDevice(let own): "not in a memory cgroup of its own under a device's (its memory cgroup: \(own))"
        case .system(let e): "\(e)"
        case .notANumber(let path): "\(path) does not hold a number"
        }
    }
}
