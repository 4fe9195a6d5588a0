import FoundationEssentials
import Testing

/// SwiftPM refuses two targets or products of one name anywhere in a package graph, so a short
/// name of ours (`Backtrace`, `Scenarios`, `CZlib`) would keep a user's package from depending on
/// MemoryPressure whenever it, or another of its dependencies, has a target of that name. Every
/// target and product therefore carries the package's prefix.
@Suite("Package names")
struct PackageNamesTests {
    /// The package's Package.swift, found from this file's location (Tests/CLITests/).
    static func manifest() throws -> String {
        var path = #filePath
        for _ in 0..<3 { path = String(path[..<path.lastIndex(of: "/")!]) }
        return try String(contentsOfFile: path + "/Package.swift", encoding: .utf8)
    }

    /// The names declared by `kinds` (e.g. `.target(name: "X"`), in the manifest's order.
    static func declared(_ kinds: [String]) throws -> [String] {
        let pattern = try Regex(#"\.(\w+)\(\s*name:\s*"([^"]+)""#)
        return try manifest().matches(of: pattern).compactMap { match -> String? in
            guard let kind = match.output[1].substring, kinds.contains(String(kind)),
                let name = match.output[2].substring
            else { return nil }
            return String(name)
        }
    }

    static func prefixed(_ name: String) -> Bool {
        ["MemPressure", "CMemPressure", "CMemoryPressure", "mempressure-", "_MemPressure"].contains { name.hasPrefix($0) }
            || name == "mempressure"
    }

    @Test("every target that a dependent package builds carries the prefix")
    func targets() throws {
        let names = try Self.declared(["target", "executableTarget", "systemLibrary"])
        #expect(names.count > 20, "the manifest's targets were not found")
        let short = names.filter { !Self.prefixed($0) }
        #expect(short.isEmpty, "targets without the package's prefix: \(short.joined(separator: ", "))")
    }

    @Test("every product carries the prefix")
    func products() throws {
        let names = try Self.declared(["library", "executable"])
        #expect(names.count > 10, "the manifest's products were not found")
        let short = names.filter { !Self.prefixed($0) }
        #expect(short.isEmpty, "products without the package's prefix: \(short.joined(separator: ", "))")
    }
}
