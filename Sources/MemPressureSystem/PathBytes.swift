import Glibc

/// A path as raw bytes. Linux paths are bytes, not text: they need not be UTF-8 and may hold
/// spaces, control characters or a literal " (deleted)".
public struct PathBytes: Sendable, Hashable, Comparable, ExpressibleByStringLiteral, CustomStringConvertible {
    public var bytes: [UInt8]

    public init() { bytes = [] }
    public init(_ bytes: [UInt8]) { self.bytes = bytes }
    public init(_ bytes: some Sequence<UInt8>) { self.bytes = Array(bytes) }
    public init(stringLiteral value: String) { bytes = Array(value.utf8) }

    public var isEmpty: Bool { bytes.isEmpty }

    public func hasPrefix(_ s: StaticString) -> Bool {
        let n = s.utf8CodeUnitCount
        guard bytes.count >= n else { return false }
        return s.withUTF8Buffer { p in bytes.withUnsafeBufferPointer { memcmp($0.baseAddress!, p.baseAddress!, n) == 0 } }
    }

    public func hasSuffix(_ s: StaticString) -> Bool {
        let n = s.utf8CodeUnitCount
        guard bytes.count >= n else { return false }
        return s.withUTF8Buffer { p in
            bytes.withUnsafeBufferPointer { memcmp($0.baseAddress! + ($0.count - n), p.baseAddress!, n) == 0 }
        }
    }

    public static func == (lhs: PathBytes, rhs: StaticString) -> Bool {
        lhs.bytes.count == rhs.utf8CodeUnitCount && lhs.hasPrefix(rhs)
    }

    public static func < (lhs: PathBytes, rhs: PathBytes) -> Bool {
        lhs.bytes.lexicographicallyPrecedes(rhs.bytes)
    }

    /// The path with the kernel's " (deleted)" suffix removed, if it had one.
    public var withoutDeletedSuffix: PathBytes {
        hasSuffix(" (deleted)") ? PathBytes(bytes.dropLast(10)) : self
    }

    /// The last component (after the final "/").
    public var lastComponent: PathBytes {
        if let slash = bytes.lastIndex(of: UInt8(ascii: "/")) { return PathBytes(bytes[(slash + 1)...]) }
        return self
    }

    /// Text safe to print and to put in JSON: valid UTF-8 is kept as it is; each byte that is not
    /// part of valid UTF-8, and each ASCII control character, is written `\xNN`. The escaping is
    /// deterministic, so two reports of the same path always agree.
    public var description: String { escapedText(bytes) }
}

/// Printable text for raw kernel bytes: see `PathBytes.description`.
public func escapedText(_ bytes: some Collection<UInt8>) -> String {
    var needsEscape = false
    for b in bytes where b < 0x20 || b == 0x7f || b >= 0x80 {
        needsEscape = true
        break
    }
    if !needsEscape { return String(decoding: bytes, as: UTF8.self) }
    var out = ""
    var it = Array(bytes)[...]
    while let first = it.first {
        if first < 0x80 {
            if first < 0x20 || first == 0x7f {
                out += "\\x" + hex2(first)
            } else {
                out.unicodeScalars.append(Unicode.Scalar(first))
            }
            it = it.dropFirst()
            continue
        }
        // Length of a UTF-8 sequence from its lead byte.
        let length = first >= 0xf0 && first <= 0xf4 ? 4 : first >= 0xe0 ? 3 : first >= 0xc2 && first < 0xe0 ? 2 : 0
        if length > 0, it.count >= length {
            let seq = it.prefix(length)
            var decoder = UTF8()
            var iterator = seq.makeIterator()
            if case .scalarValue(let scalar) = decoder.decode(&iterator), UTF8.width(scalar) == length {
                out.unicodeScalars.append(scalar)
                it = it.dropFirst(length)
                continue
            }
        }
        out += "\\x" + hex2(first)
        it = it.dropFirst()
    }
    return out
}

@inline(__always)
func hex2(_ b: UInt8) -> String {
    let digits = Array("0123456789abcdef".utf8)
    return String(decoding: [digits[Int(b >> 4)], digits[Int(b & 15)]], as: UTF8.self)
}

/// `text` safe to print on a terminal: for text that is already a String (a name read back from
/// a report file, a key of a trace, an error's words), what `escapedText` is for raw bytes. ASCII
/// control characters (but newline and tab when `keepingLineBreaks`), DEL, C1 controls and the
/// bidirectional overrides and isolates (which reorder what a terminal shows) become `\uXXXX`:
/// JSON's own escape, so JSON text stays valid and means the same after it.
package func printableText(_ text: String, keepingLineBreaks: Bool = false) -> String {
    func unsafe(_ v: UInt32) -> Bool {
        if v < 0x20 { return !(keepingLineBreaks && (v == 0x0a || v == 0x09)) }
        return (0x7f...0x9f).contains(v) || (0x202a...0x202e).contains(v) || (0x2066...0x2069).contains(v)
    }
    guard text.unicodeScalars.contains(where: { unsafe($0.value) }) else { return text }
    var out = ""
    for scalar in text.unicodeScalars {
        if unsafe(scalar.value) {
            let hex = String(scalar.value, radix: 16)
            out += "\\u" + String(repeating: "0", count: max(0, 4 - hex.count)) + hex
        } else {
            out.unicodeScalars.append(scalar)
        }
    }
    return out
}
