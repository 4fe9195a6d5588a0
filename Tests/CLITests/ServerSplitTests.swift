import ArgumentParser
import Glibc
@testable import MemPressureCommands
import MemPressureSystem
import MemPressureTestSupport
import Testing

/// `mempressure` answers the one-shot commands' common lines (`OneShot`) and becomes
/// `mempressure-commands` for the rest: the command line without the HTTP stack;
/// `mempressure-server` is the same with it, and `export` and `supervise --export` run there
/// (mempressure-commands executes it). The one-shot commands' start-up is measured in
/// Reports/vmtracker.md; these check the split holds.
@Suite("mempressure, mempressure-commands and mempressure-server")
struct ServerSplitTests {
    /// Whether the file holds `needle` (a mangled module name) anywhere.
    static func contains(_ path: String, _ needle: String) throws -> Bool {
        let bytes = try ProcFS.readBytes(path)
        let n = Array(needle.utf8)
        return bytes.withUnsafeBytes { b in
            n.withUnsafeBytes { needle in
                guard let base = b.baseAddress, let wanted = needle.baseAddress, b.count >= needle.count else { return false }
                var at = 0
                // Each place the needle's first byte occurs, compared whole.
                while at <= b.count - needle.count, let hit = memchr(base + at, Int32(n[0]), b.count - needle.count + 1 - at) {
                    if memcmp(hit, wanted, needle.count) == 0 { return true }
                    at = base.distance(to: UnsafeRawPointer(hit)) + 1
                }
                return false
            }
        }
    }

    @Test("mempressure-commands links no HTTP stack, mempressure-server does; mempressure links neither the command line's parser nor the supervisor")
    func noHTTPStack() throws {
        // Swift's mangled names carry the module's name with its length.
        for module in ["11Hummingbird", "7NIOCore", "25MemPressureExporterServer"] {
            #expect(try !Self.contains(buildDirectory + "/mempressure", "$s" + module), "mempressure holds \(module)")
            #expect(try !Self.contains(buildDirectory + "/mempressure-commands", "$s" + module), "mempressure-commands holds \(module)")
            #expect(try Self.contains(buildDirectory + "/mempressure-server", "$s" + module), "mempressure-server lacks \(module)")
        }
        for module in ["14ArgumentParser", "20MemPressureLifecycle", "17MemPressureJetsam", "19MemPressureCommands"] {
            #expect(try !Self.contains(buildDirectory + "/mempressure", "$s" + module), "mempressure holds \(module)")
            #expect(try Self.contains(buildDirectory + "/mempressure-commands", "$s" + module), "mempressure-commands lacks \(module)")
        }
    }

    @Test("mempressure answers --version, vm and top itself, and becomes mempressure-commands for the rest; without it beside, it says what is missing")
    func oneShotProgram() async throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        try CheckedDirectory.open(buildDirectory).copyFile("mempressure", maxBytes: 1 << 30, to: CheckedDirectory.open(dir.path), as: "mempressure", mode: 0o755)
        for arguments in [["--version"], ["vm", "--only", "\(getpid())"], ["top", "--limit", "3"]] {
            let result = try await runBuilt("mempressure", arguments, in: dir.path)
            #expect(result.status == 0, "\(arguments): \(result.standardError)")
            #expect(!result.standardOutput.isEmpty, "\(arguments) printed nothing")
        }
        // A quick line that fails prints the command's error and its status, as the others do.
        let gone = try await runBuilt("mempressure", ["vm", "2147483646"], in: dir.path)
        #expect(gone.status == 1)
        #expect(gone.standardError.hasPrefix("mempressure: "), "\(gone.standardError)")
        for arguments in [["apps", "--dir", dir.path + "/run"], ["--help"], ["top", "--user", "root"], ["vm", "--bogus"]] {
            let result = try await runBuilt("mempressure", arguments, in: dir.path)
            #expect(result.status == 127, "\(arguments): \(result.status)")
            #expect(result.standardError.contains("mempressure: cannot run \(dir.path)/mempressure-commands"), "\(arguments): \(result.standardError)")
        }
        // One that others may write is not run (as root, a file planted beside a copy of
        // mempressure would run as root); one that is a link is not followed.
        try CheckedDirectory.open(buildDirectory).copyFile("mempressure-commands", maxBytes: 1 << 30, to: CheckedDirectory.open(dir.path), as: "mempressure-commands", mode: 0o755)
        #expect(chmod(dir.path + "/mempressure-commands", 0o777) == 0)
        let planted = try await runBuilt("mempressure", ["--help"], in: dir.path)
        #expect(planted.status == 127 && planted.standardError.contains("not running \(dir.path)/mempressure-commands: others may write"), "\(planted.standardError)")
        #expect(rename(dir.path + "/mempressure-commands", dir.path + "/real") == 0 && symlink("real", dir.path + "/mempressure-commands") == 0)
        let linked = try await runBuilt("mempressure", ["--help"], in: dir.path)
        #expect(linked.status == 127 && linked.standardError.contains("cannot run \(dir.path)/mempressure-commands"), "\(linked.standardError)")
        #expect(unlink(dir.path + "/mempressure-commands") == 0 && rename(dir.path + "/real", dir.path + "/mempressure-commands") == 0)
        #expect(chmod(dir.path + "/mempressure-commands", 0o755) == 0)
        // Beside it, the same lines reach mempressure-commands and ArgumentParser's messages.
        let help = try await runBuilt("mempressure", ["--help"], in: dir.path)
        #expect(help.status == 0 && help.standardOutput.contains("USAGE: mempressure <subcommand>"), "\(help.standardOutput)")
        let bogus = try await runBuilt("mempressure", ["vm", "--bogus"], in: dir.path)
        #expect(bogus.status == 64 && bogus.standardError.contains("Usage: mempressure vm"), "\(bogus.standardError)")
        // The process it became is still named mempressure (not mempressure-com, its file's name
        // cut to 15 bytes): `top` run that way lists itself under that name.
        let named = try await runBuilt("mempressure", ["top", "--group-by=process", "--match", "mempressure*"], in: dir.path)
        #expect(named.status == 0, "\(named.standardError)")
        #expect(named.standardOutput.contains(" mempressure "), "\(named.standardOutput)")
        #expect(!named.standardOutput.contains("mempressure-com"), "\(named.standardOutput)")
    }

    @Test("without mempressure-server beside it, export and supervise --export say what is missing; the rest works")
    func serverMissing() async throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        for program in ["mempressure", "mempressure-commands"] {
            try CheckedDirectory.open(buildDirectory).copyFile(program, maxBytes: 1 << 30, to: CheckedDirectory.open(dir.path), as: program, mode: 0o755)
        }
        for arguments in [["export", "--listen", "127.0.0.1:0"], ["supervise", "--dir", dir.path + "/run", "--export", "127.0.0.1:0"]] {
            let result = try await runBuilt("mempressure", arguments, in: dir.path)
            #expect(result.status != 0)
            #expect(result.standardError.contains("mempressure-server is not installed beside this program (in \(dir.path))"), "\(result.standardError)")
            #expect(!result.standardError.contains("Fatal error"))
        }
        #expect(access(dir.path + "/run", F_OK) != 0, "supervise started before finding it could not serve")
        let vm = try await runBuilt("mempressure", ["vm", "--only", "\(getpid())"], in: dir.path)
        #expect(vm.status == 0, "\(vm.standardError)")
    }

    @Test("every command names itself: ArgumentParser would otherwise derive each name from the type's, by reflection, at every start")
    func explicitNames() {
        var pending: [any ParsableCommand.Type] = [Mempressure.self]
        var unnamed: [String] = []
        while let command = pending.popLast() {
            if command.configuration.commandName == nil { unnamed.append("\(command)") }
            pending += command.configuration.subcommands
        }
        #expect(unnamed.isEmpty, "commands without a commandName: \(unnamed.joined(separator: ", "))")
    }
}
