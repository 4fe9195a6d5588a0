/// The numbers and fields of the protocol's lines, read by hand: digits only (no sign, no
/// spaces, no radix prefix), so that what parses prints back as the same value.
enum WorkloadText {
    /// At most 60 characters of `text`, for an error message.
    static func excerpt(_ text: Substring) -> String { String(text.prefix(60)) }

    /// A decimal number that fits a UInt64.
    static func decimal(_ text: Substring, field: String) throws(WorkloadProtocolError) -> UInt64 {
        guard !text.isEmpty, text.utf8.count <= 20 else { throw .notANumber(field: field, text: excerpt(text)) }
        var value: UInt64 = 0
        for c in text.utf8 {
            guard c >= 0x30, c <= 0x39 else { throw .notANumber(field: field, text: excerpt(text)) }
            let (times10, o1) = value.multipliedReportingOverflow(by: 10)
            let (sum, o2) = times10.addingReportingOverflow(UInt64(c - 0x30))
            guard !o1, !o2 else { throw .outOfRange(field: field, text: excerpt(text), range: "0...\(UInt64.max)") }
            value = sum
        }
        return value
    }

    /// A decimal byte count or count of things (fits an Int).
    static func size(_ text: Substring, field: String) throws(WorkloadProtocolError) -> Int {
        let value = try decimal(text, field: field)
        guard value <= UInt64(Int.max) else { throw .outOfRange(field: field, text: excerpt(text), range: "0...\(Int.max)") }
        return Int(value)
    }

    /// A hexadecimal number of 1 to 16 digits.
    static func hex(_ text: Substring, field: String) throws(WorkloadProtocolError) -> UInt64 {
        guard !text.isEmpty, text.utf8.count <= 16 else { throw .notANumber(field: field, text: excerpt(text)) }
        var value: UInt64 = 0
        for c in text.utf8 {
            let digit: UInt8
            switch c {
            case 0x30...0x39: digit = c - 0x30
            case 0x61...0x66: digit = c - 0x61 + 10
            case 0x41...0x46: digit = c - 0x41 + 10
            default: throw .notANumber(field: field, text: excerpt(text))
            }
            value = value << 4 | UInt64(digit)
        }
        return value
    }
}

/// The `KEY=VALUE` words of a reply, each key once, every key known.
struct WorkloadFields {
    let reply: String
    private var values: [(key: Substring, value: Substring)] = []

    init(reply: String, _ words: ArraySlice<Substring>, known: [String]) throws(WorkloadProtocolError) {
        self.reply = reply
        for word in words {
            guard let equals = word.firstIndex(of: "=") else { throw .malformedReply(reply: reply, text: WorkloadText.excerpt(word)) }
            let key = word[..<equals]
            guard known.contains(where: { key == $0 }) else { throw .unknownField(reply: reply, field: WorkloadText.excerpt(key)) }
            guard !values.contains(where: { $0.key == key }) else { throw .repeatedField(reply: reply, field: String(key)) }
            values.append((key, word[word.index(after: equals)...]))
        }
    }

    private func value(_ key: String) throws(WorkloadProtocolError) -> Substring {
        guard let found = values.first(where: { $0.key == key }) else { throw .missingField(reply: reply, field: key) }
        return found.value
    }

    func decimal(_ key: String) throws(WorkloadProtocolError) -> UInt64 { try WorkloadText.decimal(try value(key), field: key) }
    func size(_ key: String) throws(WorkloadProtocolError) -> Int { try WorkloadText.size(try value(key), field: key) }
    func hex(_ key: String) throws(WorkloadProtocolError) -> UInt64 { try WorkloadText.hex(try value(key), field: key) }

    func bool(_ key: String) throws(WorkloadProtocolError) -> Bool {
        switch try value(key) {
        case "true": return true
        case "false": return false
        case let text: throw .malformedField(reply: reply, field: key, text: WorkloadText.excerpt(text))
        }
    }

    /// A time in seconds: as Swift prints a Double (which parses back to the same value), finite
    /// and not negative.
    func seconds(_ key: String) throws(WorkloadProtocolError) -> Double {
        let text = try value(key)
        guard text.utf8.count <= 40, let v = Double(text), v.isFinite, v >= 0 else {
            throw .malformedField(reply: reply, field: key, text: WorkloadText.excerpt(text))
        }
        return v
    }
}
