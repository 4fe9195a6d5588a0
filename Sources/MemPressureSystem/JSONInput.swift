import FoundationEssentials

/// Decoding JSON that comes from outside (report files, scenarios, the admin socket), with one
/// message made true: Foundation's decoder reports a number that does not fit its field (`-1` or
/// `1e30` for a byte count) as "The given data was not valid JSON.", with no path. When the text
/// is valid JSON after all, the error says so and names the first number that cannot be an
/// unsigned or signed 64-bit integer, with its path (`regions[3].dirtyBytes`).
package enum JSONInput {
    package static func decode<T: Decodable>(_ type: T.Type, from data: Data) throws -> T {
        do {
            return try JSONDecoder().decode(type, from: data)
        } catch let DecodingError.dataCorrupted(context) where context.codingPath.isEmpty && context.underlyingError == nil {
            throw DecodingError.dataCorrupted(DecodingError.Context(
                codingPath: [], debugDescription: diagnosis(data) ?? context.debugDescription))
        }
    }

    /// "valid JSON, but ..." when `data` parses as JSON; nil when it does not.
    static func diagnosis(_ data: Data) -> String? {
        let value: AnyJSON
        do {
            value = try JSONDecoder().decode(AnyJSON.self, from: data)
        } catch {
            return nil  // not JSON at all: the decoder's own message stands
        }
        if let (path, number) = value.firstUnusualNumber(path: "") {
            return "valid JSON, but the number at \(path.isEmpty ? "the top" : path), \(number), is out of range for its field"
                + " (counts and byte counts are integers from 0 to 18446744073709551615)"
        }
        return "valid JSON, but a number in it is out of range for its field"
    }
}

/// Any JSON value, to tell "not JSON" from "a number out of range".
private enum AnyJSON: Decodable {
    case null, bool, string
    case number(Double)
    case array([AnyJSON])
    case object([(String, AnyJSON)])

    private struct Key: CodingKey {
        var stringValue: String
        var intValue: Int? { nil }
        init(stringValue: String) { self.stringValue = stringValue }
        init?(intValue: Int) { nil }
    }

    init(from decoder: any Decoder) throws {
        if let object = try Self.ifOfType({ try decoder.container(keyedBy: Key.self) }) {
            // Sorted, so that "the first" is the same in every process.
            let keys = object.allKeys.sorted { $0.stringValue < $1.stringValue }
            self = .object(try keys.map { ($0.stringValue, try object.decode(AnyJSON.self, forKey: $0)) })
            return
        }
        if var list = try Self.ifOfType({ try decoder.unkeyedContainer() }) {
            var items: [AnyJSON] = []
            while !list.isAtEnd { items.append(try list.decode(AnyJSON.self)) }
            self = .array(items)
            return
        }
        let single = try decoder.singleValueContainer()
        if single.decodeNil() {
            self = .null
        } else if try Self.ifOfType({ try single.decode(Bool.self) }) != nil {
            self = .bool
        } else if let d = try Self.ifOfType({ try single.decode(Double.self) }) {
            self = .number(d)
        } else {
            _ = try single.decode(String.self)
            self = .string
        }
    }

    /// What `body` decodes, or nil when the value is of another JSON type (`typeMismatch`: the
    /// next shape is tried); any other error is thrown.
    private static func ifOfType<T>(_ body: () throws -> T) throws -> T? {
        do {
            return try body()
        } catch DecodingError.typeMismatch {
            return nil
        }
    }

    /// The first number (in document order, keys sorted) that is negative, not whole, or beyond
    /// 2^63: one that a count or a signed integer field cannot hold.
    func firstUnusualNumber(path: String) -> (String, String)? {
        switch self {
        case .number(let d):
            let unusual = !d.isFinite || d < 0 || d.rounded() != d || abs(d) >= 9.223372036854775807e18
            return unusual ? (path, "\(d)") : nil
        case .array(let items):
            for (i, item) in items.enumerated() {
                if let found = item.firstUnusualNumber(path: "\(path)[\(i)]") { return found }
            }
            return nil
        case .object(let members):
            for (key, item) in members {
                if let found = item.firstUnusualNumber(path: path.isEmpty ? key : "\(path).\(key)") { return found }
            }
            return nil
        default:
            return nil
        }
    }
}
