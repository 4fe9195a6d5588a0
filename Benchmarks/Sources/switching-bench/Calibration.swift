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

/// Sizes each app's frame (`AppProfile.frameKB`) so that its relaunch costs `ratio` times its
/// resume at trim 0. A frame is the same work at launch and at resume, so with b ms per KiB of
/// frame, resume = a + b·f and relaunch = c + b·f: a calibration without frames gives a and c,
/// one with a trial frame gives b (the median over apps: the decoding is the same code in
/// every app), and f = (c − ratio·a) / ((ratio − 1)·b), none where the app's relaunch is within
/// `ratio` of its resume already. The calibration that follows measures what it gives.
func sizeFrames(_ setup: Setup, ratio: Double, rounds: Int, progress: BenchSupport.Progress) async throws -> [AppProfile] {
    var bare = setup
    bare.profiles = setup.profiles.map { var p = $0; p.frameKB = nil; return p }
    progress.doing("sizing the frames: no frame")
    let without = try await calibrate(bare, trim: 0, rounds: rounds, progress: progress)
    let trialKB = 4096
    var trial = bare
    trial.profiles = bare.profiles.map { var p = $0; p.frameKB = trialKB; return p }
    progress.doing("sizing the frames: a \(trialKB / 1024) MiB frame")
    let with = try await calibrate(trial, trim: 0, rounds: rounds, progress: progress)
    let slopes = bare.profiles.compactMap { p -> Double? in
        guard let a = without.first(where: { $0.app == p.name }), let t = with.first(where: { $0.app == p.name }) else { return nil }
        return (t.resumeMedianMs - a.resumeMedianMs) / Double(trialKB)
    }
    let b = median(slopes)
    guard b > 0, b.isFinite else { throw BenchError("sizing the frames: a \(trialKB / 1024) MiB frame did not make a resume slower (\(slopes.map { ByteFormat.fixed($0 * 1024, 2) }.joined(separator: ", ")) ms per MiB)") }
    let sized = bare.profiles.map { p -> AppProfile? in
        var sized = p
        if let c = without.first(where: { $0.app == p.name }) {
            let kb = (c.relaunchMedianMs - ratio * c.resumeMedianMs) / ((ratio - 1) * b)
            // A frame past a second of drawing would be a measurement gone wrong (a trial that
            // barely slowed the resume), and would outlast the callback's timeout: refused.
            guard kb * b <= 1000 else { return nil }
            sized.frameKB = kb >= 1 ? Int(kb.rounded()) : nil
        }
        return sized
    }
    guard sized.allSatisfy({ $0 != nil }) else {
        throw BenchError("sizing the frames: a frame for \(ratio)× would take over a second to draw (\(ByteFormat.fixed(b * 1024, 2)) ms per MiB measured): the trial measured nothing useful")
    }
    return sized.compactMap { $0 }
}
