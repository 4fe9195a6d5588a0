import Glibc
import MemPressureSystem
import Testing
import MemPressureTestSupport

/// Two of issue 26's smaller items: a supervisor this user may not reach is said to be one
/// (permission denied, and whose), not "no supervisor"; sizes the machine cannot hold are refused
/// at once, not tried for ever.
@Suite("permission denied at the admin socket; sizes larger than the machine")
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

    @Test("a size larger than the machine's memory is refused at once, with the size and the machine's memory", arguments: [
        ["cache", "demo", "--size", "9223372036854775807"],
        ["cache", "demo", "--size", "8796093022208k"],
        ["demo", "--vm-only", "--dirty", "9223372036854775807"],
        ["demo", "--vm-only", "--purgeable", "1048576g"],
        ["demo", "--vm-only", "--file", "9223372036854775807"],
    ])
    func sizeLargerThanTheMachine(_ arguments: [String]) async throws {
        // Without the check `cache demo` filled its cache for ever: a time limit makes that a failure.
        let result = try #require(try await runMempressure(arguments, within: 120), "\(arguments) did not end within 120 s")
        #expect(result.status == 1, "\(arguments): \(result.standardError)")
        #expect(result.standardError.hasPrefix("mempressure: \(arguments[arguments.count - 2]) \(arguments.last!) ("), "\(result.standardError)")
        #expect(result.standardError.contains("is more than this machine's memory ("), "\(result.standardError)")
        #expect(result.standardError.hasSuffix("MemTotal): it could never be held\n"), "\(result.standardError)")
    }
}
