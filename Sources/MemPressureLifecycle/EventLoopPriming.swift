import Dispatch

extension Supervisor {
    /// Makes libdispatch's event loop now, while descriptors are plenty: call it once before the
    /// supervisor is made (the `supervise` and `run` commands do).
    ///
    /// On Linux, Swift's executor and its timers (every `Task.sleep`) run on libdispatch, which
    /// opens its epoll descriptor and eventfd the first time they are needed, and a timerfd per
    /// clock the first time a timer of that clock is armed. If `epoll_create1` or `eventfd` fails
    /// then, libdispatch traps (SIGILL); if `timerfd_create` fails, the timer is never armed and
    /// the sleep never ends. Connections never take the last descriptors (`ControlSocket`
    /// keeps a reserve), but a supervisor short of them must not fail so at its first sleep.
    public static func prepareEventLoop() async {
        // The clocks Swift's sleeps use, and dispatch's own (uptime and wall): each timer fires once.
        do {
            try await Task.sleep(for: .microseconds(100), clock: .continuous)
            try await Task.sleep(for: .microseconds(100), clock: .suspending)
        } catch {
            return  // cancelled: whoever cancelled is shutting down
        }
        await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
            DispatchQueue.global().asyncAfter(deadline: .now() + .microseconds(100)) {
                DispatchQueue.global().asyncAfter(wallDeadline: .now() + .microseconds(100)) { done.resume() }
            }
        }
    }
}
