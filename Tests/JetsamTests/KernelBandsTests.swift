import MemPressureLifecycle
import Glibc
import MemPressureLifecycleProtocol
import MemPressureSystem
import Testing
import MemPressureTestSupport
import MemPressureWorkloadProtocol

/// With swap on, the kernel could page the suspended app out instead of killing anything (and
/// with SwapTotal unreadable, it is not known to be off).
private let swapIsOff: Bool = {
    if case .success(0) = Swap.totalBytes() { return true }
    return false
}()

@Suite("the kernel's OOM killer, with no policy, follows the apps' bands", .serialized,
       .enabled(if: canBudget, "needs root and a cgroup memory controller to give the apps a device budget"),
       .enabled(if: swapIsOff, "with swap on (or SwapTotal unreadable), the kernel may swap the suspended app out instead of choosing a victim"))
struct KernelBandsTests {
    @Test("at the device's limit the kernel kills the suspended app, not the larger foreground app that allocates; with every app at oom_score_adj 0 it kills the foreground app; either kill is counted (cgroup v1 counts it in the app's own group)", arguments: [true, false])
    func kernelFollowsBands(_ informed: Bool) async throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let s = try Supervisor(configuration: supervisorConfiguration {
            $0.budgetBytes = 160 << 20
            $0.backgroundTaskLimit = 600
            $0.expirationWarning = 5
            if !informed { $0.oomScoreBands = nil }
        })
        try await withCleanup({ await s.shutdown() }) {
            try await s.register(model(dir, "S", dirtyMB: 56))
            try await s.register(model(dir, "F", dirtyMB: 4))
            try await park(s, "S")
            try await s.activate("F")
            let before = try #require(await s.kernelOOMKills())
            // 120 MiB more for F (about 130 MiB in all, its runtime included): F alone fits in the
            // 160 MiB device with room to spare (at 140 MiB, F's runtime and the device's other
            // charges left so little that the kernel, once S was gone, sometimes took F as well),
            // F and S (about 60 MiB, above the high-memory line of a quarter of the budget)
            // together do not, by about 30 MiB; when the device fills, F (about 90 MiB by then) is
            // still the larger.
            // Informed, S (suspended, high-memory: adj 900) outweighs F (adj 0) in the kernel's
            // badness by 0.9 × the budget; blind, F is the largest.
            do {
                _ = try await WorkloadRequest.allocate(bytes: 120 << 20).send { try await s.command("F", $0) }
            } catch {
                #expect(!informed, "F's allocation failed: \(error)")
            }
            let victim = informed ? "S" : "F", survivor = informed ? "F" : "S"
            try await s.waitForState(victim, .notRunning, timeout: 60)
            #expect(try await s.state(of: survivor) == (informed ? .active : .suspended))
            let after = try #require(await s.kernelOOMKills())
            #expect(after >= before + 1, "the kernel's kill is counted (\(before) → \(after))")
            let log = await s.log
            let killed = log.contains { e in
                guard e.app == victim, case .crash(.signaled(SIGKILL), _) = e.payload else { return false }
                return true
            }
            #expect(killed, "\(victim) died of a SIGKILL the supervisor did not send")
        }
    }
}
