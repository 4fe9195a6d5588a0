/// The one parser for the numbers the kernel writes in /proc, /sys and cgroup files: unsigned
/// and signed decimal and hexadecimal numbers with overflow checks, files that hold one number
/// ("12345\n", or "max"), space-separated fields, and "Key:   value kB" lines.
///
/// It reads bytes, not Strings, never allocates and never traps on kernel input: what is not a
/// number (empty, a stray byte, too large for 64 bits) is nil, or a `NumberError` where the
/// caller wants to say which. The smaps parser keeps its own loops, tuned for its hot path
/// (see `SmapsParser`); everything else parses through here.
public enum ByteScanner {
    /// Why a value is not a number.
    public enum NumberError: Error, Sendable, Hashable {
        /// Empty, or not starting with a digit.
        case notANumber
        /// More than 64 bits hold.
        case tooLarge
    }

    // MARK: Whole tokens

    /// An unsigned decimal number filling all of `bytes` ("12345"); nil if `bytes` is empty,
    /// holds anything but digits, or exceeds `UInt64.max`.
    @inlinable
    public static func unsigned(_ bytes: some Collection<UInt8>) -> UInt64? {
        guard !bytes.isEmpty else { return nil }
        var value: UInt64 = 0
        for c in bytes {
            let digit = c &- 0x30
            guard digit < 10 else { return nil }
            let (times10, o1) = value.multipliedReportingOverflow(by: 10)
            let (sum, o2) = times10.addingReportingOverflow(UInt64(digit))
            guard !o1, !o2 else { return nil }
            value = sum
        }
        return value
    }

    /// A decimal number with an optional leading '-' filling all of `bytes`; nil outside `Int64`.
    @inlinable
    public static func signed(_ bytes: some Collection<UInt8>) -> Int64? {
        if bytes.first == UInt8(ascii: "-") {
            guard let magnitude = unsigned(bytes.dropFirst()), magnitude <= UInt64(Int64.max) + 1 else { return nil }
            return magnitude == UInt64(Int64.max) + 1 ? Int64.min : -Int64(magnitude)
        }
        guard let value = unsigned(bytes), value <= UInt64(Int64.max) else { return nil }
        return Int64(value)
    }

    /// A hexadecimal number (digits `0-9`, `a-f`, `A-F`, no prefix) filling all of `bytes`, as
    /// the kernel prints addresses ("7f3a5c000000"); nil if empty, malformed or over 64 bits.
    @inlinable
    public static func hex(_ bytes: some Collection<UInt8>) -> UInt64? {
        guard !bytes.isEmpty else { return nil }
        var value: UInt64 = 0
        for c in bytes {
            var digit = c &- 0x30
            if digit > 9 {
                digit = (c | 0x20) &- 0x61  // a-f, A-F
                guard digit < 6 else { return nil }
                digit += 10
            }
            guard value >> 60 == 0 else { return nil }
            value = value << 4 | UInt64(digit)
        }
        return value
    }

    /// The number in a file that holds one ("12345\n", as cgroup and /sys files do): the first
    /// word, up to a newline or space. "max" (cgroup v2's "no limit") reads as `UInt64.max`.
    @inlinable
    public static func singleNumber(_ bytes: some Collection<UInt8>) -> UInt64? {
        let word = bytes.prefix { $0 != 0x0a && $0 != 0x20 }
        if word.elementsEqual("max".utf8) { return UInt64.max }
        return unsigned(word)
    }

    /// The decimal digits `bytes` starts with, and what follows them; nil if it does not start
    /// with a digit or the number exceeds `UInt64.max`.
    @inlinable
    public static func leadingUnsigned<Bytes: Collection<UInt8>>(_ bytes: Bytes) -> (value: UInt64, rest: Bytes.SubSequence)? {
        let end = bytes.firstIndex { $0 &- 0x30 >= 10 } ?? bytes.endIndex
        guard let value = unsigned(bytes[bytes.startIndex..<end]) else { return nil }
        return (value, bytes[end...])
    }

    // MARK: Fields and lines

    /// The fields of `bytes`: runs of bytes between spaces and newlines, never empty
    /// (`/proc/PID/stat`, `task/TID/syscall`).
    @inlinable
    public static func fields<Bytes: Collection<UInt8>>(_ bytes: Bytes) -> Fields<Bytes> {
        Fields(bytes[...])
    }

    public struct Fields<Bytes: Collection<UInt8>>: Sequence, IteratorProtocol {
        @usableFromInline var rest: Bytes.SubSequence

        @inlinable init(_ bytes: Bytes.SubSequence) { rest = bytes }

        @inlinable
        public mutating func next() -> Bytes.SubSequence? {
            rest = rest.drop { $0 == 0x20 || $0 == 0x0a }
            guard !rest.isEmpty else { return nil }
            let end = rest.firstIndex { $0 == 0x20 || $0 == 0x0a } ?? rest.endIndex
            defer { rest = rest[end...] }
            return rest[rest.startIndex..<end]
        }
    }

    /// Whether `bytes` holds the UTF-8 of `text` anywhere (an empty `text` is everywhere).
    public static func contains(_ bytes: UnsafeRawBufferPointer, _ text: String) -> Bool {
        var text = text
        return text.withUTF8 { needle in
            guard let first = needle.first else { return true }
            guard needle.count <= bytes.count else { return false }
            var i = 0
            let last = bytes.count - needle.count
            while i <= last {
                if bytes[i] == first {
                    var j = 1
                    while j < needle.count && bytes[i + j] == needle[j] { j += 1 }
                    if j == needle.count { return true }
                }
                i += 1
            }
            return false
        }
    }

    /// The number after `key` in "key value" lines, as cgroup files write them (`memory.stat`,
    /// `memory.events`, `memory.oom_control`: "oom_kill 3"); nil when no line has that key or its
    /// value is not a number.
    public static func value(of key: String, inSpaceSeparatedLines bytes: some Collection<UInt8>) -> UInt64? {
        let k = Array(key.utf8)
        var rest = bytes[...]
        while !rest.isEmpty {
            let end = rest.firstIndex(of: 0x0a) ?? rest.endIndex
            var words = fields(rest[rest.startIndex..<end])
            if let first = words.next(), first.elementsEqual(k), let second = words.next() { return unsigned(second) }
            rest = end == rest.endIndex ? rest[end...] : rest[rest.index(after: end)...]
        }
        return nil
    }

    /// The "Key:   value" lines of `bytes` (`/proc/meminfo`, `/proc/PID/status`, `/proc/PID/io`):
    /// the key is what comes before the first colon, the value what follows it after spaces and
    /// tabs. Lines without a colon are skipped (they still count in `KeyValueLine.number`).
    @inlinable
    public static func keyValueLines<Bytes: Collection<UInt8>>(_ bytes: Bytes) -> KeyValueLines<Bytes> {
        KeyValueLines(bytes[...])
    }

    public struct KeyValueLines<Bytes: Collection<UInt8>>: Sequence, IteratorProtocol {
        @usableFromInline var rest: Bytes.SubSequence
        @usableFromInline var lineNumber = 0

        @inlinable init(_ bytes: Bytes.SubSequence) { rest = bytes }

        @inlinable
        public mutating func next() -> KeyValueLine<Bytes>? {
            while !rest.isEmpty {
                lineNumber += 1
                let end = rest.firstIndex(of: 0x0a) ?? rest.endIndex
                let line = rest[rest.startIndex..<end]
                rest = end == rest.endIndex ? rest[end...] : rest[rest.index(after: end)...]
                guard let colon = line.firstIndex(of: 0x3a) else { continue }
                let value = line[line.index(after: colon)...].drop { $0 == 0x20 || $0 == 0x09 }
                return KeyValueLine(number: lineNumber, key: line[line.startIndex..<colon], value: value)
            }
            return nil
        }
    }

    /// One "Key:   value" line.
    public struct KeyValueLine<Bytes: Collection<UInt8>> {
        /// The line's number in the file, from 1.
        public var number: Int
        public var key: Bytes.SubSequence
        /// After the colon and the spaces and tabs that follow it.
        public var value: Bytes.SubSequence

        @inlinable
        init(number: Int, key: Bytes.SubSequence, value: Bytes.SubSequence) {
            self.number = number
            self.key = key
            self.value = value
        }

        @inlinable
        public func keyIs(_ name: StaticString) -> Bool {
            key.count == name.utf8CodeUnitCount && name.withUTF8Buffer { key.elementsEqual($0) }
        }

        /// What `fields` pairs with this line's key, if it is one of them: a parser's table of
        /// the keys it knows.
        @inlinable
        public func lookup<Field>(_ fields: [(key: StaticString, field: Field)]) -> Field? {
            for entry in fields where keyIs(entry.key) { return entry.field }
            return nil
        }

        /// The decimal number the value starts with ("1000\t1000\t..." is 1000); nil if it does
        /// not start with a digit or exceeds 64 bits.
        @inlinable
        public var leadingNumber: UInt64? { ByteScanner.leadingUnsigned(value)?.value }

        /// The value as a byte count: "1234 kB" is 1234 × 1024 bytes, "1234" is 1234.
        @inlinable
        public func byteCount() throws(NumberError) -> UInt64 {
            let end = value.firstIndex { $0 &- 0x30 >= 10 } ?? value.endIndex
            guard end != value.startIndex else { throw .notANumber }
            guard let n = ByteScanner.unsigned(value[value.startIndex..<end]) else { throw .tooLarge }
            guard value[end...].drop(while: { $0 == 0x20 }).elementsEqual("kB".utf8) else { return n }
            let (bytes, overflow) = n.multipliedReportingOverflow(by: 1024)
            guard !overflow else { throw .tooLarge }
            return bytes
        }
    }
}
