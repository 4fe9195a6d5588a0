/// Why a command or a reply of the model app's protocol was refused. Each case prints as one
/// line; quoted text is cut to 60 characters.
public enum WorkloadProtocolError: Error, Sendable, Hashable, CustomStringConvertible {
    case emptyLine
    /// A command the model app does not know.
    case unknownCommand(String)
    /// A known command with the wrong number of arguments; `usage` shows the right ones.
    case wrongArguments(command: String, usage: String)
    /// A number that is not a decimal (or, for checksums, hexadecimal) integer, or too long.
    case notANumber(field: String, text: String)
    case outOfRange(field: String, text: String, range: String)
    /// A reply whose first word is none of the replies.
    case unknownReply(String)
    /// A known reply that is not the one the command is answered with.
    case unexpectedReply(command: String, reply: String)
    /// A reply with the wrong number of words, or a field that is not `KEY=VALUE`.
    case malformedReply(reply: String, text: String)
    case missingField(reply: String, field: String)
    case unknownField(reply: String, field: String)
    case repeatedField(reply: String, field: String)
    /// A field whose value does not parse (a Boolean that is not `true` or `false`, a time that
    /// is negative or not finite).
    case malformedField(reply: String, field: String, text: String)
    /// The app answered `error: MESSAGE`.
    case refused(command: String, message: String)

    public var description: String {
        switch self {
        case .emptyLine: "empty line"
        case .unknownCommand(let verb): "unknown command '\(verb)' (expected \(WorkloadCommand.usage))"
        case .wrongArguments(let command, let usage): "wrong arguments to '\(command)' (expected '\(usage)')"
        case .notANumber(let field, let text): "\(field) is not a number: '\(text)'"
        case .outOfRange(let field, let text, let range): "\(field) \(text) is out of range (\(range))"
        case .unknownReply(let text): "unknown reply '\(text)'"
        case .unexpectedReply(let command, let reply): "'\(command)' was answered with '\(reply)'"
        case .malformedReply(let reply, let text): "malformed '\(reply)' reply: '\(text)'"
        case .missingField(let reply, let field): "'\(reply)' reply without \(field)="
        case .unknownField(let reply, let field): "'\(reply)' reply with an unknown field '\(field)'"
        case .repeatedField(let reply, let field): "'\(reply)' reply with \(field)= twice"
        case .malformedField(let reply, let field, let text): "'\(reply)' reply: \(field)='\(text)' does not parse"
        case .refused(let command, let message): "the app refused '\(command)': \(message)"
        }
    }
}
