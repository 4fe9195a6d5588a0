import Glibc
import MemPressureLifecycleProtocol
import MemPressureSystem
import MemPressureVMTracker

/// The live machine's apps as jetsam would see them, for `mempressure jetsam --dry-run`: apps
/// as `top` groups them (a process and its descendants running the same program), each with
/// its footprint from smaps_rollup. Nothing here was launched by a supervisor, so nothing is
/// ever killed: the ranking only shows the order.
///
/// - State: an app whose processes are all stopped (state T) counts as suspended; the app
///   holding `foreground` (a PID) is active; every other app is running in the background.
/// - PID 1 and this process's own app are protected.
/// - Nobody saw these apps become active: recency is the time since the app's first process
///   started (`secondsSinceLaunch`, from its start time in /proc/PID/stat against
///   CLOCK_BOOTTIME), so the least-recently-used orders (xnu, lmkd, lru) take the oldest first.
///   The relaunch cost is unknown: the cost policy uses its prior for every app.
/// - Two apps with the same name are told apart by their PID ("bash (pid 812)").
package enum LiveMachine {
    package static func snapshots(_ machine: MachineSnapshot, foreground: Int32? = nil) -> [JetsamAppSnapshot] {
        var stopped: [Int32: Bool] = [:]
        var started: [Int32: UInt64] = [:]
        for p in machine.processes {
            stopped[p.pid] = p.stat.isStopped
            started[p.pid] = p.stat.startTicks
        }
        let ticksPerSecond = Double(max(1, sysconf(Int32(_SC_CLK_TCK))))
        var boot = timespec()
        let sinceBoot: Double? = clock_gettime(CLOCK_BOOTTIME, &boot) == 0 ? Double(boot.tv_sec) + Double(boot.tv_nsec) / 1e9 : nil
        let apps = machine.apps(grouping: .app)
        var counts: [String: Int] = [:]
        for a in apps { counts[a.name, default: 0] += 1 }
        let me = getpid()
        return apps.compactMap { a in
            guard let pid = a.rootPID ?? a.pids.min() else { return nil }
            let state: LifecycleState
            if let foreground, a.pids.contains(foreground) {
                state = .active
            } else if !a.pids.isEmpty, a.pids.allSatisfy({ stopped[$0] == true }) {
                state = .suspended
            } else {
                state = .backgroundRunning
            }
            let name = (counts[a.name] ?? 0) > 1 ? "\(a.name) (pid \(pid))" : a.name
            let c = a.totals
            // The app's age: since its oldest process started (the kernel's start time is in
            // clock ticks since boot).
            let firstStart = a.pids.compactMap { started[$0] }.min()
            let age = firstStart.flatMap { ticks in sinceBoot.map { max(0, $0 - Double(ticks) / ticksPerSecond) } }
            return JetsamAppSnapshot(
                name: name, pid: pid, state: state, footprintBytes: c.footprint, purgeableBytes: c.purgeable,
                residentBytes: c.resident, lifetimeMaxFootprintBytes: c.footprint, secondsInState: 0,
                secondsSinceActive: state == .active ? 0 : nil, secondsSinceLaunch: age, activations: state == .active ? 1 : 0,
                isProtected: a.pids.contains(1) || a.pids.contains(me), relaunchSeconds: nil, sampleAgeSeconds: 0)
        }
    }
}

/// What `mempressure jetsam --dry-run --json` prints (formatVersion 1; fields may be added,
/// never renamed): the apps in kill order, rank 1 first.
package struct DryRunReport: Sendable, Hashable, Codable {
    package var formatVersion = 1
    package var policy: String
    package var highMemoryBytes: UInt64
    package var budgetBytes: UInt64
    package var apps: [App]
    /// Apps not ranked (protected, ...), with why.
    package var spared: [SparedApp]

    package struct App: Sendable, Hashable, Codable {
        package var rank: Int
        package var pid: Int32
        package var name: String
        package var state: LifecycleState
        package var band: JetsamBand
        package var footprintBytes: UInt64
        package var purgeableBytes: UInt64
        package var explanation: String
    }

    package struct SparedApp: Sendable, Hashable, Codable {
        package var pid: Int32
        package var name: String
        package var reason: String
        package var explanation: String
    }

    package init(_ ranking: Ranking, budgetBytes: UInt64) {
        policy = ranking.policy.name.rawValue
        highMemoryBytes = ranking.highMemoryBytes
        self.budgetBytes = budgetBytes
        apps = ranking.order.map {
            App(rank: $0.rank, pid: $0.snapshot.pid, name: $0.snapshot.name, state: $0.snapshot.state, band: $0.band,
                footprintBytes: $0.snapshot.footprintBytes, purgeableBytes: $0.snapshot.purgeableBytes, explanation: $0.explanation)
        }
        spared = ranking.spared.map { SparedApp(pid: $0.snapshot.pid, name: $0.snapshot.name, reason: $0.reason.rawValue, explanation: $0.explanation) }
    }

    /// A table, then each app's explanation.
    package func renderText(limit: Int? = nil) -> String {
        var t = TextTable([
            .init("Rank"), .init("PID"), .init("App", .left), .init("State", .left), .init("Band", .left),
            .init("Footprint"), .init("Purgeable"),
        ])
        let shown = limit.map { Array(apps.prefix($0)) } ?? apps
        for a in shown {
            t.append(["\(a.rank)", "\(a.pid)", a.name, a.state.rawValue, a.band.rawValue, ByteFormat.human(a.footprintBytes), ByteFormat.human(a.purgeableBytes)])
        }
        var out = "Kill order under the \(policy) policy (budget \(ByteFormat.human(budgetBytes)), high memory from \(ByteFormat.human(highMemoryBytes))); nothing is killed:\n"
        out += t.render()
        out += "\nWhy:\n"
        for a in shown { out += "  \(a.explanation)\n" }
        if let limit, apps.count > limit { out += "  ... and \(apps.count - limit) more (--limit)\n" }
        if !spared.isEmpty {
            out += "\nNot ranked:\n"
            for s in spared { out += "  \(s.name) (pid \(s.pid)): \(s.explanation)\n" }
        }
        return out
    }
}
