import Glibc
import MemPressureRegionTags
import MemPressureSystem
import MemPressureVMTracker

/// The one-shot commands' common command lines, read without ArgumentParser.
///
/// ArgumentParser builds every command's argument definitions by reflection (`Mirror`, generic
/// metadata looked up by mangled name, a protocol-conformance scan for each type it meets, and a
/// trial parse of `--generate-completion-script` on every run). In a `mempressure vm PID` that is
/// two thirds of the instructions the whole process executes, and most of the code it touches.
/// `parse` reads `--version`, `vm` and a single `top` when every word is one of the few forms it
/// knows, and the result passes the same checks `VM` and `Top` make; for anything else — help,
/// `--name=value`, an unknown or repeated option, a value that starts with `-`, a check that
/// fails — it returns nil and ArgumentParser reads the line, with its messages. Both readings of
/// a line give the same `VMRequest` or `TopRequest` (QuickCommandLineTests holds them to it, and
/// holds every name here to ArgumentParser's definition of the command).
package enum QuickCommandLine: Equatable {
    case version
    case vm(VMRequest)
    case top(TopRequest)

    /// `vm`'s flags and options (with a value) that `parse` knows: ArgumentParser's names.
    /// (Arrays, not sets: a `Set<String>` would cost this start-up its generic metadata.)
    package static let vmFlags = ["--only", "--json", "--csv", "--regions", "--full-paths", "--stacks"]
    package static let vmOptions = ["--sort", "--cgroup", "--match", "--proc-root", "--cgroup-root", "--registry"]
    /// A single `top`'s (no --interval, --count or --format: those are ArgumentParser's).
    package static let topFlags = ["--json", "--csv", "--bytes", "--full"]
    package static let topOptions = ["--group-by", "--sort", "--limit", "--match", "--user", "--proc-root", "--cgroup-root"]

    /// The command this line asks for, or nil for ArgumentParser to read it.
    /// `userNames`: a `top --user` that names a user (not a UID) is read too, for a program that
    /// can look it up (mempressure-commands); `mempressure`, static and without the C library's
    /// name services, leaves such a line to mempressure-commands.
    package static func parse(_ arguments: [String], userNames: Bool = false) -> QuickCommandLine? {
        guard let command = arguments.first else { return nil }
        if arguments == ["--version"] { return .version }
        let known: (flags: [String], options: [String])
        switch command {
        case "vm": known = (vmFlags, vmOptions)
        case "top": known = (topFlags, topOptions)
        default: return nil
        }
        guard let words = Words(arguments.dropFirst(), flags: known.flags, options: known.options) else { return nil }
        switch command {
        case "vm":
            guard words.positionals.count <= 1 else { return nil }
            var request = VMRequest()
            request.target.target = words.positionals.first
            request.target.processOnly = words.flags.contains("--only")
            request.json = words.flags.contains("--json")
            request.csv = words.flags.contains("--csv")
            request.regions = words.flags.contains("--regions")
            request.fullPaths = words.flags.contains("--full-paths")
            request.stacks = words.flags.contains("--stacks")
            request.target.cgroup = words[option: "--cgroup"]
            request.target.match = words[option: "--match"]
            if let value = words[option: "--sort"] {
                guard let key = SortKey(rawValue: value) else { return nil }
                request.sort = key
            }
            if let value = words[option: "--proc-root"] { request.procRoot = value }
            if let value = words[option: "--cgroup-root"] { request.cgroupRoot = value }
            if let value = words[option: "--registry"] { request.registry = value }
            do { try request.validate() } catch { return nil }
            return .vm(request)
        case "top":
            guard words.positionals.isEmpty else { return nil }
            var request = TopRequest()
            request.json = words.flags.contains("--json")
            request.csv = words.flags.contains("--csv")
            request.bytes = words.flags.contains("--bytes")
            request.full = words.flags.contains("--full")
            if let value = words[option: "--group-by"] {
                guard let grouping = AppGrouping(rawValue: value) else { return nil }
                request.grouping = grouping
            }
            if let value = words[option: "--sort"] {
                guard let key = TopSortKey(rawValue: value) else { return nil }
                request.sort = key
            }
            if let value = words[option: "--limit"] {
                guard let limit = Int(value) else { return nil }
                request.limit = limit
            }
            request.match = words[option: "--match"]
            request.user = words[option: "--user"]
            if !userNames, let user = request.user, UInt32(user) == nil { return nil }
            if let value = words[option: "--proc-root"] { request.procRoot = value }
            if let value = words[option: "--cgroup-root"] { request.cgroupRoot = value }
            do { try request.validate() } catch { return nil }
            return .top(request)
        default:
            return nil
        }
    }

    /// `users` gives `top --user`'s UID (`numericUserID` unless the caller can look names up).
    package func run(users: (String) throws -> UInt32 = numericUserID) throws(CommandFailed) {
        switch self {
        case .version: output(mempressureVersion + "\n")
        case .vm(let request): try request.run()
        case .top(let request): try request.run(users: users)
        }
    }

    /// A command's words after its name: positionals, flags and `--option value` pairs, each
    /// name at most once; nil for any other word.
    private struct Words {
        var positionals: [String] = []
        var flags: [String] = []
        var values: [(name: String, value: String)] = []

        init?(_ words: ArraySlice<String>, flags knownFlags: [String], options knownOptions: [String]) {
            var words = words.makeIterator()
            while let word = words.next() {
                guard !word.isEmpty else { return nil }
                if !word.hasPrefix("-") {
                    positionals.append(word)
                } else if knownFlags.contains(word) {
                    guard !flags.contains(word) else { return nil }
                    flags.append(word)
                } else if knownOptions.contains(word) {
                    guard self[option: word] == nil, let value = words.next(), !value.isEmpty, !value.hasPrefix("-") else { return nil }
                    values.append((word, value))
                } else {
                    return nil
                }
            }
        }

        /// The value given to this option, if it was.
        subscript(option name: String) -> String? { values.first { $0.name == name }?.value }
    }
}
