import MemPressureLifecycle
import MemPressureLifecycleProtocol
import MemPressureMonitor
import MemPressureSystem
import MemPressureValues

/// What lmkd's loop wakes for (`mainloop`'s epoll events), as the emulation's one serial loop
/// receives it.
enum LmkdInput: Sendable {
    /// A wake of the device's pressure monitor.
    case wake(PressureWake)
    /// lmkd's own polling timer (the latest armed one only counts).
    case poll(generation: Int)
    /// The emulation's own poll, on a device without a pressure monitor.
    case fallbackPoll
    /// A footprint reading (for when each app's `oom_score_adj` was set).
    case sample(AppView)
    /// The wait for the last victim ended: it exited, or the kill timeout passed.
    case killWaitEnded(pid: Int32, exited: Bool)
    /// The device's wakes ended.
    case wakesEnded
}

/// lmkd's levels in PSI mode (`enum vmpressure_level`; the low level is not registered there).
enum LmkdLevel: Sendable, Hashable {
    /// The partial-stall trigger, `psi_partial_stall_ms`.
    case medium
    /// The complete-stall trigger, `psi_complete_stall_ms`.
    case critical
}

/// What a look asks of the polling (`enum polling_update`; `POLLING_RESUME` comes from a kill's
/// end, not from a look).
enum LmkdPollingUpdate: Sendable {
    case doNotChange, start, pause
}

/// The reclaim state a look finds (`enum reclaim_state`).
enum LmkdReclaim: Sendable {
    case none, kswapd, direct
}

/// A reason to kill, as `mp_event_psi` decides it.
struct LmkdDecision: Sendable {
    var reason: LmkdKillReason
    var detail: String
    var minScoreAdj: Int
    var cutThrashingLimit = false
}

/// lmkd on the device: `mainloop`'s polling and kill wait, `mp_event_psi`'s state and decision,
/// `find_and_kill_process`. See `LmkdEmulation` for the algorithm and every mapping.
actor LmkdEngine {
    let configuration: LmkdConfiguration
    let device: any SupervisedDevice
    unowned let emulation: LmkdEmulation
    let input: AsyncStream<LmkdInput>.Continuation
    let procRoot: String
    /// Where the refault and reclaim counters are read (said in every kill).
    let counters: LmkdVMCounters.Source
    /// The PSI file `stall_limit_critical` is held against.
    let pressureFile: String
    var buffer = ReadBuffer(capacity: 64 * 1024)

    /// How it is woken (see `start`).
    var devicePollsAreLooks = false
    var hasMonitor = true

    // `mp_event_psi`'s statics, as lmkd starts them (zero).
    var initWorkingsetRefault: Int64 = 0
    var previousWorkingsetRefault: Int64 = 0
    var baseFileLRU: Int64 = 0
    var initPgscanKswapd: Int64 = 0
    var initPgscanDirect: Int64 = 0
    var initPgrefill: Int64 = 0
    var killing = false
    var thrashingLimit: Int64
    var watermarkShares: (min: Double, low: Double, high: Double)?
    var watermarkUpdate: Double = 0
    /// Nil until the first look: lmkd's zero `thrashing_reset_tm`, which makes its first look
    /// start a window.
    var thrashingResetTime: Double?
    var previousThrashGrowth: Int64 = 0
    var checkFilecache = false
    var maxThrashing: Int64 = 0
    var firstKill = true
    // `struct wakeup_info`.
    var wakeupsSinceEvent = 0
    var skippedWakeups = 0

    // The kill wait (`last_kill_pid_or_fd`, `last_kill_tm`).
    var pendingKill: (app: String, pid: Int32, at: Double)?
    var killWait: Task<Void, Never>?

    // The polling (`struct polling_params`).
    var polling: (start: Double, level: LmkdLevel)?
    var pausedLevel: LmkdLevel?
    var pollInterval = LmkdConstants.pollPeriodLong
    var lastPoll: Double = 0
    var timer: Task<Void, Never>?
    var timerGeneration = 0
    var fallbackTimer: Task<Void, Never>?

    /// When each running app's `oom_score_adj` was set, as lmkd's per-level lists order them.
    struct AdjEntry {
        var generation: Int
        var adj: Int32
        var state: LifecycleState
        /// Seconds on the device's log clock.
        var setAt: Double
    }
    var adjSet: [String: AdjEntry] = [:]
    /// Readings failing now: said once when they start failing, once when they work again.
    var failing: [String: String] = [:]

    init(configuration: LmkdConfiguration, device: any SupervisedDevice, emulation: LmkdEmulation, input: AsyncStream<LmkdInput>.Continuation) {
        let c = configuration.effective
        self.configuration = c
        self.device = device
        self.emulation = emulation
        self.input = input
        let pressure = device.pressureConfiguration
        procRoot = pressure.procRoot
        counters = Self.counterSource(pressure)
        if let cgroup = pressure.cgroup, ProcFS.isFile("\(cgroup)/memory.pressure") {
            pressureFile = "\(cgroup)/memory.pressure"
        } else {
            pressureFile = "\(pressure.procRoot)/pressure/memory"
        }
        thrashingLimit = Int64(c.thrashingLimit)
    }

    /// The device cgroup's `memory.stat` when it counts refaults (cgroup v2), else the machine's
    /// `/proc/vmstat`.
    static func counterSource(_ pressure: PressureConfiguration) -> LmkdVMCounters.Source {
        let machine = LmkdVMCounters.Source.machine(path: "\(pressure.procRoot)/vmstat")
        guard let cgroup = pressure.cgroup else { return machine }
        let stat = "\(cgroup)/memory.stat"
        var buffer = ReadBuffer(capacity: 16 * 1024)
        do {
            try ProcFS.readFile(stat, into: &buffer)
        } catch {
            return machine  // no cgroup file to read: the machine's counters
        }
        let parsed = buffer.withBytes { LmkdVMCounters.parse($0, lruInBytes: true, pageSize: LmkdPage.size) }
        return parsed.hasRefaults ? .cgroup(path: stat) : machine
    }

    // MARK: The loop

    /// Says how it is woken, once: by the device's kernel events (lmkd's trigger events), else by
    /// its polls, else (no monitor) by its own.
    func start(sources: [PressureSourceStatus]) async {
        let inUse = sources.filter(\.available)
        let events = inUse.filter { $0.wakeup == .event }.map(\.name)
        let polled = inUse.filter { $0.wakeup != .event }.map(\.name)
        devicePollsAreLooks = events.isEmpty
        hasMonitor = !inUse.isEmpty
        let interval = events.isEmpty ? device.pressureConfiguration.pollInterval : LmkdConstants.pollPeriodLong
        await record(.note(.wokenBy(events: events, polled: events.isEmpty ? polled : [], pollInterval: interval)))
        if !hasMonitor { startFallbackPolling(every: interval) }
    }

    func handle(_ i: LmkdInput) async {
        switch i {
        case .wake(let wake):
            if wake.wakeup == .event {
                await call(level: Self.isCompleteStall(wake) ? .critical : .medium, events: true)
            } else if devicePollsAreLooks {
                await call(level: polling?.level ?? .medium, events: false)
            }
        case .poll(let generation):
            guard generation == timerGeneration, let p = polling else { return }
            await call(level: p.level, events: false)
        case .fallbackPoll:
            await call(level: polling?.level ?? .medium, events: false)
        case .sample(let view):
            observe(view, now: await device.now())
        case .killWaitEnded(let pid, _):
            // `kill_done_handler`, or the kill timeout in `mainloop`: stop waiting; polling,
            // paused for the wait, resumes with a look at once.
            guard let k = pendingKill, k.pid == pid else { return }
            stopWaitingForKill()
            guard let level = pausedLevel else { return }
            pausedLevel = nil
            polling = (monotonicSeconds(), level)
            pollInterval = LmkdConstants.pollPeriodShort
            await call(level: level, events: false)
        case .wakesEnded:
            // Ended by the device's shutdown (this task is then cancelled), or blind from now on.
            if hasMonitor, !Task.isCancelled { await record(.failure(.pressureStreamEnded)) }
        }
    }

    /// Whether a wake's events include a PSI "full" trigger, as the monitor's `PSITrigger` words
    /// it ("psi (…): full memory stall above N µs in W ms"): lmkd's critical level.
    static func isCompleteStall(_ wake: PressureWake) -> Bool {
        wake.events.contains { $0.contains("full memory stall") }
    }

    /// `call_handler`: a look, then the polling it asks for.
    func call(level: LmkdLevel, events: Bool) async {
        let update = await look(level: level, events: events)
        let now = monotonicSeconds()
        switch update {
        case .start:
            polling = (now, level)
        case .pause:
            pausedLevel = level
            polling = nil
        case .doNotChange:
            if let p = polling, now - p.start > Double(LmkdConstants.psiWindowMilliseconds) / 1000 { polling = nil }
        }
        lastPoll = now
        armTimer()
    }

    /// The next poll, `pollInterval` after the last look, while polling.
    func armTimer() {
        timer?.cancel()
        timer = nil
        guard polling != nil else { return }
        timerGeneration += 1
        let generation = timerGeneration
        let delay = max(0, lastPoll + pollInterval - monotonicSeconds())
        timer = Task { [input] in
            do {
                try await Task.sleep(for: Seconds.duration(delay))
            } catch {
                return  // cancelled: re-armed, or stopped
            }
            input.yield(.poll(generation: generation))
        }
    }

    func startFallbackPolling(every interval: Double) {
        let seconds = max(LmkdConstants.pollPeriodShort, interval)
        fallbackTimer = Task { [input] in
            while true {
                do {
                    try await Task.sleep(for: Seconds.duration(seconds))
                } catch {
                    return  // cancelled: stopped
                }
                input.yield(.fallbackPoll)
            }
        }
    }

    /// Stops: no look, no kill after this.
    func finish() {
        timer?.cancel()
        fallbackTimer?.cancel()
        killWait?.cancel()
        timer = nil
        fallbackTimer = nil
        killWait = nil
    }

    // MARK: The kill wait

    /// `start_wait_for_proc_kill`: waits on the victim's exit for the kill timeout (for ever with
    /// 0), then says so to the loop.
    func startWaitingForKill(app: String, pid: Int32, at time: Double) {
        pendingKill = (app, pid, time)
        killWait?.cancel()
        let timeout = Double(configuration.killTimeoutMilliseconds) / 1000
        killWait = Task { [device, input] in
            var exited = false
            if timeout > 0 {
                guard let e = await Self.waitForExit(device, app, pid: pid, timeout: timeout) else { return }
                exited = e
            } else {
                while !exited {
                    guard let e = await Self.waitForExit(device, app, pid: pid, timeout: 3600) else { return }
                    exited = e
                }
            }
            input.yield(.killWaitEnded(pid: pid, exited: exited))
        }
    }

    /// `device.waitForExit`, whose "not exited" comes once `timeout` has passed; should a device
    /// answer sooner, the rest of the timeout is waited here. Nil when cancelled.
    static func waitForExit(_ device: any SupervisedDevice, _ app: String, pid: Int32, timeout: Double) async -> Bool? {
        let start = monotonicSeconds()
        let exited = await device.waitForExit(app, pid: pid, timeout: timeout)
        if Task.isCancelled { return nil }
        let left = timeout - (monotonicSeconds() - start)
        if !exited, left > 0 {
            do {
                try await Task.sleep(for: Seconds.duration(left))
            } catch {
                return nil
            }
        }
        return exited
    }

    /// `stop_wait_for_proc_kill`.
    func stopWaitingForKill() {
        pendingKill = nil
        killWait?.cancel()
        killWait = nil
    }

    // MARK: mp_event_psi

    /// One look: lmkd's `mp_event_psi`, step by step (see `LmkdEmulation`).
    func look(level: LmkdLevel, events: Bool) async -> LmkdPollingUpdate {
        let now = monotonicSeconds()
        let wakeup: PressureWakeup = events ? .event : .poll
        // record_wakeup_time
        if events {
            wakeupsSinceEvent = 0
            skippedWakeups = 0
        } else {
            wakeupsSinceEvent += 1
        }

        // A kill in progress: nothing is decided until the victim died or the timeout passed.
        if let k = pendingKill {
            let timeout = configuration.killTimeoutMilliseconds
            if timeout == 0 || (now - k.at) * 1000 < Double(timeout) {
                skippedWakeups += 1
                publish(wakeup, .killPending(app: k.app, pid: k.pid))
                return .pause
            }
            stopWaitingForKill()
        }

        // Readings: refaults and reclaim counters, the device's memory, its swap.
        let vm: LmkdVMCounters
        switch readCounters() {
        case .success(let c):
            vm = c
            await readingWorks("counters")
        case .failure(let why):
            return await failedReading("counters", why, wakeup)
        }
        let status: MemoryStatus
        do {
            status = try await device.memoryStatus()
            await readingWorks("memory")
        } catch {
            return await failedReading("memory", "the device's memory: \(error)", wakeup)
        }
        let swapTotal: UInt64
        switch await device.swapTotalBytes() {
        case .success(let bytes):
            swapTotal = bytes
            await readingWorks("swap")
        case .failure(let error):
            return await failedReading("swap", "the machine's swap: \(error)", wakeup)
        }
        var meminfo: LmkdMemInfo?
        if swapTotal > 0 {
            switch readMemInfo() {
            case .success(let m):
                meminfo = m
                await readingWorks("meminfo")
            case .failure(let why):
                return await failedReading("meminfo", why, wakeup)
            }
        }

        // Reset states after a kill: a new thrashing window from now.
        var cycleAfterKill = false
        if killing {
            killing = false
            cycleAfterKill = true
            baseFileLRU = vm.fileLRUPages
            initWorkingsetRefault = vm.refaults
            thrashingResetTime = now
            previousThrashGrowth = 0
        }

        // Swap: `get_free_swap` against `swap_free_low_percentage` of the total.
        var freeSwap: UInt64 = 0
        if let meminfo {
            let swapFree = min(meminfo.swapFree ?? 0, swapTotal)
            let ratio = UInt64(max(0, configuration.swapCompressionRatio))
            freeSwap = ratio == 0 ? swapFree : min(swapFree, Self.multiplied(status.availableBytes, ratio))
        }
        let swapLowThreshold = Self.multiplied(swapTotal, UInt64(configuration.swapFreeLowPercentage)) / 100
        let swapIsLow = configuration.swapFreeLowPercentage > 0 && freeSwap < swapLowThreshold

        // The watermarks, scaled to the budget (read before reclaim: the device's own reclaim is
        // read from them).
        var levels: LmkdWatermarkLevels
        switch watermarkLevels(budget: status.budgetBytes, now: now, force: false) {
        case .success(let l):
            levels = l
            await readingWorks("watermarks")
        case .failure(let why):
            return await failedReading("watermarks", why, wakeup)
        }
        var wmark = levels.breached(by: status.availableBytes)

        // Reclaim: the counters, and the device under its own watermarks.
        let reclaim: LmkdReclaim
        if vm.pgscanDirect != initPgscanDirect || wmark == .min {
            initPgscanDirect = vm.pgscanDirect
            initPgscanKswapd = vm.pgscanKswapd
            initPgrefill = vm.pgrefill
            reclaim = .direct
        } else if vm.pgscanKswapd != initPgscanKswapd || vm.pgrefill != initPgrefill || wmark == .low {
            initPgscanKswapd = vm.pgscanKswapd
            initPgrefill = vm.pgrefill
            reclaim = .kswapd
        } else if vm.refaults == previousWorkingsetRefault {
            // Not thrashing and not reclaiming: bail out until these change.
            publish(wakeup, .quiet)
            return pollingAfterLook(events: events, reclaim: .none, swapIsLow: swapIsLow)
        } else {
            reclaim = .none
        }
        previousWorkingsetRefault = vm.refaults

        // Thrashing: refaults as a percentage of the file LRU, in windows of a second.
        var thrashing: Int64 = 0
        let sinceReset = thrashingResetTime.map { Int64(max(0, now - $0) * 1000) }
        if sinceReset == nil || sinceReset! > LmkdConstants.thrashingResetMilliseconds {
            previousThrashGrowth = Self.percent(vm.refaults - initWorkingsetRefault, of: baseFileLRU)
            let windows = sinceReset.map { $0 / LmkdConstants.thrashingResetMilliseconds } ?? Int64.max
            // Decayed unless over the limit in the one window just crossed (no victim was found).
            if windows > 1 || previousThrashGrowth < thrashingLimit {
                // A shift by 64 or more is undefined in C; lmkd's first look (its zero statics)
                // makes one. Halved that often, nothing is left.
                previousThrashGrowth = windows >= 63 ? 0 : previousThrashGrowth >> windows
            }
            baseFileLRU = vm.fileLRUPages
            initWorkingsetRefault = vm.refaults
            thrashingResetTime = now
            thrashingLimit = Int64(configuration.thrashingLimit)
        } else {
            thrashing = Self.percent(vm.refaults - initWorkingsetRefault, of: baseFileLRU)
        }
        thrashing = Self.saturatingAdd(thrashing, previousThrashGrowth)
        maxThrashing = max(maxThrashing, thrashing)

        // `stall_limit_critical`: PSI full avg10 (never over 100: read only below it).
        var criticalStall = false
        if configuration.stallLimitCritical < 100, let full = readFullStall() {
            criticalStall = full > Double(configuration.stallLimitCritical)
        }

        let figures = Figures(
            cycleAfterKill: cycleAfterKill, level: level, events: events, swapIsLow: swapIsLow, freeSwap: freeSwap,
            swapLowThreshold: swapLowThreshold, swapTotal: swapTotal, meminfo: meminfo, thrashing: thrashing, reclaim: reclaim,
            fileLRUPages: vm.fileLRUPages)
        var decision = decide(figures, wmark: wmark)
        if decision != nil, firstKill {
            // "Make sure watermarks are correct before the first kill."
            firstKill = false
            if case .success(let fresh) = watermarkLevels(budget: status.budgetBytes, now: now, force: true) {
                levels = fresh
                wmark = levels.breached(by: status.availableBytes)
                decision = decide(figures, wmark: wmark) ?? decision
            }
        }
        guard var d = decision else {
            publish(wakeup, .noKill(freeBytes: status.availableBytes, watermark: wmark, thrashingPercent: thrashing))
            return pollingAfterLook(events: events, reclaim: reclaim, swapIsLow: swapIsLow)
        }
        // Perceptible apps may be killed when the system is stalled.
        if criticalStall { d.minScoreAdj = 0 }
        let context = KillContext(
            wakeup: wakeup, time: now, status: status, levels: levels, wmark: wmark, thrashing: thrashing, freeSwap: freeSwap,
            swapTotal: swapTotal)
        if let kill = await findAndKill(d, context) {
            killing = true
            maxThrashing = 0
            if d.cutThrashingLimit {
                thrashingLimit = thrashingLimit * Int64(100 - configuration.thrashingLimitDecay) / 100
            }
            publish(wakeup, .killed(kill))
        } else {
            publish(wakeup, .nothingToKill(d.reason, minScoreAdj: Int32(clamping: d.minScoreAdj)))
        }
        return pollingAfterLook(events: events, reclaim: reclaim, swapIsLow: swapIsLow)
    }

    /// `no_kill:`: pause while waiting for a victim; poll after an event, a kill, or in direct
    /// reclaim; fast while swap is low or killing.
    func pollingAfterLook(events: Bool, reclaim: LmkdReclaim, swapIsLow: Bool) -> LmkdPollingUpdate {
        if pendingKill != nil { return .pause }
        pollInterval = swapIsLow || killing ? LmkdConstants.pollPeriodShort : LmkdConstants.pollPeriodLong
        return events || killing || reclaim == .direct ? .start : .doNotChange
    }

    /// What a decision rests on.
    struct Figures {
        var cycleAfterKill: Bool
        var level: LmkdLevel
        var events: Bool
        var swapIsLow: Bool
        var freeSwap: UInt64
        var swapLowThreshold: UInt64
        var swapTotal: UInt64
        var meminfo: LmkdMemInfo?
        var thrashing: Int64
        var reclaim: LmkdReclaim
        var fileLRUPages: Int64
    }

    /// `mp_event_psi`'s decision: the first reason that holds, with its `min_score_adj`.
    func decide(_ f: Figures, wmark: LmkdWatermark) -> LmkdDecision? {
        let perceptible = LmkdConstants.perceptibleAppAdj + 1
        let critical = Int64(configuration.thrashingLimitCritical ?? configuration.thrashingLimit * 3)
        let minOrLow = wmark < .low ? "min" : "low"
        let swapFigures = "\(f.freeSwap / 1024)kB < \(f.swapLowThreshold / 1024)kB"
        var d: LmkdDecision?
        if f.cycleAfterKill && wmark < .low {
            d = LmkdDecision(reason: .pressureAfterKill, detail: "min watermark is breached even after kill", minScoreAdj: configuration.pressureAfterKillMinScore)
        } else if f.level == .critical && f.events {
            d = LmkdDecision(reason: .notResponding, detail: "device is not responding", minScoreAdj: 0)
        } else if f.swapIsLow && f.thrashing > Int64(configuration.thrashingLimit) {
            let spare = wmark > .min && f.thrashing < critical
            d = LmkdDecision(
                reason: .lowSwapAndThrashing, detail: "device is low on swap (\(swapFigures)) and thrashing (\(f.thrashing)%)", minScoreAdj: spare ? perceptible : 0)
            checkFilecache = true
        } else if f.swapIsLow && wmark < .high {
            let spare = wmark > .min && f.thrashing < critical
            d = LmkdDecision(
                reason: .lowMemAndSwap, detail: "\(minOrLow) watermark is breached and swap is low (\(swapFigures))", minScoreAdj: spare ? perceptible : 0)
        } else if wmark < .high, configuration.swapUtilMax < 100, case let util = Self.swapUtilization(f), util > Int64(configuration.swapUtilMax) {
            d = LmkdDecision(
                reason: .lowMemAndSwapUtil, detail: "\(minOrLow) watermark is breached and swap utilization is high (\(util)% > \(configuration.swapUtilMax)%)",
                minScoreAdj: 0)
        } else if wmark < .high && f.thrashing > thrashingLimit {
            d = LmkdDecision(
                reason: .lowMemAndThrashing, detail: "\(minOrLow) watermark is breached and thrashing (\(f.thrashing)%)",
                minScoreAdj: f.thrashing < critical ? perceptible : 0, cutThrashingLimit: true)
            checkFilecache = true
        } else if f.reclaim == .direct && f.thrashing > thrashingLimit {
            d = LmkdDecision(
                reason: .directReclaimAndThrashing, detail: "device is in direct reclaim and thrashing (\(f.thrashing)%)",
                minScoreAdj: f.thrashing < critical ? perceptible : 0, cutThrashingLimit: true)
            checkFilecache = true
        } else if checkFilecache {
            let fileKB = f.fileLRUPages &* (LmkdPage.size / 1024)
            if fileKB < configuration.filecacheMinKilobytes {
                d = LmkdDecision(
                    reason: .lowFilecacheAfterThrashing, detail: "filecache is low (\(fileKB)kB < \(configuration.filecacheMinKilobytes)kB) after thrashing",
                    minScoreAdj: perceptible)
            } else {
                checkFilecache = false
            }
        }
        if d == nil && wmark < .high {
            d = LmkdDecision(reason: .lowMem, detail: "\(minOrLow) watermark is breached", minScoreAdj: configuration.lowmemMinOomScore)
        }
        return d
    }

    /// `calc_swap_utilization`: swap used as a percentage of what could be swapped.
    static func swapUtilization(_ f: Figures) -> Int64 {
        guard let m = f.meminfo else { return 0 }
        let used = f.swapTotal &- min(f.swapTotal, f.freeSwap)
        let swappable = (m.activeAnon ?? 0) &+ (m.inactiveAnon ?? 0) &+ (m.shmem ?? 0) &+ used
        guard swappable > 0 else { return 0 }
        return Int64(clamping: Self.multiplied(used, 100) / swappable)
    }

    // MARK: find_and_kill_process

    /// What a kill records besides the decision.
    struct KillContext {
        var wakeup: PressureWakeup
        var time: Double
        var status: MemoryStatus
        var levels: LmkdWatermarkLevels
        var wmark: LmkdWatermark
        var thrashing: Int64
        var freeSwap: UInt64
        var swapTotal: UInt64
    }

    /// From `oom_score_adj` 1000 down to `min_score_adj`: the first level with an app, its tail
    /// (or heaviest), the next of the level when a kill fails. Nil: nothing was killed.
    func findAndKill(_ d: LmkdDecision, _ context: KillContext) async -> LmkdKill? {
        let views = await device.apps()
        let now = await device.now()
        for v in views { observe(v, now: now) }
        var registered: [String: Int] = [:]
        for (i, v) in views.enumerated() where registered[v.name] == nil { registered[v.name] = i }
        let candidates = views.filter { v in
            guard v.pid != nil, !v.isDying, v.state != .notRunning, let adj = v.oomScoreAdj, adjSet[v.name] != nil else { return false }
            return Int(adj) >= d.minScoreAdj && Int(adj) <= LmkdConstants.oomScoreAdjMax
        }
        let adjs = Set(candidates.compactMap(\.oomScoreAdj)).sorted(by: >)
        for adj in adjs {
            let heaviest = configuration.killHeaviestTask || Int(adj) <= LmkdConstants.perceptibleAppAdj
            let level = candidates.filter { $0.oomScoreAdj == adj }.sorted { a, b in
                let setA = adjSet[a.name]?.setAt ?? 0, setB = adjSet[b.name]?.setAt ?? 0
                let orderA = registered[a.name] ?? 0, orderB = registered[b.name] ?? 0
                if heaviest {
                    // `proc_get_heaviest`: the most resident; of equals, the first from the head
                    // of the list (the newest).
                    let ra = a.latest?.residentBytes ?? 0, rb = b.latest?.residentBytes ?? 0
                    if ra != rb { return ra > rb }
                    return setA != setB ? setA > setB : orderA > orderB
                }
                // `proc_adj_tail`: set longest ago first; of equals, registered first.
                return setA != setB ? setA < setB : orderA < orderB
            }
            for v in level {
                if Task.isCancelled { return nil }
                if let kill = await kill(v, d, context) { return kill }
            }
        }
        return nil
    }

    /// `kill_one_process`: the app's kill through the device, recorded, then the wait. Nil when
    /// the device refused it: the app is no longer what the view showed (it exited, changed
    /// state or is already dying) — lmkd then drops the record and takes the next.
    func kill(_ v: AppView, _ d: LmkdDecision, _ context: KillContext) async -> LmkdKill? {
        guard let pid = v.pid, let adj = v.oomScoreAdj else { return nil }
        let receipt: KillReceipt
        do {
            receipt = try await device.kill(v.name, pid: pid, reason: .vmPageShortage, expectedState: v.state)
        } catch {
            return nil
        }
        startWaitingForKill(app: v.name, pid: pid, at: context.time)
        let kill = LmkdKill(
            time: await device.now(), signalledAt: receipt.signalledAt, app: v.name, pid: pid, generation: v.generation, state: v.state,
            oomScoreAdj: adj, minScoreAdj: Int32(clamping: d.minScoreAdj), reason: d.reason, detail: d.detail, wakeup: context.wakeup,
            wakeupsSinceEvent: wakeupsSinceEvent, skippedWakeups: skippedWakeups, freeBytes: context.status.availableBytes,
            budgetBytes: context.status.budgetBytes, watermarks: context.levels, breachedWatermark: context.wmark,
            thrashingPercent: context.thrashing, maxThrashingPercent: maxThrashing, swapFreeBytes: context.freeSwap,
            swapTotalBytes: context.swapTotal, residentBytes: v.latest?.residentBytes, footprintBytes: v.latest?.footprintBytes,
            chargedBytes: receipt.chargedBytes, countersFile: counters.path)
        emulation.add(kill)
        let record = KillRecord(
            reason: .vmPageShortage, rank: 1, policy: "lmkd", footprintBytes: v.latest?.footprintBytes ?? 0,
            reclaimedBytes: receipt.chargedBytes ?? 0,
            explanation: "lmkd \(d.reason): \(d.detail); oom_score_adj \(adj), min_score_adj \(d.minScoreAdj) (reclaimed: as charged at the kill, not measured)")
        await self.record(.kill(record), app: v.name, pid: pid)
        return kill
    }

    // MARK: When each app's oom_score_adj was set

    /// Notes when `v`'s `oom_score_adj` was set: with its state change, or, set without one (an
    /// app crossing the high-memory line), when it was first seen; kept while it stays.
    func observe(_ v: AppView, now: Double) {
        guard v.pid != nil, v.state != .notRunning, let adj = v.oomScoreAdj else {
            adjSet[v.name] = nil
            return
        }
        let stateChanged = now - v.secondsInState
        guard var e = adjSet[v.name], e.generation == v.generation else {
            adjSet[v.name] = AdjEntry(generation: v.generation, adj: adj, state: v.state, setAt: stateChanged)
            return
        }
        if e.adj != adj {
            e.setAt = e.state != v.state ? stateChanged : now
            e.adj = adj
        }
        e.state = v.state
        adjSet[v.name] = e
    }

    // MARK: Readings

    func readCounters() -> Result<LmkdVMCounters, LmkdReadFailure> {
        let path = counters.path
        do {
            try ProcFS.readFile(path, into: &buffer)
        } catch {
            return .failure(LmkdReadFailure("\(path): \(error)"))
        }
        let inBytes: Bool
        switch counters {
        case .machine: inBytes = false
        case .cgroup: inBytes = true
        }
        return .success(buffer.withBytes { LmkdVMCounters.parse($0, lruInBytes: inBytes, pageSize: LmkdPage.size) })
    }

    func readMemInfo() -> Result<LmkdMemInfo, LmkdReadFailure> {
        let path = "\(procRoot)/meminfo"
        do {
            try ProcFS.readFile(path, into: &buffer)
        } catch {
            return .failure(LmkdReadFailure("\(path): \(error)"))
        }
        return .success(buffer.withBytes { LmkdMemInfo.parse($0) })
    }

    /// PSI full avg10 (nil when it cannot be read: then no stall is critical, as in lmkd).
    func readFullStall() -> Double? {
        do {
            return try PressureStall.read(pressureFile, buffer: &buffer).full?.avg10
        } catch {
            return nil
        }
    }

    /// The watermarks in bytes of `budget`: fixed shares, or the machine's zoneinfo as a share
    /// of MemTotal (read again once a minute, or when `force`d).
    func watermarkLevels(budget: UInt64, now: Double, force: Bool) -> Result<LmkdWatermarkLevels, LmkdReadFailure> {
        let shares: (min: Double, low: Double, high: Double)
        switch configuration.watermarks {
        case .shareOfBudget(let mi, let lo, let hi):
            shares = (mi, lo, hi)
        case .machineZoneinfo:
            if force || watermarkShares == nil || now - watermarkUpdate > LmkdConstants.watermarkRefreshSeconds {
                let zoneinfo = "\(procRoot)/zoneinfo"
                do {
                    try ProcFS.readFile(zoneinfo, into: &buffer)
                } catch {
                    return .failure(LmkdReadFailure("\(zoneinfo): \(error)"))
                }
                guard let pages = buffer.withBytes({ LmkdZoneWatermarks.parse($0) }) else {
                    return .failure(LmkdReadFailure("\(zoneinfo) has no populated zone"))
                }
                let total: UInt64
                switch readMemInfo() {
                case .success(let m):
                    guard let t = m.memTotal, t > 0 else { return .failure(LmkdReadFailure("\(procRoot)/meminfo has no MemTotal")) }
                    total = t
                case .failure(let why):
                    return .failure(why)
                }
                let page = Double(LmkdPage.size), t = Double(total)
                watermarkShares = (Double(pages.minPages) * page / t, Double(pages.lowPages) * page / t, Double(pages.highPages) * page / t)
                watermarkUpdate = now
            }
            shares = watermarkShares ?? (0, 0, 0)
        }
        func bytes(_ share: Double) -> UInt64 {
            let s = min(1, max(0, share.isFinite ? share : 0))
            return UInt64(Double(budget) * s)
        }
        return .success(LmkdWatermarkLevels(minBytes: bytes(shares.min), lowBytes: bytes(shares.low), highBytes: bytes(shares.high)))
    }

    // MARK: Saying

    func publish(_ wakeup: PressureWakeup, _ outcome: LmkdLook.Outcome) {
        emulation.publish(LmkdLook(time: monotonicSeconds(), wakeup: wakeup, outcome: outcome))
    }

    /// A reading failed: no decision on this look (lmkd: "Failed to parse …", return).
    func failedReading(_ what: String, _ why: LmkdReadFailure, _ wakeup: PressureWakeup) async -> LmkdPollingUpdate {
        await failedReading(what, why.description, wakeup)
    }

    func failedReading(_ what: String, _ why: String, _ wakeup: PressureWakeup) async -> LmkdPollingUpdate {
        if failing[what] == nil {
            failing[what] = why
            await record(.failure(.readingFailed(.memory, failure: "lmkd: \(why)")))
        }
        publish(wakeup, .readingFailed(why))
        return .doNotChange
    }

    func readingWorks(_ what: String) async {
        guard let why = failing.removeValue(forKey: what) else { return }
        await record(.note(.readingWorksAgain(.memory, failure: "lmkd: \(why)")))
    }

    func record(_ r: PolicyRecord, app: String? = nil, pid: Int32? = nil) async {
        await device.record(SupervisorEvent(t: await device.now(), app: app, pid: pid, .policy(r)))
    }

    // MARK: Arithmetic that cannot trap

    /// `delta × 100 / (base + 1)`, as lmkd computes thrashing; a counter that went back (a new
    /// cgroup) counts as none.
    static func percent(_ delta: Int64, of base: Int64) -> Int64 {
        guard delta > 0 else { return 0 }
        let (scaled, overflow) = delta.multipliedReportingOverflow(by: 100)
        return (overflow ? Int64.max : scaled) / (max(0, base) &+ 1)
    }

    static func saturatingAdd(_ a: Int64, _ b: Int64) -> Int64 {
        let (sum, overflow) = a.addingReportingOverflow(b)
        return overflow ? (b > 0 ? Int64.max : Int64.min) : sum
    }

    static func multiplied(_ a: UInt64, _ b: UInt64) -> UInt64 {
        let (product, overflow) = a.multipliedReportingOverflow(by: b)
        return overflow ? UInt64.max : product
    }
}

/// Why a reading of the emulation failed, in words (the file and the error).
struct LmkdReadFailure: Error, Sendable, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}
