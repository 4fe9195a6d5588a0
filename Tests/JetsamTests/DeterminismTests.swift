import FoundationEssentials
import Testing

/// The ranker must not let a `Hasher` decide anything: Swift seeds hashing per process, so a
/// `Set` or `Dictionary` iterated in the ranker could order apps differently from one run to the
/// next and a replay would not reproduce the decision. The module avoids hashed collections by
/// construction; this test keeps it that way by reading its sources.
@Suite("No hashing in the ranker")
struct DeterminismTests {
    @Test func theJetsamSourcesUseNoHashedCollections() throws {
        let tests = URL(filePath: #filePath).deletingLastPathComponent()
        let sources = tests.deletingLastPathComponent().deletingLastPathComponent().appending(path: "Sources/MemPressureJetsam/Ranking")
        let files = try FileManager.default.contentsOfDirectory(atPath: sources.path).filter { $0.hasSuffix(".swift") }.sorted()
        #expect(files.count >= 8)
        // Whole words, so that `SetKey` or `leastCostSet` do not count.
        let forbidden = #/\b(Set|Dictionary|Hasher|Hashable\.hash|hashValue|hash\(into)\b|\[:\]/#
        let dictionaryType = #/\[\s*[A-Za-z_][A-Za-z0-9_.]*\s*:\s*[A-Za-z_][A-Za-z0-9_.<>?]*\s*\]/#
        for file in files {
            let text = try String(contentsOf: sources.appending(path: file), encoding: .utf8)
            for (number, line) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
                let code = line.trimmingPrefix(while: \.isWhitespace)
                guard !code.hasPrefix("//") else { continue }
                #expect(code.firstMatch(of: forbidden) == nil, "\(file):\(number + 1): \(code)")
                #expect(code.firstMatch(of: dictionaryType) == nil, "\(file):\(number + 1): \(code)")
            }
        }
    }
}
