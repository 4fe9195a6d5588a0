import Glibc
import MemPressureSystem
import MemPressureTestSupport

/// The example apps, the clients' conformance apps.
let exampleC = buildDirectory + "/mempressure-example-c"
let pythonClientDirectory = repositoryDirectory + "/Sources/python-client"
let examplePython = pythonClientDirectory + "/examples/cache_app.py"

/// The command that runs an example app (`c` or `python`) with a cache of `cacheMB` MiB and its
/// state in `state`, and the environment it needs.
func exampleCommand(_ language: String, cacheMB: Int, state: String) -> (argv: [String], environment: [String: String]) {
    let options = ["--cache-mb", "\(cacheMB)", "--state", state]
    if language == "c" { return ([exampleC] + options, [:]) }
    return (["/usr/bin/env", "python3", examplePython] + options, ["PYTHONPATH": pythonClientDirectory, "PYTHONDONTWRITEBYTECODE": "1"])
}

/// Runs `argv` as the client of a fake supervisor replaying `transcript`; after the transcript
/// (the peer closes the connection) the app must exit with status 0. Nil when all went as the
/// transcript says; else what did not, with the app's output. The process is killed and reaped
/// whatever happens.
func replay(_ transcript: ProtocolTranscript, running argv: [String], environment extra: [String: String] = [:]) async throws -> String? {
    let peer = try TranscriptPeer()
    defer { peer.close() }
    let outputPath = peer.directory.path + "/output"
    let output = open(outputPath, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
    guard output >= 0 else { throw TestFailure("open \(outputPath): errno \(errno)") }
    defer { close(output) }
    var options = SpawnOptions(argv)
    options.environment = Spawn.currentEnvironment.merging(peer.environment) { $1 }.merging(extra) { $1 }
    options.standardOutput = .descriptor(output)
    options.standardError = .output
    options.workingDirectory = peer.directory.path
    let child = try Spawn.start(options)
    var failure = await peer.replay(transcript)
    let watched = WatchedProcess(child.pid)
    let exited = await watched?.waitForExit(timeout: 60) ?? true
    if !exited {
        watched?.signal(SIGKILL)
        failure = (failure ?? "") + "; it did not exit when the connection closed"
    }
    let end = try child.waitForTermination()
    if exited, end != .exited(0) { failure = (failure ?? "") + "; it \(end), not exited with status 0" }
    guard let failure else { return nil }
    do {
        return failure + "\n--- its output:\n" + String(decoding: try ProcFS.readBytes(outputPath), as: UTF8.self)
    } catch {
        return failure + "\n--- its output cannot be read: \(error)"
    }
}

/// Runs a program to its end (its output kept), on a thread of its own: for the build and
/// install steps (gcc, pkg-config, pip).
func run(_ argv: [String], environment extra: [String: String] = [:], in directory: String? = nil) async throws -> (status: ProcessHandle.Termination, output: String) {
    let scratch = try TemporaryDirectory("mempressure-run")
    defer { scratch.remove() }
    let outputPath = scratch.path + "/output"
    let output = open(outputPath, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
    guard output >= 0 else { throw TestFailure("open \(outputPath): errno \(errno)") }
    defer { close(output) }
    var options = SpawnOptions(argv)
    options.environment = Spawn.currentEnvironment.merging(extra) { $1 }
    options.standardOutput = .descriptor(output)
    options.standardError = .output
    options.workingDirectory = directory
    options.searchPath = true
    let child = try Spawn.start(options)
    let watched = WatchedProcess(child.pid)
    if await watched?.waitForExit(timeout: 600) == false { watched?.signal(SIGKILL) }
    let status = try child.waitForTermination()
    return (status, String(decoding: try ProcFS.readBytes(outputPath), as: UTF8.self))
}
