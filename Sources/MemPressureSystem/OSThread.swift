import Glibc
import Synchronization
import SystemPackage

/// An operating-system thread running a closure: for blocking work (reading a socket, waiting
/// for a process, a busy loop) that must not occupy one of Swift concurrency's few threads.
///
/// Creating one throws when the system has no thread to give (pthread_create fails with EAGAIN
/// at the thread limit or without memory for a stack): the body never runs then, neither here
/// nor elsewhere, so a caller that expects it to run concurrently is never left waiting on work
/// done inline.
public final class OSThread: Sendable {
    private let thread: pthread_t
    /// Set by the first `join()` or `detach()`: a thread is joined or detached once.
    private let settled = Atomic<Bool>(false)

    private final class Body: Sendable {
        let run: @Sendable () -> Void
        init(_ run: @escaping @Sendable () -> Void) { self.run = run }
    }

    /// Starts `body` on a new thread. `join()` waits for it; or call `detach()`. A thread that
    /// is neither joined nor detached is detached when this handle goes away.
    public init(_ body: @escaping @Sendable () -> Void) throws(SystemCallError) {
        let box = Unmanaged.passRetained(Body(body)).toOpaque()
        var thread = pthread_t()
        let rc = pthread_create(&thread, nil, { raw in
            Unmanaged<Body>.fromOpaque(raw!).takeRetainedValue().run()
            return nil
        }, box)
        guard rc == 0 else {
            Unmanaged<Body>.fromOpaque(box).release()
            throw SystemCallError("pthread_create", errno: Errno(rawValue: rc))
        }
        self.thread = thread
    }

    /// Starts `body` on a thread nobody waits for.
    public static func detached(_ body: @escaping @Sendable () -> Void) throws(SystemCallError) {
        try OSThread(body).detach()
    }

    /// Waits until the thread has finished.
    public func join() {
        guard !settled.exchange(true, ordering: .acquiringAndReleasing) else { return }
        pthread_join(thread, nil)
    }

    /// Lets the thread finish on its own.
    public func detach() {
        guard !settled.exchange(true, ordering: .acquiringAndReleasing) else { return }
        pthread_detach(thread)
    }

    deinit { detach() }
}
