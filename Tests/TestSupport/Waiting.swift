import Glibc
import MemPressureSystem

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

/// A process the test watches (never signals): a pidfd opened on it and checked to be the
/// process meant (`check`, run after the pidfd is open: a reused PID is never watched).
public final class WatchedProcess: Sendable {
    public let pid: Int32
    let handle: ProcessHandle

    /// Nil if `pid` is gone, or `check` says it is not the process meant.
    public init?(_ pid: Int32, check: (Int32) -> Bool = { _ in true }) {
        do {
            handle = try ProcessHandle(pid: pid)
        } catch {
            return nil
        }
        guard check(pid) else { return nil }
        self.pid = pid
    }

    /// Sends `sig` through the pidfd (for a process the test itself, or a supervisor it started,
    /// launched); false once it has exited.
    @discardableResult
    public func signal(_ sig: Int32) -> Bool {
        do {
            try handle.signal(sig)
            return true
        } catch {
            return false
        }
    }

    /// Whether it is still running (its pidfd not yet readable).
    public var isAlive: Bool {
        var p = pollfd(fd: handle.descriptor, events: Int16(POLLIN), revents: 0)
        return poll(&p, 1, 0) == 0
    }

    /// Waits (on a thread of its own, not the tests' executor) until it has exited; false after
    /// `timeout` seconds.
    public func waitForExit(timeout: Double) async -> Bool {
        let fd = handle.descriptor
        return await withCheckedContinuation { (c: CheckedContinuation<Bool, Never>) in
            do {
                try OSThread.detached {
                    var p = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
                    let n = retryOnInterrupt { poll(&p, 1, Int32(timeout * 1000)) }
                    c.resume(returning: n > 0)
                }
            } catch {
                c.resume(returning: false)
            }
        }
    }
}

/// The cgroup lines of /proc/PID/cgroup (empty when it is gone).
public func cgroupLines(of pid: Int32) -> [String] {
    do {
        return String(decoding: try ProcFS.readBytes("/proc/\(pid)/cgroup"), as: UTF8.self).split(separator: "\n").map(String.init)
    } catch {
        return []
    }
}
