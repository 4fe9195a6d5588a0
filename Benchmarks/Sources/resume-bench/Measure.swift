import MemPressureLifecycle
import BenchSupport
import Foundation
import Glibc
import MemPressureLifecycleProtocol
import MemPressureSystem
import MemPressureVMTracker
import MemPressureWorkloadProtocol

/// What the model app holds (MiB), the same at every trim level.
struct AppSize: Codable, Sendable {
    var stateMB = 16
    var imageCacheMB = 24
    var imageKB = 256
    var backingMB = 8
    var assetsMB = 24
    var modelMB = 32
    var decodeCost = 256
    /// The share of the rebuildable memory the first screen needs: what a lazy relaunch builds
    /// before ready, and a lazy restore rebuilds before ready. Nil in reports before it existed
    /// (a lazy restore then rebuilt nothing before ready).
    var firstScreen: Double? = 0.25

    func arguments(trim: Int, restore: String, relaunch: String, data: String, decodeCost: Int? = nil) -> [String] {
        ["--data-dir", data, "--state-mb", "\(stateMB)", "--image-cache-mb", "\(imageCacheMB)", "--image-kb", "\(imageKB)",
         "--backing-mb", "\(backingMB)", "--assets-mb", "\(assetsMB)", "--model-mb", "\(modelMB)", "--decode-cost", "\(decodeCost ?? self.decodeCost)",
         "--trim", "\(Double(trim) / 100)", "--restore", restore, "--relaunch", relaunch, "--first-screen", "\(firstScreen ?? 0)"]
    }
}

/// One step of a round: a resume after a condition, or a relaunch (eager or lazy, the page cache
/// warm or cold).
enum Step: Equatable {
    case resume(Condition)
    case relaunch(lazy: Bool, cold: Bool)
}

enum Condition: String, Codable, Sendable, CaseIterable {
    /// Nothing: what the app trimmed itself is all that is missing.
    case none
    /// Its memory cgroup squeezed without swap: the kernel takes its purgeable and clean pages.
    case squeeze
    /// Freeze-dried to a swap file, then out of the swap cache: the resume reads from the file.
    case swap
    /// The same on zram (lz4), as Android and ChromeOS swap.
    case zram

    var isSwap: Bool { self == .swap || self == .zram }
}

/// One resume: the app in the background just before it, and what the resume took.
struct Cycle: Codable, Sendable {
    var trim: Int
    var restore: String
    var condition: Condition
    var round: Int
    /// The decode cost of a sweep's round; nil in the main grid (`AppSize.decodeCost`).
    var decodeCost: Int? = nil
    /// In the background, just before the resume (VM Tracker, smaps_rollup).
    var dirtyBytes: UInt64
    var purgeableBytes: UInt64
    var cleanBytes: UInt64
    var swappedBytes: UInt64
    var footprintBytes: UInt64
    /// The cgroup limit the squeeze reached (for the swap conditions, the squeeze that took the
    /// paged-out memory out of the swap cache), or the bytes the page-out wrote to swap.
    var squeezedToBytes: UInt64?
    var pagedOutBytes: UInt64?
    /// For zram: what the device held when the resume began, uncompressed, and the memory it
    /// took for it (the RAM a freeze-dried app still costs the device).
    var zramStoredBytes: UInt64? = nil
    var zramMemoryBytes: UInt64? = nil
    /// Pages the machine read from swap during the resume (pswpin; the benchmark runs alone).
    var pagesSwappedIn: UInt64? = nil
    /// Why a swap round does not prove a real swap-in (`swapInShortfall`), if it does not: it is
    /// left out of the figures.
    var invalid: String? = nil
    /// From the resume command: the app running again (SIGCONT seen), ready, fully rebuilt.
    var thawMs: Double
    var readyMs: Double
    var fullMs: Double
    /// Page faults from before the resume until fully rebuilt (/proc/PID/stat).
    var minorFaults: UInt64
    var majorFaults: UInt64
    /// The app's own account of its rebuild: wall time, its thread's CPU time, and the time
    /// spent reading its working set again (the refaults).
    var rebuildMs: Double
    var rebuildCPUMs: Double
    var refaultMs: Double
    var imagesRebuilt: Int
    var modelChunksRebuilt: Int
}

/// One relaunch: terminated (state saved), launched again with the page cache warm or cold.
struct Relaunch: Codable, Sendable {
    var trim: Int
    var restore: String
    var cache: String
    var round: Int
    /// "eager" (everything built before ready) or "lazy" (the first screen, the rest after);
    /// nil in reports before lazy relaunches (eager).
    var mode: String? = nil
    /// The decode cost of a sweep's round; nil in the main grid.
    var decodeCost: Int? = nil
    /// From the launch command to ready, with the saved state restored.
    var readyMs: Double
    /// From the launch command until everything is built (a lazy relaunch's rest finished, the
    /// app's `restored` answered); nil in reports before it was measured.
    var fullMs: Double? = nil
    /// Its parts, from the same command: the process started and connected (exec, the runtime,
    /// the hello), and didFinishLaunching acknowledged (state restored, everything built). Nil in
    /// reports written before they were split.
    var connectedMs: Double?
    var launchedMs: Double?
    /// Bytes of the saved state that did not come back (every byte compared).
    var lostBytes: Int
    /// For a cold relaunch: the files dropped from the page cache (every file the app mapped and
    /// its data), their bytes, and what stayed (mapped by other processes of the machine).
    var droppedFiles: Int? = nil
    var droppedBytes: UInt64? = nil
    var stillResidentBytes: UInt64? = nil
}

struct ResumeRun {
    let build: String
    let levels: [Int]
    let rounds: Int
    /// The decode-cost sweep: costs besides the main grid's, its trims and rounds (resume with
    /// nothing taken, relaunch eager and lazy, page cache warm).
    var sweepCosts: [Int] = []
    var sweepLevels: [Int] = []
    var sweepRounds = 0
    let size = AppSize()
    private(set) var data = ""
    var conditions: [Condition] = Condition.allCases
    var notes: [String] = []
    /// vm.page-cluster: a major fault reads 2^N pages from a swap file.
    var pageCluster = 3
    /// The files the first cold relaunch dropped.
    var coldDropped: [DroppedFile] = []

    init(build: String, levels: [Int], rounds: Int) throws {
        self.build = build
        self.levels = levels
        self.rounds = rounds
    }

    mutating func measure() async throws -> ResumeReport {
        // The apps' data in a directory of the run's own, made exclusively (mode 0700) on a disk
        // (the cold page cache needs one): never a name another user could make first.
        let scratch = try CheckedDirectory.makeUnique(in: "/var/tmp", prefix: "mempressure-resume-bench-")
        defer { scratch.removeTree() }
        data = scratch.path
        // Freeze-dry needs swap: a swap file or a zram device set up for each such round alone,
        // and removed after it however it ends. Tried once here: a machine that refuses one
        // loses that condition, said in the notes.
        let swaps = String(decoding: try ProcFS.readBytes("/proc/swaps"), as: UTF8.self).split(separator: "\n").count
        guard swaps <= 1 else { throw BenchError("this machine has swap of its own (/proc/swaps): the swap conditions need it off, so that they alone decide where pages go") }
        do {
            let trial = try TemporarySwapFile(path: "\(data)/swap", bytes: 1 << 30)
            if let failure = trial.remove() { throw BenchError(failure) }
        } catch {
            conditions.removeAll { $0 == .swap }
            notes.append("no freeze-dry to a swap file: this machine refused one (\(error)); the swap condition was not measured")
        }
        do {
            let trial = try TemporaryZramSwap(bytes: 1 << 30, compressor: "lz4")
            if let failure = trial.remove() { throw BenchError(failure) }
        } catch {
            conditions.removeAll { $0 == .zram }
            notes.append("no zram: \(error); the zram condition was not measured")
        }
        do {
            pageCluster = Int(String(decoding: try ProcFS.readBytes("/proc/sys/vm/page-cluster"), as: UTF8.self).split(separator: "\n").first ?? "") ?? 3
        } catch {
            notes.append("vm.page-cluster unreadable (\(error)): 3 assumed")
        }

        var c = SupervisorConfiguration()
        c.executableDirectory = build
        c.budgetBytes = 2048 * 1048576
        c.sampleInterval = 10
        c.callbackTimeout = 30
        let s = try Supervisor(configuration: c)
        let run = self
        let outcome: (cycles: [Cycle], relaunches: [Relaunch], notes: [String], coldDropped: [DroppedFile])
        outcome = try await supervising(s) { try await run.measure(with: $0) }
        notes += outcome.notes
        var report = ResumeReport(
            machine: machineLine(),
            command: "make bench (cd Benchmarks && swift run -c release resume-bench --build ../.build/release --output ../Reports)",
            size: size, rounds: rounds, conditions: conditions, cycles: outcome.cycles, relaunches: outcome.relaunches, notes: notes)
        report.pageCluster = pageCluster
        report.coldDropped = outcome.coldDropped
        return report
    }

    func measure(with s: Supervisor) async throws -> (cycles: [Cycle], relaunches: [Relaunch], notes: [String], coldDropped: [DroppedFile]) {
        guard let group = s.deviceMemoryCgroup else { throw BenchError("the supervisor made no memory cgroup") }
        var notes: [String] = []
        // The squeeze must take what reclaim takes without swap (purgeable and clean pages), not
        // push anonymous memory to the swap file that freeze-dry uses.
        let swappiness = "\(group)/memory.swappiness"
        if ProcFS.isFile(swappiness) {
            try ProcFS.writeFileInPlace(swappiness, Array("0".utf8))
        } else {
            notes.append("no memory.swappiness in \(group): the squeeze may also have swapped anonymous memory")
        }
        // The main grid: every condition, both relaunches warm and cold, at the main decode cost;
        // then the sweep: nothing taken and both relaunches warm, at each other decode cost.
        var blocks: [(trim: Int, restore: String, cost: Int?, rounds: Int, steps: [Step])] = []
        let mainSteps: [Step] = conditions.map { .resume($0) } + [false, true].flatMap { lazy in [false, true].map { Step.relaunch(lazy: lazy, cold: $0) } }
        for trim in levels {
            for restore in ["lazy", "eager"] { blocks.append((trim, restore, nil, rounds, mainSteps)) }
        }
        let sweepSteps: [Step] = [.resume(.none), .relaunch(lazy: false, cold: false), .relaunch(lazy: true, cold: false)]
        for cost in sweepCosts {
            for trim in sweepLevels {
                for restore in ["lazy", "eager"] { blocks.append((trim, restore, cost, sweepRounds, sweepSteps)) }
            }
        }
        let progress = Progress("resume-bench", total: blocks.reduce(0) { $0 + $1.rounds * $1.steps.count })
        var cycles: [Cycle] = []
        var relaunches: [Relaunch] = []
        var coldDropped: [DroppedFile] = []
        for block in blocks {
            let (trim, restore) = (block.trim, block.restore)
            let digits = String(trim)
            // Two apps on the same data: the same model app relaunching eagerly and lazily. A
            // relaunch ends whichever runs and launches the one of its kind, which then serves
            // the resumes until the next relaunch.
            let name = "t" + String(repeating: "0", count: 3 - digits.count) + digits + "-" + restore + (block.cost.map { "-c\($0)" } ?? "")
            let lazyName = name + "-lz"
            let dir = "\(data)/\(name)"
            for (app, relaunchMode) in [(name, "eager"), (lazyName, "lazy")] {
                let arguments = size.arguments(trim: trim, restore: restore, relaunch: relaunchMode, data: dir, decodeCost: block.cost)
                try await s.register(AppSpec(name: app, command: ["\(build)/mempressure-workload"] + arguments))
            }
            progress.doing("\(name): first launch")
            try await s.activate(name)
            var current = name
            for round in 0..<block.rounds {
                // The order of the steps turns with the round, so that no step always follows
                // another.
                let steps = block.steps
                for i in 0..<steps.count {
                    let step = steps[(round + i) % steps.count]
                    try Task.checkCancellation()
                    switch step {
                    case .resume(let condition):
                        progress.doing("\(name): round \(round + 1), resume after \(condition.rawValue)")
                        var cycle = try await resume(current, trim: trim, restore: restore, condition: condition, round: round, s: s, group: group)
                        cycle.decodeCost = block.cost
                        cycles.append(cycle)
                    case .relaunch(let lazy, let cold):
                        progress.doing("\(name): round \(round + 1), relaunch \(lazy ? "lazy" : "eager"), page cache \(cold ? "cold" : "warm")")
                        let target = lazy ? lazyName : name
                        var (r, dropped) = try await relaunch(current, as: target, trim: trim, restore: restore, cold: cold, round: round, s: s, data: dir)
                        current = target
                        r.mode = lazy ? "lazy" : "eager"
                        r.decodeCost = block.cost
                        relaunches.append(r)
                        if coldDropped.isEmpty { coldDropped = dropped }
                    }
                    progress.step()
                }
            }
            try await s.terminate(current)
        }
        return (cycles, relaunches, notes, coldDropped)
    }

    /// Background (suspended), the condition, then resume until ready and until fully rebuilt.
    func resume(_ name: String, trim: Int, restore: String, condition: Condition, round: Int, s: Supervisor, group: String) async throws -> Cycle {
        try await s.background(name)
        guard try await s.state(of: name) == .suspended, let pid = try await s.pid(of: name) else {
            throw BenchError("\(name) is not suspended after background (\(try await s.state(of: name)))")
        }
        var squeezed: UInt64?
        var pagedOut: UInt64?
        var swapFile: TemporarySwapFile?
        var zram: TemporaryZramSwap?
        // The device goes after the resume has been measured (swapoff reads back what is left).
        defer {
            if let failure = swapFile?.remove() { log("resume-bench", "the swap file: \(failure)") }
            if let failure = zram?.remove() { log("resume-bench", "zram: \(failure)") }
        }
        switch condition {
        case .none:
            break
        case .squeeze:
            squeezed = try squeeze(pid: pid, group: group)
        case .swap, .zram:
            if condition == .zram {
                zram = try TemporaryZramSwap(bytes: 1 << 30, compressor: "lz4")
            } else {
                swapFile = try TemporarySwapFile(path: "\(data)/swap", bytes: 1 << 30)
            }
            pagedOut = try await s.pageOut(name, pid: pid).writtenBytes
            squeezed = try evictSwapCache(group: group)
        }
        let zramUsage = zram?.stats.usage()
        let swapBefore = try SwapInCounters(memoryCgroup: group)
        // VM Tracker's snapshot reads stat too: the fault counters before and after come with it.
        let before = try Snapshotter().process(pid, options: .totalsOnly)
        let totals = before.totals
        let t0 = await s.now()
        try await s.activate(name)
        let r = try await WorkloadRequest.restored.send { try await s.command(name, $0) }
        let tFull = await s.now()
        let after = try Snapshotter().process(pid, options: .totalsOnly).stat
        let swapAfter = try SwapInCounters(memoryCgroup: group)
        let log = await s.log
        guard let ready = log.last(where: { $0.app == name && $0.kind == .ready && $0.t >= t0 }) else {
            throw BenchError("\(name): no ready after the resume")
        }
        let thaw = log.first { $0.app == name && $0.kind == .state && $0.from == .suspended && $0.t >= t0 }
        let thawMs: Double = ((thaw?.t ?? t0) - t0) * 1000
        let readyMs: Double = (ready.t - t0) * 1000
        let fullMs: Double = (tFull - t0) * 1000
        var cycle = Cycle(
            trim: trim, restore: restore, condition: condition, round: round,
            dirtyBytes: totals.dirty, purgeableBytes: totals.purgeable, cleanBytes: totals.clean, swappedBytes: totals.swapped, footprintBytes: totals.footprint,
            squeezedToBytes: squeezed, pagedOutBytes: pagedOut,
            thawMs: thawMs, readyMs: readyMs, fullMs: fullMs,
            minorFaults: after.minorFaults &- before.stat.minorFaults, majorFaults: after.majorFaults &- before.stat.majorFaults,
            rebuildMs: r.seconds * 1e3, rebuildCPUMs: r.cpuSeconds * 1e3, refaultMs: r.refaultSeconds * 1e3,
            imagesRebuilt: r.images, modelChunksRebuilt: r.modelChunks)
        cycle.zramStoredBytes = zramUsage?.storedBytes
        cycle.zramMemoryBytes = zramUsage?.memoryBytes
        if condition.isSwap {
            cycle.pagesSwappedIn = swapAfter.pagesSwappedIn &- swapBefore.pagesSwappedIn
            // What freeze-dry wrote must have been on swap and read back from the device.
            cycle.invalid = swapInShortfall(
                swappedBytes: totals.swapped, mustReadBytes: pagedOut ?? 0, majorFaults: cycle.majorFaults, pagesSwappedIn: cycle.pagesSwappedIn ?? 0,
                zram: condition == .zram, pageCluster: pageCluster)
        }
        return cycle
    }

    /// Takes what the page-out wrote to swap out of the swap cache too (MADV_PAGEOUT writes the
    /// pages but, on a machine with free memory, leaves them cached, so a resume would not read
    /// the device): the memory cgroup's limit lowered, its swappiness raised for the while, until
    /// the kernel has reclaimed what it can; then both restored. Returns the limit reached.
    func evictSwapCache(group: String) throws -> UInt64 {
        // Reclaim reads the swappiness of each cgroup it scans: the app's own (made with the
        // device's 0 for the squeeze condition) as well as the device's.
        let groups = try cgroupTree(group)
        var raised: [(path: String, was: [UInt8])] = []
        defer {
            for (path, was) in raised {
                do {
                    try ProcFS.writeFileInPlace(path, was)
                } catch {
                    log("resume-bench", "cannot set \(path) back: \(error)")
                }
            }
        }
        for g in groups where ProcFS.isFile("\(g)/memory.swappiness") {
            let path = "\(g)/memory.swappiness"
            let was = try ProcFS.readBytes(path).filter { $0 != 0x0a }
            try ProcFS.writeFileInPlace(path, Array("100".utf8))
            raised.append((path, was))
        }
        let mib: UInt64 = 1 << 20
        // The page-out's writes are asynchronous on a swap file: a page under writeback cannot be
        // reclaimed yet. Wait (at most 30 s) until the machine has none in flight.
        let deadline = monotonicSeconds() + 30
        while monotonicSeconds() < deadline {
            let meminfo = String(decoding: try ProcFS.readBytes("/proc/meminfo"), as: UTF8.self)
            let line = meminfo.split(separator: "\n").first { $0.hasPrefix("Writeback:") } ?? ""
            if line.split(separator: " ").dropFirst().first == "0" { break }
            pause(0.002)
        }
        return try squeezeV1MemoryLimit(group, from: 4 * mib, attempts: 256, restore: 2048 * mib)
    }

    /// Terminate `name` (the app saves its state), drop the page cache of its files if `cold`,
    /// launch and activate `target` (the same app on the same data, relaunching eagerly or
    /// lazily) until ready, then until everything is built; then every byte of the state is
    /// checked.
    func relaunch(_ name: String, as target: String, trim: Int, restore: String, cold: Bool, round: Int, s: Supervisor, data: String) async throws -> (Relaunch, [DroppedFile]) {
        let activations = try await WorkloadRequest.state.send { try await s.command(name, $0) }.activations
        // Cold means cold: every file the app maps (its executable, the Swift runtime, jemalloc,
        // the C library) as well as its data, read before it ends.
        var mapped: [String] = []
        if let pid = try await s.pid(of: name) { mapped = mappedFiles(of: [pid]) }
        try await s.terminate(name)
        let dropped = cold ? try dropForColdStart(mapped: mapped, dataDirectory: data) : []
        // Warm means warm: a squeeze or an eviction in an earlier round may have taken its files' pages.
        if !cold { try warmForStart(mapped: mapped, dataDirectory: data) }
        let t0 = await s.now()
        try await s.activate(target)
        // A lazy relaunch's rest: `restored` answers once it has finished.
        _ = try await WorkloadRequest.restored.send { try await s.command(target, $0) }
        let tFull = await s.now()
        let log = await s.log
        guard let ready = log.last(where: { $0.app == target && $0.kind == .ready && $0.t >= t0 }) else {
            throw BenchError("\(target): no ready after the relaunch")
        }
        let connected = log.first { $0.app == target && $0.kind == .connected && $0.t >= t0 }
        let launched = log.first { $0.app == target && $0.payload == .callback(.didFinishLaunching) && $0.t >= t0 }
        let lost = try await WorkloadRequest.verify(activations: activations + 1).send { try await s.command(target, $0) }
        var relaunch = Relaunch(
            trim: trim, restore: restore, cache: cold ? "cold" : "warm", round: round, readyMs: (ready.t - t0) * 1000, fullMs: (tFull - t0) * 1000,
            connectedMs: connected.map { ($0.t - t0) * 1000 }, launchedMs: launched.map { ($0.t - t0) * 1000 }, lostBytes: lost)
        if cold {
            relaunch.droppedFiles = dropped.filter { $0.error == nil }.count
            relaunch.droppedBytes = dropped.reduce(0) { $0 + $1.bytes }
            relaunch.stillResidentBytes = dropped.reduce(0) { $0 + $1.residentAfterBytes }
        }
        return (relaunch, dropped)
    }

    /// Lowers the memory cgroup's limit while the app is suspended, down to what reclaim cannot
    /// take without swap (its anonymous memory that is not MADV_FREE'd, and a margin), so that
    /// the kernel takes its purgeable and clean pages; then gives the budget back. Returns the
    /// limit reached.
    func squeeze(pid: Int32, group: String) throws -> UInt64 {
        let c = try Snapshotter().process(pid, options: .totalsOnly).totals
        let mib: UInt64 = 1 << 20
        let anonymous: UInt64 = c.anonymous
        let lazyFree: UInt64 = c.lazyFree
        let floor: UInt64 = anonymous > lazyFree ? anonymous - lazyFree : 0
        // The kernel refuses (EBUSY) a limit it cannot reclaim down to: step up until it accepts.
        return try squeezeV1MemoryLimit(group, from: floor + 4 * mib, attempts: 64, restore: 2048 * mib)
    }
}
