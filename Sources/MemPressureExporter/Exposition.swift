/// The two text formats a scrape can be answered in, and the writer of both.
///
/// Why a writer of our own beside swift-prometheus: swift-prometheus 2.4.1 renders only the
/// Prometheus text format 0.0.4 (no OpenMetrics: no `# EOF`, counter families are typed under
/// their `_total` name); its counters only go up by increments (a scrape reads the kernel's
/// absolute totals, which would have to be turned into deltas per series and kept between
/// scrapes); and its series live in the registry until unregistered (a process that exits would
/// leave its series behind, or every scrape would register and unregister thousands of them). The
/// scrape-time families are therefore written here, straight into one byte buffer, and the
/// registry a process bootstraps swift-metrics with is rendered from its own text into the same
/// response, in either format (`RegistryText`).

/// A text exposition format.
public enum ExpositionFormat: String, Sendable, Hashable, CaseIterable {
    /// The Prometheus text format 0.0.4.
    case prometheus
    /// OpenMetrics 1.0.0.
    case openMetrics = "openmetrics"

    /// The Content-Type header of a response in this format.
    public var contentType: String {
        switch self {
        case .prometheus: "text/plain; version=0.0.4; charset=utf-8"
        case .openMetrics: "application/openmetrics-text; version=1.0.0; charset=utf-8"
        }
    }

    /// The format to answer a request with `accept` as its Accept header: OpenMetrics when the
    /// client accepts `application/openmetrics-text` at least as much as the Prometheus text
    /// format (`text/plain`, or any type), otherwise the Prometheus text format (also without
    /// a header, as the Prometheus text format is what every scraper understands).
    package static func negotiate(accept: String?) -> ExpositionFormat {
        guard let accept else { return .prometheus }
        var openMetrics = 0.0
        var text = 0.0
        for (type, quality) in QualityList.parse(accept) {
            switch type {
            case "application/openmetrics-text": openMetrics = max(openMetrics, quality)
            case "text/plain", "text/*", "*/*": text = max(text, quality)
            default: continue
            }
        }
        return openMetrics > 0 && openMetrics >= text ? .openMetrics : .prometheus
    }
}

/// The type of a metric family.
package enum MetricType: String, Sendable, Hashable {
    case gauge
    case counter
    case histogram
    case unknown
}

/// Label pairs rendered once (`name="value",...`, escaped), to be written after any family's
/// name: an app's labels are rendered once per scrape, not once per series.
package struct LabelSet: Sendable, Hashable {
    /// The rendered pairs, without braces.
    package private(set) var bytes: [UInt8] = []

    package init() {}

    /// Adds `name="value"`; `name` must be a valid label name (ours are literals).
    package mutating func add(_ name: StaticString, _ value: String) {
        addName(name)
        Exposition.appendEscapedLabelValue(value.utf8, to: &bytes)
        bytes.append(UInt8(ascii: "\""))
    }

    /// Adds a label whose value is raw bytes (a process name, a cgroup path), written as
    /// `Exposition.labelText` describes.
    package mutating func add(_ name: StaticString, bytes value: some Collection<UInt8>) {
        addName(name)
        Exposition.appendEscapedLabelValue(Exposition.labelText(value), to: &bytes)
        bytes.append(UInt8(ascii: "\""))
    }

    /// Adds `name="N"`.
    package mutating func add(_ name: StaticString, _ value: Int64) {
        addName(name)
        Exposition.appendDecimal(value, to: &bytes)
        bytes.append(UInt8(ascii: "\""))
    }

    private mutating func addName(_ name: StaticString) {
        if !bytes.isEmpty { bytes.append(UInt8(ascii: ",")) }
        name.withUTF8Buffer { bytes.append(contentsOf: $0) }
        bytes.append(contentsOf: [UInt8(ascii: "="), UInt8(ascii: "\"")])
    }
}

/// Writes metric families in one format into one growing byte buffer.
///
/// A family is opened with `family(_:_:help:)` (its HELP and TYPE lines) and followed by its
/// samples. Counter families are named without `_total`: in the Prometheus text format the
/// HELP and TYPE lines and the samples carry `_total`, in OpenMetrics only the samples do, as
/// each format requires. `finish()` ends the exposition (`# EOF` in OpenMetrics).
package struct ExpositionWriter: Sendable {
    package let format: ExpositionFormat
    package private(set) var bytes: [UInt8] = []
    /// The current family's sample name, as bytes.
    private var sampleName: [UInt8] = []
    /// The families written so far (to keep a registry's family of the same name out).
    package private(set) var familyNames: Set<String> = []

    package init(format: ExpositionFormat, reservingCapacity capacity: Int = 0) {
        self.format = format
        bytes.reserveCapacity(capacity)
    }

    /// Opens a family. `name` is a valid metric name, without `_total` for counters.
    package mutating func family(_ name: String, _ type: MetricType, help: String) {
        let typedName = type == .counter && format == .prometheus ? name + "_total" : name
        familyNames.insert(name)
        bytes.append(contentsOf: "# HELP ".utf8)
        bytes.append(contentsOf: typedName.utf8)
        bytes.append(UInt8(ascii: " "))
        Exposition.appendEscapedHelp(help.utf8, format: format, to: &bytes)
        bytes.append(contentsOf: "\n# TYPE ".utf8)
        bytes.append(contentsOf: typedName.utf8)
        bytes.append(UInt8(ascii: " "))
        bytes.append(contentsOf: type.rawValue.utf8)
        bytes.append(UInt8(ascii: "\n"))
        sampleName = Array((type == .counter ? name + "_total" : name).utf8)
    }

    /// A sample of the current family with `labels`.
    package mutating func sample(_ labels: LabelSet?, _ value: UInt64) {
        openSample(labels, nil, "")
        Exposition.appendDecimal(value, to: &bytes)
        bytes.append(UInt8(ascii: "\n"))
    }

    /// A sample with `labels` and one more label, `extraName="extraValue"`.
    package mutating func sample(_ labels: LabelSet?, _ extraName: StaticString, _ extraValue: StaticString, _ value: UInt64) {
        openSample(labels, extraName, extraValue)
        Exposition.appendDecimal(value, to: &bytes)
        bytes.append(UInt8(ascii: "\n"))
    }

    /// A sample with a floating-point value.
    package mutating func sample(_ labels: LabelSet?, double value: Double) {
        openSample(labels, nil, "")
        Exposition.appendDouble(value, to: &bytes)
        bytes.append(UInt8(ascii: "\n"))
    }

    /// A sample with one more label and a floating-point value.
    package mutating func sample(_ labels: LabelSet?, _ extraName: StaticString, _ extraValue: StaticString, double value: Double) {
        openSample(labels, extraName, extraValue)
        Exposition.appendDouble(value, to: &bytes)
        bytes.append(UInt8(ascii: "\n"))
    }

    /// A sample with one more label whose value is text (escaped).
    package mutating func sample(_ labels: LabelSet?, _ extraName: StaticString, text extraValue: String, _ value: UInt64) {
        bytes.append(contentsOf: sampleName)
        bytes.append(UInt8(ascii: "{"))
        if let labels, !labels.bytes.isEmpty {
            bytes.append(contentsOf: labels.bytes)
            bytes.append(UInt8(ascii: ","))
        }
        extraName.withUTF8Buffer { bytes.append(contentsOf: $0) }
        bytes.append(contentsOf: [UInt8(ascii: "="), UInt8(ascii: "\"")])
        Exposition.appendEscapedLabelValue(extraValue.utf8, to: &bytes)
        bytes.append(contentsOf: [UInt8(ascii: "\""), UInt8(ascii: "}"), UInt8(ascii: " ")])
        Exposition.appendDecimal(value, to: &bytes)
        bytes.append(UInt8(ascii: "\n"))
    }

    private mutating func openSample(_ labels: LabelSet?, _ extraName: StaticString?, _ extraValue: StaticString) {
        bytes.append(contentsOf: sampleName)
        let hasLabels = !(labels?.bytes.isEmpty ?? true)
        if hasLabels || extraName != nil {
            bytes.append(UInt8(ascii: "{"))
            if let labels, hasLabels { bytes.append(contentsOf: labels.bytes) }
            if let extraName {
                if hasLabels { bytes.append(UInt8(ascii: ",")) }
                extraName.withUTF8Buffer { bytes.append(contentsOf: $0) }
                bytes.append(contentsOf: [UInt8(ascii: "="), UInt8(ascii: "\"")])
                extraValue.withUTF8Buffer { bytes.append(contentsOf: $0) }  // our literals need no escaping
                bytes.append(UInt8(ascii: "\""))
            }
            bytes.append(UInt8(ascii: "}"))
        }
        bytes.append(UInt8(ascii: " "))
    }

    /// Appends text that is already an exposition in this format (a registry's families).
    package mutating func append(raw: [UInt8]) {
        bytes.append(contentsOf: raw)
    }

    /// Ends the exposition: `# EOF` in OpenMetrics, nothing in the Prometheus text format.
    package mutating func finish() {
        if format == .openMetrics { bytes.append(contentsOf: "# EOF\n".utf8) }
    }
}

/// Escaping and number formatting shared by both formats.
public enum Exposition {
    /// A process name or cgroup path (raw bytes: the kernel does not promise UTF-8) as the text
    /// of a label value, before the format's own escaping, reversibly:
    /// - a valid UTF-8 sequence is kept as it is (quotes, newlines and other control
    ///   characters included: the format's escaping takes care of `"`, `\` and newline);
    /// - a backslash is doubled (`\` → `\\`), so that the next rule cannot be forged;
    /// - each byte that is not part of a valid UTF-8 sequence becomes `\x` and two lower-case
    ///   hex digits (the byte 0xff → `\xff`).
    /// So the label is always valid UTF-8, and two different names give two different labels:
    /// read it back by turning `\\` into `\` and `\xNN` into the byte NN. A name that is valid
    /// UTF-8 without a backslash appears unchanged.
    package static func labelText(_ bytes: some Collection<UInt8>) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(bytes.count)
        var index = bytes.startIndex
        while index != bytes.endIndex {
            let byte = bytes[index]
            if byte < 0x80 {
                if byte == UInt8(ascii: "\\") { out.append(byte) }
                out.append(byte)
                index = bytes.index(after: index)
                continue
            }
            var iterator = bytes[index...].makeIterator()
            var parser = Unicode.UTF8.ForwardParser()
            switch parser.parseScalar(from: &iterator) {
            case .valid(let encoded):
                out.append(contentsOf: encoded)
                index = bytes.index(index, offsetBy: encoded.count)
            case .error(let length):
                for _ in 0..<max(1, length) {
                    appendHexEscape(bytes[index], to: &out)
                    index = bytes.index(after: index)
                }
            case .emptyInput:
                return out
            }
        }
        return out
    }

    /// Reverses `labelText`: the bytes a label's text stands for (for tests and readers).
    public static func bytes(fromLabelText text: some Collection<UInt8>) -> [UInt8] {
        let t = Array(text)
        var out: [UInt8] = []
        var i = 0
        while i < t.count {
            if t[i] == UInt8(ascii: "\\"), i + 1 < t.count {
                if t[i + 1] == UInt8(ascii: "\\") {
                    out.append(t[i])
                    i += 2
                    continue
                }
                if t[i + 1] == UInt8(ascii: "x"), i + 3 < t.count, let h = hexValue(t[i + 2]), let l = hexValue(t[i + 3]) {
                    out.append(h << 4 | l)
                    i += 4
                    continue
                }
            }
            out.append(t[i])
            i += 1
        }
        return out
    }

    private static func hexValue(_ c: UInt8) -> UInt8? {
        switch c {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): c - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): c - UInt8(ascii: "a") + 10
        default: nil
        }
    }

    private static func appendHexEscape(_ byte: UInt8, to out: inout [UInt8]) {
        let digits: StaticString = "0123456789abcdef"
        out.append(UInt8(ascii: "\\"))
        out.append(UInt8(ascii: "x"))
        digits.withUTF8Buffer { d in
            out.append(d[Int(byte >> 4)])
            out.append(d[Int(byte & 15)])
        }
    }

    /// A label value escaped for both formats: `\` → `\\`, `"` → `\"`, newline → `\n`.
    static func appendEscapedLabelValue(_ value: some Sequence<UInt8>, to out: inout [UInt8]) {
        for byte in value {
            switch byte {
            case UInt8(ascii: "\\"): out.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "\\")])
            case UInt8(ascii: "\""): out.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "\"")])
            case UInt8(ascii: "\n"): out.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "n")])
            default: out.append(byte)
            }
        }
    }

    /// HELP text escaped: `\` → `\\` and newline → `\n` in both formats, and `"` → `\"` in
    /// OpenMetrics (which escapes HELP as it escapes label values).
    static func appendEscapedHelp(_ help: some Sequence<UInt8>, format: ExpositionFormat, to out: inout [UInt8]) {
        for byte in help {
            switch byte {
            case UInt8(ascii: "\\"): out.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "\\")])
            case UInt8(ascii: "\n"): out.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "n")])
            case UInt8(ascii: "\"") where format == .openMetrics: out.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "\"")])
            default: out.append(byte)
            }
        }
    }

    /// A decimal number, without going through a String.
    package static func appendDecimal(_ value: UInt64, to out: inout [UInt8]) {
        if value < 10 {
            out.append(UInt8(ascii: "0") + UInt8(value))
            return
        }
        withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 20) { buffer in
            var v = value
            var i = 20
            while v > 0 {
                i -= 1
                buffer[i] = UInt8(ascii: "0") + UInt8(v % 10)
                v /= 10
            }
            out.append(contentsOf: UnsafeBufferPointer(rebasing: buffer[i...]))
        }
    }

    package static func appendDecimal(_ value: Int64, to out: inout [UInt8]) {
        if value < 0 { out.append(UInt8(ascii: "-")) }
        appendDecimal(value.magnitude, to: &out)
    }

    /// A floating-point value as both formats spell it (`+Inf`, `-Inf`, `NaN`, else Swift's
    /// shortest round-trip form, which Go's ParseFloat reads).
    package static func appendDouble(_ value: Double, to out: inout [UInt8]) {
        if value.isNaN {
            out.append(contentsOf: "NaN".utf8)
        } else if value.isInfinite {
            out.append(contentsOf: (value > 0 ? "+Inf" : "-Inf").utf8)
        } else if value == value.rounded(), abs(value) < 1e15 {
            appendDecimal(Int64(value), to: &out)
        } else {
            out.append(contentsOf: value.description.utf8)
        }
    }
}
