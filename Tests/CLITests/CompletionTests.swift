import Subprocess
import SystemPackage
import Testing
import MemPressureTestSupport

/// `mempressure --generate-completion-script bash|zsh|fish`: the scripts the VMTracker article
/// "Documentation, man page and shell completions" tells users to install. Each must name the subcommand tree as it is: a subcommand renamed, dropped or moved
/// out of its parent fails here.
@Suite("Shell completions")
struct CompletionTests {
    /// Top-level subcommands, and the subcommands of `cache` and `jetsam` (`rank`, the default, is `--dry-run`).
    static let topLevel = ["vm", "top", "watch", "diff", "check", "cache", "load", "run", "supervise", "apps", "app", "jetsam", "export", "demo"]
    static let cache = ["simulate", "demo"]
    static let jetsam = ["rank", "report", "replay"]

    static func script(_ shell: String) async throws -> String {
        let result = try await runMempressure(["--generate-completion-script", shell])
        #expect(result.status == 0, "\(shell): \(result.standardError)")
        #expect(!result.standardOutput.isEmpty)
        return result.standardOutput
    }

    @Test("the bash script loads in bash, registers the completion, and completes the subcommands")
    func bash() async throws {
        let script = try await Self.script("bash")
        #expect(script.contains("complete -o filenames -F _mempressure mempressure"))

        // Loaded the way a user's shell loads it, then asked to complete three command lines;
        // each answer is printed on one line, the words separated by spaces.
        let program = """
            source <("$0" --generate-completion-script bash) || exit 3
            complete -p mempressure || exit 4
            ask() {
                COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1)); COMP_LINE="$*"; COMP_POINT=${#COMP_LINE}
                COMPREPLY=()
                _mempressure mempressure "${COMP_WORDS[COMP_CWORD]}" "${COMP_WORDS[COMP_CWORD - 1]}"
                echo "${COMPREPLY[*]}"
            }
            ask mempressure ""
            ask mempressure cache ""
            ask mempressure jetsam ""
            """
        let result = try await Subprocess.run(
            .path(FilePath("/bin/bash")), arguments: ["-c", program, buildDirectory + "/mempressure"],
            output: .string(limit: 1 << 20), error: .string(limit: 1 << 20))
        #expect(result.terminationStatus == .exited(0), "\(result.standardError)")
        let lines = result.standardOutput.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        try #require(lines.count >= 4, "\(lines)")
        #expect(lines[0] == "complete -o filenames -F _mempressure mempressure")
        let words = lines[1...3].map { Set($0.split(separator: " ").map(String.init)) }
        for name in Self.topLevel { #expect(words[0].contains(name), "mempressure \(name) is not offered: \(lines[1])") }
        for name in Self.cache { #expect(words[1].contains(name), "mempressure cache \(name) is not offered: \(lines[2])") }
        for name in Self.jetsam { #expect(words[2].contains(name), "mempressure jetsam \(name) is not offered: \(lines[3])") }
        // Subcommands are offered where they belong, not everywhere.
        #expect(!words[1].contains("vm") && !words[2].contains("simulate"))
    }

    @Test("the zsh script is a #compdef function that describes every subcommand")
    func zsh() async throws {
        let script = try await Self.script("zsh")
        #expect(script.hasPrefix("#compdef mempressure"))
        #expect(script.contains("_mempressure()"))
        for name in Self.topLevel + Self.cache + Self.jetsam {
            #expect(script.contains("'\(name):"), "no description of \(name)")
        }
        #expect(script.contains("_mempressure_cache_simulate()"))
        #expect(script.contains("_mempressure_jetsam_replay()"))
    }

    @Test("the fish script completes every subcommand under its parent")
    func fish() async throws {
        let script = try await Self.script("fish")
        for name in Self.topLevel {
            #expect(script.contains("\"mempressure\" -eq 1' -fa '\(name)'"), "mempressure \(name)")
        }
        for name in Self.cache {
            #expect(script.contains("\"mempressure cache\" -eq 1' -fa '\(name)'"), "mempressure cache \(name)")
        }
        for name in Self.jetsam {
            #expect(script.contains("\"mempressure jetsam\" -eq 1' -fa '\(name)'"), "mempressure jetsam \(name)")
        }
    }
}
