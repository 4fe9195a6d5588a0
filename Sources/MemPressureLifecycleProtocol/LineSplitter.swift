/// Splits a byte stream into lines, refusing over-long ones, NUL bytes and non-UTF-8 text.
public struct LineSplitter: Sendable {
    private var pending: [UInt8] = []
    /// Drops bytes up to the next line feed (after an error, to resynchronize).
    private var skipping = false
    public let maximumLineBytes: Int

    public init(maximumLineBytes: Int = ControlProtocol.maximumLineBytes, skippingToNextLine: Bool = false) {
        self.maximumLineBytes = maximumLineBytes
        skipping = skippingToNextLine
    }

    /// Appends `bytes` and returns the complete lines (without the line feed). Throws on a line
    /// longer than the limit, a NUL, or invalid UTF-8 (the supervisor's way: it closes the
    /// connection).
    public mutating func feed(_ bytes: UnsafeRawBufferPointer) throws(ProtocolError) -> [Substring] {
        var lines: [Substring] = []
        if let error = split(bytes, into: &lines, skipBadLines: false).error { throw error }
        return lines
    }

    /// Appends `bytes` and returns the complete lines, skipping each bad one (over-long, with a
    /// NUL, not UTF-8) up to its line feed instead of throwing: a client's way with a line it
    /// cannot take, so that the lines after it, in the same read or a later one, still arrive.
    /// `skipped` counts the bad lines met in these bytes.
    public mutating func feedSkippingBadLines(_ bytes: UnsafeRawBufferPointer) -> (lines: [Substring], skipped: Int) {
        var lines: [Substring] = []
        let skipped = split(bytes, into: &lines, skipBadLines: true).skipped
        return (lines, skipped)
    }

    private mutating func split(
        _ bytes: UnsafeRawBufferPointer, into lines: inout [Substring], skipBadLines: Bool
    ) -> (error: ProtocolError?, skipped: Int) {
        var skipped = 0
        for b in bytes {
            if skipping {
                if b == 0x0a { skipping = false }
                continue
            }
            var bad: ProtocolError?
            if b == 0x0a {
                if let text = String(validating: pending, as: UTF8.self) {
                    lines.append(Substring(text))
                } else {
                    bad = .notUTF8
                }
                pending.removeAll(keepingCapacity: true)
            } else if b == 0 {
                bad = .nulByte
            } else {
                pending.append(b)
                if pending.count > maximumLineBytes { bad = .lineTooLong(limit: maximumLineBytes) }
            }
            guard let bad else { continue }
            guard skipBadLines else { return (bad, skipped) }
            skipped += 1
            // The rest of the bad line goes (a bad line ended by its line feed has no rest).
            skipping = b != 0x0a
            pending.removeAll(keepingCapacity: true)
        }
        return (nil, skipped)
    }
}
