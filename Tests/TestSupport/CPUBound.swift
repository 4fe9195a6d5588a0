import Glibc
import Synchronization

/// The actor of tests that compute for seconds without waiting on anything (cache simulations
/// over long traces): a suite marked `@CPUBound` runs on a thread of its own instead of Swift's
/// cooperative pool. That pool has one thread per CPU; a test that computes there holds its
/// thread until it is done, and on two busy CPUs a few such tests held both for two minutes, so
/// that every other test — those waiting on a process, a socket or a timeout — waited too, and
/// timed out. The suites marked so run one test at a time, in order of arrival, on that thread.
@globalActor public actor CPUBound {
    public static let shared = CPUBound()
    private static let executor = ThreadExecutor()
    public nonisolated var unownedExecutor: UnownedSerialExecutor { Self.executor.asUnownedSerialExecutor() }
}

/// A serial executor: one OS thread that runs the jobs given to it, in order.
final class ThreadExecutor: SerialExecutor, @unchecked Sendable {
    private let jobs = Mutex<[UnownedJob]>([])
    /// Counts the jobs waiting (posted per job, waited on by the thread); never freed.
    private let ready: UnsafeMutablePointer<sem_t>

    init() {
        ready = .allocate(capacity: 1)
        sem_init(ready, 0, 0)
        TestThread.detached { [self] in
            while true {
                while sem_wait(ready) != 0 {}  // EINTR: wait again
                let job = jobs.withLock { $0.removeFirst() }
                job.runSynchronously(on: asUnownedSerialExecutor())
            }
        }
    }

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        jobs.withLock { $0.append(job) }
        sem_post(ready)
    }
}
