/// A key that is none of a document's known keys is a mistake (a typo such as
/// "highMemoryByte" would otherwise leave the default in force, silently): refused, naming it.
package enum UnknownKeys {
    private struct AnyKey: CodingKey {
        var stringValue: String
        var intValue: Int? { nil }
        init(stringValue: String) { self.stringValue = stringValue }
        init?(intValue: Int) { nil }
    }

    package static func refuse<K: CodingKey & CaseIterable>(in decoder: any Decoder, known: K.Type, what: String) throws {
        let names = K.allCases.map(\.stringValue)
        let all = try decoder.container(keyedBy: AnyKey.self)
        // The first unknown key by name: the same message whatever order the decoder keeps.
        if let key = all.allKeys.filter({ !names.contains($0.stringValue) }).min(by: { $0.stringValue < $1.stringValue }) {
            throw DecodingError.dataCorrupted(DecodingError.Context(
                codingPath: decoder.codingPath + [key],
                debugDescription: "unknown key '\(key.stringValue)' in \(what) (known: \(names.joined(separator: ", ")))"))
        }
    }
}
