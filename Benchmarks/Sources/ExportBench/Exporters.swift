// The exporters the benchmark starts and scrapes: Debian's node_exporter (its default
// collectors), Debian's process-exporter configured to track every process (one group per
// process name), and `mempressure export` twice: as an operator runs it (its latency) and with
// the allocation counter loaded (its bytes allocated per scrape, and the leak check). Each is the
// benchmark's child (BenchSupport.ChildProcess: signalled only through its pidfd), on a loopback
// port of its own.

import BenchSupport
import Glibc
import MemPressureSystem

/// An exporter the benchmark measures.
enum ExporterID: String, Codable, Sendable, CaseIterable {
    case node = "node_exporter"
    case process = "process-exporter"
    case mempressure = "mempressure"
    /// `mempressure export` with the allocation counter loaded.
    case mempressureCounted = "mempressure-counted"

    /// Its name in the report.
    var label: String {
        switch self {
        case .node: "node_exporter"
        case .process: "process-exporter"
        case .mempressure: "mempressure export"
        case .mempressureCounted: "mempressure export + alloc counter"
        }
    }

    /// Where its bytes allocated per scrape come from.
    var allocationSource: String {
        switch self {
        case .node, .process:
            "the delta of its own go_memstats_alloc_bytes_total between consecutive scrapes (all the Go runtime allocated in that interval, the scrape's work and anything else)"
        case .mempressure:
            "not measured on this instance (see the counted one)"
        case .mempressureCounted:
            "the allocation counter (LD_PRELOAD shim): usable bytes of every block malloc and its family handed out between the ends of consecutive scrapes"
        }
    }
}

/// The Accept header of every scrape: the Prometheus text format, which all three serve.
let textFormat = "text/plain;version=0.0.4"

/// An exporter the benchmark started.
final class RunningExporter {
    let id: ExporterID
    let port: UInt16
    let process: ChildProcess
    /// The allocation counter's file, for the counted instance.
    let counters: AllocCounterFile?
    /// The last value of the exporter's own allocation count (go_memstats_alloc_bytes_total, or
    /// the counter's allocated bytes), for the next scrape's delta.
    var lastAllocated: Double?
    /// The counter's last reading (the counted instance).
    var lastCounts: AllocCounts?

    init(id: ExporterID, port: UInt16, process: ChildProcess, counters: AllocCounterFile?) {
        self.id = id
        self.port = port
        self.process = process
        self.counters = counters
    }

    /// CPU time it has used so far (user + system, all threads), in clock ticks.
    func cpuTicks() throws -> UInt64 {
        let s = try process.stat()
        return s.userTicks + s.systemTicks
    }

    /// Its resident memory now (VmRSS), in bytes.
    func residentBytes() throws -> UInt64 {
        let text = String(decoding: try ProcFS.readBytes("/proc/\(process.pid)/status"), as: UTF8.self)
        guard let line = text.split(separator: "\n").first(where: { $0.hasPrefix("VmRSS:") }),
              let kib = line.split(separator: " ").dropFirst().first.flatMap({ UInt64($0) }) else {
            throw BenchError("no VmRSS in /proc/\(process.pid)/status of \(id.label)")
        }
        return kib * 1024
    }

    /// Waits (up to `timeout` seconds) until it answers GET /metrics with 200.
    func waitUntilServing(timeout: Double) throws {
        let deadline = monotonicSeconds() + timeout
        while true {
            try Task.checkCancellation()
            try process.checkAlive("before serving /metrics on 127.0.0.1:\(port)")
            var response: HTTPResponse?
            do {
                response = try httpGet(port: port, accept: textFormat, timeout: max(1, deadline - monotonicSeconds()))
            } catch {
                guard case .connectionRefused = error else { throw error }
            }
            if let response {
                guard response.status == 200 else {
                    throw BenchError("\(id.label) answered GET /metrics with status \(response.status): \(String(decoding: response.body.prefix(300), as: UTF8.self))")
                }
                return
            }
            guard monotonicSeconds() < deadline else {
                throw BenchError("\(id.label) did not listen on 127.0.0.1:\(port) within \(Int(timeout)) s; the end of its log (\(process.logPath)):\n\(process.logTail())")
            }
            pause(0.02)  // not listening yet: it has no event to wait on
        }
    }
}

/// A loopback port nobody listens on now (the kernel picks it), for an exporter to listen on.
func freeLoopbackPort() throws -> UInt16 {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
    guard fd >= 0 else { throw BenchError("socket: \(String(cString: strerror(errno)))") }
    defer { close(fd) }
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_port = 0
    address.sin_addr = in_addr(s_addr: UInt32(0x7F00_0001).bigEndian)
    let bound = withUnsafePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
    }
    guard bound == 0 else { throw BenchError("bind 127.0.0.1:0: \(String(cString: strerror(errno)))") }
    var length = socklen_t(MemoryLayout<sockaddr_in>.size)
    let named = withUnsafeMutablePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
    }
    guard named == 0 else { throw BenchError("getsockname: \(String(cString: strerror(errno)))") }
    return UInt16(bigEndian: address.sin_port)
}

/// process-exporter's configuration: every process with a command line (every process but
/// kernel threads), grouped by its name, the catch-all its documentation gives.
let processExporterConfig = """
    process_names:
      - name: "{{.Comm}}"
        cmdline:
        - '.+'

    """
