import Dispatch
import Glibc
import Hummingbird
import LinuxSystem
import Logging
import Prometheus
import ServiceLifecycle
import Synchronization
import VMTracker

/// Where the exporter listens and what it collects.
public struct ExporterConfiguration: Sendable {
    /// The address to listen on (a name or a numeric IPv4 or IPv6 address).
    public var host = "127.0.0.1"
    /// The TCP port; 0 lets the kernel choose one (`onListening` says which).
    public var port = 9464
    /// What a scrape reads (grouping, apps opted in for region types, roots).
    public var collector = CollectorOptions()
    /// Called once the server listens, with the address and the port it is bound to.
    public var onListening: (@Sendable (_ host: String, _ port: Int) -> Void)?
    public var logger = Logger(label: "mempressure.export")

    public init() {}

    /// Reads `HOST:PORT` (`127.0.0.1:9464`, `localhost:9464`, `[::1]:9464`, or `:9464` for every
    /// IPv4 address, as Prometheus' own `--web.listen-address` reads it).
    package static func parseListen(_ text: String) throws -> (host: String, port: Int) {
        guard let colon = text.lastIndex(of: ":") else {
            throw ExporterError.badListenAddress(text, "expected HOST:PORT")
        }
        var host = String(text[..<colon])
        let portText = text[text.index(after: colon)...]
        guard let port = Int(portText), (0...65535).contains(port) else {
            throw ExporterError.badListenAddress(text, "the port must be a number from 0 to 65535")
        }
        if host.hasPrefix("[") {
            guard host.hasSuffix("]"), host.count > 2 else { throw ExporterError.badListenAddress(text, "an IPv6 address is written [ADDRESS]:PORT") }
            host = String(host.dropFirst().dropLast())
        } else if host.contains(":") {
            throw ExporterError.badListenAddress(text, "an IPv6 address is written [ADDRESS]:PORT")
        }
        if host.isEmpty { host = "0.0.0.0" }
        return (host, port)
    }
}

/// Why the exporter could not serve.
public enum ExporterError: Error, Sendable, Hashable, CustomStringConvertible {
    case badListenAddress(String, String)
    case unknownHost(String, String)
    case cannotListen(host: String, port: Int, reason: String)

    public var description: String {
        switch self {
        case .badListenAddress(let text, let why): "bad listen address '\(text)': \(why)"
        case .unknownHost(let host, let why): "cannot listen on '\(host)': \(why)"
        case .cannotListen(let host, let port, let reason): "cannot listen on \(host):\(port): \(reason)"
        }
    }
}

/// The exporter's HTTP server, a swift-service-lifecycle `Service`: `GET /metrics` answers with
/// the exposition collected at that moment (OpenMetrics or the Prometheus text format, by the
/// Accept header), `GET /` with a page linking it, anything else 404. A collection that fails
/// answers 500 with the reason and the server keeps serving. Graceful shutdown (through the
/// `ServiceGroup` that runs it) stops accepting and finishes the requests in flight.
public struct ExporterService: Service {
    public let configuration: ExporterConfiguration
    public let collector: Collector

    /// A server with `configuration`; `registry` is the swift-prometheus registry the process
    /// bootstrapped swift-metrics with, whose families are served after the exporter's own.
    public init(configuration: ExporterConfiguration, registry: PrometheusCollectorRegistry? = nil) {
        self.configuration = configuration
        collector = Collector(options: configuration.collector, registry: registry)
    }

    public func run() async throws {
        let host = configuration.host
        let port = configuration.port
        try Self.checkResolvable(host)
        let router = Router()
        let collector = self.collector
        let scrapeQueue = DispatchQueue(label: "mempressure.exporter.scrape")
        let logger = configuration.logger
        router.get("/metrics") { request, _ -> Response in
            let format = ExpositionFormat.negotiate(accept: request.headers[.accept])
            // A scrape reads /proc for tens of milliseconds, blocking: it runs on a queue of its
            // own rather than on one of Swift concurrency's few threads (which the server's
            // other requests need), and scrapes arriving together (two Prometheus servers) run
            // one after the other rather than each taking the CPUs.
            let started = monotonicSeconds()
            let result = await withCheckedContinuation { (done: CheckedContinuation<Result<[UInt8], CollectionError>, Never>) in
                scrapeQueue.async { done.resume(returning: Result { () throws(CollectionError) in try collector.scrape(format: format) }) }
            }
            let seconds = monotonicSeconds() - started
            do throws(CollectionError) {
                let bytes = try result.get()
                logger.debug("scrape served", metadata: ["format": "\(format.rawValue)", "bytes": "\(bytes.count)", "seconds": "\(seconds)"])
                return Response(
                    status: .ok, headers: [.contentType: format.contentType],
                    body: ResponseBody(byteBuffer: ByteBuffer(bytes: bytes)))
            } catch {
                logger.error("scrape failed: \(error.description)", metadata: ["seconds": "\(seconds)"])
                return Response(
                    status: .internalServerError, headers: [.contentType: "text/plain; charset=utf-8"],
                    body: ResponseBody(byteBuffer: ByteBuffer(string: "collection failed: \(error.description)\n")))
            }
        }
        router.get("/") { _, _ -> Response in
            Response(
                status: .ok, headers: [.contentType: "text/html; charset=utf-8"],
                body: ResponseBody(byteBuffer: ByteBuffer(string: Self.indexPage)))
        }
        let listening = ListeningFlag()
        let onListening = configuration.onListening
        let app = Application(
            router: router,
            configuration: .init(address: .hostname(host, port: port), serverName: "mempressure"),
            onServerRunning: { channel in
                listening.set()
                onListening?(host, channel.localAddress?.port ?? port)
            },
            logger: configuration.logger)
        do {
            try await app.run()
        } catch {
            guard !listening.isSet else { throw error }
            throw ExporterError.cannotListen(host: host, port: port, reason: "\(error)")
        }
    }

    static let indexPage = """
        <!DOCTYPE html>
        <html><head><title>mempressure exporter</title></head>
        <body><h1>mempressure exporter</h1>
        <p>Memory footprint, dirty, clean, purgeable and swapped memory per app, memory cgroups and pressure: <a href="/metrics">/metrics</a>.</p>
        </body></html>

        """

    /// Whether `host` names an address; throws the resolver's words if not.
    static func checkResolvable(_ host: String) throws(ExporterError) {
        var hints = addrinfo()
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        var result: UnsafeMutablePointer<addrinfo>?
        let rc = getaddrinfo(host, nil, &hints, &result)
        if let result { freeaddrinfo(result) }
        guard rc == 0 else {
            throw .unknownHost(host, String(cString: gai_strerror(rc)))
        }
    }
}

/// Set once the server listens (from the event loop), read when `run` ends.
private final class ListeningFlag: Sendable {
    private let value = Atomic<Bool>(false)
    func set() { value.store(true, ordering: .releasing) }
    var isSet: Bool { value.load(ordering: .acquiring) }
}
