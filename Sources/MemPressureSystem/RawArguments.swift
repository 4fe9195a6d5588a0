import Glibc

extension PathBytes {
    /// The exact bytes of the command-line argument that `text` was decoded from.
    ///
    /// Swift decodes argv as UTF-8 and repairs what is not (each bad byte becomes U+FFFD), so a
    /// file whose name is not UTF-8 cannot be named through `CommandLine.arguments` or the
    /// Strings swift-argument-parser hands out: this finds the raw argv entry that decodes to
    /// `text` (or, for `--option=VALUE`, whose VALUE does) and returns its bytes. Text that is
    /// exactly some argument's bytes, or that no argument (or more than one, differently)
    /// decodes to, is returned as its own UTF-8.
    package static func argument(_ text: String) -> PathBytes {
        let own = Array(text.utf8)
        var found: [UInt8]?
        var ambiguous = false
        for raw in rawArguments() {
            var candidates = [raw[...]]
            if raw.first == UInt8(ascii: "-"), let eq = raw.firstIndex(of: UInt8(ascii: "=")) { candidates.append(raw[(eq + 1)...]) }
            for candidate in candidates where String(decoding: candidate, as: UTF8.self) == text {
                if candidate.elementsEqual(own) { return PathBytes(own) }
                if let f = found, !f.elementsEqual(candidate) { ambiguous = true }
                found = Array(candidate)
            }
        }
        return PathBytes(ambiguous ? own : found ?? own)
    }

    /// argv[1...] as the kernel gave it.
    static func rawArguments() -> [[UInt8]] {
        let argc = Int(CommandLine.argc)
        guard argc > 1 else { return [] }
        let argv = CommandLine.unsafeArgv
        return (1..<argc).compactMap { i in
            guard let p = argv[i] else { return nil }
            return Array(UnsafeBufferPointer(start: UnsafeRawPointer(p).assumingMemoryBound(to: UInt8.self), count: strlen(p)))
        }
    }
}
