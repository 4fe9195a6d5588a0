import Logging

/// Where the exporter listens and what it collects.
public struct ExporterConfiguration: Sendable {
    /// The address to listen on (a name or a numeric IPv4 or IPv6 address).
    public var host = "127.0.0.1"
    /// The TCP port; 0 lets the kernel choose one (`onListening` says which).
    public var port = ExporterConfiguration.defaultPort
    /// What a scrape reads (grouping, apps opted in for region types, roots).
    public var collector = CollectorOptions()
    /// Called once the server listens, with the address and the port it is bound to.
    public var onListening: (@Sendable (_ host: String, _ port: Int) -> Void)?
    public var logger = Logger(label: "mempressure.export")

    public init() {}

    /// The port `mempressure export` listens on unless told otherwise: 29464. Prometheus' list of
    /// default ports (its wiki's "Default port allocations") gave out 9100 to 9999 one by one
    /// until none was left (2023), and goes on from 10000 the same way: any free-looking port
    /// there is some exporter's, or soon will be (9464, our first choice, is OpenTelemetry's
    /// Prometheus exporter's). 29464 is outside that list and its growth, registered to no one
    /// with IANA and never seen open in nmap's scans (nmap-services), below the range Linux
    /// gives out as source ports (32768–60999, where a listener can find its port taken by an
    /// outgoing connection); it keeps the digits of the old 9464 for those who knew it.
    public static let defaultPort = 29464

    /// The default listen address, `127.0.0.1:29464`.
    public static var defaultListen: String { "127.0.0.1:\(defaultPort)" }

    /// Reads `HOST:PORT` (`127.0.0.1:29464`, `localhost:29464`, `[::1]:29464`, or `:29464` for every
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
