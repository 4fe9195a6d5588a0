import FoundationEssentials
import Testing
import MemPressureTestSupport

/// The man page that `make install` and the Debian package install
/// (Sources/mempressure/Packaging/mempressure.1, written by `make man` from the command's own
/// definition) must describe the command as it is: every subcommand, at its place in the tree,
/// with every option and flag `--help` shows. A subcommand or option added without `make man`
/// fails here.
@Suite("The man page")
struct ManPageTests {
    /// The package's root, found from this file's location (Tests/CLITests/ManPageTests.swift).
    static let root: String = {
        var path = #filePath
        for _ in 0..<3 { path = String(path[..<path.lastIndex(of: "/")!]) }
        return path
    }()

    /// A command of the tree as `--experimental-dump-help` describes it (ArgumentParser's ToolInfo).
    struct Command: Decodable {
        struct Argument: Decodable {
            struct Name: Decodable { var kind: String; var name: String }
            var kind: String
            var names: [Name]?
            var shouldDisplay: Bool
        }
        var commandName: String
        var shouldDisplay: Bool?
        var arguments: [Argument]?
        var subcommands: [Command]?
    }
    struct Dump: Decodable { var command: Command }

    /// One entry of the page's description: a subcommand (`.It Em NAME`) with the options listed
    /// under it and its own subcommands.
    final class Entry {
        var options: Set<String> = []
        var subcommands: [String: Entry] = [:]
    }

    /// Reads the mdoc page's description lists into a tree: each `.It Em NAME` opens a subcommand
    /// whose options (`.It Fl ...`) and subcommands are the items of the lists nested under it.
    static func parse(_ page: String) -> Entry {
        let root = Entry()
        // The entry each open list belongs to, innermost last.
        var lists: [Entry] = []
        // The entry a list opened next belongs to.
        var current = root
        for line in page.split(separator: "\n").map(String.init) {
            let words = line.split(separator: " ").map(String.init)
            guard let macro = words.first else { continue }
            switch macro {
            case ".Bl":
                lists.append(current)
            case ".El":
                if !lists.isEmpty { current = lists.removeLast() }
            case ".It":
                guard let owner = lists.last else { continue }
                if words.count >= 3, words[1] == "Em" {
                    let entry = Entry()
                    owner.subcommands[words[2]] = entry
                    current = entry
                } else {
                    current = owner
                    // `.It Fl h , Fl -help Ar value`: each name follows Fl or a comma.
                    for i in words.indices.dropFirst() where words[i - 1] == "Fl" || words[i - 1] == "," {
                        var name = words[i]
                        while name.hasSuffix(",") { name.removeLast() }
                        if name == "Fl" || name.isEmpty { continue }
                        // mdoc's `Fl -help` is --help, `Fl h` is -h.
                        owner.options.insert("-" + name)
                    }
                }
            default:
                continue
            }
        }
        return root
    }

    @Test("every subcommand and every option of --help is in the installed man page, under its command")
    func coversHelp() async throws {
        let page = try String(decoding: Fixtures.readFile(Self.root + "/Sources/mempressure/Packaging/mempressure.1"), as: UTF8.self)
        let dump = try await runMempressure(["--experimental-dump-help"])
        try #require(dump.status == 0, "\(dump.standardError)")
        let tree = try JSONDecoder().decode(Dump.self, from: Data(dump.standardOutput.utf8)).command
        let described = Self.parse(page)

        var missing: [String] = []
        var checked = 0
        func walk(_ command: Command, _ entry: Entry, _ path: [String]) {
            for argument in command.arguments ?? [] where argument.shouldDisplay && argument.kind != "positional" {
                for name in argument.names ?? [] {
                    let flag = name.kind == "long" ? "--" + name.name : "-" + name.name
                    checked += 1
                    if !entry.options.contains(flag) { missing.append("\(path.joined(separator: " ")) \(flag)") }
                }
            }
            for sub in command.subcommands ?? [] where sub.shouldDisplay ?? true && sub.commandName != "help" {
                checked += 1
                guard let next = entry.subcommands[sub.commandName] else {
                    missing.append((path + [sub.commandName]).joined(separator: " ") + " (the subcommand)")
                    continue
                }
                walk(sub, next, path + [sub.commandName])
            }
        }
        walk(tree, described, ["mempressure"])
        #expect(checked > 100, "only \(checked) subcommands and options read from --experimental-dump-help")
        #expect(missing.isEmpty, "not in Sources/mempressure/Packaging/mempressure.1 (run make man): \(missing.joined(separator: ", "))")
    }
}
