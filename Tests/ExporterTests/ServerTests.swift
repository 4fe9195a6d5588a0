import MemPressureExporter
import MemPressureExporterServer
import Glibc
import InMemoryLogging
import Logging
import MemPressureSystem
import Prometheus
import ServiceLifecycle
import Synchronization
import MemPressureTestSupport
import Testing
import MemPressureVMTracker

/// The exporter in this process, on a port the kernel chose, logging at debug level into `log`;
/// stopped gracefully at the end.
private func withExporter<R: Sendable>(
    _ configure: (inout ExporterConfiguration) -> Void = { _ in }, registry: PrometheusCollectorRegistry? = nil,
    log: InMemoryLogHandler = InMemoryLogHandler(), _ body: (Int) async throws -> R
) async throws -> R {
    let (ports, continuation) = AsyncStream<Int>.makeStream()
    var configuration = ExporterConfiguration()
    configuration.port = 0
    var logger = Logger(label: "mempressure.export.test") { _ in log }
    logger.logLevel = .debug
    configuration.logger = logger
    configure(&configuration)
    configuration.onListening = { _, port in continuation.yield(port) }
    let group = ServiceGroup(configuration: .init(services: [ExporterService(configuration: configuration, registry: registry)], logger: logger))
    let running = Task { try await group.run() }
    defer { running.cancel() }
    guard let port = await first(of: ports, within: 30) else {
        await group.triggerGracefulShutdown()
        throw TestFailure("the exporter did not start listening")
    }
    do {
        let result = try await body(port)
        await group.triggerGracefulShutdown()
        try await running.value
        return result
    } catch {
        await group.triggerGracefulShutdown()
        throw error
    }
}

@Suite struct ServerTests {
    @Test func servesMetricsInTheFormatAskedForWithTheRegistry() async throws {
        let registry = PrometheusCollectorRegistry()
        registry.makeCounter(descriptor: MetricNameDescriptor(metricName: "test_widgets", unitName: "", helpText: "Widgets \"made\" here."), labels: [("kind", "round")]).increment(by: Int64(3))
        let log = InMemoryLogHandler()
        try await withExporter({ $0.collector.pidLabel = true }, registry: registry, log: log) { port in
            let text = try await get(port: port, "/metrics")
            #expect(text.status == 200)
            #expect(text.header("content-type") == "text/plain; version=0.0.4; charset=utf-8")
            #expect(text.text.contains("# TYPE mempressure_app_footprint_bytes gauge\n"))
            #expect(text.text.contains("# TYPE mempressure_app_cpu_seconds_total counter\n"))
            #expect(text.text.contains("# HELP test_widgets Widgets \"made\" here.\n# TYPE test_widgets counter\ntest_widgets{kind=\"round\"} 3\n"))
            #expect(!text.text.contains("# EOF"))
            // Our own process: its /proc/PID/io is readable, so its app has both directions.
            let io = samples(of: "mempressure_app_io_bytes_total", in: text.text).filter { $0.labels.contains("pid=\"\(getpid())\"") }
            #expect(io.map { $0.labels.hasSuffix("direction=\"read\"") } == [true, false])

            let om = try await get(port: port, "/metrics", accept: "application/openmetrics-text;version=1.0.0,text/plain;version=0.0.4;q=0.5")
            #expect(om.status == 200)
            #expect(om.header("content-type") == "application/openmetrics-text; version=1.0.0; charset=utf-8")
            #expect(om.text.hasSuffix("# EOF\n"))
            #expect(om.text.contains("# TYPE mempressure_app_cpu_seconds counter\n"))
            #expect(om.text.contains("# HELP test_widgets Widgets \\\"made\\\" here.\n# TYPE test_widgets counter\ntest_widgets_total{kind=\"round\"} 3\n"))
            // Our own process is an app of this machine, with its PID as a label.
            #expect(om.text.contains("pid=\"\(getpid())\""))
            // At debug level, a line per scrape served: its format and size.
            let served = log.entries.filter { $0.level == .debug && $0.message.description == "scrape served" }
            #expect(served.map { $0.metadata["format"]?.description } == ["prometheus", "openmetrics"])
            #expect(served.map { $0.metadata["bytes"]?.description } == ["\(text.body.count)", "\(om.body.count)"])
        }
    }

    @Test func noPIDLabelByDefaultAndTheExportersOwnFamilies() async throws {
        try await withExporter { port in
            let text = try await get(port: port, "/metrics").text
            #expect(!text.contains("pid=\""))
            // Our own process is an app of this machine, without its PID.
            #expect(samples(of: "mempressure_app_footprint_bytes", in: text).contains { $0.labels.contains("cgroup=") })
            let build = samples(of: "mempressure_build_info", in: text)
            #expect(build.count == 1 && build.first?.value == "1")
            #expect(build.first?.labels.hasPrefix("version=\"unknown\",swift_version=\"6.") == true, "\(build)")
            // The exporter's own process (this one): the standard names, with figures /proc agrees with.
            for name in ["process_cpu_seconds_total", "process_resident_memory_bytes", "process_virtual_memory_bytes", "process_open_fds", "process_max_fds", "process_start_time_seconds"] {
                let values = samples(of: name, in: text)
                #expect(values.count == 1 && values[0].labels.isEmpty, "\(name): \(values)")
                #expect((Double(values.first?.value ?? "") ?? 0) > 0, "\(name): \(values)")
            }
            var limit = rlimit()
            getrlimit(__rlimit_resource_t(RLIMIT_NOFILE.rawValue), &limit)
            #expect(samples(of: "process_max_fds", in: text).first?.value == "\(limit.rlim_cur)")
            let started = Double(samples(of: "process_start_time_seconds", in: text).first?.value ?? "") ?? 0
            let now = Double(time(nil))
            #expect(started <= now + 1 && started > now - 86400 * 30, "started at \(started), now \(now)")
        }
    }

    @Test func headAnswersAsGetWithoutTheBodyAndGzipIsGivenToWhoAsks() async throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let log = InMemoryLogHandler()
        try await withExporter(log: log) { port in
            for path in ["/metrics", "/"] {
                let request = "HEAD \(path) HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n"
                let raw = try #require(await exchange(port: port, Array(request.utf8)), "no answer to HEAD \(path)")
                let head = try parseResponse(raw)
                #expect(head.status == 200, "HEAD \(path)")
                #expect(head.body.isEmpty, "HEAD \(path) has a body of \(head.body.count) bytes")
                let get = try await get(port: port, path)
                #expect(head.header("content-type") == get.header("content-type"))
                // The length of what a GET would have sent: the page's, or the scrape's the HEAD
                // made (the machine changes between two scrapes: the log says what each served).
                let length = try #require(Int(head.header("content-length") ?? ""), "HEAD \(path): no Content-Length")
                if path == "/" {
                    #expect(length == get.body.count)
                } else {
                    let served = log.entries.filter { $0.message.description == "scrape served" }.compactMap { $0.metadata["bytes"]?.description }
                    #expect(served == ["\(length)", "\(get.body.count)"])
                }
            }

            let request = "GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept-Encoding: gzip\r\nConnection: close\r\n\r\n"
            let zipped = try parseResponse(try #require(await exchange(port: port, Array(request.utf8))))
            #expect(zipped.status == 200)
            #expect(zipped.header("content-encoding") == "gzip")
            #expect(zipped.header("vary")?.contains("Accept-Encoding") == true)
            #expect(zipped.body.starts(with: [0x1f, 0x8b]))
            // gzip itself reads it back to the exposition.
            let unzipped = String(decoding: try await gunzip(zipped.body, in: dir.path), as: UTF8.self)
            #expect(unzipped.hasPrefix("# HELP mempressure_memory_total_bytes "))
            #expect(unzipped.contains("\n# TYPE mempressure_app_footprint_bytes gauge\n"))
            #expect(zipped.body.count * 3 < unzipped.utf8.count, "gzipped \(zipped.body.count) bytes of \(unzipped.utf8.count)")
            // Without the header, or refusing gzip: plain text.
            let plain = try await get(port: port, "/metrics")
            #expect(plain.header("content-encoding") == nil)
            let refused = "GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept-Encoding: gzip;q=0, identity\r\nConnection: close\r\n\r\n"
            let identity = try parseResponse(try #require(await exchange(port: port, Array(refused.utf8))))
            #expect(identity.header("content-encoding") == nil && identity.text.hasPrefix("# HELP "))
        }
    }

    @Test func answersOtherPathsAndGarbageAndKeepsServing() async throws {
        try await withExporter { port in
            let index = try await get(port: port, "/")
            #expect(index.text.contains("<a href=\"/metrics\">"))
            let missing = try await get(port: port, "/nope")
            #expect(missing.status == 404)
            let garbage: [[UInt8]] = [
                Array("GARBAGE\r\n\r\n".utf8), [0, 1, 2, 0xff, 0xfe, 13, 10, 13, 10],
                Array("GET /metrics HTTP/9.9\r\nHost: x\r\n\r\n".utf8),
                Array("GET /metrics HTTP/1.1\r\nContent-Length: -5\r\n\r\n".utf8),
                Array(repeating: UInt8(ascii: "A"), count: 200_000),
                Array("GET /metrics HTTP/1.1\r\nHost: x\r\n".utf8),  // cut short
            ]
            for request in garbage {
                _ = await exchange(port: port, request, halfClose: true)  // whatever it answers, if anything
                let after = try await get(port: port, "/metrics")
                #expect(after.status == 200)
            }
        }
    }

    @Test func aFailedCollectionAnswers500WithTheReasonAndTheServerGoesOn() async throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let log = InMemoryLogHandler()
        try await withExporter({ $0.collector.procRoot = dir.path }, log: log) { port in
            for _ in 0..<2 {
                let r = try await get(port: port, "/metrics")
                #expect(r.status == 500)
                #expect(r.text.contains("\(dir.path)/meminfo"))
            }
            let index = try await get(port: port, "/")
            #expect(index.status == 200)
        }
        // Each failed scrape is an error in the log, naming what could not be read.
        let failures = log.entries.filter { $0.level == .error && $0.message.description.hasPrefix("scrape failed:") }
        #expect(failures.count == 2)
        #expect(failures.allSatisfy { $0.message.description.contains("\(dir.path)/meminfo") })
    }

    @Test func anAddressInUseIsAClearError() async throws {
        try await withExporter { port in
            var configuration = ExporterConfiguration()
            configuration.port = port
            var logger = configuration.logger
            logger.logLevel = .critical
            configuration.logger = logger
            do {
                try await ExporterService(configuration: configuration).run()
                Issue.record("a second exporter listened on the same port")
            } catch let error as ExporterError {
                #expect(error.description.hasPrefix("cannot listen on 127.0.0.1:\(port): "))
                #expect(error.description.contains("in use"))
            }
        }
    }
}

@Suite struct CollectorTests {
    /// The captured /proc fixtures plus a meminfo and a PSI file: a scrape of a known machine.
    @Test func scrapeOfFixtures() throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let proc = dir.path + "/proc"
        try ProcFS.makeDirectory(proc)
        for pid in try ProcFS(root: Fixtures.procRoot).pids() { try copyTree("\(Fixtures.procRoot)/\(pid)", to: "\(proc)/\(pid)") }
        try writeText("MemTotal:       1000 kB\nMemAvailable:    100 kB\n", to: proc + "/meminfo")
        try ProcFS.makeDirectory(proc + "/pressure")
        try writeText("some avg10=8.00 avg60=0.00 avg300=0.00 total=2500000\nfull avg10=0.00 avg60=0.00 avg300=0.00 total=1000\n", to: proc + "/pressure/memory")
        var options = CollectorOptions()
        options.procRoot = proc
        options.cgroupRoot = dir.path + "/no-cgroups"
        options.grouping = .process
        options.pidLabel = true
        let text = String(decoding: try Collector(options: options).scrape(format: .prometheus), as: UTF8.self)
        #expect(text.contains("mempressure_memory_total_bytes 1024000\n"))
        #expect(text.contains("mempressure_memory_pressure_stall_seconds_total{kind=\"some\"} 2.5\n"))
        // avg10 some 8% is above the warning trigger (70 ms per 1 s); MemAvailable 10% too.
        #expect(text.contains("mempressure_pressure_level{source=\"psi\",level=\"warning\"} 1\n"))
        #expect(text.contains("mempressure_pressure_level{source=\"memavailable\",level=\"warning\"} 1\n"))
        #expect(text.contains("mempressure_pressure_level{source=\"merged\",level=\"normal\"} 0\n"))
        let machine = try Snapshotter(proc: ProcFS(root: proc)).machine(options: SnapshotOptions(detail: .rollup))
        let footprints = samples(of: "mempressure_app_footprint_bytes", in: text)
        #expect(footprints.count == machine.processes.count)
        for p in machine.processes {
            let series = footprints.filter { $0.labels.contains("pid=\"\(p.pid)\"") }
            #expect(series.map(\.value) == ["\(p.totals.footprint)"])
        }
        // Twice the same machine, the same bytes but for the scrape's own duration.
        let again = String(decoding: try Collector(options: options).scrape(format: .prometheus), as: UTF8.self)
        func stable(_ s: String) -> [Substring] { s.split(separator: "\n").filter { !$0.hasPrefix("mempressure_scrape_duration_seconds ") } }
        #expect(stable(text) == stable(again))
        // A PSI file that says nothing readable: the scrape goes on, without PSI figures.
        try writeText("some garbage\n", to: proc + "/pressure/memory")
        let noPSI = String(decoding: try Collector(options: options).scrape(format: .prometheus), as: UTF8.self)
        #expect(!noPSI.contains("source=\"psi\"") && !noPSI.contains("mempressure_memory_pressure_stall_seconds_total{"))
        #expect(noPSI.contains("mempressure_pressure_level{source=\"memavailable\",level=\"warning\"} 1\n"))
    }

    /// I/O is read only from the process the snapshot saw: a PID whose start time is not the
    /// snapshot's (a reused PID) gets no I/O figures, the same PID with its own start time does.
    @Test func ioIsReadOnlyFromTheProcessTheSnapshotSaw() throws {
        let child = try Child("/bin/sleep", ["600"])
        defer { _ = child.stop() }
        let proc = ProcFS()
        var buffer = ReadBuffer()
        try proc.open(child.pid).read("stat", into: &buffer)
        let ticks = try buffer.withBytes { (b) throws(ProcError) in try ProcessStat.parse(b, pid: child.pid) }.startTicks
        let ios = Collector.readIO([(child.pid, ticks), (child.pid, ticks + 1), (child.pid, ticks &- 1)], proc: proc, workers: 2)
        #expect(ios[0] != nil)
        #expect(ios[1] == nil)
        #expect(ios[2] == nil)
    }

    /// The v2 layout captured for `top --group-by cgroup` (Fixtures/cgroup-v2): apps and
    /// cgroups carry the unit, pod and container their paths name, and the cgroups' own figures.
    @Test func cgroupIdentitiesAndFiguresOnAV2Layout() throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let fixtures = Fixtures.directory + "/cgroup-v2"
        let proc = dir.path + "/proc"
        try ProcFS.makeDirectory(proc)
        for pid in try ProcFS(root: fixtures + "/proc").pids() { try copyTree("\(fixtures)/proc/\(pid)", to: "\(proc)/\(pid)") }
        try writeText("MemTotal:       1000 kB\nMemAvailable:    900 kB\n", to: proc + "/meminfo")
        var options = CollectorOptions()
        options.procRoot = proc
        options.cgroupRoot = fixtures + "/cgroup"
        options.grouping = .cgroup
        let text = String(decoding: try Collector(options: options).scrape(format: .prometheus), as: UTF8.self)
        let nginx = #"cgroup="/system.slice/nginx.service",unit="nginx.service""#
        #expect(text.contains("mempressure_cgroup_memory_usage_bytes{\(nginx)} 8388608\n"))
        #expect(!text.contains("mempressure_cgroup_memory_limit_bytes{\(nginx)}"))  // max: unlimited
        #expect(text.contains("mempressure_cgroup_oom_kills_total{\(nginx)} 0\n"))
        #expect(text.contains("mempressure_cgroup_memory_stat_bytes{\(nginx),kind=\"anon\"} 4194304\n"))
        #expect(text.contains("mempressure_cgroup_memory_stat_bytes{\(nginx),kind=\"file\"} 3145728\n"))
        let apps = samples(of: "mempressure_app_footprint_bytes", in: text)
        #expect(apps.contains { $0.labels.hasSuffix(nginx) && $0.labels.hasPrefix("app=\"nginx.service\"") })
        #expect(apps.contains {
            $0.labels.contains(#"pod="9c1f6a5e-2b4d-4e8a-a6f1-3d2c8b7e5f10",container="5b0c4a1e9f7d3c2b8a6e4d1f0c9b8a7e6d5c4b3a2f1e0d9c8b7a6f5e4d3c2b1a""#)
        })
    }
}
