import Glibc
import LinuxSystem
import Testing
import TestSupport

/// A supervisor this user may not reach is said to be one (permission denied, and whose), not
/// "no supervisor".
@Suite("permission denied at the admin socket")
struct PermissionAndSizeTests {
    @Test("the admin socket or runtime directory of another user: permission denied, naming whose, not 'no supervisor … start one'",
          .enabled(if: canSwitchUser, "needs root and setpriv(1) to act as another user"))
    func adminPermissionDenied() async throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        try #require(chmod(dir.path, 0o755) == 0)
        let runtime = "\(dir.path)/runtime"
        try #require(mkdir(runtime, 0o755) == 0)
        // root listening there, its socket root's alone (connecting needs write permission on it).
        let listener = try UnixSocket.listen(at: "\(runtime)/admin.sock")
        defer { listener.close() }
        try #require(chmod("\(runtime)/admin.sock", 0o700) == 0)

        let socket = try await runMempressure(["apps", "--dir", runtime], asUser: Attacker.uid)
        #expect(socket.status == 1)
        #expect(socket.standardError == "mempressure: permission denied on \(runtime)/admin.sock (EACCES): it belongs to uid 0 (root), not to this user, uid 65534 (nobody): run the command as its user or as root\n")

        try #require(chmod(runtime, 0o700) == 0)
        let directory = try await runMempressure(["app", "--dir", runtime, "activate", "A"], asUser: Attacker.uid)
        #expect(directory.status == 1)
        #expect(directory.standardError == "mempressure: permission denied on \(runtime) (EACCES): it belongs to uid 0 (root), not to this user, uid 65534 (nobody): run the command as its user or as root\n")
    }
}
