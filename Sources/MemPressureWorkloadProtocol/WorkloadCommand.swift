/// The commands the model app (`mempressure-workload`) answers, as typed values, and their one
/// line on the wire.
///
/// The wire is a line of text: the supervisor carries it as an app command
/// (`Supervisor.command(app, text)`, `command ID TEXT` on the control channel), an unsupervised
/// model app reads it from its standard input, and scenarios and the CLI send it as they are
/// (`{"allocate": "A", "bytes": N}`, `mempressure app allocate A --bytes N`). Words are separated
/// by spaces; sizes and rates are decimal byte counts from 1 to `maximumBytes`:
///
///     allocate N          map and write N more bytes of plain dirty memory  -> dirty BYTES
///     release N           unmap N bytes of it (the newest first)            -> dirty BYTES
///     grow RATE TOTAL     allocate TOTAL bytes at RATE bytes a second, in 4 MiB steps, on a
///                         thread of its own (an allocation spike)            -> growing
///     state               the checksum of its state now and as launch found it, whether it was
///                         restored from disk, its size and its activation count
///                                                                            -> state fnv=HEX ...
///     verify N            every byte of the state compared with what N activations leave
///                         (`WorkloadStateLayout`)                            -> lost BYTES
///     restored            waits until the rebuild after a resume has finished (at once for an
///                         eager restore) and says what it did                -> restored images=N ...
///     ramp CHUNK LINE MORE LIMIT
///                         allocate plain dirty memory CHUNK bytes at a time, every page
///                         written, reading its device's usage and CLOCK_MONOTONIC after each
///                         chunk, until that usage has reached LINE bytes, then MORE bytes more
///                         (LIMIT bytes in all at most): when the allocation that crossed a
///                         threshold was made, timed by the app that made it (`WorkloadRamp`)
///                                                                            -> ramped crossed=S ...
///
/// Any command may be answered `error: MESSAGE` instead (a malformed command, an mmap the kernel
/// refused). `WorkloadReply` parses the answers; `WorkloadRequest` pairs a command with the reply
/// it expects.
public enum WorkloadCommand: Codable, Sendable, Hashable, CustomStringConvertible {
    case allocate(bytes: Int)
    case release(bytes: Int)
    case grow(bytesPerSecond: Int, totalBytes: Int)
    case state
    case verify(activations: UInt64)
    case restored
    case ramp(chunkBytes: Int, lineBytes: Int, moreBytes: Int, limitBytes: Int)

    /// The largest size or rate a command takes (1 TiB).
    public static let maximumBytes = 1 << 40

    /// What the app answers with, in words (for error messages).
    public static let usage = "allocate N, release N, grow RATE TOTAL, state, verify N, restored or ramp CHUNK LINE MORE LIMIT"

    /// The command's first word.
    public var name: String {
        switch self {
        case .allocate: "allocate"
        case .release: "release"
        case .grow: "grow"
        case .state: "state"
        case .verify: "verify"
        case .restored: "restored"
        case .ramp: "ramp"
        }
    }

    /// The line on the wire (without a line feed).
    public var line: String {
        switch self {
        case .allocate(let bytes): "allocate \(bytes)"
        case .release(let bytes): "release \(bytes)"
        case .grow(let rate, let total): "grow \(rate) \(total)"
        case .state: "state"
        case .verify(let activations): "verify \(activations)"
        case .restored: "restored"
        case .ramp(let chunk, let line, let more, let limit): "ramp \(chunk) \(line) \(more) \(limit)"
        }
    }

    public var description: String { line }

    /// Parses one line (spaces between words; several count as one). Never traps: a line that is
    /// not one of the commands, or whose numbers are not decimal or out of range, is an error
    /// that says why.
    public init(line: some StringProtocol) throws(WorkloadProtocolError) {
        let words = Substring(line).split(separator: " ")
        guard let verb = words.first else { throw .emptyLine }
        let arguments = words.dropFirst()
        func expect(_ count: Int, _ usage: String) throws(WorkloadProtocolError) {
            guard arguments.count == count else { throw .wrongArguments(command: String(verb), usage: usage) }
        }
        func size(_ i: Int, _ field: String) throws(WorkloadProtocolError) -> Int {
            let text = arguments[arguments.startIndex + i]
            let value = try WorkloadText.decimal(text, field: field)
            guard value >= 1, value <= UInt64(Self.maximumBytes) else {
                throw .outOfRange(field: field, text: WorkloadText.excerpt(text), range: "1...\(Self.maximumBytes)")
            }
            return Int(value)
        }
        switch verb {
        case "allocate":
            try expect(1, "allocate N")
            self = .allocate(bytes: try size(0, "bytes"))
        case "release":
            try expect(1, "release N")
            self = .release(bytes: try size(0, "bytes"))
        case "grow":
            try expect(2, "grow RATE TOTAL")
            self = .grow(bytesPerSecond: try size(0, "rate"), totalBytes: try size(1, "total"))
        case "state":
            try expect(0, "state")
            self = .state
        case "verify":
            try expect(1, "verify N")
            self = .verify(activations: try WorkloadText.decimal(arguments[arguments.startIndex], field: "activations"))
        case "restored":
            try expect(0, "restored")
            self = .restored
        case "ramp":
            try expect(4, "ramp CHUNK LINE MORE LIMIT")
            self = .ramp(chunkBytes: try size(0, "chunk"), lineBytes: try size(1, "line"), moreBytes: try size(2, "more"), limitBytes: try size(3, "limit"))
        default:
            throw .unknownCommand(WorkloadText.excerpt(verb))
        }
    }
}
