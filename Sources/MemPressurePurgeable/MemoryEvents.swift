import MemPressureCachePolicies
import CoreMetrics
import Glibc
import Synchronization

extension PurgeableCache where Value == PurgeableBuffer {
    /// The arena this cache's buffers come from: "purgeable cache: NAME", the type its regions
    /// have in VM reports.
    public func arena() throws(PurgeableError) -> PurgeableArena {
        try PurgeableArena.named("purgeable cache: \(name)")
    }

    /// Copies `bytes` into a new purgeable buffer from the cache's arena, ends its access (so it
    /// is purgeable right away) and stores it with its real size as cost.
    @discardableResult
    public func setContent(_ bytes: some Collection<UInt8>, forKey key: Key) throws(PurgeableError) -> PurgeableBuffer {
        let buffer = try PurgeableBuffer(copying: bytes, arena: arena())
        try buffer.endContentAccess()
        setObject(buffer, forKey: key, cost: buffer.allocatedBytes)
        return buffer
    }

    /// Calls `body` with the content for `key`, holding an access while it runs. Returns nil on a
    /// miss, or when the kernel took the content (the entry is then removed and counted as a
    /// discard).
    public func withContent<R>(forKey key: Key, _ body: (UnsafeMutableRawBufferPointer) throws -> R) throws -> R? {
        guard let buffer = object(forKey: key) else { return nil }
        guard buffer.beginContentAccess() else {
            mutate { s, out in
                let hash = key.hashValue
                guard shards.withLock(Self.shard(of: hash), { $0.element(forKey: key, hash: hash)?.value === buffer }) else { return }
                remove(key, reason: .discarded, &s, &out)
            }
            return nil
        }
        defer {
            do { try buffer.endContentAccess() } catch { preconditionFailure("internal: balanced access failed to end") }
        }
        return try buffer.withUnsafeMutableBytes(body)
    }
}

// MARK: - Memory events

/// Something the system tells running code about memory.
public enum MemoryEvent: Sendable, Hashable {
    case memoryWarning
    case didEnterBackground
}

protocol MemoryEventHandling: AnyObject, Sendable {
    func handle(_ event: MemoryEvent)
}

/// Delivers memory warnings and background transitions to the live purgeable caches registered
/// with it: `shared` reaches every cache of the process (the app lifecycle client posts there);
/// a center of one's own reaches only the caches created with it.
public final class MemoryEvents: Sendable {
    public static let shared = MemoryEvents()

    public init() {}

    private struct Weak: @unchecked Sendable {
        weak var handler: (any MemoryEventHandling)?
    }

    private let handlers = Mutex<[ObjectIdentifier: Weak]>([:])

    func register(_ handler: any MemoryEventHandling) {
        handlers.withLock { $0[ObjectIdentifier(handler)] = Weak(handler: handler) }
    }

    func unregister(_ id: ObjectIdentifier) {
        _ = handlers.withLock { $0.removeValue(forKey: id) }
    }

    /// Tells every live cache registered here (called outside any cache lock), then advises every
    /// idle buffer of the process whose advice an arena was deferring, so the kernel can take it.
    public func post(_ event: MemoryEvent) {
        let live = handlers.withLock { table in table.values.compactMap(\.handler) }
        for handler in live { handler.handle(event) }
        PurgeableArena.adviseIdleBuffersEverywhere()
    }
}
