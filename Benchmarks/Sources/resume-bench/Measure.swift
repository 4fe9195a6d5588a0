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

    func arguments(trim: Int, restore: String, data: String) -> [String] {
        ["--data-dir", data, "--state-mb", "\(stateMB)", "--image-cache-mb", "\(imageCacheMB)", "--image-kb", "\(imageKB)",
         "--backing-mb", "\(backingMB)", "--assets-mb", "\(assetsMB)", "--model-mb", "\(modelMB)", "--decode-cost", "\(decodeCost)",
         "--trim", "\(Double(trim) / 100)", "--restore", restore]
    }
}

enum Condition: String, Codable, Sendable, CaseIterable {
    case none, squeeze, swap
}

/// One resume: the app in the background just before it, and what the resume took.
struct Cycle: Codable, Sendable {
    var trim: Int
    var restore: String
    var condition: Condition
    var round: Int
    /// In the background, just before the resume (VM Tracker, smaps_rollup).
    var dirtyBytes: UInt64
    var purgeableBytes: UInt64
    var cleanBytes: UInt64
    var swappedBytes: UInt64
    var footprintBytes: UInt64
    /// The cgroup limit the squeeze reached, or the bytes the page-out wrote to swap.
    var squeezedToBytes: UInt64?
    var pagedOutBytes: UInt64?
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
    /// From the launch command to ready, with the saved state restored.
    var readyMs: Double
    /// Its parts, from the same command: the process started and connected (exec, the runtime,
    /// the hello), and didFinishLaunching acknowledged (state restored, everything built). Nil in
    /// reports written before they were split.
    var connectedMs: Double?
    var launchedMs: Double?
    /// Bytes of the saved state that did not come back (every byte compared).
    var lostBytes: Int
}

struct ResumeRun {
    let build: String
    let levels: [Int]
    let rounds: Int
    let size = AppSize()
    private(set) var data = ""
    var conditions: [Condition] = Condition.allCases
    var notes: [String] = []

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
        // Freeze-dry needs swap: a temporary swap file, removed however the run ends.
        var swap: TemporarySwapFile?
        do {
            let gib: UInt64 = 1 << 30
            swap = try TemporarySwapFile(path: "\(data)/swap", bytes: gib)
        } catch {
            conditions.removeAll { $0 == .swap }
            notes.append("no freeze-dry: this machine refused a swap file (\(error)); the swap condition was not measured")
        }
        defer { swap?.remove() }

        var c = SupervisorConfiguration()
        c.executableDirectory = build
        c.budgetBytes = 2048 * 1048576
        c.sampleInterval = 10
        c.callbackTimeout = 30
        let s = try Supervisor(configuration: c)
        let run = self
        let outcome: (cycles: [Cycle], relaunches: [Relaunch], notes: [String])
        outcome = try await withTaskCancellationHandler {
            do {
                let r = try await run.measure(with: s)
                await s.shutdown()
                return r
            } catch {
                await s.shutdown()
                throw error
            }
        } onCancel: {
            Task { await s.abort() }
        }
        notes += outcome.notes
        return ResumeReport(
            machine: machineLine(),
            command: "make bench (cd Benchmarks && swift run -c release resume-bench --build ../.build/release --output ../Reports)",
            size: size, rounds: rounds, conditions: conditions, cycles: outcome.cycles, relaunches: outcome.relaunches, notes: notes)
    }

    func measure(with s: Supervisor) async throws -> (cycles: [Cycle], relaunches: [Relaunch], notes: [String]) {
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
        var blocks: [(trim: Int, restore: String)] = []
        for trim in levels {
            blocks.append((trim, "lazy"))
            blocks.append((trim, "eager"))
        }
        let steps: Int = conditions.count + 2
        let progress = Progress("resume-bench", total: blocks.count * rounds * steps)
        var cycles: [Cycle] = []
        var relaunches: [Relaunch] = []
        for (trim, restore) in blocks {
            let digits = String(trim)
            let name = "t" + String(repeating: "0", count: 3 - digits.count) + digits + "-" + restore
            let dir = "\(data)/\(name)"
            try await s.register(AppSpec(name: name, command: ["\(build)/mempressure-workload"] + size.arguments(trim: trim, restore: restore, data: dir)))
            progress.doing("\(name): first launch")
            try await s.activate(name)
            for round in 0..<rounds {
                // The order of the conditions turns with the round, so that no condition
                // always follows another.
                var order: [Int] = []
                for i in 0..<steps { order.append((round + i) % steps) }
                for step in order {
                    try Task.checkCancellation()
                    if step < conditions.count {
                        let condition = conditions[step]
                        progress.doing("\(name): round \(round + 1), resume after \(condition.rawValue)")
                        cycles.append(try await resume(name, trim: trim, restore: restore, condition: condition, round: round, s: s, group: group))
                    } else {
                        let cold = step == steps - 1
                        progress.doing("\(name): round \(round + 1), relaunch, page cache \(cold ? "cold" : "warm")")
                        relaunches.append(try await relaunch(name, trim: trim, restore: restore, cold: cold, round: round, s: s, data: dir))
                    }
                    progress.step()
                }
            }
            try await s.terminate(name)
        }
        return (cycles, relaunches, notes)
    }

    /// Background (suspended), the condition, then resume until ready and until fully rebuilt.
    func resume(_ name: String, trim: Int, restore: String, condition: Condition, round: Int, s: Supervisor, group: String) async throws -> Cycle {
        try await s.background(name)
        guard try await s.state(of: name) == .suspended, let pid = try await s.pid(of: name) else {
            throw BenchError("\(name) is not suspended after background (\(try await s.state(of: name)))")
        }
        var squeezed: UInt64?
        var pagedOut: UInt64?
        switch condition {
        case .none:
            break
        case .squeeze:
            squeezed = try squeeze(pid: pid, group: group)
        case .swap:
            pagedOut = try await s.pageOut(name, pid: pid).writtenBytes
        }
        // VM Tracker's snapshot reads stat too: the fault counters before and after come with it.
        let before = try Snapshotter().process(pid, options: .totalsOnly)
        let totals = before.totals
        let t0 = await s.now()
        try await s.activate(name)
        let r = try await WorkloadRequest.restored.send { try await s.command(name, $0) }
        let tFull = await s.now()
        let after = try Snapshotter().process(pid, options: .totalsOnly).stat
        let log = await s.log
        guard let ready = log.last(where: { $0.app == name && $0.kind == .ready && $0.t >= t0 }) else {
            throw BenchError("\(name): no ready after the resume")
        }
        let thaw = log.first { $0.app == name && $0.kind == .state && $0.from == .suspended && $0.t >= t0 }
        let thawMs: Double = ((thaw?.t ?? t0) - t0) * 1000
        let readyMs: Double = (ready.t - t0) * 1000
        let fullMs: Double = (tFull - t0) * 1000
        return Cycle(
            trim: trim, restore: restore, condition: condition, round: round,
            dirtyBytes: totals.dirty, purgeableBytes: totals.purgeable, cleanBytes: totals.clean, swappedBytes: totals.swapped, footprintBytes: totals.footprint,
            squeezedToBytes: squeezed, pagedOutBytes: pagedOut,
            thawMs: thawMs, readyMs: readyMs, fullMs: fullMs,
            minorFaults: after.minorFaults &- before.stat.minorFaults, majorFaults: after.majorFaults &- before.stat.majorFaults,
            rebuildMs: r.seconds * 1e3, rebuildCPUMs: r.cpuSeconds * 1e3, refaultMs: r.refaultSeconds * 1e3,
            imagesRebuilt: r.images, modelChunksRebuilt: r.modelChunks)
    }

    /// Terminate (the app saves its state), drop the page cache of its files if `cold`, launch
    /// and activate; then every byte of the state is checked.
    func relaunch(_ name: String, trim: Int, restore: String, cold: Bool, round: Int, s: Supervisor, data: String) async throws -> Relaunch {
        let activations = try await WorkloadRequest.state.send { try await s.command(name, $0) }.activations
        try await s.terminate(name)
        if cold {
            for file in ["\(data)/state.bin", "\(data)/assets.bin", "\(build)/mempressure-workload"] { try dropPageCache(file) }
        }
        let t0 = await s.now()
        try await s.activate(name)
        let log = await s.log
        guard let ready = log.last(where: { $0.app == name && $0.kind == .ready && $0.t >= t0 }) else {
            throw BenchError("\(name): no ready after the relaunch")
        }
        let connected = log.first { $0.app == name && $0.kind == .connected && $0.t >= t0 }
        let launched = log.first { $0.app == name && $0.payload == .callback(.didFinishLaunching) && $0.t >= t0 }
        let lost = try await WorkloadRequest.verify(activations: activations + 1).send { try await s.command(name, $0) }
        return Relaunch(
            trim: trim, restore: restore, cache: cold ? "cold" : "warm", round: round, readyMs: (ready.t - t0) * 1000,
            connectedMs: connected.map { ($0.t - t0) * 1000 }, launchedMs: launched.map { ($0.t - t0) * 1000 }, lostBytes: lost)
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
        let limitFile = "\(group)/memory.limit_in_bytes"
        var limit: UInt64 = floor + 4 * mib
        var reached: UInt64?
        // The kernel refuses (EBUSY) a limit it cannot reclaim down to: step up until it accepts.
        var attempts = 0
        while reached == nil && attempts < 64 {
            attempts += 1
            let text: [UInt8] = Array(String(limit).utf8)
            do {
                try ProcFS.writeFileInPlace(limitFile, text)
                reached = limit
            } catch {
                let code: Int32 = error.errno.rawValue
                if code != EBUSY { throw error }
                limit += 4 * mib
            }
        }
        let budget: UInt64 = 2048 * mib
        try ProcFS.writeFileInPlace(limitFile, Array(String(budget).utf8))
        guard let reached else { throw BenchError("the kernel refused every limit up to \(limit / mib) MiB on \(group)") }
        return reached
    }
}
