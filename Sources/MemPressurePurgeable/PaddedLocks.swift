import Synchronization

/// A fixed number of values, each under a `Mutex` of its own, on cache lines of its own.
///
/// Threads that take different locks then never write the same cache line (no false sharing),
/// and taking one costs no reference counting: the locks live in one allocation that this
/// object owns, not in an object each. The one unsafe part of `PurgeableCache`'s sharding,
/// confined here.
@usableFromInline
final class PaddedLocks<Value: ~Copyable>: Sendable {
    @usableFromInline typealias Slot = Mutex<Value>

    /// Bytes from one lock to the next: a slot rounded up to whole 128-byte blocks (two cache
    /// lines, which adjacent-line prefetching moves together).
    @usableFromInline let stride: Int
    /// `count` slots, 128-byte aligned. Written only by `init` and `deinit`.
    @usableFromInline nonisolated(unsafe) let base: UnsafeMutableRawPointer
    @usableFromInline let count: Int

    /// `count` (at least 1) slots, slot `i` holding `make(i)`.
    init(count: Int, _ make: (Int) -> Value) {
        precondition(count > 0, "internal: PaddedLocks needs at least one slot")
        self.count = count
        stride = (MemoryLayout<Slot>.stride + 127) / 128 * 128
        base = UnsafeMutableRawPointer.allocate(byteCount: stride * count, alignment: 128)
        for i in 0..<count {
            (base + i * stride).bindMemory(to: Slot.self, capacity: 1).initialize(to: Mutex(make(i)))
        }
    }

    deinit {
        for i in 0..<count { slot(i).deinitialize(count: 1) }
        base.deallocate()
    }

    @inlinable
    func slot(_ i: Int) -> UnsafeMutablePointer<Slot> {
        assert(i >= 0 && i < count, "internal: lock index out of range")
        return (base + i * stride).assumingMemoryBound(to: Slot.self)
    }

    /// Runs `body` holding lock `i`.
    @inlinable
    func withLock<R>(_ i: Int, _ body: (inout sending Value) -> sending R) -> sending R {
        slot(i).pointee.withLock(body)
    }

    /// Runs `body` holding lock `i` if no one else holds it; nil (and `body` not run) if someone does.
    @inlinable
    func withLockIfAvailable<R>(_ i: Int, _ body: (inout sending Value) -> sending R) -> sending R? {
        slot(i).pointee.withLockIfAvailable(body)
    }
}
