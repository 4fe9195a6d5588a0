import FoundationEssentials
import Glibc
import MemPressureSystem
import Subprocess
import SystemPackage
import MemPressureTestSupport
import Testing

/// Sources/MemPressureExporter/Operator: the rules, their promtool tests and the Grafana dashboard.
private let operatorDirectory: String = {
    let file = #filePath  // Tests/ExporterTests/OperatorKitTests.swift
    var path = String(file[..<file.lastIndex(of: "/")!])
    for _ in 0..<2 { path = String(path[..<path.lastIndex(of: "/")!]) }
    return path + "/Sources/MemPressureExporter/Operator"
}()

private let promtoolInstalled = installed("promtool")

/// What ships for operators, checked against promtool and against what the exporter really writes.
@Suite(.serialized) struct OperatorKitTests {
    @Test(.enabled(if: promtoolInstalled, "needs promtool (Debian's prometheus package): `make test` installs it"))
    func theShippedRulesPassTheirPromtoolTests() async throws {
        let check = try await promtool(["check", "rules", operatorDirectory + "/mempressure.rules.yml"])
        #expect(check.status == 0, "promtool check rules: \(check.output)")
        let tests = try await promtool(["test", "rules", operatorDirectory + "/mempressure.rules.test.yml"])
        #expect(tests.status == 0 && tests.output.contains("SUCCESS"), "promtool test rules: \(tests.output)")
    }

    /// Every metric the dashboard's queries and the rules name is in a real scrape of
    /// `supervise --export` with an app launched (so the supervisor's families are there) and a
    /// process of the test in a memory cgroup with a limit (so the limit family is there); every
    /// query parses as PromQL (promtool, with Grafana's variables replaced).
    @Test(.enabled(if: promtoolInstalled, "needs promtool (Debian's prometheus package): `make test` installs it"))
    func theDashboardAndTheRulesNameOnlyMetricsAScrapeHolds() async throws {
        let dashboard = try JSONDecoder().decode(JSONValue.self, from: Data(try ProcFS.readBytes(operatorDirectory + "/grafana-dashboard.json")))
        var queries: [String] = []
        dashboard.collectQueries(into: &queries)
        #expect(queries.count >= 20, "queries found in the dashboard: \(queries)")
        let rules = String(decoding: try ProcFS.readBytes(operatorDirectory + "/mempressure.rules.yml"), as: UTF8.self)
        let recorded = Set(rules.split(separator: "\n").compactMap { line -> String? in
            let t = line.drop { $0 == " " }
            return t.hasPrefix("- record: ") ? String(t.dropFirst("- record: ".count)) : nil
        })
        #expect(recorded.count >= 5)

        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        // Each query, with Grafana's variables given values, as a recording rule promtool parses.
        var parsed = "groups:\n  - name: dashboard\n    rules:\n"
        for (i, query) in queries.enumerated() {
            var q = query.replacing("$__rate_interval", with: "5m")
            for v in ["$instance", "$app", "$job"] { q = q.replacing(v, with: ".+") }
            if q.hasPrefix("label_values("), let comma = q.lastIndex(of: ",") { q = String(q.dropFirst("label_values(".count)[..<comma]) }
            let quoted = q.replacing("\\", with: "\\\\").replacing("\"", with: "\\\"")
            parsed += "      - record: dashboard_query_\(i)\n        expr: \"\(quoted)\"\n"
        }
        try writeText(parsed, to: dir.path + "/dashboard.rules.yml")
        let check = try await promtool(["check", "rules", dir.path + "/dashboard.rules.yml"])
        #expect(check.status == 0, "the dashboard's queries do not all parse: \(check.output)")

        let scraped = try await withLimitedCgroup { try await scrapeOfASupervisor(dir.path) }
        let names = sampleNames(scraped)
        var named = Set<String>()
        for query in queries { named.formUnion(metricNames(in: query)) }
        #expect(named.count >= 25, "metrics the dashboard names: \(named.sorted())")
        for name in named.sorted() {
            #expect(names.contains(name), "the dashboard names \(name), which the scrape does not hold")
        }
        for name in metricNames(in: rules).sorted() where !recorded.contains(name) {
            #expect(names.contains(name), "the rules name \(name), which the scrape does not hold")
        }
    }
}

/// A process of the test (a sleep) in a memory cgroup of its own with a 1 GiB limit, for `body`;
/// the process is killed and the cgroup removed after, also when `body` throws. Without cgroup
/// v1's memory controller (cgroup v2 only), `body` runs without it: the limit family then comes
/// from whatever cgroup of the machine has a limit, if any.
private func withLimitedCgroup<T: Sendable>(_ body: () async throws -> T) async throws -> T {
    let root = "/sys/fs/cgroup/memory"
    guard ProcFS.isDirectory(root) else {
        print("no cgroup v1 memory controller at \(root): the scrape's limit family is the machine's own, if any")
        return try await body()
    }
    let path = "\(root)/mempressure-operator-test-\(getpid())"
    guard mkdir(path, 0o755) == 0 else { throw TestFailure("mkdir \(path): errno \(errno)") }
    let child: Child
    do {
        try ProcFS.writeFileInPlace(path + "/memory.limit_in_bytes", Array("\(1 << 30)".utf8))
        child = try Child("/bin/sleep", ["600"])
    } catch {
        rmdir(path)
        throw error
    }
    defer {
        child.stop()
        // The cgroup empties once the sleep is reaped; rmdir fails while it is not.
        if rmdir(path) != 0 { Issue.record("rmdir \(path): errno \(errno)") }
    }
    try ProcFS.writeFileInPlace(path + "/cgroup.procs", Array("\(child.pid)".utf8))
    return try await body()
}

/// `/metrics` of `mempressure supervise --export` with one app launched, in the Prometheus text format.
private func scrapeOfASupervisor(_ directory: String) async throws -> String {
    let runtime = directory + "/rt"
    let outcome = try await withExportingSupervisor(runtime: runtime) { port -> String in
        let launched = try await runMempressure([
            "app", "--dir", runtime, "launch", "W", "--", "mempressure-workload", "--state-mb", "1", "--image-cache-mb", "1", "--data-dir", directory + "/data",
        ])
        #expect(launched.status == 0, "\(launched.standardError)")
        let response = try await get(port: port, "/metrics")
        #expect(response.status == 200)
        return response.text
    }
    #expect(outcome.status == .exited(0), "\(outcome.status)")
    return outcome.value
}

/// `promtool` with `arguments`: its exit status and what it printed.
private func promtool(_ arguments: [String]) async throws -> (status: Int32, output: String) {
    let result = try await Subprocess.run(.path("/usr/bin/promtool"), arguments: Arguments(arguments), output: .string(limit: 1 << 20), error: .string(limit: 1 << 20))
    let status: Int32 = if case .exited(let code) = result.terminationStatus { code } else { -1 }
    return (status, result.standardOutput + result.standardError)
}

/// The names of the samples in a Prometheus-text exposition (histograms' `_bucket`, `_sum`, `_count` included).
private func sampleNames(_ exposition: String) -> Set<String> {
    Set(exposition.split(separator: "\n").compactMap { line -> String? in
        guard line.first != "#" else { return nil }
        return String(line.prefix { $0 != "{" && $0 != " " })
    })
}

/// The metric names a PromQL text holds: identifiers starting `mempressure_` or `process_`, and
/// recording rules' names (with a colon) that mention one, outside quoted strings.
func metricNames(in promQL: String) -> Set<String> {
    var names = Set<String>()
    var token = ""
    var quoted = false
    func flush() {
        if token.contains("mempressure_") || token.hasPrefix("process_") { names.insert(token) }
        token = ""
    }
    for c in promQL {
        if c == "\"" { quoted.toggle(); token = ""; continue }
        if quoted { continue }
        if c.isLetter || c.isNumber || c == "_" || c == ":" {
            token.append(c)
        } else {
            flush()
        }
    }
    flush()
    return names
}

/// Any JSON value, to walk a Grafana dashboard without a model of all of it.
private indirect enum JSONValue: Decodable {
    case object([String: JSONValue])
    case array([JSONValue])
    case string(String)
    case other

    init(from decoder: any Decoder) throws {
        let c = try decoder.singleValueContainer()
        if let o = try? c.decode([String: JSONValue].self) {
            self = .object(o)
        } else if let a = try? c.decode([JSONValue].self) {
            self = .array(a)
        } else if let s = try? c.decode(String.self) {
            self = .string(s)
        } else {
            self = .other
        }
    }

    /// The panels' `expr`s and the template variables' `query`s (a string, or `{query: ...}`).
    func collectQueries(into queries: inout [String]) {
        switch self {
        case .object(let o):
            for key in o.keys.sorted() {
                guard let value = o[key] else { continue }
                switch (key, value) {
                case ("expr", .string(let s)): queries.append(s)
                case ("query", .string(let s)) where s.contains("("): queries.append(s)
                case ("query", .object(let q)): if case .string(let s)? = q["query"] { queries.append(s) }
                default: value.collectQueries(into: &queries)
                }
            }
        case .array(let a):
            for v in a { v.collectQueries(into: &queries) }
        case .string, .other:
            return
        }
    }
}
