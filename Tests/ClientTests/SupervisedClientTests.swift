import MemPressureLifecycle
import Glibc
import MemPressureLifecycleProtocol
import MemPressureSystem
import Testing
import MemPressureTestSupport
import MemPressureVMTracker


/// The app's footprint as jetsam charges it (VMTracker's: private dirty, huge pages, swap).
func footprint(_ pid: Int32) throws -> UInt64 {
    try Snapshotter().process(pid, options: .totalsOnly).totals.footprint
}

/// The C and Python example apps under a real supervisor, as any app in those languages would
/// run: a memory warning reaches them as a callback, their footprint drops by the cache they
/// free, and entering the background saves their state.
@Suite("the C and Python example apps under the supervisor")
struct SupervisedClientTests {
    @Test("launched, warned (the footprint drops by the cache), backgrounded (the state saved), terminated", arguments: ["c", "python"])
    func lifecycle(_ language: String) async throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let state = dir.path + "/state.txt"
        let cacheMB = 64
        let command = exampleCommand(language, cacheMB: cacheMB, state: state)
        let s = try Supervisor(configuration: supervisorConfiguration())
        try await withCleanup({ await s.shutdown() }) {
            try await s.register(AppSpec(name: "Cache", command: command.argv, environment: command.environment))
            try await s.activate("Cache")
            try await s.waitForReady("Cache", count: 2, timeout: 60)  // after launch, and once active
            let pid = try #require(try await s.pid(of: "Cache"))
            let before = try footprint(pid)
            #expect(before >= UInt64(cacheMB) << 20, "the cache is in the footprint: \(Format.bytes(before))")

            let warned = await s.warn(.app("Cache"))  // returns once the app has acknowledged
            #expect(warned == ["Cache"])
            let after = try footprint(pid)
            #expect(after + (UInt64(cacheMB - 8) << 20) <= before, "the footprint dropped by the cache: \(Format.bytes(before)) -> \(Format.bytes(after))")

            try await s.background("Cache")
            #expect(try await s.state(of: "Cache") == .suspended)
            let saved = String(decoding: try ProcFS.readBytes(state), as: UTF8.self)
            #expect(saved.contains("saved=didEnterBackground") && saved.contains("warnings=1") && saved.contains("cache_bytes=0"), "\(saved)")
            try await s.terminate("Cache")

            let log = await s.log.filter { $0.app == "Cache" }
            #expect(log.contains { $0.payload == .warning(.sent) })
            #expect(log.contains { $0.payload == .callback(.didReceiveMemoryWarning) })
            #expect(log.contains { $0.payload == .callback(.didEnterBackground) })
            #expect(log.contains { if case .task(.ended(_, "save-state")) = $0.payload { true } else { false } })
            #expect(!log.contains { $0.kind == .error || $0.kind == .protocol }, "\(log.filter { $0.kind == .error || $0.kind == .protocol })")
        }
    }
}
