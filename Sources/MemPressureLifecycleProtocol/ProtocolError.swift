/// Why a line on the control channel was refused. Each case prints as the one line the
/// supervisor logs when it closes the connection; its JSON (in the supervisor's log) is the
/// case's name holding its values.
public enum ProtocolError: Error, Sendable, Hashable, Codable, CustomStringConvertible {
    case emptyLine
    /// The message needs `count` argument(s).
    case missingArguments(verb: String, count: Int)
    /// The message takes no argument, or fewer than it was given.
    case unexpectedArguments(verb: String)
    case notANonNegativeInteger(field: String, text: String)
    case outOfRange(field: String)
    /// An app name, token or notification kind that is not a word of letters, digits, '.', '-', '_'.
    case notAWord(field: String)
    case unknownCallback(String)
    case unknownMessage(String)
    case lineTooLong(limit: Int)
    case notUTF8
    case nulByte

    public var description: String {
        switch self {
        case .emptyLine: "empty line"
        case .missingArguments(let verb, let count): "'\(verb)' needs \(count) argument(s)"
        case .unexpectedArguments(let verb): "'\(verb)' takes no argument"
        case .notANonNegativeInteger(let field, let text): "\(field) is not a non-negative integer: '\(text)'"
        case .outOfRange(let field): "\(field) out of range"
        case .notAWord(let field): "bad \(field)"
        case .unknownCallback(let name): "unknown callback '\(name)'"
        case .unknownMessage(let text): "unknown message '\(text)'"
        case .lineTooLong(let limit): "a line longer than \(limit) bytes"
        case .notUTF8: "a line that is not UTF-8 text"
        case .nulByte: "a NUL byte"
        }
    }
}
