import MemPressureLifecycle
import MemPressureLifecycleProtocol
import MemPressureMonitor
import MemPressureSystem
import MemPressureValues
import Synchronization

/// Android's low memory killer daemon, emulated as a rival policy for the benchmarks: lmkd's
/// PSI-mode algorithm ("new strategy") run on this project's device, with every place where the
/// device differs from an Android phone mapped here, and said.
///
/// Written from lmkd's documentation and source, cited by file, function and property, never
/// copied:
/// - AOSP `platform/system/memory/lmkd`, `lmkd.cpp`, as read at the mirror
///   `msft-mirror-aosp/platform.system.memory.lmkd`, commit
///   `498e3128085bb9941a55e34df40a3d7e90e0d600` (functions named below), and `statslog.h`
///   (`enum kill_reasons`);
/// - lmkd's `README.md` ("Android Properties": the `ro.lmk.*` properties and their defaults,
///   as updated in 2025: `kill_timeout_ms` 100, `swap_free_low_percentage` 10);
/// - "Low memory killer daemon", https://source.android.com/docs/core/perf/lmkd (PSI monitors
///   instead of vmpressure; the kill strategy; the properties table).
///
/// ## The algorithm, step by step
///
/// 1. **Wake-up** (`init_psi_monitors`, `init_mp_psi`, `mainloop`, `call_handler`). lmkd
///    registers two PSI triggers on `/proc/pressure/memory`, each with a 1 s window
///    (`PSI_WINDOW_SIZE_MS`): a partial stall, `some ro.lmk.psi_partial_stall_ms` (70 ms), for
///    its medium level, and a complete stall, `full ro.lmk.psi_complete_stall_ms` (700 ms), for
///    its critical level (the low level is not registered in this mode). Each trigger event
///    calls `mp_event_psi`; after one, lmkd polls `mp_event_psi` itself every
///    `PSI_POLL_PERIOD_LONG_MS` (100 ms), or `PSI_POLL_PERIOD_SHORT_MS` (10 ms) while swap is
///    low or just after a kill, until `PSI_WINDOW_SIZE_MS` has passed since polling started
///    (`POLLING_START`), the window restarting at every event, every kill, and every look in
///    direct reclaim. Polling pauses while it waits for a victim to die (`POLLING_PAUSE`) and
///    resumes, with an immediate look, when the victim's pidfd says it died or
///    `kill_timeout_ms` passed (`kill_done_handler`, `POLLING_RESUME`, `resume_polling`).
///    *Here*: the device's `pressureWakes()`. A wake that is a kernel event (`wakeup ==
///    .event`) is lmkd's trigger event: its critical level when one of its events is a PSI
///    "full" trigger (as the monitor's `PSITrigger` words it, "full memory stall above …"), its
///    medium level for any other (a PSI "some" trigger, a cgroup v1 usage threshold, a
///    `memory.oom_control` event). The device's poll wakes are not lmkd's (lmkd has no timer
///    of its own but the polling above) and are ignored — unless the device has no source the
///    kernel wakes it for, when they are the looks (`events == 0`), and when it has no monitor
///    at all the emulation polls at its `pollInterval` itself. Both fallbacks are said once, in
///    the `wokenBy` note. `attach(to:)` sets the supervisor's PSI triggers to lmkd's
///    thresholds (and a 1 s window), so that the monitor wakes it where lmkd's monitors would.
/// 2. **The kill in progress** (`mp_event_psi`, `is_kill_pending`, `stop_wait_for_proc_kill`).
///    While the last victim has not died (lmkd polls its pidfd) and less than
///    `ro.lmk.kill_timeout_ms` has passed since the kill (or for ever with 0), a wake decides
///    nothing (`skipped_wakeups`). *Here*: `waitForExit` on the victim, for the kill timeout.
/// 3. **Readings** (`vmstat_parse`, `meminfo_parse`): refaults, file LRU and scan counters;
///    free memory; swap. A reading that fails ends the look without a decision, as lmkd's
///    `return` after "Failed to parse …" does (said once in the log, and when it works again).
/// 4. **After a kill** (`killing`, `cycle_after_kill`): the first look past the wait starts a
///    new thrashing window from the counters now.
/// 5. **Swap** (`swap_free_low_percentage`, `get_free_swap`): swap is low when the free swap —
///    the smaller of SwapFree and `easy_available × ro.lmk.swap_compression_ratio` (SwapFree
///    alone with ratio 0) — is under `ro.lmk.swap_free_low_percentage` percent of SwapTotal. No
///    swap is never low.
/// 6. **Reclaim** (`in_direct_reclaim`, `in_kswapd_reclaim`): direct reclaim when
///    `pgscan_direct` moved since the last look that saw reclaim, kswapd's when `pgscan_kswapd`
///    or `pgrefill` moved; neither, and refaults unchanged since the last look: lmkd bails out
///    without a decision ("Device is not thrashing and not reclaiming").
/// 7. **Thrashing** (`THRASHING_RESET_INTERVAL_MS`, `thrashing_limit`, `thrashing_limit_decay`):
///    refaults since the window began as a percentage of the file LRU at its beginning; every
///    second a new window begins, the last one's figure carried over halved once per window
///    passed (kept whole for one window when it was over the limit: a kill that found no
///    victim is retried). The limit, `ro.lmk.thrashing_limit` percent, is cut by
///    `ro.lmk.thrashing_limit_decay` percent after each kill for thrashing, and restored every
///    window.
/// 8. **Watermarks** (`calc_zone_watermarks`, `get_lowest_watermark`): the lowest of min, low
///    and high that free memory is under (none if above high); recomputed once a minute, and
///    before the first kill.
/// 9. **The decision** (`mp_event_psi`, first match; `statslog.h` `kill_reasons`), each with the
///    `min_score_adj` — the lowest `oom_score_adj` that may be killed — it gives:
///    - `PRESSURE_AFTER_KILL`, "min watermark is breached even after kill": the first look
///      after a kill still under the min watermark; `ro.lmk.pressure_after_kill_min_score` (0);
///    - `NOT_RESPONDING`, "device is not responding": a critical-level event; 0;
///    - `LOW_SWAP_AND_THRASHING`: swap low and thrashing over `thrashing_limit` percent; 201
///      (`PERCEPTIBLE_APP_ADJ + 1`) unless under the min watermark or thrashing at
///      `ro.lmk.thrashing_limit_critical` (3 × the limit), then 0;
///    - `LOW_MEM_AND_SWAP`: swap low and under the high watermark; 201, the same exceptions;
///    - `LOW_MEM_AND_SWAP_UTIL`: under high and swap utilisation over `ro.lmk.swap_util_max`
///      (off at its default, 100); 0;
///    - `LOW_MEM_AND_THRASHING`: under high and thrashing over the current limit (then cut);
///      201 unless thrashing critically, then 0;
///    - `DIRECT_RECL_AND_THRASHING`: direct reclaim and thrashing over the current limit; the same;
///    - `LOW_FILECACHE_AFTER_THRASHING`: after thrashing, the file cache under
///      `ro.lmk.filecache_min_kb` (off at its default, 0); 201;
///    - `LOW_MEM`, "min/low watermark is breached": under high with no other reason;
///      `ro.lmk.lowmem_min_oom_score` (701: cached apps only, at least 201).
///    `ro.lmk.stall_limit_critical` (100, so never at its default): memory's PSI full avg10 over
///    it lowers any reason's `min_score_adj` to 0.
/// 10. **The victim** (`find_and_kill_process`, `proc_adj_tail`, `proc_get_heaviest`,
///    `kill_one_process`): from `oom_score_adj` 1000 down to `min_score_adj`, the first level
///    with a process; within it, the one at the tail of lmkd's list for that level — the one
///    whose `oom_score_adj` was set longest ago (`register_oom_adj_proc` moves a process to the
///    head of its level's list each time ActivityManager sets it) — or, with
///    `ro.lmk.kill_heaviest_task`, or at any level at or below 200 (`PERCEPTIBLE_APP_ADJ`:
///    "choose the heaviest one to hopefully minimize the number of victims"), the one with the
///    most resident memory. A kill that fails takes the next one of the level. The foreground
///    app (0) is taken only when `min_score_adj` is 0 — and then it is, as lmkd does.
/// 11. **The kill** (`kill_one_process`, `start_wait_for_proc_kill`): SIGKILL, then the wait of
///    step 2. lmkd does not hold the kernel's OOM killer, and neither does this.
///
/// ## The device, mapped
///
/// - *lmkd's processes* are apps: an app's `oom_score_adj` is `AppView.oomScoreAdj`, which the
///   supervisor writes to all its processes from its state (`OOMScoreBands`: active 0, inactive
///   100, background-running low-memory 300, suspended low-memory 500, background-running
///   high-memory 700, suspended high-memory 900), as ActivityManager registers each process
///   with lmkd (`LMK_PROCPRIO`). An app without one (the supervisor sets none, or not yet for
///   this run) is a process never registered: lmkd does not see it. `attach(to:)` turns the
///   bands on if a configuration had them off. The kill is the app's, all of its processes
///   (`device.kill`, reason `vm-pageshortage`, the only reason of memory shortage there is),
///   where lmkd kills one process. Apps dying or not running are not candidates.
/// - *"Set longest ago"*: the emulation notes when each app's value was set, from the views it
///   sees (`apps()` at each decision, and every footprint reading, `samples()`): at its state
///   change (`now − secondsInState`) when the value came with one, at the reading that showed
///   it when the value changed without one (an app crossing the high-memory line), unchanged
///   while the value stays (ActivityManager sends nothing then). Ties go to the app registered
///   first.
/// - *Resident memory* for the heaviest is the app's latest reading (`residentBytes`), not a
///   fresh `/proc/PID/statm` per process.
/// - *Free memory* (`nr_free_pages`, less `nr_free_cma`) is the device's available memory,
///   `budget − working set` (`memoryStatus()`): for a memory cgroup its limit less usage less
///   inactive file pages, for the machine MemAvailable. It counts inactive page cache as free,
///   which lmkd's `MemFree` does not (lmkd's `easy_available` does): the emulation sees more
///   free than lmkd would on a machine of that size, and acts later. No CMA here.
/// - *Watermarks* (`LmkdWatermarkSource`): by default the machine's own — `calc_zone_watermarks`
///   over `procRoot/zoneinfo` — as a share of its MemTotal, applied to the device's budget, and
///   re-read once a minute as lmkd does; or fixed shares of the budget.
/// - *Reclaim*: the counters of step 6 from the same file as the refaults (below). A memory
///   cgroup has no kswapd, and its limit reclaim is not counted in `/proc/vmstat`; so the
///   device's own state counts too: free under the low watermark is kswapd's reclaim (the
///   kernel wakes kswapd there), under min direct reclaim (an allocation under min reclaims
///   itself).
/// - *Refaults and file LRU*: from the device's memory cgroup when it is a cgroup v2 one whose
///   `memory.stat` counts them (`workingset_refault_file`, `inactive_file`, `active_file`,
///   `pgscan_kswapd`, `pgscan_direct`, `pgrefill`): the cgroup the device's pressure
///   configuration names (`pressureConfiguration.cgroup`). Otherwise — the whole machine, a
///   cgroup v1 device (its `memory.stat` has no refaults) — the machine's `procRoot/vmstat`,
///   which counts every process's refaults, the device's among them. Which one is said once.
/// - *Swap*: SwapTotal is the device's `swapTotalBytes()`; SwapFree, and the anonymous memory of
///   `calc_swap_utilization`, the machine's `procRoot/meminfo` (a cgroup's own swap limit is
///   not seen); `easy_available` is the device's available memory.
/// - *PSI for `stall_limit_critical`*: the device cgroup's `memory.pressure` (cgroup v2), else
///   the machine's; read only when the limit is under 100 (avg10 never exceeds 100).
/// - *Log*: every kill is a `.policy(.kill)` record (policy "lmkd", its reason in words);
///   `kills` keeps them typed, with the figures lmkd decided on.
///
/// ## Not emulated
///
/// - The old strategy (`mp_event_common`: vmpressure levels with `ro.lmk.low/medium/critical`,
///   or `ro.lmk.use_minfree_levels` with ActivityManager's minfree table, `LMK_TARGET`): lmkd
///   uses it only when configured to and, since it relies on cgroup v1 memcg attributes, not on
///   cgroup v2 at all; the PSI strategy is lmkd's default.
/// - `DIRECT_RECL_STUCK` (`ro.lmk.direct_reclaim_threshold_ms`): needs lmkd's BPF memevents of
///   direct reclaim; lmkd itself turns it off without them (and it is 0 by default).
/// - lmkd's per-app memcg soft limits (`ro.config.per_app_memcg`, low-RAM devices), its
///   watchdog, the process reaper thread (`process_mrelease` is the device's own), vendor hooks
///   (`lmkd_free_memory_before_kill_hook`), and ActivityManager's reaction to a kill.
public final class LmkdEmulation: SupervisorPolicy {
    public let configuration: LmkdConfiguration
    private struct Recorded {
        var kills: [LmkdKill] = []
        var killSubscribers: [AsyncStream<LmkdKill>.Continuation] = []
        var lookSubscribers: [AsyncStream<LmkdLook>.Continuation] = []
    }
    private let recorded = Mutex(Recorded())

    /// The most kills `kills` keeps (the newest).
    public static let killLimit = 100_000

    public init(configuration: LmkdConfiguration = LmkdConfiguration()) {
        self.configuration = configuration
    }

    /// It watches pressure: the supervisor starts its monitor for it.
    public var watchesPressure: Bool { true }

    /// Adds the emulation to a supervisor's configuration: as a policy; with the pressure
    /// monitor's PSI triggers at lmkd's thresholds (`some psiPartialStallMilliseconds`, `full
    /// psiCompleteStallMilliseconds`, a 1 s window; a threshold of 0, which lmkd does not
    /// register, leaves the monitor's); and with the OOM score bands on, so that every app has
    /// an `oom_score_adj` for it to read. It does not hold the kernel's OOM killer.
    public func attach(to c: inout SupervisorConfiguration) {
        c.policies.append(self)
        var pressure = c.pressure ?? PressureConfiguration()
        if configuration.psiPartialStallMilliseconds > 0 {
            pressure.psiWarningStallMicroseconds = configuration.psiPartialStallMilliseconds * 1000
        }
        if configuration.psiCompleteStallMilliseconds > 0 {
            pressure.psiCriticalStallMicroseconds = configuration.psiCompleteStallMilliseconds * 1000
        }
        pressure.psiWindowMicroseconds = LmkdConstants.psiWindowMilliseconds * 1000
        c.pressure = pressure
        if c.oomScoreBands == nil { c.oomScoreBands = OOMScoreBands() }
    }

    /// Its kills so far, oldest first (at most `killLimit`, the newest).
    public var kills: [LmkdKill] { recorded.withLock { $0.kills } }

    /// Every kill from now on.
    public func killUpdates() -> AsyncStream<LmkdKill> {
        let (stream, continuation) = AsyncStream<LmkdKill>.makeStream(bufferingPolicy: .bufferingNewest(1000))
        recorded.withLock { $0.killSubscribers.append(continuation) }
        return stream
    }

    /// Every look (each call of its `mp_event_psi`) from now on, with what came of it.
    public func lookUpdates() -> AsyncStream<LmkdLook> {
        let (stream, continuation) = AsyncStream<LmkdLook>.makeStream(bufferingPolicy: .bufferingNewest(10_000))
        recorded.withLock { $0.lookSubscribers.append(continuation) }
        return stream
    }

    func add(_ kill: LmkdKill) {
        let subscribers = recorded.withLock { r in
            r.kills.append(kill)
            if r.kills.count > Self.killLimit { r.kills.removeFirst(r.kills.count - Self.killLimit) }
            return r.killSubscribers
        }
        for s in subscribers { s.yield(kill) }
    }

    func publish(_ look: LmkdLook) {
        for s in recorded.withLock({ $0.lookSubscribers }) { s.yield(look) }
    }

    /// Runs until cancelled: lmkd's `mainloop` on the device.
    public func run(_ device: any SupervisedDevice) async {
        let wakes = device.pressureWakes()
        let samples = await device.samples()
        let (inputs, input) = AsyncStream<LmkdInput>.makeStream()
        let engine = LmkdEngine(configuration: configuration, device: device, emulation: self, input: input)
        await engine.start(sources: await device.pressureSources)
        await withTaskGroup(of: Void.self) { group in
            group.addTask {
                for await wake in wakes { input.yield(.wake(wake)) }
                input.yield(.wakesEnded)
            }
            group.addTask {
                for await view in samples { input.yield(.sample(view)) }
            }
            // One input at a time, as lmkd's single-threaded loop handles one epoll event at a
            // time. Ends when the task is cancelled.
            for await i in inputs {
                if Task.isCancelled { break }
                await engine.handle(i)
            }
            group.cancelAll()
        }
        input.finish()
        await engine.finish()
        let subscribers = recorded.withLock { r in
            defer {
                r.killSubscribers.removeAll()
                r.lookSubscribers.removeAll()
            }
            return (r.killSubscribers, r.lookSubscribers)
        }
        for s in subscribers.0 { s.finish() }
        for s in subscribers.1 { s.finish() }
    }
}

/// lmkd's properties (`update_props`), with lmkd's defaults for a device that is not low-RAM
/// (`ro.config.low_ram` false; `lowRAMDevice` has those of one). Out-of-range values are
/// clamped as lmkd clamps them, not refused. A scenario's section decodes into this, every field
/// optional.
public struct LmkdConfiguration: Sendable, Hashable, Codable {
    /// `ro.lmk.kill_timeout_ms`: after a kill, no other until the victim died or this many
    /// milliseconds passed; 0 waits for its death however long it takes. Default 100.
    public var killTimeoutMilliseconds = 100
    /// `ro.lmk.kill_heaviest_task`: the heaviest of a level instead of its tail. Default false.
    public var killHeaviestTask = false
    /// `ro.lmk.swap_free_low_percentage` (`DEF_LOW_SWAP`): free swap under this percentage of
    /// total swap is low. Default 10 (0 to 100).
    public var swapFreeLowPercentage = 10
    /// `ro.lmk.thrashing_limit` (`DEF_THRASHING`; 30 low-RAM): refaults as a percentage of the
    /// file LRU that count as thrashing. Default 100.
    public var thrashingLimit = 100
    /// `ro.lmk.thrashing_limit_decay` (`DEF_THRASHING_DECAY`; 50 low-RAM): how much, in percent,
    /// the limit is cut after a kill for thrashing. Default 10.
    public var thrashingLimitDecay = 10
    /// `ro.lmk.thrashing_limit_critical`: thrashing at which perceptible apps may be killed; nil
    /// is lmkd's default, 3 × `thrashingLimit`.
    public var thrashingLimitCritical: Int?
    /// `ro.lmk.psi_partial_stall_ms` (`DEF_PARTIAL_STALL`; 200 low-RAM): the "some" trigger.
    /// Default 70.
    public var psiPartialStallMilliseconds = 70
    /// `ro.lmk.psi_complete_stall_ms` (`DEF_COMPLETE_STALL`): the "full" trigger. Default 700.
    public var psiCompleteStallMilliseconds = 700
    /// `ro.lmk.swap_util_max`: swap utilisation (percent) over which, under the high watermark,
    /// an app is killed; 100 turns it off. Default 100.
    public var swapUtilMax = 100
    /// `ro.lmk.filecache_min_kb`: file cache under this after thrashing keeps killing; 0 turns
    /// it off. Default 0.
    public var filecacheMinKilobytes: Int64 = 0
    /// `ro.lmk.stall_limit_critical`: PSI full avg10 (percent) over which perceptible apps may be
    /// killed; 100 turns it off. Default 100.
    public var stallLimitCritical = 100
    /// `ro.lmk.swap_compression_ratio` (`DEF_SWAP_COMP_RATIO`): free swap counts at most this
    /// many times the easily available memory (zram takes its space from RAM); 0 counts SwapFree
    /// alone. Default 1.
    public var swapCompressionRatio = 1
    /// `ro.lmk.lowmem_min_oom_score` (`DEF_LOWMEM_MIN_SCORE`, `PREVIOUS_APP_ADJ + 1`): the lowest
    /// `oom_score_adj` a plain low-memory kill takes; at least 201. Default 701.
    public var lowmemMinOomScore = 701
    /// `ro.lmk.pressure_after_kill_min_score`: the lowest `oom_score_adj` taken when memory is
    /// still under the min watermark right after a kill. Default 0.
    public var pressureAfterKillMinScore = 0
    /// Where the zone watermarks come from (the device has no zones of its own).
    public var watermarks: LmkdWatermarkSource = .machineZoneinfo

    public init() {}

    /// lmkd's defaults on a low-RAM device (`ro.config.low_ram` true): `DEF_THRASHING_LOWRAM`,
    /// `DEF_THRASHING_DECAY_LOWRAM`, `DEF_PARTIAL_STALL_LOWRAM`.
    public static var lowRAMDevice: LmkdConfiguration {
        var c = LmkdConfiguration()
        c.thrashingLimit = 30
        c.thrashingLimitDecay = 50
        c.psiPartialStallMilliseconds = 200
        return c
    }

    /// The values as lmkd uses them: `update_props`' clamps.
    var effective: LmkdConfiguration {
        var c = self
        c.killTimeoutMilliseconds = max(0, killTimeoutMilliseconds)
        c.swapFreeLowPercentage = min(100, max(0, swapFreeLowPercentage))
        c.thrashingLimit = max(0, thrashingLimit)
        c.thrashingLimitDecay = min(100, max(0, thrashingLimitDecay))
        c.thrashingLimitCritical = max(0, thrashingLimitCritical ?? c.thrashingLimit * 3)
        c.swapUtilMax = min(100, max(0, swapUtilMax))
        c.lowmemMinOomScore = max(LmkdConstants.perceptibleAppAdj + 1, lowmemMinOomScore)
        return c
    }

    private enum CodingKeys: String, CodingKey, CaseIterable {
        case killTimeoutMilliseconds, killHeaviestTask, swapFreeLowPercentage, thrashingLimit, thrashingLimitDecay
        case thrashingLimitCritical, psiPartialStallMilliseconds, psiCompleteStallMilliseconds, swapUtilMax
        case filecacheMinKilobytes, stallLimitCritical, swapCompressionRatio, lowmemMinOomScore, pressureAfterKillMinScore
        case watermarks
    }

    /// Every key optional (lmkd's default where absent); an unknown key is refused, naming it.
    public init(from decoder: any Decoder) throws {
        try UnknownKeys.refuse(in: decoder, known: CodingKeys.self, what: "the lmkd section")
        let c = try decoder.container(keyedBy: CodingKeys.self)
        let d = LmkdConfiguration()
        killTimeoutMilliseconds = try c.decodeIfPresent(Int.self, forKey: .killTimeoutMilliseconds) ?? d.killTimeoutMilliseconds
        killHeaviestTask = try c.decodeIfPresent(Bool.self, forKey: .killHeaviestTask) ?? d.killHeaviestTask
        swapFreeLowPercentage = try c.decodeIfPresent(Int.self, forKey: .swapFreeLowPercentage) ?? d.swapFreeLowPercentage
        thrashingLimit = try c.decodeIfPresent(Int.self, forKey: .thrashingLimit) ?? d.thrashingLimit
        thrashingLimitDecay = try c.decodeIfPresent(Int.self, forKey: .thrashingLimitDecay) ?? d.thrashingLimitDecay
        thrashingLimitCritical = try c.decodeIfPresent(Int.self, forKey: .thrashingLimitCritical)
        psiPartialStallMilliseconds = try c.decodeIfPresent(Int.self, forKey: .psiPartialStallMilliseconds) ?? d.psiPartialStallMilliseconds
        psiCompleteStallMilliseconds = try c.decodeIfPresent(Int.self, forKey: .psiCompleteStallMilliseconds) ?? d.psiCompleteStallMilliseconds
        swapUtilMax = try c.decodeIfPresent(Int.self, forKey: .swapUtilMax) ?? d.swapUtilMax
        filecacheMinKilobytes = try c.decodeIfPresent(Int64.self, forKey: .filecacheMinKilobytes) ?? d.filecacheMinKilobytes
        stallLimitCritical = try c.decodeIfPresent(Int.self, forKey: .stallLimitCritical) ?? d.stallLimitCritical
        swapCompressionRatio = try c.decodeIfPresent(Int.self, forKey: .swapCompressionRatio) ?? d.swapCompressionRatio
        lowmemMinOomScore = try c.decodeIfPresent(Int.self, forKey: .lowmemMinOomScore) ?? d.lowmemMinOomScore
        pressureAfterKillMinScore = try c.decodeIfPresent(Int.self, forKey: .pressureAfterKillMinScore) ?? d.pressureAfterKillMinScore
        watermarks = try c.decodeIfPresent(LmkdWatermarkSource.self, forKey: .watermarks) ?? d.watermarks
    }
}

/// Where the emulation's zone watermarks come from: the device is a budget, not a machine with
/// zones.
public enum LmkdWatermarkSource: Sendable, Hashable, Codable {
    /// lmkd's own figure (`calc_zone_watermarks` over `procRoot/zoneinfo`: per populated zone
    /// its largest lowmem protection plus its min, low, high watermark) as a share of the
    /// machine's MemTotal, applied to the device's budget; re-read once a minute and before the
    /// first kill, as lmkd re-reads zoneinfo. On the machine itself (no budget) it is lmkd's
    /// figure exactly.
    case machineZoneinfo
    /// Fixed shares of the budget (each from 0 to 1, min ≤ low ≤ high).
    case shareOfBudget(min: Double, low: Double, high: Double)
}

/// lmkd's zone watermarks (`enum zone_watermark`), lowest first: which one free memory is
/// under (`get_lowest_watermark`), `none` when it is above high.
public enum LmkdWatermark: Int, Sendable, Hashable, Codable, Comparable, CustomStringConvertible {
    case min = 0
    case low
    case high
    case none

    public static func < (a: LmkdWatermark, b: LmkdWatermark) -> Bool { a.rawValue < b.rawValue }

    public var description: String {
        switch self {
        case .min: "min"
        case .low: "low"
        case .high: "high"
        case .none: "none"
        }
    }
}

/// The watermarks in bytes of the device's budget.
public struct LmkdWatermarkLevels: Sendable, Hashable, Codable {
    public var minBytes: UInt64
    public var lowBytes: UInt64
    public var highBytes: UInt64

    public init(minBytes: UInt64, lowBytes: UInt64, highBytes: UInt64) {
        self.minBytes = minBytes
        self.lowBytes = lowBytes
        self.highBytes = highBytes
    }

    /// `get_lowest_watermark`: the lowest one `freeBytes` is under.
    public func breached(by freeBytes: UInt64) -> LmkdWatermark {
        if freeBytes < minBytes { return .min }
        if freeBytes < lowBytes { return .low }
        if freeBytes < highBytes { return .high }
        return .none
    }
}

/// Why lmkd kills, as `statslog.h`'s `enum kill_reasons` names it (`DIRECT_RECL_STUCK` is not
/// emulated: see `LmkdEmulation`).
public enum LmkdKillReason: String, Sendable, Hashable, Codable, CaseIterable, CustomStringConvertible {
    case pressureAfterKill = "PRESSURE_AFTER_KILL"
    case notResponding = "NOT_RESPONDING"
    case lowSwapAndThrashing = "LOW_SWAP_AND_THRASHING"
    case lowMemAndSwap = "LOW_MEM_AND_SWAP"
    case lowMemAndThrashing = "LOW_MEM_AND_THRASHING"
    case directReclaimAndThrashing = "DIRECT_RECL_AND_THRASHING"
    case lowMemAndSwapUtil = "LOW_MEM_AND_SWAP_UTIL"
    case lowFilecacheAfterThrashing = "LOW_FILECACHE_AFTER_THRASHING"
    case lowMem = "LOW_MEM"

    public var description: String { rawValue }
}

/// One kill, with what lmkd decided it on (what its `killinfo_log` and `kill_stat` carry).
public struct LmkdKill: Sendable, Hashable, Codable {
    /// Seconds on the device's log clock (`SupervisedDevice.now()`), and monotonic seconds
    /// when it was signalled (`KillReceipt.signalledAt`).
    public var time: Double
    public var signalledAt: Double
    public var app: String
    public var pid: Int32
    public var generation: Int
    public var state: LifecycleState
    /// The victim's `oom_score_adj`, and the lowest one this kill could take.
    public var oomScoreAdj: Int32
    public var minScoreAdj: Int32
    public var reason: LmkdKillReason
    /// lmkd's words for it (`kill_desc`): "low watermark is breached and thrashing (250%)".
    public var detail: String
    /// Whether the look was a trigger event or a poll (lmkd's `Event`, `Polling`), its wakes
    /// since the last event and those skipped while a kill was pending (`struct wakeup_info`).
    public var wakeup: PressureWakeup
    public var wakeupsSinceEvent: Int
    public var skippedWakeups: Int
    /// The device's free memory and budget, the watermarks and which was breached.
    public var freeBytes: UInt64
    public var budgetBytes: UInt64
    public var watermarks: LmkdWatermarkLevels
    public var breachedWatermark: LmkdWatermark
    /// Thrashing (refaults as a percentage of the file LRU) now, and the most since the last kill.
    public var thrashingPercent: Int64
    public var maxThrashingPercent: Int64
    /// Free swap as lmkd counts it (`get_free_swap`) and the total (0: no swap).
    public var swapFreeBytes: UInt64
    public var swapTotalBytes: UInt64
    /// The victim's latest reading (lmkd logs its rss and swap) and what the kill charged it
    /// (`KillReceipt.chargedBytes`).
    public var residentBytes: UInt64?
    public var footprintBytes: UInt64?
    public var chargedBytes: UInt64?
    /// Where the refaults and reclaim counters were read: the device cgroup's `memory.stat`, or
    /// the machine's `/proc/vmstat`.
    public var countersFile: String
}

/// One look of the emulation (one call of lmkd's `mp_event_psi`) and what came of it.
public struct LmkdLook: Sendable, Hashable {
    /// Monotonic seconds.
    public var time: Double
    /// A trigger event or a poll.
    public var wakeup: PressureWakeup
    public var outcome: Outcome

    public enum Outcome: Sendable, Hashable {
        /// The last victim has not died and the kill timeout has not passed: nothing decided
        /// (`skipped_wakeups`).
        case killPending(app: String, pid: Int32)
        /// Neither reclaiming nor refaulting since the last look: lmkd's early bail-out.
        case quiet
        /// Looked, and no reason to kill.
        case noKill(freeBytes: UInt64, watermark: LmkdWatermark, thrashingPercent: Int64)
        /// A reason to kill, and no app at or above its `min_score_adj` to take.
        case nothingToKill(LmkdKillReason, minScoreAdj: Int32)
        case killed(LmkdKill)
        /// A reading failed (what failed): nothing decided.
        case readingFailed(String)
    }
}

/// lmkd's constants (lmkd.cpp).
enum LmkdConstants {
    /// `PERCEPTIBLE_APP_ADJ`.
    static let perceptibleAppAdj = 200
    /// `OOM_SCORE_ADJ_MAX`.
    static let oomScoreAdjMax = 1000
    /// `PSI_WINDOW_SIZE_MS`: the triggers' window, and how long lmkd polls after an event.
    static let psiWindowMilliseconds = 1000
    /// `PSI_POLL_PERIOD_SHORT_MS`, `PSI_POLL_PERIOD_LONG_MS`.
    static let pollPeriodShort = 0.010
    static let pollPeriodLong = 0.100
    /// `THRASHING_RESET_INTERVAL_MS`.
    static let thrashingResetMilliseconds: Int64 = 1000
    /// How often zoneinfo is read again (lmkd: "Refresh watermarks once per min").
    static let watermarkRefreshSeconds = 60.0
}
