import MemPressureLifecycle
import BenchSupport
import Glibc
import MemPressureLifecycleProtocol
import MemPressureSystem

/// One app's switch costs with no memory pressure (a device far larger than every app
/// together, no killer): the model's resume and relaunch times, and its footprints.
struct Calibration: Codable, Sendable {
    var trim: Double
    var app: String
    /// activate → ready from suspended, and from not running (relaunch, page cache warm).
    var resumeMs: [Double]
    var relaunchMs: [Double]
    var resumeMedianMs: Double
    var relaunchMedianMs: Double
    /// The largest footprint sampled while active, and the median sampled while suspended.
    var activeFootprintBytes: UInt64
    var backgroundFootprintBytes: UInt64
}

func median(_ xs: [Double]) -> Double {
    let s = xs.sorted()
    guard !s.isEmpty else { return 0 }
    return s.count % 2 == 1 ? s[s.count / 2] : (s[s.count / 2 - 1] + s[s.count / 2]) / 2
}

/// Each app alone at `trim`, `rounds` times: resumed from suspended, then killed while
/// suspended (its state saved) and relaunched; both timed from activate to ready.
func calibrate(_ setup: Setup, trim: Double, rounds: Int, progress: BenchSupport.Progress) async throws -> [Calibration] {
    let total = setup.profiles.reduce(0) { $0 + $1.nominalMB }
    let (c, _) = try supervisorConfiguration(build: setup.build, budgetBytes: max(1024, total * 4) << 20, policy: "kernel")
    let directory = "\(setup.data)/calibration-\(trim)"
    let made = try CheckedDirectory.open(directory, creating: true)
    defer { made.removeTree() }
    let s = try Supervisor(configuration: c)
    return try await withTaskCancellationHandler {
        do {
            for p in setup.profiles {
                try await s.register(AppSpec(name: p.name, command: ["\(setup.build)/mempressure-workload"]
                    + p.arguments(dataDirectory: "\(directory)/\(p.name)", trim: trim, restore: setup.restore, decodeCost: setup.decodeCost)))
            }
            var sw = Switcher(s, setup: setup, directory: directory)
            var resume: [String: [Double]] = [:], relaunch: [String: [Double]] = [:]
            for p in setup.profiles {
                progress.doing("calibration at trim \(trim): first launch of \(p.name)")
                _ = try await sw.switchTo(p.name, index: nil)
                try await sw.backgroundForeground()
            }
            for round in 1...rounds {
                for p in setup.profiles {
                    try Task.checkCancellation()
                    progress.doing("calibration at trim \(trim), round \(round)/\(rounds): \(p.name)")
                    let r = try await sw.switchTo(p.name, index: nil)
                    guard r.kind == .resume, r.attempts == 1 else { throw BenchError("calibration: \(p.name) was not resumed (\(r.kind.rawValue))") }
                    resume[p.name, default: []].append(r.ms)
                    try await sw.backgroundForeground()
                    // Suspended, its state saved: killed without notice, then launched again.
                    try await s.terminate(p.name)
                    let l = try await sw.switchTo(p.name, index: nil)
                    guard l.kind == .relaunch, l.attempts == 1 else { throw BenchError("calibration: \(p.name) was not relaunched") }
                    relaunch[p.name, default: []].append(l.ms)
                    try await sw.backgroundForeground()
                }
            }
            let log = await s.log
            let reports = await s.reports()
            await s.shutdown()
            if let loss = sw.losses.first { throw BenchError("calibration lost state: \(loss.bytes) bytes of \(loss.app) (\(loss.death))") }
            if let death = deaths(in: log, from: 0, to: .infinity).first(where: { $0.by != "terminated" }) {
                throw BenchError("calibration: \(death.app) died unexpectedly (\(death.by))")
            }
            return setup.profiles.map { p in
                let samples = reports.first { $0.name == p.name }?.footprint ?? []
                let active = samples.filter { $0.state == .active }.map(\.footprintBytes).max() ?? 0
                let suspended = samples.filter { $0.state == .suspended }.map { Double($0.footprintBytes) }
                return Calibration(
                    trim: trim, app: p.name, resumeMs: resume[p.name] ?? [], relaunchMs: relaunch[p.name] ?? [],
                    resumeMedianMs: median(resume[p.name] ?? []), relaunchMedianMs: median(relaunch[p.name] ?? []),
                    activeFootprintBytes: active, backgroundFootprintBytes: UInt64(median(suspended)))
            }
        } catch {
            await s.shutdown()
            throw error
        }
    } onCancel: {
        Task { await s.abort() }
    }
}
