import Glibc
import MemPressureLifecycleProtocol
import MemPressureSystem
import MemPressureClient
import Synchronization
import Testing
import MemPressureTestSupport

/// The specification's conformance app on the Swift client: ready after didFinishLaunching and
/// didBecomeActive, its state saved in a background task named save-state, its cache freed on a
/// memory warning, `ping` and `cache` answered.
final class ConformanceApp: LifecycleDelegate {
    private let cache = Mutex<[UInt8]>([UInt8](repeating: 0x5a, count: 1 << 20))

    func didFinishLaunching(_ client: LifecycleClient) { client.reportReady() }
    func didBecomeActive(_ client: LifecycleClient) { client.reportReady() }
    func didEnterBackground(_ client: LifecycleClient) { saveState(client) }
    func willTerminate(_ client: LifecycleClient) { saveState(client) }
    func didReceiveMemoryWarning(_ client: LifecycleClient) { cache.withLock { $0 = [] } }

    private func saveState(_ client: LifecycleClient) {
        let task = client.beginBackgroundTask(name: "save-state") {}
        client.endBackgroundTask(task)
    }

    func didReceiveCommand(_ client: LifecycleClient, _ text: String) -> String {
        switch text {
        case "ping": "pong"
        case "cache": "cache \(cache.withLock { $0.count })"
        default: "error: unknown command"
        }
    }
}

/// The names of the entries of a directory.
func fileNames(in path: String) throws -> [String] {
    guard let dir = opendir(path) else { throw TestFailure("opendir \(path): errno \(errno)") }
    defer { closedir(dir) }
    var names: [String] = []
    while let entry = readdir(dir) {
        let name = withUnsafeBytes(of: entry.pointee.d_name) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
        if name != "." && name != ".." { names.append(name) }
    }
    return names
}

/// Every client replays every golden transcript (Tests/Fixtures/protocol) against a fake supervisor.
@Suite("the lifecycle protocol's golden transcripts")
struct TranscriptTests {
    static let names = ["commands", "launch", "lifecycle", "memory-warning", "notifications", "robustness", "tasks-and-stacks"]

    @Test("the transcripts on disk are the ones replayed, and they parse")
    func everyTranscript() throws {
        let onDisk = try fileNames(in: ProtocolTranscript.directory).filter { $0.hasSuffix(".txt") }.map { String($0.dropLast(4)) }
        #expect(onDisk.sorted() == Self.names)
        #expect(try ProtocolTranscript.all().map(\.name) == Self.names)
        #expect(ProtocolTranscript.matches("task-begin 1 4242 save-state", "task-begin 1 * save-state"))
        #expect(!ProtocolTranscript.matches("task-begin 1  save-state", "task-begin 1 * save-state"))
        #expect(ProtocolTranscript.matches("done 8 error: unknown command", "done 8 error..."))
        #expect(!ProtocolTranscript.matches("done 8 ok", "done 8 error..."))
    }

    @Test("a bad line read together with good ones is skipped, and the good ones after it in the same read still arrive")
    func badLineInOneRead() {
        var splitter = LineSplitter(maximumLineBytes: 8)
        let bytes: [UInt8] = Array("welcome 1\n".utf8) + [0xff, 0x0a] + Array("ab\u{0}c\nexpire 1\n".utf8) + Array("waytoolongline\nready".utf8)
        let first = bytes.withUnsafeBytes { splitter.feedSkippingBadLines($0) }
        // "welcome 1" is 9 bytes: over this splitter's 8, skipped like the others.
        #expect(first.lines == ["expire 1"] && first.skipped == 4, "\(first)")
        let second = Array("\n".utf8).withUnsafeBytes { splitter.feedSkippingBadLines($0) }
        #expect(second.lines == ["ready"] && second.skipped == 0)
    }

    @Test("the Swift client (SupervisedApp)", arguments: names)
    func swiftClient(_ name: String) async throws {
        let transcript = try ProtocolTranscript.named(name)
        let peer = try TranscriptPeer()
        defer { peer.close() }
        let client = LifecycleClient.start(
            socketPath: peer.socketPath, appName: ProtocolTranscript.app, token: ProtocolTranscript.token, delegate: ConformanceApp())
        try #require(client != nil, "the client did not connect")
        let failure = await peer.replay(transcript)
        #expect(failure == nil, "\(failure ?? "")")
    }

    @Test("the C client (its example app)", arguments: names)
    func cClient(_ name: String) async throws {
        try await replayExample("c", name)
    }

    @Test("the Python client (its example app)", arguments: names)
    func pythonClient(_ name: String) async throws {
        try await replayExample("python", name)
    }

    /// The transcript `name` replayed against the example app of the client in `language`.
    func replayExample(_ language: String, _ name: String) async throws {
        let transcript = try ProtocolTranscript.named(name)
        let command = exampleCommand(language, cacheMB: 1, state: "state.txt")
        let failure = try await replay(transcript, running: command.argv, environment: command.environment)
        #expect(failure == nil, "\(failure ?? "")")
    }

    @Test("the Python client's own tests (unittest: every transcript against its own fake supervisor)")
    func pythonUnitTests() async throws {
        let result = try await run(
            ["python3", "-m", "unittest", "discover", "-v", "-s", pythonClientDirectory + "/tests"],
            environment: ["PYTHONPATH": pythonClientDirectory, "PYTHONDONTWRITEBYTECODE": "1"])
        #expect(result.status == .exited(0), "\(result.output)")
        #expect(result.output.contains("test_transcripts"), "\(result.output)")
    }
}
