import DequeModule
import Synchronization
import MemPressureLifecycleProtocol

/// Everything the supervisor knows about one app. Owned by the supervisor actor: only its
/// methods read or change it.
final class AppRecord {
    var spec: AppSpec
    var state: LifecycleState = .notRunning
    /// Which run of the app: incremented at every launch. Every wait and timer names the run it
    /// belongs to, so that nothing meant for an earlier run touches a later one.
    var generation = 0
    var process: AppProcess?
    var token = ""
    /// The current run's output (`AppOutput`: the pipe's read end naming it); nil when none.
    var output: CInt?
    var exitStatus: ExitStatus?
    /// Set once a teardown began: its SIGTERM or SIGKILL is an exit, not a crash.
    var terminating = false
    /// Set by a kill with a reason (jetsam): logged with the exit.
    var killReason: KillReason?
    /// Other processes of the app the kill of this run reached (logged with the exit).
    var othersKilled = 0

    // The control channel.
    var connection: Int32?
    var hello = false
    /// Whether this run's channel was ever open (said hello): a callback that finds it closed
    /// then means the app is gone or going.
    var hadChannel = false
    var acks: [LifecycleCallback: Int] = [:]
    var readyCount = 0
    /// The callbacks delivered and not yet acknowledged (the app is inside them, or they wait
    /// their turn behind one), with how many of each.
    var callbacksInProgress: [LifecycleCallback: Int] = [:]
    /// Control connections closed for a protocol error, a flood or a bad hello.
    var channelFailures = 0
    /// Answers to app commands, by command id.
    var commandAnswers: [Int: String] = [:]

    // The background.
    var tasks: [Int: BackgroundTaskRecord] = [:]
    var expiredTasks: Set<Int> = []
    /// Counts the app's stays in the background: a timer or a wait belongs to one of them.
    var backgroundPeriod = 0
    /// When the current stay in the background began (monotonic); nil in the foreground and
    /// while not running (cleared at exit and at launch).
    var backgroundEnteredAt: Double?
    var queued: [QueuedNotification] = []
    var notifiedCount = 0
    var stack: [String] = []
    var stackComplete = false

    // Accounting.
    var accounting: [LifecycleState: StateAccounting] = [:]
    var lastSample: UsageSample?
    /// The state usage is charged to until the next transition, when it is not the state the
    /// app is in: from the moment a suspended app is continued until it enters
    /// backgroundRunning, it runs, and what it uses is not the suspended state's.
    var chargedState: LifecycleState?
    var stateSince = 0.0
    var timeline = BoundedLog<FootprintSample>(limit: 10_000)
    /// The latest footprint reading of the current run, and when it was taken (monotonic).
    var latest: (sample: FootprintSample, at: Double)?
    var lifetimeMaxFootprint: UInt64 = 0
    /// The `oom_score_adj` last given to this run's processes (`OOMScoreBands`), with the run.
    var oomScore: (generation: Int, value: Int32)?
    /// Whether a failure to set it was logged for this run (once per run).
    var oomScoreFailureLogged = 0
    /// The kernel's OOM kills its memory group had counted when this run was launched (cgroup
    /// v1; nil when unread): the run's own are those after.
    var oomKillsAtLaunch: UInt64?
    var activations = 0
    var lastActiveAt: Double?
    /// Launch to first ready of recent runs (the relaunch cost), oldest first, at most 16.
    var launchToReady: [Double] = []

    init(spec: AppSpec, timelineLimit: Int) {
        self.spec = spec
        timeline = BoundedLog(limit: timelineLimit)
    }

    var isClient: Bool { spec.client ?? true }
    var name: String { spec.name }
    var pid: Int32? { process?.pid }

    /// Whether `generation` is still the run alive now.
    func isAlive(_ generation: Int) -> Bool { self.generation == generation && process != nil }

    /// What waiters look at: a copy of the fields a wait condition may test.
    var condition: AppCondition {
        AppCondition(
            state: state, generation: generation, hello: hello, acks: acks, readyCount: readyCount, tasks: tasks.count,
            alive: process != nil, notifiedCount: notifiedCount, stackComplete: stackComplete,
            channelFailures: channelFailures, backgroundPeriod: backgroundPeriod, answeredCommands: Set(commandAnswers.keys))
    }
}

struct BackgroundTaskRecord {
    var tid: Int32
    var name: String
}

struct QueuedNotification {
    var kind: String
    var value: String
    var count: Int
}

/// A copy of the record's fields that a wait condition may test (taken after every event).
struct AppCondition: Sendable {
    var state: LifecycleState
    var generation: Int
    var hello: Bool
    var acks: [LifecycleCallback: Int]
    var readyCount: Int
    var tasks: Int
    var alive: Bool
    var notifiedCount: Int
    var stackComplete: Bool
    var channelFailures: Int
    var backgroundPeriod: Int
    var answeredCommands: Set<Int>
    /// Commands waiting for the app's lock (set by the supervisor, which holds the queue).
    var queuedCommands = 0
}

/// The consumers of one of the supervisor's streams (the log, the samples). A consumer that
/// stops reading (its task cancelled, its stream dropped) is removed at once, by its stream's
/// `onTermination`, which runs outside the actor: hence the lock. Streams are yielded to and
/// finished outside it (finishing one runs its `onTermination`, which takes the lock).
final class Subscribers<Element: Sendable>: Sendable {
    private struct State {
        var continuations: [Int: AsyncStream<Element>.Continuation] = [:]
        var lastID = 0
    }

    private let state = Mutex(State())

    var isEmpty: Bool { state.withLock { $0.continuations.isEmpty } }
    var count: Int { state.withLock { $0.continuations.count } }

    /// Adds a consumer, forgotten when its stream terminates.
    func add(_ continuation: AsyncStream<Element>.Continuation) {
        let id = state.withLock { s in
            s.lastID += 1
            s.continuations[s.lastID] = continuation
            return s.lastID
        }
        continuation.onTermination = { [weak self] _ in self?.remove(id) }
    }

    private func remove(_ id: Int) {
        _ = state.withLock { $0.continuations.removeValue(forKey: id) }
    }

    func yield(_ element: Element) {
        for c in state.withLock({ Array($0.continuations.values) }) { c.yield(element) }
    }

    /// Ends every stream (shutdown) and forgets them.
    func finishAll() {
        let all = state.withLock { s in
            defer { s.continuations = [:] }
            return Array(s.continuations.values)
        }
        for c in all { c.finish() }
    }
}

/// The newest `limit` elements of a sequence, oldest first, counting what it dropped: what a
/// long-running service keeps of its histories.
struct BoundedLog<Element> {
    let limit: Int
    private(set) var elements = Deque<Element>()
    private(set) var dropped = 0

    init(limit: Int) {
        self.limit = max(1, limit)
    }

    mutating func append(_ e: Element) {
        elements.append(e)
        if elements.count > limit {
            elements.removeFirst()
            dropped += 1
        }
    }

    /// Keeps only the newest `count` (counted as dropped).
    mutating func trim(to count: Int) {
        let extra = elements.count - max(0, count)
        guard extra > 0 else { return }
        elements.removeFirst(extra)
        dropped += extra
    }

    /// Oldest first.
    var all: [Element] { Array(elements) }
    var last: Element? { elements.last }
    var count: Int { elements.count }
}
