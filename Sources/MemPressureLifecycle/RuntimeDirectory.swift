import Glibc
import MemPressureSystem
import SystemPackage

/// The supervisor's runtime directory (its sockets and the apps' output files), trusted both
/// ways: the supervisor makes it or verifies it by descriptor (never following a link, never
/// changing the mode of what it finds), and a client trusts a directory only of its own user or
/// root.
public enum RuntimeDirectory {
    /// Why a runtime directory is not trusted.
    public enum Refusal: Error, Sendable, Hashable, CustomStringConvertible {
        /// A symbolic link (or not a directory at all).
        case notADirectory(String)
        /// Owned by another user (`owner`); `expected` names who may own it.
        case wrongOwner(String, owner: UInt32, expected: String)
        /// Group or others may write in it: anyone could replace its sockets.
        case writableByOthers(String, mode: UInt32)
        case system(SystemCallError)

        public var description: String {
            switch self {
            case .notADirectory(let d): "\(d) is a symbolic link or not a directory: refused as a runtime directory"
            case .wrongOwner(let d, let owner, let expected):
                "\(d) belongs to uid \(owner), not \(expected): refused as a runtime directory"
            case .writableByOthers(let d, let mode):
                "\(d) is writable by group or others (mode \(String(mode & 0o7777, radix: 8))): refused as a runtime directory"
            case .system(let e): "\(e)"
            }
        }
    }

    /// Makes `path` (mode 0700) if it is not there, then checks what is there by descriptor:
    /// a directory (not a link to one) of this user, with no group or other write permission.
    /// Nothing is changed on a directory that fails the checks. Returns whether it made it (so
    /// that a setup failing later removes it again).
    @discardableResult
    static func prepare(_ path: String) throws(Refusal) -> Bool {
        let made = mkdir(path, 0o700) == 0
        if !made && errno != EEXIST {
            throw .system(SystemCallError("mkdir", errno: Errno(rawValue: errno), subject: path))
        }
        let uid = geteuid()
        try verify(path, owners: [uid], expected: "this user (uid \(uid))")
        return made
    }

    /// Checks that `path` is a directory (not a link) owned by one of `owners`, with no group or
    /// other write permission.
    static func verify(_ path: String, owners: Set<UInt32>, expected: String) throws(Refusal) {
        let fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
        guard fd >= 0 else {
            let e = Errno(rawValue: errno)
            if e == .tooManySymbolicLinkLevels || e == .notDirectory { throw .notADirectory(path) }
            throw .system(SystemCallError("open", errno: e, subject: path))
        }
        defer { close(fd) }
        try verify(descriptor: fd, path, owners: owners, expected: expected)
    }

    /// The checks of `verify` on a directory already open (`path` names it in messages).
    static func verify(descriptor fd: CInt, _ path: String, owners: Set<UInt32>, expected: String) throws(Refusal) {
        var st = stat()
        guard fstat(fd, &st) == 0 else { throw .system(SystemCallError("fstat", errno: Errno(rawValue: errno), subject: path)) }
        guard (st.st_mode & S_IFMT) == S_IFDIR else { throw .notADirectory(path) }
        guard owners.contains(st.st_uid) else { throw .wrongOwner(path, owner: st.st_uid, expected: expected) }
        guard st.st_mode & (S_IWGRP | S_IWOTH) == 0 else { throw .writableByOthers(path, mode: st.st_mode) }
    }

    /// Where `mempressure supervise` runs unless told otherwise, and where the CLI looks for it:
    /// `$XDG_RUNTIME_DIR/mempressure`; without it, `/run/mempressure` for root and
    /// `/run/user/UID/mempressure` for anyone else. Never a name under /tmp another user could
    /// make first.
    public static var defaultPath: String {
        if let env = getenv("XDG_RUNTIME_DIR"), env.pointee != 0 { return "\(String(cString: env))/mempressure" }
        let uid = geteuid()
        return uid == 0 ? "/run/mempressure" : "/run/user/\(uid)/mempressure"
    }

    /// A new directory of this run's own (a supervisor without a configured one, as a
    /// scenario's): `mempressure-PID-RANDOM` under `$XDG_RUNTIME_DIR`, else `/run` for root,
    /// else `/tmp`. It is made here, exclusively (a name that exists already, a link included,
    /// is never used), mode 0700.
    static func makeUnique() throws(Refusal) -> String {
        let base: String
        if let env = getenv("XDG_RUNTIME_DIR"), env.pointee != 0 {
            base = String(cString: env)
        } else {
            base = geteuid() == 0 && ProcFS.isDirectory("/run") ? "/run" : "/tmp"
        }
        var attempts = 0
        while true {
            let path = "\(base)/mempressure-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
            if mkdir(path, 0o700) == 0 {
                try verify(path, owners: [geteuid()], expected: "this user (uid \(geteuid()))")
                return path
            }
            let e = Errno(rawValue: errno)
            attempts += 1
            guard e == .fileExists, attempts < 16 else { throw .system(SystemCallError("mkdir", errno: e, subject: path)) }
        }
    }
}
