import MemPressureLifecycle
import Glibc
import MemPressureSystem
import Testing
import MemPressureTestSupport
import MemPressureWorkloadProtocol

/// The model app's `ramp`: it allocates until its device's usage reaches a line, timing by its
/// own clock the chunk that crossed it — where an end-to-end latency starts (jetsam-bench).
@Suite("the model app's ramp", .serialized, .enabled(if: Supervisor.canBudget(), "needs root and a cgroup memory controller to give the app a device"))
struct WorkloadRampTests {
    static func usage(_ device: String) throws -> UInt64 {
        try #require(ByteScanner.singleNumber(try ProcFS.readBytes("\(device)/\(ProcFS.isFile("\(device)/memory.current") ? "memory.current" : "memory.usage_in_bytes")")))
    }

    /// Runs `body` with the model app "R" active in a 256 MiB device, and the device's cgroup;
    /// the supervisor is shut down and its files removed after, also when `body` fails.
    static func withApp(_ body: (Supervisor, String) async throws -> Void) async throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let s = try Supervisor(configuration: supervisorConfiguration { $0.budgetBytes = 256 << 20 })
        try await withCleanup({ await s.shutdown() }) {
            try await s.register(AppSpec(name: "R", command: workloadCommand(dir)))
            try await s.activate("R")
            try await body(s, try #require(s.deviceMemoryCgroup))
        }
    }

    @Test("the chunk it times is the one that took the device's usage to the line; the stamps are the machine's clock; the memory stays held until released")
    func crossing() async throws {
        try await Self.withApp { s, device in
            let line = try Self.usage(device) + (16 << 20)
            let chunk = 64 << 10
            let sent = monotonicSeconds()
            let r = try await WorkloadRequest.ramp(chunkBytes: chunk, lineBytes: Int(line), moreBytes: 1 << 20, limitBytes: 64 << 20).send { try await s.command("R", $0) }
            let answered = monotonicSeconds()
            // CLOCK_MONOTONIC is the machine's: the app's stamps fall between the test's own.
            #expect(sent <= r.startedAt && r.startedAt <= r.beforeAt && r.beforeAt < r.crossedAt && r.crossedAt <= r.endedAt && r.endedAt <= answered, "\(r)")
            #expect(UInt64(r.usageBytes) >= line)
            #expect(r.bytes == r.chunks * chunk)
            // About 16 MiB to reach the line (the kernel charges page tables too, and a CPU's
            // charges in batches ahead of use: a little less; the app's own start-up memory and
            // page cache it gave back while it ramped: a little more), then 1 MiB past it.
            #expect(r.bytes >= (14 << 20), "\(r.bytes)")
            #expect(r.bytes <= (16 << 20) + (1 << 20) + (4 << 20), "\(r.bytes)")
            #expect(try Self.usage(device) >= line, "still held")
            #expect(try await WorkloadRequest.release(bytes: r.bytes).send { try await s.command("R", $0) } == 0)
        }
    }

    @Test("a line the limit does not reach is an error that says so, and what it allocated is given back")
    func unreachable() async throws {
        try await Self.withApp { s, device in
            let line = try Self.usage(device) + (64 << 20)
            await #expect {
                try await WorkloadRequest.ramp(chunkBytes: 1 << 20, lineBytes: Int(line), moreBytes: 1, limitBytes: 8 << 20).send { try await s.command("R", $0) }
            } throws: { error in
                // The app's refusal, as the supervisor's command passes it on.
                let message = String(describing: error)
                return message.contains("still below \(line)") && message.contains(device)
            }
            #expect(try await WorkloadRequest.allocate(bytes: 4096).send { try await s.command("R", $0) } == 4096, "nothing else held")
        }
    }
}
