// The planted-link tests' other user: an unprivileged user (uid 65534, `nobody`) who makes
// directories and plants links where root is about to write, and the root-owned file the links
// point at.

import Glibc
import MemPressureSystem
import Subprocess
import SystemPackage

/// Whether the tests can act as another user: root, and setpriv(1) (util-linux) to switch.
public var canSwitchUser: Bool { getuid() == 0 && access("/usr/bin/setpriv", X_OK) == 0 }

/// An unprivileged user, `nobody`, acting through setpriv(1): every file it makes is its own,
/// made by a process of its own, as an attacker's would be.
public enum Attacker {
    public static let uid: UInt32 = 65534

    /// Runs `script` with /bin/sh as the attacker (uid and gid 65534, no supplementary groups);
    /// throws when it fails, with what it said.
    @discardableResult
    public static func run(_ script: String) async throws -> String {
        let result = try await Subprocess.run(
            .path("/usr/bin/setpriv"), arguments: ["--reuid=\(uid)", "--regid=\(uid)", "--clear-groups", "/bin/sh", "-c", script],
            output: .string(limit: 1 << 20), error: .string(limit: 1 << 20))
        guard case .exited(0) = result.terminationStatus else {
            throw TestFailure("as uid \(uid): \(script): \(result.terminationStatus): \(result.standardError)")
        }
        return result.standardOutput
    }

    /// A new directory of the attacker's own in /tmp (mode 0755, as mkdir leaves it), removed
    /// with `AttackerDirectory.remove()`.
    public static func makeDirectory() async throws -> AttackerDirectory {
        let path = try await run(#"d=$(mktemp -d /tmp/mempressure-attack.XXXXXX) && chmod 755 "$d" && echo "$d""#)
            .split(separator: "\n").first.map(String.init) ?? ""
        guard path.hasPrefix("/tmp/mempressure-attack.") else { throw TestFailure("the attacker made no directory: '\(path)'") }
        return AttackerDirectory(path: path)
    }

    /// Plants a symbolic link at `path` (in a directory the attacker may write in) to `target`.
    public static func plantLink(_ path: String, to target: String) async throws {
        try await run("ln -s '\(target)' '\(path)'")
    }
}

/// A directory the attacker made; `remove()` (as root) removes it and all in it.
public struct AttackerDirectory: Sendable {
    public let path: String

    /// Plants `NAME -> target` in it.
    public func plantLink(_ name: String, to target: String) async throws {
        try await Attacker.plantLink("\(path)/\(name)", to: target)
    }

    /// The names in it now.
    public func names() throws -> [String] {
        try ProcFS.listDirectory(path).map { String(decoding: $0, as: UTF8.self) }.sorted()
    }

    public func remove() { removeDirectoryTree(path) }
}

/// The stage of a planted-link test: a directory of the test's own holding the victim, and a
/// directory the attacker made. `remove()` removes both.
public struct PlantedLinkStage: Sendable {
    public let directory: TemporaryDirectory
    public let victim: VictimFile
    public let attacker: AttackerDirectory

    public init() async throws {
        directory = try TemporaryDirectory()
        do {
            victim = try VictimFile(in: directory)
            attacker = try await Attacker.makeDirectory()
        } catch {
            directory.remove()
            throw error
        }
    }

    public func remove() {
        attacker.remove()
        directory.remove()
    }
}

/// A file only root may read or write (mode 0600, in a directory of the test's own), with
/// content the test knows: what the attacker's links point at.
public struct VictimFile: Sendable {
    public let path: String
    public let content: [UInt8]

    public init(in directory: TemporaryDirectory, named name: String = "victim") throws {
        path = "\(directory.path)/\(name)"
        content = Array("root's secret, not to be overwritten: \(name)\n".utf8)
        try writeBytes(content, to: path)
        guard chmod(path, 0o600) == 0 else { throw TestFailure("chmod \(path): errno \(errno)") }
    }

    /// Whether it still holds exactly what it was made with.
    public var isIntact: Bool {
        do {
            return try ProcFS.readBytes(path) == content
        } catch {
            return false
        }
    }

    /// What it holds now, for a failure's message.
    public var now: String {
        do {
            let bytes = try ProcFS.readBytes(path)
            return "\(bytes.count) bytes: \(escapedText(bytes.prefix(80)))"
        } catch {
            return "\(error)"
        }
    }
}
