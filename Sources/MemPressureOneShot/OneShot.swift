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
/// ten times cheaper than `smem -t` (Reports/vmtracker.md). It is not position-independent, as
/// Go's static programs are not by default: a static-pie link starts (given SwiftPM's
/// `--disable-local-rpath`: glibc's static-pie start asserts on the `$ORIGIN` runpath) but
/// relocates some 41,000 pointers at every start, 0.3 ms of CPU (`--version` 0.88 against
/// 0.59 ms, `top` 2.62 against 2.29, medians of 200 alternated runs), which is the margin of
/// `top`'s target. It only reads /proc, prints and ends; what runs long or serves (`supervise`,
/// `export`) runs in `mempressure-commands` and `mempressure-server`, which are.
package enum OneShot {
    /// Becomes the program at `path` with this process's arguments as the kernel gave them (a
    /// path that is not UTF-8 keeps its bytes, which `CommandLine.arguments` would have
    /// repaired; argv[0] as the user typed it). The program is opened first and run through that
    /// descriptor (fexecve), and only if it is a regular file, not a link, owned by root or by
    /// this user and writable by its owner alone, in a directory of root or this user that not
    /// everyone may write: run as root, a file another user planted beside a copy of mempressure
    /// (in /tmp, say) is refused, not run. Returns only by throwing.
    static func replaceProcess(with path: String) throws(CLIError) {
        let directory = String(path[..<(path.lastIndex(of: "/") ?? path.startIndex)])
        let fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC)
        guard fd >= 0 else {
            let e = errno
            throw CLIError("cannot run \(path) (\(String(cString: strerror(e)))): it has every command but the quickest forms of --version, vm and top; install it with the rest (make install, or the .deb)")
        }
        defer { close(fd) }
        var file = stat()
        var folder = stat()
        guard fstat(fd, &file) == 0, stat(directory.isEmpty ? "/" : directory, &folder) == 0 else {
            let e = errno
            throw CLIError("cannot run \(path): \(String(cString: strerror(e)))")
        }
        let user = geteuid()
        guard (file.st_mode & S_IFMT) == S_IFREG else { throw CLIError("not running \(path): it is not a regular file") }
        // The file: writable by its owner alone. Its directory: not by everyone (as /tmp is); a
        // group that may write it (Debian's staff in /usr/local, on some systems) is trusted as
        // its owner is.
        for (what, st, forbidden) in [(path, file, S_IWGRP | S_IWOTH), (directory, folder, S_IWOTH)] {
            guard st.st_uid == 0 || st.st_uid == user else {
                throw CLIError("not running \(path): \(what) belongs to uid \(st.st_uid), neither root nor this user (uid \(user))")
            }
            guard st.st_mode & forbidden == 0 else {
                throw CLIError("not running \(path): others may write \(what) (mode \(String(st.st_mode & 0o7777, radix: 8)))")
            }
        }
        var argv: [UnsafeMutablePointer<CChar>?] = []
        for i in 0..<Int(max(CommandLine.argc, 0)) { argv.append(CommandLine.unsafeArgv[i]) }
        // No argv at all (execve allows it): the program's name in its place.
        let name = strdup("mempressure")
        if argv.isEmpty { argv.append(name) }
        argv.append(nil)
        fexecve(fd, argv, environ)
        let e = errno
        free(name)
        throw CLIError("cannot run \(path): \(String(cString: strerror(e)))")
    }

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
        guard let directory = ProcFS.ownExecutableDirectory() else {
            writeStandardError("mempressure: cannot tell where this program is (no /proc/self/exe), so not where \(commands) is: it has every command but the quickest forms of --version, vm and top\n")
            exit(127)
        }
        let path = "\(directory)/\(commands)"
        do throws(CLIError) {
            try replaceProcess(with: path)
        } catch {
            writeStandardError("mempressure: \(error.description)\n")
        }
        exit(127)
    }
}
