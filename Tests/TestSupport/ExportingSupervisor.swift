import Subprocess
import SystemPackage

/// Runs `mempressure supervise --dir RUNTIME --export 127.0.0.1:0` for `body`, which gets the port
/// it serves /metrics on (read from its `metrics: http://...` line); then sends it SIGTERM (also
/// when `body` throws) and waits for it to end. Answers what `body` returned and how the
/// supervisor ended.
public func withExportingSupervisor<T: Sendable>(
    runtime: String, _ body: @escaping (_ port: Int) async throws -> T
) async throws -> (value: T, status: TerminationStatus) {
    let outcome = try await Subprocess.run(
        .path(FilePath(buildDirectory + "/mempressure")), arguments: ["supervise", "--dir", runtime, "--export", "127.0.0.1:0"],
        input: .none, output: .sequence, error: .discarded
    ) { execution -> T in
        // Stopped whatever happens below: its apps go with it.
        defer {
            do {
                try execution.send(signal: .terminate)
            } catch {
                // It has ended already (the SIGTERM below): nothing left to stop.
            }
        }
        var lines = execution.standardOutput.strings().makeAsyncIterator()
        var port: Int?
        let prefix = "metrics: http://127.0.0.1:"
        while port == nil, let line = try await lines.next() {
            if line.hasPrefix(prefix) { port = Int(line.dropFirst(prefix.count).prefix { $0 != "/" }) }
        }
        guard let port else { throw TestFailure("supervise --export never said where /metrics is served") }
        let value = try await body(port)
        // SIGTERM: the exporter stops, the supervisor terminates its apps.
        try execution.send(signal: .terminate)
        while try await lines.next() != nil {}
        return value
    }
    return (outcome.closureResult, outcome.terminationStatus)
}
