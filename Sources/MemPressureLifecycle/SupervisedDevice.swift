import MemPressureLifecycleProtocol
import MemPressureSystem
import MemPressureMonitor
import MemPressureValues

/// The device as a policy sees it and acts on it: its apps, their memory and what can be done to
/// them, the pressure the kernel reports, the device's memory and the kernel's OOM killer, and the
/// log. `Supervisor` is one — apps as real processes in cgroups, pressure from the kernel — and
/// TestSupport's `FakeDevice` another, in memory, so that a policy's decisions are tested without
/// root or cgroups.
///
/// Its members are exactly what the policies use (jetsam and `WarnOnPressure`), so that a policy
/// touches no file and signals no process itself: it reads `memoryStatus()` rather than the
/// device's cgroup, holds the kernel's OOM killer through `holdKernelOOMKiller()` rather than
/// writing `memory.oom_control`, and asks to `kill` an app rather than signalling it. What a
/// decision needs and nothing it does not: no launches, no lifecycle commands, no timelines.
///
/// Clocks: `now()` is the log's (seconds since the device started); `KillReceipt.signalledAt`,
/// `PressureEvent.time` and `PressureWake.time` are monotonic seconds (`monotonicSeconds()`).
public protocol SupervisedDevice: Sendable {
    // MARK: The apps

    /// Every app, in registration order, as of its latest footprint reading.
    func apps() async -> [AppView]
    /// One app's view (nil if there is no such app).
    func view(of name: String) async -> AppView?
    /// Reads the app's footprint now (when a decision will not rest on an old reading).
    func refreshSample(_ name: String) async -> AppView?
    /// Every footprint reading from now on, as the app's view right after it.
    func samples() async -> AsyncStream<AppView>

    // MARK: Acting on an app

    /// Kills the app at once, all of its processes, for `reason`; refused (`.staleTarget`,
    /// `.wrongState`, `.dying`) when the app is no longer the run `pid` names, no longer in
    /// `expectedState`, or already being taken down.
    func kill(_ name: String, pid: Int32, reason: KillReason, expectedState: LifecycleState?) async throws(SupervisorError) -> KillReceipt
    /// Waits until the run with `pid` has exited; false after `timeout` seconds.
    func waitForExit(_ name: String, pid: Int32, timeout: Double) async -> Bool
    /// Memory warnings to the running apps among `target` (never to suspended ones), each as its
    /// app chooses (`AppSpec.memoryWarning`); the apps a warning reached.
    func warn(_ target: AppTarget, waitForAcknowledgements: Bool) async -> [String]
    /// Writes the app's anonymous memory out to swap (freeze-dry), if it is still the run `pid`
    /// names, in `expectedState`.
    func pageOut(_ name: String, pid: Int32, expectedState: LifecycleState) async throws(SupervisorError) -> PageOutResult
    /// Sends the app an app-defined command and returns its answer.
    func command(_ name: String, _ text: String) async throws(SupervisorError) -> String

    // MARK: The log

    /// Seconds on the log's clock.
    func now() async -> Double
    /// Appends an event to the device's log.
    func record(_ event: SupervisorEvent) async

    // MARK: Pressure

    /// Every change of the merged pressure level from now on (finished when the device does not
    /// watch pressure).
    func pressureEvents() -> AsyncStream<PressureEvent>
    /// Every wake of the pressure monitor from now on: each kernel event, each poll.
    func pressureWakes() -> AsyncStream<PressureWake>
    /// The merged pressure level now (nil when pressure is not watched).
    var pressureLevel: PressureLevel? { get }
    /// The pressure sources in use.
    var pressureSources: [PressureSourceStatus] { get async }
    /// The thresholds pressure is judged by (the one judgement of memory holds readings against
    /// them), and the monitor's poll interval.
    var pressureConfiguration: PressureConfiguration { get }

    // MARK: Memory

    /// The device's memory now: its budget, what is used of it and what is available.
    func memoryStatus() async throws(MemoryStatusError) -> MemoryStatus
    /// The device's memory that belongs to no running app (nil when it cannot be told).
    func memoryOutsideApps() async -> UInt64?
    /// How many processes the kernel's OOM killer has killed in the device (nil when it cannot
    /// be told).
    func kernelOOMKills() async -> UInt64?
    /// The machine's swap, in bytes (0: none): freeze-dry writes to it.
    func swapTotalBytes() async -> Result<UInt64, SystemCallError>

    // MARK: The kernel's OOM killer

    /// Holds the kernel's OOM killer of the device (`KernelOOMHold`): a task at the limit then
    /// waits for the policy's decision. The memory cgroup held, or why it cannot be.
    func holdKernelOOMKiller() async -> Result<String, KernelOOMHold.Unavailable>
    /// Holds it again (`true`) or lets it act (`false`), once held; the error, if any.
    func setKernelOOMKillerHeld(_ held: Bool) async -> SystemCallError?
    /// Whether a task of the device waits at its limit (with the killer held).
    func isUnderOOM() async throws(KernelOOMHold.ReadFailure) -> Bool
}

/// What runs beside the supervisor's core and decides: memory warnings on pressure, jetsam.
/// Started with the supervisor, cancelled (and awaited) first thing at its shutdown.
public protocol SupervisorPolicy: Sendable {
    /// Whether the supervisor must watch memory pressure for it (`pressureEvents()`).
    var watchesPressure: Bool { get }
    /// Runs until cancelled, on the device it is given.
    func run(_ device: any SupervisedDevice) async
}

/// Memory warnings to every running app whenever pressure reaches warning (`--warn-on-pressure`).
public struct WarnOnPressure: SupervisorPolicy {
    public init() {}
    public var watchesPressure: Bool { true }
    public func run(_ device: any SupervisedDevice) async {
        for await e in device.pressureEvents() where e.level >= .warning {
            _ = await device.warn(.all, waitForAcknowledgements: true)
        }
    }
}

/// What a kill did, at once (the exit comes later: `waitForExit`).
public struct KillReceipt: Sendable, Hashable {
    public var app: String
    public var pid: Int32
    /// Monotonic seconds when SIGKILL was sent.
    public var signalledAt: Double
    /// Whether process_mrelease freed its memory at once (false: the kernel lacks it, or the
    /// process was already gone; its memory comes back as it exits).
    public var memoryReleased: Bool
    /// Other processes of the app (helpers, children) the SIGKILL reached with it.
    public var othersKilled: Int = 0
    /// The app's footprint, read from its memory cgroup just before the SIGKILL: what the kill
    /// gives back once the app's processes are gone (nil without an app cgroup).
    public var chargedBytes: UInt64?

    public init(app: String, pid: Int32, signalledAt: Double, memoryReleased: Bool, othersKilled: Int = 0, chargedBytes: UInt64? = nil) {
        self.app = app
        self.pid = pid
        self.signalledAt = signalledAt
        self.memoryReleased = memoryReleased
        self.othersKilled = othersKilled
        self.chargedBytes = chargedBytes
    }
}

/// What a page-out (freeze-dry) did.
public struct PageOutResult: Sendable, Hashable {
    /// Address space advised (the anonymous regions' sizes).
    public var advisedBytes: UInt64
    /// Its swapped pages before and after (smaps_rollup `Swap`), and resident before and after.
    public var swappedBefore: UInt64
    public var swappedAfter: UInt64
    public var residentBefore: UInt64
    public var residentAfter: UInt64
    /// Bytes written out to swap by this page-out.
    public var writtenBytes: UInt64 { swappedAfter &- min(swappedBefore, swappedAfter) }

    public init(advisedBytes: UInt64, swappedBefore: UInt64, swappedAfter: UInt64, residentBefore: UInt64, residentAfter: UInt64) {
        self.advisedBytes = advisedBytes
        self.swappedBefore = swappedBefore
        self.swappedAfter = swappedAfter
        self.residentBefore = residentBefore
        self.residentAfter = residentAfter
    }
}
