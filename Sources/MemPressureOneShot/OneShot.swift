import Glibc
import MemPressureSystem

/// `mempressure`, the program a user runs. It answers the one-shot commands' common lines
/// itself (`QuickCommandLine`: `--version`, `vm`, a single `top`) and becomes
/// `mempressure-commands`, installed beside it, for anything else (every other command, help,
/// every usage error), with the same arguments.
///
/// It is linked fully static (release builds on Linux): no dynamic loader, no shared library, no
/// relocation of its data at start, none of ArgumentParser, jemalloc, the supervisor or the
/// backtraces. Started that way, a Swift program costs about what `cat` does, and `top` can be
/// ten times cheaper than `smem -t` (Reports/vmtracker.md). It is not position-independent (a
/// static-pie link of it did not start with this toolchain): it only reads /proc, prints and
/// ends; what runs long or serves (`supervise`, `export`) runs in `mempressure-commands` and
/// `mempressure-server`, which are.
package enum OneShot {
    /// The program with every command, beside this one.
    package static let commands = "mempressure-commands"

    package static func main() -> Never {
        let arguments = Array(CommandLine.arguments.dropFirst())
        if let quick = QuickCommandLine.parse(arguments) {
            do throws(CommandFailed) {
                try quick.run()
                exit(0)
            } catch {
                exit(error.status)
            }
        }
        let directory = ProcFS.ownExecutableDirectory() ?? "."
        let path = "\(directory)/\(commands)"
        // The arguments as the kernel gave them (a path that is not UTF-8 keeps its bytes, which
        // `CommandLine.arguments` would have repaired), after the program's own path.
        let error: Int32 = path.withCString { program in
            var argv: [UnsafeMutablePointer<CChar>?] = [UnsafeMutablePointer(mutating: program)]
            for i in 1..<Int(CommandLine.argc) { argv.append(CommandLine.unsafeArgv[i]) }
            argv.append(nil)
            execv(program, argv)
            return errno
        }
        writeStandardError("mempressure: cannot run \(path) (\(String(cString: strerror(error)))): it has every command but the quickest forms of --version, vm and top; install it with the rest (make install, or the .deb)\n")
        exit(127)
    }
}
