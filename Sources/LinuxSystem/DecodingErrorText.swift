/// A decoding error in words, for messages: what was wrong and where in the document
/// (`missing "apps" at .steps[2]`), never Swift's rendering of the enum
/// (`DecodingError.dataCorrupted(Context(codingPath: ...))`).
extension DecodingError {
    public var plainDescription: String {
        switch self {
        case .dataCorrupted(let c): return c.debugDescription + Self.location(c.codingPath)
        case .keyNotFound(let key, let c): return "missing \"\(key.stringValue)\"" + Self.location(c.codingPath)
        case .typeMismatch(_, let c): return c.debugDescription + Self.location(c.codingPath)
        case .valueNotFound(_, let c): return c.debugDescription + Self.location(c.codingPath)
        @unknown default: return "\(self)"
        }
    }

    static func location(_ codingPath: [any CodingKey]) -> String {
        codingPath.isEmpty ? "" : " at " + codingPath.map { $0.intValue.map { "[\($0)]" } ?? ".\($0.stringValue)" }.joined()
    }
}
