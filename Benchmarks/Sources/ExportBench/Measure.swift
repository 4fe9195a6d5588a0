// The measurement: for each population (the benchmark's own processes added to the machine:
// 100, then 400, then 1000), the exporters started at the first (one that crashed, again at the
// next), one warm-up scrape of each (discarded), then rounds in which each exporter is scraped
// once, the order rotating from round to round so that none always follows another; then the
// leak check, consecutive scrapes of the counted `mempressure export` at the largest population. Everything it started is killed and
// reaped, and its scratch directory removed, however the run ends.

import BenchSupport
import Glibc
import MemPressureSystem

struct Settings: Sendable {
    var populations: [Int]
    var rounds: Int
    var leakScrapes: Int
    var exporters: [ExporterID]
    var mempressure: String
    var nodeExporter: String
    var processExporter: String
    var scratch: String
    var timeout: Double
    var quick: Bool
    var command: String
}

final class Bench: ProgramBench {
    let settings: Settings
    let killSwitch: KillSwitch
    private var scratch: String?
    private var population: Population?
    /// The exporters running now.
    private var exporters: [RunningExporter] = []
    /// Those that crashed (exited by themselves), already reaped.
    private var crashed: [RunningExporter] = []
    /// Crashes while starting (at their first GET /metrics), not yet given to a population.
    private var startCrashes: [Crash] = []

    init(settings: Settings, killSwitch: KillSwitch) {
        self.settings = settings
        self.killSwitch = killSwitch
    }

    func run() throws -> ExporterReport {
        let started = monotonicSeconds()
        var machine = Machine.current(scratch: settings.scratch)
        let baseline = try ProcFS().pids().count
        let dir = try makeScratch()

        log("export-bench", "compiling the allocation counter and the population worker (cc)")
        let shim = "\(dir)/alloc-counter.so"
        try compileC("alloc-counter.c", output: shim, shared: true)
        let worker = "\(dir)/population-worker"
        try compileC("population-worker.c", output: worker, shared: false)

        var checks = [try runSelfCheck(allocator: "glibc malloc", shim: shim, preloadAfter: nil, scratch: dir)]
        if let jemalloc = jemallocLibrary() {
            checks.append(try runSelfCheck(allocator: "jemalloc", shim: shim, preloadAfter: jemalloc, scratch: dir))
        }
        for check in checks {
            if let failure = check.failure { throw BenchError("the allocation counter miscounted a plain Swift program's allocations (\(check.allocator)): \(failure)") }
            log("export-bench", "allocation counter checked on a plain Swift program (\(check.allocator)): \(check.rawAllocated.requestedBytes) bytes asked, \(check.rawAllocated.allocatedBytes) usable counted, \(check.rawFreed.freedBytes) freed")
        }

        var ids = settings.exporters
        if ids.contains(.mempressure) { ids.append(.mempressureCounted) }
        var versions: [ExporterVersion] = []
        for id in ids where id != .mempressureCounted { versions.append(ExporterVersion(exporter: id, version: version(of: id))) }

        population = try Population(worker: worker, links: "\(dir)/bin", logPath: "\(dir)/population.log")
        let progress = Progress("export-bench", total: settings.populations.count * settings.rounds + settings.leakScrapes)
        var populations: [PopulationRun] = []
        var collectors: [Collector] = []
        for extra in settings.populations {
            progress.doing("starting \(extra) processes")
            try population!.grow(to: extra)
            // Every exporter is started at the first size; one that crashed is started again at
            // the next.
            for id in ids where !exporters.contains(where: { $0.id == id }) { try startExporter(id, in: dir, shim: shim) }
            let atStart = try ProcFS().pids().count
            var samples: [ExporterID: [ScrapeSample]] = [:]
            // Those that crashed as they were started, for this size.
            var crashes = startCrashes
            startCrashes = []
            // The warm-up scrape of each: discarded (it also gives the first allocation reading).
            for e in exporters {
                guard let (_, exposition) = try scrapeOrCrash(e, round: 0, into: &crashes) else { continue }
                if e.id == .node && collectors.isEmpty { collectors = exposition.collectors.map { Collector(name: $0.name, succeeded: $0.succeeded) } }
            }
            for round in 1...settings.rounds {
                try Task.checkCancellation()
                progress.doing("\(extra) processes: round \(round) of \(settings.rounds)")
                let order = exporters
                for k in 0..<order.count {
                    let e = order[(k + round) % order.count]
                    guard exporters.contains(where: { $0 === e }) else { continue }
                    if let (sample, _) = try scrapeOrCrash(e, round: round, into: &crashes) { samples[e.id, default: []].append(sample) }
                }
                progress.step()
            }
            var runs: [ExporterRun] = []
            for id in ids {
                let resident = try exporters.first { $0.id == id }.map { try $0.residentBytes() }
                runs.append(ExporterRun(exporter: id, samples: samples[id] ?? [], residentBytesAfter: resident))
            }
            populations.append(PopulationRun(extraProcesses: extra, processesAtStart: atStart, processesAtEnd: try ProcFS().pids().count, runs: runs, crashes: crashes))
        }

        var leak: LeakCheck?
        if let counted = exporters.first(where: { $0.id == .mempressureCounted }), settings.leakScrapes > 0 {
            leak = try leakCheck(counted, progress: progress)
        }

        machine.loadAverageAtEnd = Machine.loadAverage()
        return ExporterReport(
            command: settings.command, quick: settings.quick, totalSeconds: monotonicSeconds() - started, machine: machine,
            baselineProcesses: baseline, clockTicksPerSecond: Int(sysconf(Int32(_SC_CLK_TCK))), rounds: settings.rounds,
            versions: versions, nodeCollectors: collectors, processExporterConfig: processExporterConfig, selfChecks: checks,
            populations: populations, leak: leak)
    }

    func cleanup() {
        for e in exporters + crashed { e.process.kill() }
        exporters = []
        crashed = []
        population?.kill()
        population = nil
        if let scratch { removeTree(scratch) }
        scratch = nil
    }

    private func makeScratch() throws -> String {
        var template = Array("\(settings.scratch)/export-bench.XXXXXX".utf8CString)
        guard template.withUnsafeMutableBufferPointer({ mkdtemp($0.baseAddress!) }) != nil else {
            throw BenchError("mkdtemp in \(settings.scratch): \(String(cString: strerror(errno)))")
        }
        let dir = String(decoding: template.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        scratch = dir
        return dir
    }

    // MARK: The exporters

    /// Starts `id` on a free loopback port and waits until it serves /metrics; arms the kill
    /// switch to kill every exporter now running.
    private func startExporter(_ id: ExporterID, in dir: String, shim: String) throws {
        try Task.checkCancellation()
        let port = try freeLoopbackPort()
        let listen = "127.0.0.1:\(port)"
        var counters: AllocCounterFile?
        let argv: [String]
        switch id {
        case .node:
            argv = [settings.nodeExporter, "--web.listen-address=\(listen)"]
        case .process:
            let config = "\(dir)/process-exporter.yml"
            try writeText(processExporterConfig, to: config)
            argv = [settings.processExporter, "-web.listen-address", listen, "-config.path", config]
        case .mempressure:
            argv = [settings.mempressure, "export", "--listen", listen]
        case .mempressureCounted:
            let path = "\(dir)/mempressure.counters"
            unlink(path)  // a previous instance's, if it crashed
            let file = try AllocCounterFile(creating: path)
            counters = file
            argv = countedArgv([settings.mempressure, "export", "--listen", listen], shim: shim, counters: file)
        }
        let process = try ChildProcess(name: id.label, tool: "export-bench", argv: argv, logPath: "\(dir)/\(id.rawValue).log")
        let exporter = RunningExporter(id: id, port: port, process: process, counters: counters)
        exporters.append(exporter)  // from here on the cleanup kills it
        let handles = exporters.map { $0.process.handle }
        killSwitch.arm {
            for h in handles {
                do {
                    try h.signal(SIGKILL)
                } catch {
                    // ESRCH: it has exited already.
                }
            }
        }
        do {
            try exporter.waitUntilServing(timeout: 60)
        } catch let failure {
            guard !Task.isCancelled, let crash = crash(of: exporter, round: -1, failure: failure) else { throw failure }
            startCrashes.append(crash)
            return
        }
        if let counters, counters.countingPID != process.pid {
            throw BenchError("the allocation counter is not counting in \(id.label) (pid \(process.pid); the counter file names \(counters.countingPID.map(String.init) ?? "no process")); its log:\n\(process.logTail())")
        }
        log("export-bench", "\(id.label) listening on \(listen) (pid \(process.pid))")
    }

    /// Scrapes `e`; if it fails because the exporter exited (crashed), records that in
    /// `crashes`, takes it out of the running exporters and returns nil. Any other failure is
    /// thrown.
    private func scrapeOrCrash(_ e: RunningExporter, round: Int, into crashes: inout [Crash]) throws -> (ScrapeSample, Exposition)? {
        do {
            return try scrape(e)
        } catch let failure {
            guard !Task.isCancelled, let crash = crash(of: e, round: round, failure: failure) else { throw failure }
            crashes.append(crash)
            return nil
        }
    }

    /// If `e` has exited by itself (within 2 s of `failure`: a crash closes the connection as
    /// the process dies), the crash, with the line of its log that says why; `e` is then out of
    /// the running exporters. Nil if it is still running: the failure is not a crash.
    private func crash(of e: RunningExporter, round: Int, failure: any Error) -> Crash? {
        do {
            try e.process.waitForExit(timeout: 2, "after a failed scrape")
        } catch {
            return nil
        }
        let lines = e.process.logTail(lines: 200).split(separator: "\n").map { $0.trimmingCharacters(in: .whitespaces) }
        let cause = lines.first { $0.hasPrefix("panic:") || $0.hasPrefix("fatal error:") || $0.contains("Fatal error") } ?? lines.last ?? "no log"
        let crash = Crash(exporter: e.id, round: round, exit: e.process.exitStatus.map(describe) ?? "?", cause: String(cause))
        log("export-bench", "\(e.id.label) crashed (\(crash.exit)) \(round < 0 ? "as it started" : "at round \(round)"): \(crash.cause) (the scrape failed with: \(failure))")
        exporters.removeAll { $0 === e }
        crashed.append(e)
        return crash
    }

    private func version(of id: ExporterID) -> String {
        let arguments: [String]
        switch id {
        case .node: arguments = [settings.nodeExporter, "--version"]
        case .process: arguments = ["dpkg-query", "-W", "-f=prometheus-process-exporter ${Version} (Debian package)", "prometheus-process-exporter"]
        case .mempressure, .mempressureCounted: arguments = [settings.mempressure, "--version"]
        }
        do {
            let (status, text) = try runCollecting(arguments)
            if status == 0, let first = text.split(separator: "\n").first { return String(first) }
            guard id == .mempressure || id == .mempressureCounted else { return "unknown (\(arguments.joined(separator: " ")) ended with status \(status))" }
            // A build without --version: the repository's commit (the benchmark runs from it).
            let (gitStatus, commit) = try runCollecting(["git", "rev-parse", "--short", "HEAD"])
            return gitStatus == 0 ? "this repository at commit \(commit) (its build has no --version)" : "unknown (no --version, and git rev-parse: \(commit))"
        } catch {
            return "unknown (\(error))"
        }
    }

    // MARK: One scrape

    /// Scrapes `e` once: the client's wall time, the exporter's CPU time over the scrape, the
    /// exposition's size and series, and the bytes it allocated since its previous scrape.
    private func scrape(_ e: RunningExporter) throws -> (ScrapeSample, Exposition) {
        let cpuBefore = try e.cpuTicks()
        try Task.checkCancellation()
        let response: HTTPResponse
        do {
            response = try httpGet(port: e.port, accept: textFormat, timeout: settings.timeout)
        } catch {
            try e.process.checkAlive("during a scrape")
            throw BenchError("scraping \(e.id.label) on 127.0.0.1:\(e.port): \(error); the end of its log (\(e.process.logPath)):\n\(e.process.logTail())")
        }
        let counts = e.counters?.read()
        let cpuAfter = try e.cpuTicks()
        guard response.status == 200 else {
            throw BenchError("\(e.id.label) answered GET /metrics with status \(response.status): \(String(decoding: response.body.prefix(300), as: UTF8.self))")
        }
        let exposition = Exposition(response.body)
        var sample = ScrapeSample(seconds: response.seconds, bytes: exposition.bytes, series: exposition.series, cpuTicks: cpuAfter &- cpuBefore)
        if let counts {
            if let last = e.lastCounts {
                let d = counts.since(last)
                sample.allocatedBytes = Double(d.allocatedBytes)
                sample.allocations = d.allocations
                sample.netBytes = d.netBytes
            }
            e.lastCounts = counts
        } else if let total = exposition.goAllocatedBytesTotal {
            if let last = e.lastAllocated { sample.allocatedBytes = total - last }
            e.lastAllocated = total
        }
        return (sample, exposition)
    }

    // MARK: The leak check

    /// `leakScrapes` consecutive scrapes of the counted exporter, after one more warm-up: the
    /// live heap's change (allocated - freed) after each, from just before the first.
    private func leakCheck(_ e: RunningExporter, progress: Progress) throws -> LeakCheck {
        _ = try scrape(e)
        let start = e.counters!.read()
        let residentBefore = try e.residentBytes()
        var net: [Int64] = []
        var series: [Int] = []
        let before = Set(try ProcFS().pids())
        var appeared = Set<Int32>()
        for i in 0..<settings.leakScrapes {
            try Task.checkCancellation()
            progress.doing("leak check: scrape \(i + 1) of \(settings.leakScrapes)")
            let (sample, _) = try scrape(e)
            net.append(e.lastCounts!.since(start).netBytes)
            series.append(sample.series)
            for pid in try ProcFS().pids() where !before.contains(pid) { appeared.insert(pid) }
            progress.step()
        }
        let total = e.lastCounts!.since(start)
        let residentAfter = try e.residentBytes()
        // The control: as many requests of the index page, which collects nothing (the server's
        // own path: connection, request, response).
        let controlStart = e.counters!.read()
        var controlNet: [Int64] = []
        for _ in 0..<settings.leakScrapes {
            try Task.checkCancellation()
            let response = try httpGet(port: e.port, path: "/", accept: "text/html", timeout: settings.timeout)
            guard response.status < 500 else { throw BenchError("\(e.id.label) answered GET / with status \(response.status)") }
            controlNet.append(e.counters!.read().since(controlStart).netBytes)
        }
        return LeakCheck(
            extraProcesses: settings.populations.last ?? 0, scrapes: settings.leakScrapes, netBytesAfter: net,
            allocatedBytes: total.allocatedBytes, freedBytes: total.freedBytes, allocations: total.allocations, frees: total.frees,
            residentBytesBefore: residentBefore, residentBytesAfter: residentAfter, indexNetBytesAfter: controlNet,
            seriesMin: series.min() ?? 0, seriesMax: series.max() ?? 0, processesAtStart: before.count, processesAppeared: appeared.count)
    }
}
