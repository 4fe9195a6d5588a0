/// How short memory is: the one level the pressure monitor, the supervisor, jetsam (its
/// episodes, its ranking inputs and replays), the exporter and in-process caches speak.
///
/// Encoded as the strings `"normal"`, `"warning"`, `"critical"`. Decoding also accepts the
/// integers 0, 1 and 2: the form `PressureEvent` JSON had before the level was one type (the
/// Pressure module's `PressureLevel` was encoded as its raw value, jetsam's `PressureLevelValue`
/// as the string). Anything else is an error that names what it found.
public enum PressureLevel: Int, Sendable, Hashable, Comparable, CaseIterable, Codable, CustomStringConvertible {
    case normal = 0
    case warning = 1
    case critical = 2

    public static func < (a: PressureLevel, b: PressureLevel) -> Bool { a.rawValue < b.rawValue }

    public var description: String {
        switch self {
        case .normal: "normal"
        case .warning: "warning"
        case .critical: "critical"
        }
    }

    /// The level named `text` ("normal", "warning", "critical"), or nil.
    public init?(name text: String) {
        guard let level = Self.allCases.first(where: { $0.description == text }) else { return nil }
        self = level
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        let text: String
        do {
            text = try container.decode(String.self)
        } catch DecodingError.typeMismatch {
            // Not a string: the old integer form (or the decoder's own error for anything else).
            let number = try container.decode(Int.self)
            guard let level = PressureLevel(rawValue: number) else {
                throw DecodingError.dataCorruptedError(
                    in: container, debugDescription: "pressure level \(number) is not one of 0 (normal), 1 (warning), 2 (critical)")
            }
            self = level
            return
        }
        guard let level = PressureLevel(name: text) else {
            throw DecodingError.dataCorruptedError(
                in: container, debugDescription: "pressure level \"\(text)\" is not one of normal, warning, critical")
        }
        self = level
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(description)
    }
}
