import Glibc
import Subprocess
import SystemPackage
import Testing
import MemPressureTestSupport

/// GET `path` from 127.0.0.1:`port` over plain TCP (HTTP/1.1, `Connection: close`): the whole
/// response, head and body, read until the server closes.
func httpGet(port: Int, path: String) throws -> String {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    guard fd >= 0 else { throw TestFailure("socket: errno \(errno)") }
    defer { close(fd) }
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_port = in_port_t(UInt16(port).bigEndian)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    let connected = withUnsafePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
    }
    guard connected == 0 else { throw TestFailure("connect to 127.0.0.1:\(port): errno \(errno)") }
    let request = Array("GET \(path) HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\nConnection: close\r\n\r\n".utf8)
    var sent = 0
    while sent < request.count {
        let n = request[sent...].withUnsafeBytes { send(fd, $0.baseAddress, $0.count, 0) }
        guard n > 0 else { throw TestFailure("send: errno \(errno)") }
        sent += n
    }
    var response: [UInt8] = []
    var buffer = [UInt8](repeating: 0, count: 65536)
    while true {
        let n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
        guard n >= 0 else { throw TestFailure("recv: errno \(errno)") }
        if n == 0 { break }
        response += buffer[..<n]
    }
    return String(decoding: response, as: UTF8.self)
}

@Suite("mempressure supervise --export")
struct SuperviseExportTests {
    @Test("supervise --export on a port the kernel chooses serves the machine's apps and the supervisor's metrics on /metrics, and stops cleanly on SIGTERM")
    func export() async throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let runtime = "\(dir.path)/rt"
        let data = "\(dir.path)/data"
        let outcome = try await withExportingSupervisor(runtime: runtime) { p in
            let launched = try await runMempressure(["app", "--dir", runtime, "launch", "W", "--", "mempressure-workload", "--state-mb", "1", "--image-cache-mb", "1", "--data-dir", data])
            #expect(launched.status == 0, "\(launched.standardError)")
            #expect(try await runMempressure(["app", "--dir", runtime, "activate", "W"]).standardOutput == "W: active\n")
            let response = try httpGet(port: p, path: "/metrics")
            #expect(response.hasPrefix("HTTP/1.1 200"), "\(response.prefix(200))")
            // The supervisor's metrics...
            #expect(response.contains(#"mempressure_supervisor_app_state{app="W",state="active"} 1"#), "\(response)")
            #expect(response.contains(#"mempressure_supervisor_app_state{app="W",state="notRunning"} 0"#))
            #expect(response.contains(#"mempressure_supervisor_launches_total{app="W"} 1"#))
            #expect(response.contains(#"mempressure_jetsam_kills_total{app="W",reason="vm-pageshortage"} 0"#))
            // ...time to ready as a histogram in the documented buckets...
            #expect(response.contains(#"mempressure_supervisor_time_to_ready_seconds_bucket{app="W",le="0.05"}"#))
            #expect(response.contains(#"mempressure_supervisor_time_to_ready_seconds_bucket{app="W",le="60.0"}"#))
            #expect(response.contains(#"mempressure_supervisor_time_to_ready_seconds_bucket{app="W",le="+Inf"} 1"#))
            #expect(response.contains(#"mempressure_supervisor_time_to_ready_seconds_count{app="W"} 1"#))
            // ...beside the machine's apps, collected at the scrape.
            #expect(response.contains("mempressure_app_footprint_bytes{"))
        }
        // SIGTERM (sent when the body returns): the exporter stops, the supervisor terminates its app.
        #expect(outcome.status == .exited(0), "\(outcome.status)")
        let gone = try await runMempressure(["apps", "--dir", runtime])
        #expect(gone.status == 1, "the supervisor is gone: \(gone.standardOutput)")
    }
}
