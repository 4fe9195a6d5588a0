import Glibc
import MemPressureSystem

/// A file a child started by `spawnChild` gets on one of its descriptors.
public struct ChildFile: Sendable {
    public var descriptor: Int32
    public var path: String
    public var flags: Int32
    public var mode: mode_t

    public init(_ descriptor: Int32, _ path: String, _ flags: Int32, mode: mode_t = 0o600) {
        self.descriptor = descriptor
        self.path = path
        self.flags = flags
        self.mode = mode
    }
}

/// Starts `arguments` (the first is the program's path) as a child of the test, its standard
/// input on /dev/null and each of `files` opened on its descriptor, without the test runner's
/// blocked signals (it runs as it would from a shell). Returns its pidfd: the test's own child,
/// not yet reaped, so signals through it reach that process whatever happens to its PID.
public func spawnChild(_ arguments: [String], files: [ChildFile]) throws -> ProcessHandle {
    let argv: [UnsafeMutablePointer<CChar>?] = arguments.map { strdup($0) } + [nil]
    defer { for p in argv { free(p) } }
    var actions = posix_spawn_file_actions_t()
    posix_spawn_file_actions_init(&actions)
    defer { posix_spawn_file_actions_destroy(&actions) }
    posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
    for f in files { posix_spawn_file_actions_addopen(&actions, f.descriptor, f.path, f.flags, f.mode) }
    var pid: pid_t = 0
    let rc = withShellSignals { posix_spawn(&pid, arguments[0], &actions, $0, argv, environ) }
    guard rc == 0 else { throw TestFailure("posix_spawn \(arguments[0]): errno \(rc)") }
    return try ProcessHandle(pid: pid)
}
