/// A decoding error in words, for messages: what was wrong and where in the document
/// (`missing "apps" at .steps[2]`, `expected a number, found a string at .formatVersion`), never
/// Swift's rendering of the enum (`DecodingError.dataCorrupted(Context(codingPath: ...))`) nor its
/// type names (`Expected to decode Dictionary<String, Any>`).
extension DecodingError {
    public var plainDescription: String {
        switch self {
        case .dataCorrupted(let c):
            let text = c.debugDescription == "The given data was not valid JSON." ? "not valid JSON" : c.debugDescription
            return text + Self.location(c.codingPath)
        case .keyNotFound(let key, let c): return "missing \"\(key.stringValue)\"" + Self.location(c.codingPath)
        case .typeMismatch(let type, let c): return Self.mismatch(type, c) + Self.location(c.codingPath)
        case .valueNotFound(let type, let c): return "expected \(Self.jsonKind(of: type)), found null" + Self.location(c.codingPath)
        @unknown default: return "not what was expected"
        }
    }

    /// "expected a number, found a string": the JSON kinds, not Swift's types. A description that
    /// is not the decoder's own (a type's `init(from:)` wrote it) stands as written.
    static func mismatch(_ type: Any.Type, _ c: Context) -> String {
        let text = c.debugDescription
        guard text.hasPrefix("Expected to decode "), let found = text.firstRange(of: " but found ") else { return text }
        var what = String(text[found.upperBound...])
        if what.hasSuffix(" instead.") { what.removeLast(" instead.".count) }
        switch what {
        case "number": what = "a number"
        case "string": what = "a string"
        case "null", "a null value": what = "null"
        default: break
        }
        return "expected \(jsonKind(of: type)), found \(what)"
    }

    /// The JSON kind a Swift type decodes from.
    static func jsonKind(of type: Any.Type) -> String {
        var name = String(describing: type)
        while name.hasPrefix("Optional<"), name.hasSuffix(">") { name = String(name.dropFirst("Optional<".count).dropLast()) }
        if name.hasPrefix("Dictionary<") || name.hasPrefix("KeyedDecodingContainer") { return "an object" }
        if name.hasPrefix("Array<") || name.hasPrefix("[") || name.hasPrefix("UnkeyedDecodingContainer") { return "an array" }
        switch name {
        case "Int", "Int8", "Int16", "Int32", "Int64", "UInt", "UInt8", "UInt16", "UInt32", "UInt64", "Double", "Float", "Decimal":
            return "a number"
        case "String", "Substring", "Character": return "a string"
        case "Bool": return "true or false"
        default: return "another kind of value"
        }
    }

    static func location(_ codingPath: [any CodingKey]) -> String {
        codingPath.isEmpty ? "" : " at " + codingPath.map { $0.intValue.map { "[\($0)]" } ?? ".\($0.stringValue)" }.joined()
    }
}

extension EncodingError {
    /// An encoding error in words (a value JSON cannot hold, such as an infinite number), and where.
    public var plainDescription: String {
        switch self {
        case .invalidValue(_, let c): return c.debugDescription + DecodingError.location(c.codingPath)
        @unknown default: return "a value that cannot be written"
        }
    }
}

/// Any error in words for a message: decoding and encoding errors as `plainDescription` says,
/// and every other error by its own description (the project's errors all describe themselves).
public func plainDescription(of error: any Error) -> String {
    switch error {
    case let e as DecodingError: e.plainDescription
    case let e as EncodingError: e.plainDescription
    default: String(describing: error)
    }
}
