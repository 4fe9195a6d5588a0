import MemPressureExporter
import Glibc
import MemPressureSystem
import MemPressureTestSupport
import Testing

/// Short-lived workers coming and going: the series stay the same and no counter goes down.
@Suite(.serialized) struct ChurnTests {
    /// 1,000 workers, 100 at a time, all running one program (bash, linked as `mp-churn` so that
    /// its comm names it) beside one that lives throughout. Each round scrapes the machine with
    /// the 100 running and again once they are killed and reaped. The `mp-churn` app is one
    /// series in every family at every scrape (no `pid` label: its workers share it), every
    /// `_total` sample of the whole machine is at least what it was at the scrape before, and
    /// the app's page faults grow round after round: what the exited workers did is kept.
    @Test func aThousandWorkersComeAndGoWithoutNewSeriesOrFallingCounters() async throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let program = dir.path + "/mp-churn"
        guard symlink("/bin/bash", program) == 0 else { throw TestFailure("symlink: errno \(errno)") }
        let script = ["-c", "echo up >&2; read -r _"]
        let collector = Collector(options: CollectorOptions())
        var running: [Child] = []
        defer { for child in running { child.stop() } }

        func start(_ count: Int) async throws -> [Child] {
            var started: [Child] = []
            for _ in 0..<count {
                let child = try Child(program, script, pipeStandardError: true, pipeStandardInput: true)
                started.append(child)
                running.append(child)
            }
            for child in started {
                try #require(await child.standardErrorLine(containing: "up", within: 60) != nil, "worker \(child.pid) never started")
            }
            return started
        }

        _ = try await start(1)  // the one that stays: the app is never without a process
        var previous: [String: Double] = [:]
        var churnSeries: Set<String>?
        var faults: [Double] = []
        var totals: [Int] = []
        var decreases: [String] = []

        /// One scrape: checks and records what the test follows; answers the app's processes.
        func scrape() async throws -> Int {
            let text = try await scrapeOnAThread(collector)
            let lines = text.split(separator: "\n").filter { $0.first != "#" }
            totals.append(lines.count)
            var counters: [String: Double] = [:]
            for line in lines {
                guard let space = line.lastIndex(of: " "), line.prefix(while: { $0 != "{" && $0 != " " }).hasSuffix("_total"),
                    let value = Double(line[line.index(after: space)...])
                else { continue }
                counters[String(line[..<space])] = value
            }
            for (series, value) in counters {
                if let before = previous[series], value < before { decreases.append("\(series): \(before) then \(value)") }
            }
            previous = counters
            let mine = Set(lines.filter { $0.contains("app=\"mp-churn\"") }.map { String($0[..<($0.lastIndex(of: " ") ?? $0.endIndex)]) })
            if let churnSeries { #expect(mine == churnSeries, "the app's series changed") } else { churnSeries = mine }
            #expect(!mine.contains { $0.contains("pid=") })
            faults.append(samples(of: "mempressure_app_page_faults_total", in: text).filter { $0.labels.contains("app=\"mp-churn\"") && $0.labels.hasSuffix("kind=\"minor\"") }.compactMap { Double($0.value) }.reduce(0, +))
            return samples(of: "mempressure_app_processes", in: text).filter { $0.labels.contains("app=\"mp-churn\"") }.compactMap { Int($0.value) }.reduce(0, +)
        }

        #expect(try await scrape() == 1)
        var workers = 0
        for round in 0..<10 {
            let batch = try await start(100)
            workers += batch.count
            #expect(try await scrape() == 101, "round \(round): all 100 running")
            if round == 0 {
                // The same machine with the pid label: a series per worker.
                var withPID = CollectorOptions()
                withPID.pidLabel = true
                let text = try await scrapeOnAThread(Collector(options: withPID))
                let series = samples(of: "mempressure_app_footprint_bytes", in: text).filter { $0.labels.contains("app=\"mp-churn\"") }
                #expect(series.count == 101, "with --pid-label: \(series.count) series")
            }
            for child in batch { child.stop() }
            running.removeAll { child in batch.contains { $0 === child } }
            #expect(try await scrape() == 1, "round \(round): the 100 reaped")
        }
        #expect(workers == 1000)
        #expect(decreases.isEmpty, "counters that went down: \(decreases.prefix(20))")
        // 8 memory gauges, processes, CPU (user, system), faults (minor, major), I/O (read, write).
        #expect(churnSeries?.count == 15, "the app's series: \(churnSeries?.sorted() ?? [])")
        // Each round's exited workers stay counted: the faults after a round exceed those before it.
        for round in 0..<10 {
            let before = faults[2 * round], after = faults[2 * round + 2]
            #expect(after > before, "round \(round): faults \(before) before, \(after) after its 100 workers exited")
        }
        print("series in the whole scrape over the run (other work on the machine included): \(totals.min() ?? 0) to \(totals.max() ?? 0); mp-churn's faults: \(faults.first ?? 0) to \(faults.last ?? 0)")
    }
}

/// A scrape of `collector` on a thread of its own (it blocks on /proc), in the Prometheus text format.
func scrapeOnAThread(_ collector: Collector) async throws -> String {
    let result = await withCheckedContinuation { (done: CheckedContinuation<Result<[UInt8], CollectionError>, Never>) in
        TestThread.detached { done.resume(returning: Result { () throws(CollectionError) in try collector.scrape(format: .prometheus) }) }
    }
    return String(decoding: try result.get(), as: UTF8.self)
}
