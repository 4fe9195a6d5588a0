import MemPressureLifecycle

/// Runs `body` with the supervisor `s` and shuts it down after, however `body` ends; if the task
/// is cancelled meanwhile (an interrupted benchmark), the supervisor is aborted at once: its
/// apps killed and their cgroups removed.
public func supervising<T: Sendable>(_ s: Supervisor, _ body: @Sendable (Supervisor) async throws -> T) async throws -> T {
    try await withTaskCancellationHandler {
        do {
            let r = try await body(s)
            await s.shutdown()
            return r
        } catch {
            await s.shutdown()
            throw error
        }
    } onCancel: {
        Task { await s.abort() }
    }
}
