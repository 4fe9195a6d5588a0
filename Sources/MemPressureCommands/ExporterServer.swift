import MemPressureOneShot
import Glibc
import MemPressureExporter
import MemPressureLifecycle
import MemPressureSystem
import Prometheus
import ServiceLifecycle
import Synchronization

/// The command line's entry point, for the two executables: `mempressure-commands`, without
/// the HTTP stack (which `mempressure` becomes for all but its quickest lines), and
/// `mempressure-server`, which has it and gives `export` and `supervise --export` their service.
package enum MempressureCommandLine {
    /// Parses the arguments and runs the command. `exporterService` makes the exporter's HTTP
    /// service (mempressure-server passes it); without it, `export` and `supervise --export`
    /// execute mempressure-server with the same arguments.
    package static func main(exporterService: ExporterServer.Maker? = nil) -> Never {
        ExporterServer.maker.withLock { $0 = exporterService }
        Mempressure.main()
    }
}

/// Where the exporter's HTTP service comes from. SwiftNIO, Hummingbird and Foundation with ICU
/// are linked into `mempressure-server` only: loading them made every command start about 1.6 ms
/// slower and 9 MiB larger (Reports/vmtracker.md).
package enum ExporterServer {
    /// Makes the service that serves `configuration`'s /metrics from `registry`.
    package typealias Maker = @Sendable (ExporterConfiguration, PrometheusCollectorRegistry) -> any Service

    static let maker = Mutex<Maker?>(nil)

    /// The program that has the HTTP server, beside this one.
    static let program = "mempressure-server"

    /// The service, or, in `mempressure-commands`, the process replaced by mempressure-server running the
    /// same command line (so this returns only with the service or an error).
    static func service(_ configuration: ExporterConfiguration, _ registry: PrometheusCollectorRegistry) throws -> any Service {
        if let make = maker.withLock({ $0 }) { return make(configuration, registry) }
        try executeServer()
    }

    /// In `mempressure-commands`: becomes mempressure-server with the same arguments, before the command
    /// does anything (a no-op in mempressure-server itself).
    static func executeServerUnlessServing() throws {
        guard maker.withLock({ $0 }) == nil else { return }
        try executeServer()
    }

    private static func executeServer() throws -> Never {
        let directory = Programs.ownDirectory()
        let path = "\(directory)/\(program)"
        guard access(path, X_OK) == 0 else {
            throw CLIError("\(program) is not installed beside this program (in \(directory)): it serves HTTP for `mempressure export` and `supervise --export`; install it with the rest (make install, or the .deb)")
        }
        // Signal handlers reset to their defaults across exec; the interrupt pipe is close-on-exec.
        let error = Spawn.replaceProcess(with: [path] + CommandLine.arguments.dropFirst())
        throw CLIError("cannot run \(path): \(error)")
    }
}
