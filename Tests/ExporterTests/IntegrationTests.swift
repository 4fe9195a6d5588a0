import MemPressureExporter
import FoundationEssentials
import Glibc
import MemPressureSystem
import MemPressureHogClient
import Synchronization
import MemPressureTestSupport
import Testing

/// Debian's prometheus package gives both; `make test` installs it (Makefile: test-deps).
private let prometheusInstalled = installed("prometheus") && installed("promtool")

/// Whole processes: the built `mempressure export`, a real Prometheus, children of the test.
/// One at a time (a Prometheus server and scrapes of the whole machine each).
@Suite(.serialized) struct ExporterIntegrationTests {
    @Test(.enabled(if: prometheusInstalled, "needs Debian's prometheus package (prometheus and promtool): `make test` installs it"))
    func prometheusScrapesTheExporterAndSeesAHogsFootprint() async throws {
        let dir = try TemporaryDirectory("mempressure-prometheus")
        defer { dir.remove() }
        try await Hog.with(["--dirty", "24m"]) { hog in
            let before = try await vmFootprint(hog.pid)
            // At debug level the exporter logs a line per scrape it serves: the real event.
            let exporter = try ExporterProcess(["--log-level", "debug", "--pid-label"])
            defer { exporter.stop() }
            let port = try freePort()
            // A scrape reads every process of the machine: on a busy machine (a debug build,
            // both CPUs taken) it can take seconds, and a timed-out scrape is `up 0`: Prometheus'
            // own default timeout, 10 s, is given.
            try writeText(
                """
                global:
                  scrape_interval: 10s
                  scrape_timeout: 10s
                  evaluation_interval: 10s
                scrape_configs:
                  - job_name: mempressure
                    static_configs:
                      - targets: ['127.0.0.1:\(exporter.port)']

                """, to: dir.path + "/prometheus.yml")
            let prometheus = try Child(
                "/usr/bin/prometheus",
                [
                    "--config.file=\(dir.path)/prometheus.yml", "--storage.tsdb.path=\(dir.path)/data",
                    "--web.listen-address=127.0.0.1:\(port)",
                ], logFile: dir.path + "/prometheus.log")
            defer { prometheus.stop() }

            // Prometheus scrapes the exporter (asking for OpenMetrics first, so this is its
            // OpenMetrics parser reading our exposition). A scrape's samples are committed before
            // its scrape loop asks again, so once a scrape has been served the one before it is
            // in Prometheus: after each scrape (at most 30), ask whether it took the exporter as
            // up and holds the hog's series.
            var found: PromSample?
            var served = 0
            var lastAnswer = "none"
            while found == nil && served < 30 {
                let line = await exporter.child.standardErrorLine(containing: "scrape served", within: 90)
                try #require(line != nil, "the exporter served no scrape (\(served) so far)")
                served += 1
                guard served >= 2 else { continue }
                do {
                    let up = try await query(port: port, "up{job=\"mempressure\"}").first?.value
                    lastAnswer = "up: \(up ?? "no sample")"
                    guard up == "1" else { continue }
                    found = try await query(port: port, "mempressure_app_footprint_bytes{pid=\"\(hog.pid)\"}").first
                } catch {
                    lastAnswer = "\(error)"  // Prometheus' API not answering yet: the next scrape asks again
                }
            }
            let log = String(decoding: try ProcFS.readBytes(dir.path + "/prometheus.log").suffix(2000), as: UTF8.self)
            let sample = try #require(found, "after \(served) scrapes, Prometheus holds no mempressure_app_footprint_bytes{pid=\"\(hog.pid)\"} (last answer: \(lastAnswer)); its log ends: \(log)")
            let after = try await vmFootprint(hog.pid)
            #expect(sample.metric["app"] == "mempressure-hog")
            #expect(sample.metric["job"] == "mempressure")
            let value = try #require(UInt64(sample.value))
            // Equal to what `vm --json` reports, within what changed between the two reads.
            #expect(value >= min(before, after) && value <= max(before, after), "Prometheus: \(value), vm --json before: \(before), after: \(after)")
            #expect(value >= 24 << 20)
            print("hog \(hog.pid) footprint: Prometheus \(value), vm --json before \(before), after \(after)")
        }
    }

    @Test(.enabled(if: prometheusInstalled, "needs Debian's prometheus package (prometheus and promtool): `make test` installs it"))
    func promtoolFindsNothingToSayAboutAScrape() async throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let exporter = try ExporterProcess(["--region-types-for", "mempressure*"])
        defer { exporter.stop() }
        let text = try await get(port: exporter.port, "/metrics")
        #expect(text.status == 200)
        #expect(text.text.contains("mempressure_app_region_type_bytes{"))
        let check = try await promtoolCheck(text.body, in: dir.path)
        #expect(check.status == 0 && check.output.isEmpty, "promtool: \(check.output)")

        // promtool 2.42 reads the Prometheus text format only (an OpenMetrics counter's HELP,
        // named without _total, reads to it as a family without help): OpenMetrics is checked
        // by Prometheus' own parser in the scrape test, and its shape here.
        let om = try await get(port: exporter.port, "/metrics", accept: "application/openmetrics-text;version=1.0.0")
        #expect(om.status == 200)
        #expect(om.text.hasSuffix("\n# EOF\n"))
        #expect(!om.text.contains("# TYPE mempressure_app_cpu_seconds_total"))
        #expect(om.text.contains("# TYPE mempressure_app_cpu_seconds counter\n"))
        #expect(String(validating: om.body, as: UTF8.self) != nil)
    }

    @Test(.enabled(if: prometheusInstalled, "needs Debian's prometheus package (prometheus and promtool): `make test` installs it"))
    func aHostileProcessNameSurvivesIntoAValidLabel() async throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        // Quotes, a backslash, a newline, bytes that are not UTF-8, and what looks like our escape.
        let name: [UInt8] = [0x71, 0x22, 0x5c, 0xff, 0xfe, 0x5c, 0x78, 0x66, 0x66, 0x22, 0x0a]
        // Only a process itself may rename itself (/proc/PID/comm of another is EINVAL): a
        // shell of ours writes its own comm with printf (q"\\\xff\xfe\\xff"\n in printf's
        // escapes), says so on its standard error, then waits on its standard input, a pipe that
        // stop() closes. The newline is last because bash's printf writes up to each newline in a
        // write of its own (and each write to comm replaces the name).
        let child = try Child(
            "/bin/bash", ["-c", #"printf "$1" > /proc/$$/comm && echo renamed >&2 && read -r _"#, "bash", #"q"\\\xff\xfe\\xff"\n"#],
            pipeStandardError: true, pipeStandardInput: true)
        defer { child.stop() }
        try #require(await child.standardErrorLine(containing: "renamed", within: 30) != nil, "the shell never said it renamed itself")
        var comm = try ProcFS.readBytes("/proc/\(child.pid)/comm")
        if comm.last == 0x0a { comm.removeLast() }
        try #require(comm == name, "the child's comm is \(comm), not the hostile name")

        let exporter = try ExporterProcess(["--pid-label"])
        defer { exporter.stop() }
        let scrape = try await get(port: exporter.port, "/metrics")
        #expect(scrape.status == 200)
        let check = try await promtoolCheck(scrape.body, in: dir.path)
        #expect(check.status == 0 && check.output.isEmpty, "promtool: \(check.output)")
        let series = samples(of: "mempressure_app_footprint_bytes", in: scrape.text).filter { $0.labels.contains("pid=\"\(child.pid)\"") }
        try #require(series.count == 1)
        let label = try #require(labelValue("app", in: series[0].labels))
        // The documented text: UTF-8 kept, a backslash doubled, other bytes \xNN; it reads back.
        #expect(label == Array(#"q"\\\xff\xfe\\xff""#.utf8) + [0x0a])
        #expect(Exposition.bytes(fromLabelText: label) == name)
    }

    @Test func stopsOnSIGTERMAndSaysWhyItCannotListen() async throws {
        let exporter = try ExporterProcess()
        defer { exporter.stop() }
        let ok = try await get(port: exporter.port, "/metrics")
        #expect(ok.status == 200)
        // Another exporter on the same port, and one on a host that does not resolve.
        let inUse = try await runMempressure(["export", "--listen", "127.0.0.1:\(exporter.port)"])
        #expect(inUse.status == 1)
        #expect(inUse.standardError.hasPrefix("mempressure: cannot listen on 127.0.0.1:\(exporter.port): "))
        #expect(inUse.standardError.contains("in use"))
        #expect(inUse.standardError.split(separator: "\n").count == 1)
        let unknown = try await runMempressure(["export", "--listen", "no-such-host.invalid:29464"])
        #expect(unknown.status == 1)
        #expect(unknown.standardError.hasPrefix("mempressure: cannot listen on 'no-such-host.invalid': "))
        let bad = try await runMempressure(["export", "--listen", "29464"])
        #expect(bad.status != 0)
        #expect(bad.standardError.contains("expected HOST:PORT"))
        // Graceful shutdown: SIGTERM ends it with status 0.
        let status = exporter.child.stop(SIGTERM)
        #expect(status & 0x7f == 0 && (status >> 8) & 0xff == 0, "wait status \(status)")
    }

    @Test func topPrintsTheExpositionOnce() async throws {
        let r = try await runMempressure(["top", "--format", "openmetrics"])
        #expect(r.status == 0)
        #expect(r.standardOutput.hasSuffix("\n# EOF\n"))
        #expect(r.standardOutput.contains("mempressure_app_footprint_bytes{app=\"mempressure\""))
        // The table's filters are refused rather than silently ignored.
        let filtered = try await runMempressure(["top", "--format", "openmetrics", "--match", "x*"])
        #expect(filtered.status != 0 && filtered.standardError.contains("exposes every app"))
    }

    @Test func processesExitingDuringScrapesNeverFailAScrape() async throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let exporter = try ExporterProcess(["--region-types-for", "true"])
        defer { exporter.stop() }
        // A thread starting and reaping short-lived children of the test until told to stop.
        let stop = Atomic<Bool>(false)
        let started = Atomic<Int>(0)
        let churn = TestThread {
            let argv: [UnsafeMutablePointer<CChar>?] = [strdup("/bin/true"), nil]
            defer { free(argv[0]) }
            while !stop.load(ordering: .relaxed) {
                var pid: pid_t = 0
                guard posix_spawn(&pid, "/bin/true", nil, nil, argv, environ) == 0 else { continue }
                started.add(1, ordering: .relaxed)
                var status: Int32 = 0
                _ = retryOnInterrupt { waitpid(pid, &status, 0) }
            }
        }
        defer {
            stop.store(true, ordering: .relaxed)
            churn.join()
        }
        var exited = 0
        for i in 0..<16 {
            let om = i % 2 == 0
            let r = try await get(port: exporter.port, "/metrics", accept: om ? "application/openmetrics-text;version=1.0.0" : nil)
            #expect(r.status == 200, "scrape \(i): \(r.status) \(r.text.prefix(300))")
            if om {
                #expect(r.text.hasSuffix("# EOF\n"))
            } else if prometheusInstalled {
                let check = try await promtoolCheck(r.body, in: dir.path)
                #expect(check.status == 0 && check.output.isEmpty, "promtool: \(check.output)")
            }
            exited += samples(of: "mempressure_scrape_skipped_processes", in: r.text).filter { $0.labels == "reason=\"exited\"" }.compactMap { Int($0.value) }.reduce(0, +)
        }
        #expect(started.load(ordering: .relaxed) > 0)
        // How often a child exited mid-scrape varies with the machine: it is reported, not judged.
        print("processes that exited during the 16 scrapes: \(exited), children started: \(started.load(ordering: .relaxed))")
    }
}

/// One series of a Prometheus instant query.
struct PromSample: Decodable, Sendable {
    var metric: [String: String]
    var value: String

    enum CodingKeys: String, CodingKey { case metric, value }

    init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        metric = try c.decode([String: String].self, forKey: .metric)
        var pair = try c.nestedUnkeyedContainer(forKey: .value)
        _ = try pair.decode(Double.self)  // the time
        value = try pair.decode(String.self)
    }
}

private struct QueryAnswer: Decodable {
    struct Data: Decodable { var result: [PromSample] }
    var status: String
    var data: Data
}

/// An instant query of the Prometheus on `port`.
func query(port: Int, _ expression: String) async throws -> [PromSample] {
    let r = try await get(port: port, "/api/v1/query?query=" + percentEncoded(expression))
    guard r.status == 200 else { throw TestFailure("query \(expression): HTTP \(r.status) \(r.text)") }
    return try JSONDecoder().decode(QueryAnswer.self, from: Data(r.body)).data.result
}

private func percentEncoded(_ text: String) -> String {
    var out = ""
    for byte in text.utf8 {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "_"):
            out.unicodeScalars.append(Unicode.Scalar(byte))
        default:
            let hex = String(byte, radix: 16, uppercase: true)
            out += "%" + (hex.count == 1 ? "0" : "") + hex
        }
    }
    return out
}

/// The footprint `mempressure vm --json --only PID` reports.
func vmFootprint(_ pid: Int32) async throws -> UInt64 {
    struct Report: Decodable {
        struct Totals: Decodable { var footprintBytes: UInt64 }
        var totals: Totals
    }
    let r = try await runMempressure(["vm", "--json", "--only", "\(pid)"])
    guard r.status == 0 else { throw TestFailure("vm --json \(pid): \(r.standardError)") }
    return try JSONDecoder().decode(Report.self, from: Data(r.standardOutput.utf8)).totals.footprintBytes
}

/// The value of label `name` in rendered labels (`a="x",b="y"`), with the format's escapes
/// (`\\`, `\"`, `\n`) undone: the label's text.
func labelValue(_ name: String, in labels: String) -> [UInt8]? {
    let bytes = Array(labels.utf8)
    let prefix = Array((name + "=\"").utf8)
    var i = 0
    while i + prefix.count <= bytes.count {
        if (i == 0 || bytes[i - 1] == UInt8(ascii: ",")) && Array(bytes[i..<i + prefix.count]) == prefix {
            var out: [UInt8] = []
            var j = i + prefix.count
            while j < bytes.count {
                let c = bytes[j]
                if c == UInt8(ascii: "\"") { return out }
                if c == UInt8(ascii: "\\"), j + 1 < bytes.count {
                    let n = bytes[j + 1]
                    out.append(n == UInt8(ascii: "n") ? 0x0a : n)
                    j += 2
                    continue
                }
                out.append(c)
                j += 1
            }
            return nil
        }
        i += 1
    }
    return nil
}
