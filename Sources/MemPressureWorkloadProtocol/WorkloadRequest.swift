/// A command paired with the reply it expects: one value names what to send and how to read the
/// answer, so a caller gets the typed reply (or a typed error) and never reads the text itself.
///
///     let state = try await WorkloadRequest.state.send { try await supervisor.command(app, $0) }
///     let lost = try await WorkloadRequest.verify(activations: n).send { try await supervisor.command(app, $0) }
public struct WorkloadRequest<Reply: Sendable>: Sendable {
    public let command: WorkloadCommand
    private let extract: @Sendable (WorkloadReply) -> Reply?

    private init(_ command: WorkloadCommand, _ extract: @escaping @Sendable (WorkloadReply) -> Reply?) {
        self.command = command
        self.extract = extract
    }

    /// The line to send.
    public var line: String { command.line }

    /// Parses `line` as the answer to this command. An `error: MESSAGE` answer throws
    /// `.refused`; another command's answer throws `.unexpectedReply`.
    public func reply(_ line: some StringProtocol) throws(WorkloadProtocolError) -> Reply {
        let reply = try WorkloadReply(line: line)
        if case .failed(let message) = reply { throw .refused(command: command.line, message: message) }
        guard let value = extract(reply) else { throw .unexpectedReply(command: command.name, reply: WorkloadText.excerpt(Substring(line))) }
        return value
    }

    /// Sends the command through `transport` (which carries one line to the app and returns its
    /// answer: `Supervisor.command`, a pipe to an unsupervised app) and parses the answer.
    public func send(through transport: (String) async throws -> String) async throws -> Reply {
        try reply(try await transport(line))
    }
}

extension WorkloadRequest where Reply == Int {
    /// `allocate N`: answered with the plain dirty memory it then holds, in bytes.
    public static func allocate(bytes: Int) -> Self {
        Self(.allocate(bytes: bytes)) { if case .dirty(let b) = $0 { b } else { nil } }
    }

    /// `release N`: answered with the plain dirty memory it then holds, in bytes.
    public static func release(bytes: Int) -> Self {
        Self(.release(bytes: bytes)) { if case .dirty(let b) = $0 { b } else { nil } }
    }

    /// `verify N`: answered with the bytes of the state that differ from what N activations leave.
    public static func verify(activations: UInt64) -> Self {
        Self(.verify(activations: activations)) { if case .lost(let b) = $0 { b } else { nil } }
    }
}

extension WorkloadRequest where Reply == Void {
    /// `grow RATE TOTAL`: answered once the spike has begun.
    public static func grow(bytesPerSecond: Int, totalBytes: Int) -> Self {
        Self(.grow(bytesPerSecond: bytesPerSecond, totalBytes: totalBytes)) { if case .growing = $0 { () } else { nil } }
    }
}

extension WorkloadRequest where Reply == WorkloadStateReport {
    /// `state`: the checksums, size and activation count of the app's state.
    public static var state: Self {
        Self(.state) { if case .state(let s) = $0 { s } else { nil } }
    }
}

extension WorkloadRequest where Reply == WorkloadRebuild {
    /// `restored`: answered once the rebuild after a resume has finished, with what it did.
    public static var restored: Self {
        Self(.restored) { if case .restored(let r) = $0 { r } else { nil } }
    }
}

extension WorkloadRequest where Reply == WorkloadRamp {
    /// `ramp CHUNK LINE MORE LIMIT`: answered once the allocation has crossed LINE and gone MORE
    /// bytes past it, with when the crossing chunk was made (an error if LIMIT came first).
    public static func ramp(chunkBytes: Int, lineBytes: Int, moreBytes: Int, limitBytes: Int) -> Self {
        Self(.ramp(chunkBytes: chunkBytes, lineBytes: lineBytes, moreBytes: moreBytes, limitBytes: limitBytes)) { if case .ramped(let r) = $0 { r } else { nil } }
    }
}
