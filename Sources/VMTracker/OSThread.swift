#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// An operating-system thread running a closure: for blocking work (reading a socket, waiting
/// for a process, a busy loop) that must not occupy one of Swift concurrency's few threads.
public final class OSThread: @unchecked Sendable {
    private var thread = pthread_t()
    private var started = false

    private final class Body: @unchecked Sendable {
        let run: @Sendable () -> Void
        init(_ run: @escaping @Sendable () -> Void) { self.run = run }
    }

    /// Starts `body` on a new thread. `join()` waits for it; or call `detach()`.
    public init(_ body: @escaping @Sendable () -> Void) {
        let box = Unmanaged.passRetained(Body(body)).toOpaque()
        let rc = pthread_create(&thread, nil, { raw in
            Unmanaged<Body>.fromOpaque(raw!).takeRetainedValue().run()
            return nil
        }, box)
        started = rc == 0
        if !started {
            Unmanaged<Body>.fromOpaque(box).release()
            body()  // no thread to be had: run it here rather than not at all
        }
    }

    /// Starts `body` on a thread nobody waits for.
    public static func detached(_ body: @escaping @Sendable () -> Void) {
        OSThread(body).detach()
    }

    public func join() {
        if started { pthread_join(thread, nil) }
    }

    public func detach() {
        if started { pthread_detach(thread) }
    }
}
