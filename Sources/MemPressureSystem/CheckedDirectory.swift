import Glibc
import SystemPackage

/// Why a file was not written, or a directory not written in. Each case prints as one line that
/// starts with the path and ends by saying that nothing was written.
public enum FileWriteError: Error, Sendable, Hashable, CustomStringConvertible {
    /// A call failed (mkdir, open, write, fsync, rename, ...): which, on what, and its errno.
    case systemCall(SystemCallError)
    /// A symbolic link (never followed), or a file that is not a directory, where a directory
    /// to write in was named.
    case notADirectory(path: String, kind: FileKind?)
    /// A directory of another user, who could plant links in it or swap what is written there.
    case wrongOwner(path: String, owner: UInt32)
    /// A directory group or others may write in that is not sticky: anyone could plant links in it.
    case writableByOthers(path: String, mode: UInt32)
    /// A name that had to be new is taken: a link planted there, say. Nothing was written
    /// through it.
    case alreadyExists(path: String, kind: FileKind?)
    /// Not one file name: empty, `.`, `..`, or holding a `/` or a NUL byte.
    case notAFileName(PathBytes)
    /// What was to be copied could not be read (`copyFile`).
    case sourceNotRead(FileOpenError)

    public var description: String {
        switch self {
        case .systemCall(let e):
            "\(e)"
        case .notADirectory(let path, let kind):
            "\(path): \(kind.map { "is a \($0), " } ?? "")not a directory: refused, nothing written"
        case .wrongOwner(let path, let owner):
            "\(path): belongs to uid \(owner), not to this user (uid \(geteuid())) or root, and that user could plant links in it: refused, nothing written"
        case .writableByOthers(let path, let mode):
            "\(path): group or others may write in it (mode \(String(mode & 0o7777, radix: 8))) and it is not sticky, so anyone could plant links in it: refused, nothing written"
        case .alreadyExists(let path, let kind):
            "\(path): already exists\(kind.map { " (a \($0))" } ?? ""): refused, nothing written through it"
        case .notAFileName(let name):
            "'\(name)' is not a file name (one path component): refused, nothing written"
        case .sourceNotRead(let e):
            "\(e): nothing written"
        }
    }
}

/// A directory opened by descriptor and checked, in which files are created and replaced
/// safely: the one way this project writes a file (as root, a file written through a link
/// another user planted would overwrite anything).
///
/// Opening never follows a link (O_DIRECTORY | O_NOFOLLOW), and what was opened is checked on
/// the descriptor, not the path: a directory, owned by this user or root, that neither group nor
/// others may write in unless it is sticky (then only a file's owner may replace or remove it, as
/// in /tmp). Every file is then made through the descriptor: created with O_CREAT | O_EXCL |
/// O_NOFOLLOW (a name that exists, a planted link among them, is refused, never followed) and
/// replaced by writing a new file under a temporary name and renaming it over the old one
/// (renameat replaces a link, it never writes through it; a reader sees the old file or the new
/// one, never half of one). Closed when the value goes.
public final class CheckedDirectory: Sendable {
    /// The open directory (O_RDONLY | O_DIRECTORY | O_CLOEXEC).
    public let descriptor: CInt
    /// The path it was opened at, for messages.
    public let path: String

    private init(descriptor: CInt, path: String) {
        self.descriptor = descriptor
        self.path = path
    }

    deinit { close(descriptor) }

    /// Who may own a directory written in.
    public enum Owners: Sendable, Hashable {
        /// This user or root (and, if group or others may write in it, sticky).
        case thisUserOrRoot
        /// As `thisUserOrRoot`, or anyone's if sticky: a directory every user's processes share
        /// (the region registry in /dev/shm), where each writes only files of its own.
        case anyoneIfSticky
    }

    /// Opens the directory at `path` to write in, after making it (with exactly `mode`) when
    /// `creating` and it is not there. See the type for the checks; nothing is changed on a
    /// directory that fails them.
    public static func open(_ path: String, creating: Bool = false, mode: mode_t = 0o700, owners: Owners = .thisUserOrRoot) throws(FileWriteError) -> CheckedDirectory {
        try open(at: AT_FDCWD, path, shown: path, creating: creating, mode: mode, owners: owners)
    }

    /// The directory holding the file at `path`, opened and checked as `open` does, and the
    /// file's name in it: for writing a file named by a path.
    public static func containing(_ path: String) throws(FileWriteError) -> (directory: CheckedDirectory, name: String) {
        let parent: String, name: String
        if let slash = path.lastIndex(of: "/") {
            parent = slash == path.startIndex ? "/" : String(path[..<slash])
            name = String(path[path.index(after: slash)...])
        } else {
            parent = "."
            name = path
        }
        try validate(PathBytes(name.utf8))
        return (try open(parent), name)
    }

    /// Creates or replaces the file at `path` with `bytes`, through the directory holding it
    /// (see `containing` and `replaceFile`).
    public static func replaceFile(at path: String, with bytes: [UInt8], mode: mode_t = 0o600) throws(FileWriteError) {
        let (directory, name) = try containing(path)
        try directory.replaceFile(name, with: bytes, mode: mode)
    }

    /// Where private directories go unless told otherwise: `$TMPDIR`, else /tmp.
    public static var temporaryBase: String {
        if let env = getenv("TMPDIR"), env.pointee != 0 { return String(cString: env) }
        return "/tmp"
    }

    /// The user's own runtime directory, where a program may keep files under fixed names that
    /// no other user can make first: `$XDG_RUNTIME_DIR`; without it `/run` for root and
    /// `/run/user/UID` for anyone else.
    public static var userRuntimeBase: String {
        if let env = getenv("XDG_RUNTIME_DIR"), env.pointee != 0 { return String(cString: env) }
        let uid = geteuid()
        return uid == 0 ? "/run" : "/run/user/\(uid)"
    }

    /// A new directory of this process's own, mkdtemp-style: `parent/prefixXXXXXX`, the six
    /// characters random, made exclusively (a name that exists, a link included, is never used),
    /// mode 0700.
    public static func makeUnique(in parent: String = temporaryBase, prefix: String) throws(FileWriteError) -> CheckedDirectory {
        var template = Array("\(parent)/\(prefix)XXXXXX".utf8CString)
        guard let made = template.withUnsafeMutableBufferPointer({ mkdtemp($0.baseAddress!) }) else {
            throw .systemCall(SystemCallError("mkdtemp", errno: Errno(rawValue: errno), subject: "\(parent)/\(prefix)XXXXXX"))
        }
        let path = String(cString: made)
        do {
            return try open(path)
        } catch {
            rmdir(path)
            throw error
        }
    }

    /// The directory `name` in this one, made (with exactly `mode`) when `creating` and it is not
    /// there, opened through this one's descriptor and checked as `open` does.
    public func subdirectory(_ name: String, creating: Bool = true, mode: mode_t = 0o700, owners: Owners = .thisUserOrRoot) throws(FileWriteError) -> CheckedDirectory {
        try Self.validate(PathBytes(name.utf8))
        return try Self.open(at: descriptor, name, shown: "\(path)/\(name)", creating: creating, mode: mode, owners: owners)
    }

    /// Creates the file `name`, which must not exist (O_CREAT | O_EXCL | O_NOFOLLOW), open for
    /// reading and writing.
    public func createFile(_ name: String, mode: mode_t = 0o600) throws(FileWriteError) -> NewFile {
        try createFile(PathBytes(name.utf8), mode: mode)
    }

    /// `createFile(_:mode:)` for a name given as its exact bytes (they need not be UTF-8).
    public func createFile(_ name: PathBytes, mode: mode_t = 0o600) throws(FileWriteError) -> NewFile {
        try Self.validate(name)
        let shown = "\(path)/\(name)"
        let fd = (name.bytes + [0]).withUnsafeBufferPointer { buf in
            buf.withMemoryRebound(to: CChar.self) { p in
                retryOnInterrupt { openat(descriptor, p.baseAddress!, O_CREAT | O_EXCL | O_NOFOLLOW | O_RDWR | O_CLOEXEC, mode) }
            }
        }
        guard fd >= 0 else {
            let e = Errno(rawValue: errno)
            if e == .fileExists { throw .alreadyExists(path: shown, kind: RegularFile.lstatKind(at: descriptor, name)) }
            throw .systemCall(SystemCallError("open", errno: e, subject: shown))
        }
        return NewFile(descriptor: fd, path: shown)
    }

    /// Creates or replaces the file `name` with what `body` writes: into a new file under a
    /// temporary name (`.NAME.RANDOM`, created as `createFile` does), renamed over `name` once
    /// written. A link at `name` is replaced, never followed; a reader sees the old file or the
    /// new one. `durable`: the file and the directory are synced before and after the rename
    /// (the new content survives a crash of the machine). When anything fails, the temporary
    /// file is removed and `name` is as it was.
    public func replaceFile(
        _ name: String, mode: mode_t = 0o600, durable: Bool = false, writing body: (borrowing NewFile) throws(SystemCallError) -> Void
    ) throws(FileWriteError) {
        try Self.validate(PathBytes(name.utf8))
        var attempts = 0
        while true {
            let temporary = ".\(name).\(String(UInt32.random(in: 0...UInt32.max), radix: 16))"
            let file: NewFile
            do {
                file = try createFile(temporary, mode: mode)
            } catch {
                attempts += 1
                if case .alreadyExists = error, attempts < 16 { continue }  // someone's file: another name
                throw error
            }
            do throws(SystemCallError) {
                try body(file)
                if durable { try file.sync() }
                guard renameat(descriptor, temporary, descriptor, name) == 0 else {
                    throw SystemCallError("rename", errno: Errno(rawValue: errno), subject: "\(path)/\(temporary) to \(name)")
                }
            } catch {
                unlinkat(descriptor, temporary, 0)
                throw .systemCall(error)
            }
            if durable, fsync(descriptor) != 0 { throw .systemCall(SystemCallError("fsync", errno: Errno(rawValue: errno), subject: path)) }
            return
        }
    }

    /// `replaceFile(_:mode:durable:writing:)` with these bytes.
    public func replaceFile(_ name: String, with bytes: [UInt8], mode: mode_t = 0o600, durable: Bool = false) throws(FileWriteError) {
        try replaceFile(name, mode: mode, durable: durable) { (file: borrowing NewFile) throws(SystemCallError) in try file.write(bytes) }
    }

    /// Opens the file `name` for reading as `RegularFile.open` does (never following a link, a
    /// regular file, at most `maxBytes`), through this directory's descriptor.
    public func openFile(_ name: String, maxBytes: Int, ownedBy owner: UInt32? = nil) throws(FileOpenError) -> RegularFile {
        try RegularFile.open(at: descriptor, PathBytes(name.utf8), shown: PathBytes("\(path)/\(name)".utf8), maxBytes: maxBytes, ownedBy: owner)
    }

    /// Copies the file `name` here (read as `openFile` reads, at most `maxBytes`) to `newName` in
    /// `destination`, replaced there as `replaceFile` does: for a file another program made in a
    /// private directory (gnuplot's SVG) that is to go where others may look.
    public func copyFile(_ name: String, maxBytes: Int, to destination: CheckedDirectory, as newName: String, mode: mode_t = 0o600) throws(FileWriteError) {
        let bytes: [UInt8]
        do {
            bytes = try openFile(name, maxBytes: maxBytes).readToEnd(maxBytes: maxBytes)
        } catch {
            throw .sourceNotRead(error)
        }
        try destination.replaceFile(newName, with: bytes, mode: mode)
    }

    /// Removes the file (or link) `name`; false if there was none.
    @discardableResult
    public func removeFile(_ name: String) throws(SystemCallError) -> Bool {
        try removeFile(PathBytes(name.utf8))
    }

    /// `removeFile(_:)` for a name given as its exact bytes.
    @discardableResult
    public func removeFile(_ name: PathBytes) throws(SystemCallError) -> Bool {
        let removed = (name.bytes + [0]).withUnsafeBufferPointer { buf in
            buf.withMemoryRebound(to: CChar.self) { unlinkat(descriptor, $0.baseAddress!, 0) == 0 }
        }
        if removed { return true }
        if errno == ENOENT { return false }
        throw SystemCallError("unlink", errno: Errno(rawValue: errno), subject: "\(path)/\(name)")
    }

    /// Removes everything in this directory (directories in it emptied through their own
    /// descriptors, never following a link), then the directory itself: what a private directory
    /// made by `makeUnique` leaves when its run ends. Returns what could not be removed (nothing
    /// when all went).
    @discardableResult
    public func removeTree() -> [SystemCallError] {
        var failures = Self.removeContents(of: descriptor, shown: path)
        if rmdir(path) != 0 && errno != ENOENT { failures.append(SystemCallError("rmdir", errno: Errno(rawValue: errno), subject: path)) }
        return failures
    }

    // MARK: Opening and checking

    private static func open(at base: CInt, _ name: String, shown: String, creating: Bool, mode: mode_t, owners: Owners) throws(FileWriteError) -> CheckedDirectory {
        var created = false
        if creating {
            if mkdirat(base, name, mode) == 0 {
                created = true
            } else if errno != EEXIST {
                throw .systemCall(SystemCallError("mkdir", errno: Errno(rawValue: errno), subject: shown))
            }
        }
        let fd = openat(base, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
        guard fd >= 0 else {
            let e = Errno(rawValue: errno)
            if e == .tooManySymbolicLinkLevels || e == .notDirectory {
                throw .notADirectory(path: shown, kind: RegularFile.lstatKind(at: base, PathBytes(name.utf8)))
            }
            throw .systemCall(SystemCallError("open", errno: e, subject: shown))
        }
        var st = stat()
        do throws(FileWriteError) {
            guard fstat(fd, &st) == 0 else { throw .systemCall(SystemCallError("fstat", errno: Errno(rawValue: errno), subject: shown)) }
            try check(st, shown: shown, owners: owners)
            // mkdir applies the umask: a directory made here gets exactly `mode`.
            if created, st.st_mode & 0o7777 != mode, fchmod(fd, mode) != 0 {
                throw .systemCall(SystemCallError("chmod", errno: Errno(rawValue: errno), subject: shown))
            }
        } catch {
            close(fd)
            throw error
        }
        return CheckedDirectory(descriptor: fd, path: shown)
    }

    /// The checks of the type's documentation, on `st` (an fstat of the open directory).
    public static func check(_ st: stat, shown: String, owners: Owners) throws(FileWriteError) {
        guard st.st_mode & S_IFMT == S_IFDIR else { throw .notADirectory(path: shown, kind: FileKind(mode: st.st_mode)) }
        let sticky = st.st_mode & S_ISVTX != 0
        let trustedOwner = st.st_uid == geteuid() || st.st_uid == 0
        guard trustedOwner || (owners == .anyoneIfSticky && sticky) else { throw .wrongOwner(path: shown, owner: st.st_uid) }
        guard st.st_mode & (S_IWGRP | S_IWOTH) == 0 || sticky else { throw .writableByOthers(path: shown, mode: st.st_mode) }
    }

    static func validate(_ name: PathBytes) throws(FileWriteError) {
        guard !name.isEmpty, name != ".", name != "..", !name.bytes.contains(UInt8(ascii: "/")), !name.bytes.contains(0) else {
            throw .notAFileName(name)
        }
    }

    private static func removeContents(of fd: CInt, shown: String) -> [SystemCallError] {
        // fdopendir takes the descriptor it is given: it reads a duplicate.
        let copy = dup(fd)
        guard copy >= 0, let stream = fdopendir(copy) else {
            let e = Errno(rawValue: errno)
            if copy >= 0 { close(copy) }
            return [SystemCallError("opendir", errno: e, subject: shown)]
        }
        var names: [[UInt8]] = []
        while let entry = readdir(stream) {
            let name: [UInt8] = withUnsafeBytes(of: entry.pointee.d_name) { Array($0.prefix { $0 != 0 }) }
            if name != [0x2e] && name != [0x2e, 0x2e] { names.append(name) }
        }
        closedir(stream)
        var failures: [SystemCallError] = []
        for name in names {
            let text = String(decoding: name, as: UTF8.self)
            let failure: SystemCallError? = (name + [0]).withUnsafeBufferPointer { buf in
                buf.withMemoryRebound(to: CChar.self) { p -> SystemCallError? in
                    if unlinkat(fd, p.baseAddress!, 0) == 0 || errno == ENOENT { return nil }
                    guard errno == EISDIR else { return SystemCallError("unlink", errno: Errno(rawValue: errno), subject: "\(shown)/\(text)") }
                    let sub = openat(fd, p.baseAddress!, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
                    guard sub >= 0 else { return SystemCallError("open", errno: Errno(rawValue: errno), subject: "\(shown)/\(text)") }
                    failures += removeContents(of: sub, shown: "\(shown)/\(text)")
                    close(sub)
                    if unlinkat(fd, p.baseAddress!, AT_REMOVEDIR) == 0 { return nil }
                    return SystemCallError("rmdir", errno: Errno(rawValue: errno), subject: "\(shown)/\(text)")
                }
            }
            if let failure { failures.append(failure) }
        }
        return failures
    }
}

/// A file `CheckedDirectory` created, open for reading and writing; closed when it goes.
public struct NewFile: ~Copyable {
    public let descriptor: CInt
    public let path: String

    init(descriptor: CInt, path: String) {
        self.descriptor = descriptor
        self.path = path
    }

    deinit { close(descriptor) }

    /// Writes all of `bytes` at the current offset.
    public func write(_ bytes: UnsafeRawBufferPointer) throws(SystemCallError) {
        try writeAll(descriptor, bytes, subject: path)
    }

    /// Writes all of `bytes` at the current offset.
    public func write(_ bytes: [UInt8]) throws(SystemCallError) {
        try writeAll(descriptor, bytes, subject: path)
    }

    /// Flushes what was written to the disk (fsync).
    public func sync() throws(SystemCallError) {
        guard fsync(descriptor) == 0 else { throw SystemCallError("fsync", errno: Errno(rawValue: errno), subject: path) }
    }
}
