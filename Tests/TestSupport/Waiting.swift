/// The value of `body`, or nil if it has not finished within `timeout` seconds (it is then
/// cancelled). The one timeout of the tests' waits: they wait on the real event, never a sleep.
public func within<T: Sendable>(_ timeout: Double, _ body: @escaping @Sendable () async -> T?) async -> T? {
    await withTaskGroup(of: T?.self) { group in
        group.addTask { await body() }
        group.addTask {
            do {
                try await Task.sleep(for: .seconds(timeout))
            } catch {
                return nil  // cancelled: the body finished first
            }
            return nil
        }
        let result = await group.next() ?? nil
        group.cancelAll()
        return result
    }
}

/// `runMempressure(arguments)`, or nil if it has not ended within `timeout` seconds (it is then
/// killed): for a command that once ran for ever.
public func runMempressure(_ arguments: [String], within timeout: Double) async throws -> CommandResult? {
    let outcome = await within(timeout) { () -> Result<CommandResult, any Error>? in
        do {
            return .success(try await runMempressure(arguments))
        } catch {
            return .failure(error)
        }
    }
    return try outcome?.get()
}

/// The first element of `stream` that satisfies `predicate`, or nil if none came within
/// `timeout` seconds (the stream ending counts as none). For waiting on a real event.
public func first<Element: Sendable>(
    of stream: AsyncStream<Element>, within timeout: Double, where predicate: @escaping @Sendable (Element) -> Bool = { _ in true }
) async -> Element? {
    await within(timeout) {
        for await element in stream where predicate(element) { return element }
        return nil
    }
}

/// Every element of `stream` until it ends; nil if it has not ended within `timeout` seconds.
public func collect<Element: Sendable>(_ stream: AsyncStream<Element>, within timeout: Double) async -> [Element]? {
    await within(timeout) {
        var all: [Element] = []
        for await element in stream { all.append(element) }
        return all
    }
}

/// Runs `body`, then `cleanup` whatever happens (a failed `#require` throws): what the test made
/// (a supervisor's apps, cgroups and runtime directory) never outlives it. `defer` cannot await.
public func withCleanup(_ cleanup: () async -> Void, _ body: () async throws -> Void) async throws {
    do {
        try await body()
    } catch {
        await cleanup()
        throw error
    }
    await cleanup()
}
