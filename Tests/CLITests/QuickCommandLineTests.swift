import ArgumentParser
import FoundationEssentials
import MemPressureCachePolicies
import MemPressureVMTracker
import Testing

@testable import MemPressureCommands
import MemPressureOneShot

/// `QuickCommandLine` reads `--version`, `vm` and a single `top` without ArgumentParser. It must
/// read every line it takes exactly as ArgumentParser does, and leave every other line (help,
/// errors, forms it does not know) to ArgumentParser.
@Suite("The quick reading of one-shot command lines")
struct QuickCommandLineTests {
    /// What ArgumentParser makes of the line, in the quick reading's terms: nil when it refuses
    /// the line, or reads it as anything but a `vm` or a single `top`.
    static func argumentParser(_ arguments: [String]) -> QuickCommandLine? {
        guard let command = try? Mempressure.parseAsRoot(arguments) else { return nil }
        if let vm = command as? VM { return .vm(vm.request) }
        if let top = command as? Top, top.interval == nil, top.outputFormat == nil { return .top(top.request) }
        return nil
    }

    @Test("the common lines are read quickly, and as ArgumentParser reads them")
    func commonLines() {
        let lines: [[String]] = [
            ["vm", "1234"], ["vm", "1234", "--json"], ["vm", "--csv", "1234"], ["vm", "--only", "1234", "--regions"],
            ["vm", "1234", "--regions", "--stacks", "--sort", "address"], ["vm", "--cgroup", "system.slice/x.service"],
            ["vm", "--match", "python*", "--json"], ["vm", "Photos", "--full-paths"], ["vm", "1", "--proc-root", "/tmp/proc"],
            ["vm", "1", "--cgroup-root", "/tmp/cg", "--registry", "/tmp/reg"], ["vm", "help"],
            ["top"], ["top", "--json"], ["top", "--csv", "--group-by", "cgroup"], ["top", "--limit", "5", "--sort", "dirty"],
            ["top", "--match", "redis*", "--user", "root", "--bytes"], ["top", "--user", "0"], ["top", "--full", "--group-by", "process"],
            ["top", "--proc-root", "/tmp/proc", "--cgroup-root", "/tmp/cg"],
        ]
        for line in lines {
            let quick = QuickCommandLine.parse(line, userNames: true)
            #expect(quick != nil, "\(line) was left to ArgumentParser")
            #expect(quick == Self.argumentParser(line), "\(line): the quick reading differs from ArgumentParser's")
        }
        #expect(QuickCommandLine.parse(["--version"]) == .version)
        // `mempressure` (static, no name services) leaves a user's name to mempressure-commands.
        #expect(QuickCommandLine.parse(["top", "--user", "root"]) == nil)
        #expect(QuickCommandLine.parse(["top", "--user", "0"]) != nil)
    }

    @Test("help, errors and the forms it does not know are left to ArgumentParser")
    func otherLines() {
        let lines: [[String]] = [
            // Help and ArgumentParser's own words.
            ["vm", "--help"], ["vm", "-h"], ["top", "--help"], ["help", "vm"], ["--help"], ["--version", "vm"], ["vm", "--version"],
            ["--experimental-dump-help"], ["top", "--generate-completion-script", "bash"],
            // Forms it does not read.
            ["vm", "--sort=dirty", "1"], ["top", "--sort=footprint"], ["vm", "--", "1"], ["top", "--interval", "1"], ["top", "--format", "openmetrics"],
            ["top", "--count", "2"], ["vm", "1", "--sort", "dirty", "--sort", "address"], ["vm", "1", "--json", "--json"],
            // Errors, with ArgumentParser's messages (and the negative value read as a value).
            ["vm"], ["vm", "1", "2"], ["vm", "--json", "--csv", "1"], ["vm", "1", "--stacks"], ["vm", "--only", "--cgroup", "x"],
            ["vm", "1", "--cgroup", "x"], ["vm", "1", "--sort", "nonsense"], ["vm", "1", "--bogus"], ["vm", "1", "--sort"],
            ["top", "extra"], ["top", "--limit", "0"], ["top", "--limit", "-1"], ["top", "--limit", "x"], ["top", "--bytes", "--json"],
            ["top", "--group-by", "nonsense"], ["top", "--sort", "address"], ["top", "--user", ""], ["vm", ""],
            ["vm", "-5"], ["tops"], ["watch", "1"], [],
        ]
        for line in lines {
            #expect(QuickCommandLine.parse(line, userNames: true) == nil, "\(line) was read quickly")
        }
    }

    /// Lines drawn from the words both readings know, some they do not, and values good and bad:
    /// wherever the quick reading takes a line, ArgumentParser reads it the same way.
    @Test("on 3,000 drawn lines, every line read quickly is read as ArgumentParser reads it")
    func drawnLines() {
        var random = SplitMix64(seed: 25)
        let values = ["1", "42", "0", "-3", "dirty", "address", "footprint", "name", "app", "process", "cgroup", "x*", "root", "/tmp/p", ""]
        let extra = ["--help", "--interval", "--bogus", "--sort=dirty", "--", "5", "Photos"]
        var quick = 0
        for _ in 0..<3_000 {
            let command = Bool.random(using: &random) ? "vm" : "top"
            let flags = command == "vm" ? QuickCommandLine.vmFlags : QuickCommandLine.topFlags
            let options = command == "vm" ? QuickCommandLine.vmOptions : QuickCommandLine.topOptions
            var line = [command]
            for _ in 0..<Int.random(in: 0...4, using: &random) {
                switch Int.random(in: 0..<10, using: &random) {
                case 0..<4: line.append(flags.randomElement(using: &random)!)
                case 4..<8: line += [options.randomElement(using: &random)!, values.randomElement(using: &random)!]
                case 8: line.append(values.randomElement(using: &random)!)
                default: line.append(extra.randomElement(using: &random)!)
                }
            }
            guard let reading = QuickCommandLine.parse(line, userNames: true) else { continue }
            quick += 1
            #expect(reading == Self.argumentParser(line), "\(line): the quick reading differs from ArgumentParser's")
        }
        #expect(quick > 300, "only \(quick) of 3,000 lines were read quickly: the draw does not test the quick reading")
    }

    /// ArgumentParser's description of the command tree (`--experimental-dump-help`), as far as
    /// the names of arguments go.
    struct Dump: Decodable {
        struct Command: Decodable {
            var commandName: String
            var arguments: [Argument]?
            var subcommands: [Command]?
        }
        struct Argument: Decodable {
            struct Name: Decodable { var kind: String; var name: String }
            var kind: String
            var names: [Name]?
        }
        var command: Command
    }

    @Test("every name the quick reading knows is the command's, as a flag or as an option with a value")
    func namesAreArgumentParsers() throws {
        let dump = try JSONDecoder().decode(Dump.self, from: Data(Mempressure._dumpHelp().utf8))
        for (name, flags, options) in [("vm", QuickCommandLine.vmFlags, QuickCommandLine.vmOptions), ("top", QuickCommandLine.topFlags, QuickCommandLine.topOptions)] {
            let command = try #require(dump.command.subcommands?.first { $0.commandName == name })
            var kinds: [String: String] = [:]
            for argument in command.arguments ?? [] {
                for n in argument.names ?? [] where n.kind == "long" { kinds["--" + n.name] = argument.kind }
            }
            for flag in flags { #expect(kinds[flag] == "flag", "\(name) \(flag) is \(kinds[flag] ?? "not an argument") in ArgumentParser") }
            for option in options { #expect(kinds[option] == "option", "\(name) \(option) is \(kinds[option] ?? "not an argument") in ArgumentParser") }
        }
    }
}
