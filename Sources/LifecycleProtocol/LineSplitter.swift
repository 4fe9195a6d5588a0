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
    /// longer than the limit, a NUL, or invalid UTF-8.
    public mutating func feed(_ bytes: UnsafeRawBufferPointer) throws(ProtocolError) -> [Substring] {
        var lines: [Substring] = []
        for b in bytes {
            if skipping {
                if b == 0x0a { skipping = false }
                continue
            }
            if b == 0x0a {
                guard let text = String(validating: pending, as: UTF8.self) else { throw .notUTF8 }
                lines.append(Substring(text))
                pending.removeAll(keepingCapacity: true)
            } else {
                if b == 0 { throw .nulByte }
                pending.append(b)
                if pending.count > maximumLineBytes { throw .lineTooLong(limit: maximumLineBytes) }
            }
        }
        return lines
    }
}
