import Dispatch
import Glibc
import Hummingbird
import MemPressureSystem
import Logging
import Prometheus
import ServiceLifecycle
import SystemPackage
import Synchronization
import MemPressureVMTracker

import MemPressureExporter

extension ExporterService {
    /// Why the server could not start, in words: the HTTP stack's errors name its own functions
    /// (`bind(descriptor:ptr:bytes:): … (errno: 98)`); the errno at the end of that text says it
    /// plainly (Address already in use (EADDRINUSE)). Read from the text so as not to depend on
    /// the stack's error types.
    static func reason(_ error: any Error) -> String {
        let text = "\(error)"
        let marker = Array("(errno: ".utf8), bytes = Array(text.utf8)
        guard bytes.count > marker.count,
            let start = (0...(bytes.count - marker.count)).last(where: { bytes[$0..<($0 + marker.count)].elementsEqual(marker) }),
            let code = Int32(String(decoding: bytes[(start + marker.count)...].prefix { $0 >= 0x30 && $0 <= 0x39 }, as: UTF8.self)),
            code > 0
        else { return text }
        return "\(String(cString: strerror(code))) (\(Errno(rawValue: code).symbolicName))"
    }
}

/// The exporter's HTTP server, a swift-service-lifecycle `Service`: `GET /metrics` answers with
/// the exposition collected at that moment (OpenMetrics or the Prometheus text format, by the
/// Accept header; gzipped when the Accept-Encoding header takes gzip), `GET /` with a page
/// linking it, `HEAD` of either as `GET` without the body, anything else 404. A collection that
/// fails answers 500 with the reason and the server keeps serving. Graceful shutdown (through
/// the `ServiceGroup` that runs it) stops accepting and finishes the requests in flight.
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
        let metrics = MetricsResponder(collector: collector, logger: configuration.logger)
        router.get("/metrics") { request, _ in await metrics.respond(to: request) }
        router.head("/metrics") { request, _ in await metrics.respond(to: request).createHeadResponse() }
        let index = Response(
            status: .ok, headers: [.contentType: "text/html; charset=utf-8"], body: ResponseBody(byteBuffer: ByteBuffer(string: Self.indexPage)))
        router.get("/") { _, _ in index }
        router.head("/") { _, _ in index.createHeadResponse() }
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
            throw ExporterError.cannotListen(host: host, port: port, reason: Self.reason(error))
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

/// The answer to `GET /metrics`: a scrape, in the format and encoding the request asks for.
private struct MetricsResponder: Sendable {
    let collector: Collector
    let logger: Logger
    /// A scrape reads /proc for tens of milliseconds, blocking: it runs on a queue of its own
    /// rather than on one of Swift concurrency's few threads (which the server's other requests
    /// need), and scrapes arriving together (two Prometheus servers) run one after the other
    /// rather than each taking the CPUs.
    let queue = DispatchQueue(label: "mempressure.exporter.scrape")

    func respond(to request: Request) async -> Response {
        let format = ExpositionFormat.negotiate(accept: request.headers[.accept])
        let gzip = Gzip.accepted(by: request.headers[.acceptEncoding])
        let started = monotonicSeconds()
        let collector = self.collector
        let result = await withCheckedContinuation { (done: CheckedContinuation<Result<[UInt8], CollectionError>, Never>) in
            queue.async { done.resume(returning: Result { () throws(CollectionError) in try collector.scrape(format: format) }) }
        }
        let seconds = monotonicSeconds() - started
        do throws(CollectionError) {
            var bytes = try result.get()
            let plain = bytes.count
            var headers: HTTPFields = [.contentType: format.contentType, .vary: "Accept, Accept-Encoding"]
            if gzip {
                do {
                    bytes = try Gzip.compress(bytes)
                    headers[.contentEncoding] = "gzip"
                } catch {
                    // zlib failed (out of memory): the same answer, not compressed.
                    logger.error("cannot gzip the scrape: \(error)")
                }
            }
            logger.debug("scrape served", metadata: ["format": "\(format.rawValue)", "bytes": "\(plain)", "sent": "\(bytes.count)", "seconds": "\(seconds)"])
            return Response(status: .ok, headers: headers, body: ResponseBody(byteBuffer: ByteBuffer(bytes: bytes)))
        } catch {
            logger.error("scrape failed: \(error.description)", metadata: ["seconds": "\(seconds)"])
            return Response(
                status: .internalServerError, headers: [.contentType: "text/plain; charset=utf-8"],
                body: ResponseBody(byteBuffer: ByteBuffer(string: "collection failed: \(error.description)\n")))
        }
    }
}
