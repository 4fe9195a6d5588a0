import MemPressureOneShot
import CMemoryPressure
import Glibc
import MemPressureSystem
import Synchronization

/// SIGINT, SIGTERM and SIGHUP, handled by one thread of ours. Their handler (C, async-signal-safe)
/// writes the signal's number into a pipe, whichever thread the kernel ran it on; a thread reads
/// the pipe and calls the handler a command registered (`interruptible` cancels its work,
/// `supervise` shuts down gracefully), or, when none is registered, ends the process by the
/// signal as its default action would. Dispatch's signal sources, used before, lost a signal in
/// a test that interrupts the demo: on Linux the main thread, parked by dispatch_main in
/// sigsuspend with no signal blocked, could take it first and run the default action.
enum Interrupts {
    static let signals: [Int32] = [SIGINT, SIGTERM, SIGHUP]
    private static let handler = Mutex<(@Sendable (Int32) -> Void)?>(nil)

    /// Installed by the first `handling`, once: until a command handles the signals their
    /// default actions are what it would do anyway, and a one-shot command starts no thread for
    /// them. When it cannot (no pipe, no thread), the signals keep their default actions.
    private static let installed: Void = install()

    private static func install() {
        var ends: [Int32] = [-1, -1]
        guard pipe(&ends) == 0 else { return }
        for fd in ends { _ = fcntl(fd, F_SETFD, FD_CLOEXEC) }
        let readEnd = ends[0]
        do {
            try OSThread.detached { waitForSignals(readEnd) }
        } catch {
            close(ends[0])
            close(ends[1])
            return
        }
        if signals.withUnsafeBufferPointer({ mp_forward_signals(ends[1], $0.baseAddress, Int32($0.count)) }) != 0 {
            for s in signals { signal(s, SIG_DFL) }
        }
    }

    /// Runs `body` with `onSignal` as the handler of the three signals, then removes it.
    static func handling<T>(_ onSignal: @escaping @Sendable (Int32) -> Void, _ body: () async throws -> T) async rethrows -> T {
        _ = installed
        handler.withLock { $0 = onSignal }
        defer { handler.withLock { $0 = nil } }
        return try await body()
    }

    private static func waitForSignals(_ fd: Int32) {
        var byte: UInt8 = 0
        while true {
            let n = retryOnInterrupt { read(fd, &byte, 1) }
            guard n == 1 else { return }
            let signal = Int32(byte)
            if let h = handler.withLock({ $0 }) {
                h(signal)
            } else {
                // The default action: end the process by this signal.
                Glibc.signal(signal, SIG_DFL)
                raise(signal)
            }
        }
    }
}
