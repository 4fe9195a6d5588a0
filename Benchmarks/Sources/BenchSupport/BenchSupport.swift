// Shared by the benchmark harnesses: timing, reports (plots are in Gnuplot.swift, progress in
// Progress.swift).

import Foundation
import Glibc
import MemPressureSystem
import SystemPackage

/// Samples of named measurements, in the order they were first taken.
public struct Measurements: Sendable {
    private var samples: [String: [Double]] = [:]
    private var order: [String] = []

    public init() {}

    public mutating func record(_ name: String, _ seconds: Double) {
        if samples[name] == nil { order.append(name) }
        samples[name, default: []].append(seconds)
    }

    public mutating func time(_ name: String, _ body: () throws -> Void) rethrows {
        let start = monotonicSeconds()
        try body()
        record(name, monotonicSeconds() - start)
    }

    public mutating func time(_ name: String, _ body: () async throws -> Void) async rethrows {
        let start = monotonicSeconds()
        try await body()
        record(name, monotonicSeconds() - start)
    }

    public func median(_ name: String) -> Double? {
        guard let s = samples[name]?.sorted(), !s.isEmpty else { return nil }
        return s.count % 2 == 1 ? s[s.count / 2] : (s[s.count / 2 - 1] + s[s.count / 2]) / 2
    }

    public func summaries() -> [Measurement] {
        order.map { name in
            let s = samples[name]!
            return Measurement(name: name, samples: s, medianSeconds: median(name)!, minSeconds: s.min()!)
        }
    }
}

public struct Measurement: Codable, Sendable {
    public var name: String
    public var samples: [Double]
    public var medianSeconds: Double
    public var minSeconds: Double
}

public struct BenchError: Error, CustomStringConvertible {
    public var description: String
    public init(_ d: String) { description = d }
}

public func log(_ tool: String, _ text: String) {
    let line = "\(tool): \(text)\n"
    _ = line.withCString { write(2, $0, strlen($0)) }
}

/// Creates or replaces the file at `path` (mode 0644: reports are published) the project's one
/// way (`CheckedDirectory`: the directory must be this user's or root's, the file is replaced,
/// never written through a link).
public func writeText(_ text: String, to path: String) throws {
    try CheckedDirectory.replaceFile(at: path, with: Array(text.utf8), mode: 0o644)
}

public func kernelRelease() -> String {
    var u = utsname()
    uname(&u)
    return withUnsafeBytes(of: u.release) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
}

public var onlineCPUs: Int { Int(sysconf(Int32(_SC_NPROCESSORS_ONLN))) }

/// A benchmark's report: the JSON holds every sample; the Markdown and the plots are rendered
/// from it (so `--render-only` can rebuild them without measuring).
public protocol RenderedReport: Codable {
    func markdown() -> String
    /// Its plots, drawn by gnuplot from scripts written beside the report.
    func plots() -> [Plot]
}

/// Writes `OUTPUT/NAME.json` and `.md`, and each plot's `.gp` script and the `.svg` gnuplot
/// draws from it; prints the Markdown.
public func writeReport(_ report: some RenderedReport, to output: String, named name: String, tool: String) throws {
    let encoder = JSONEncoder()
    encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
    try writeText(String(decoding: try encoder.encode(report), as: UTF8.self) + "\n", to: "\(output)/\(name).json")
    try writeText(report.markdown(), to: "\(output)/\(name).md")
    let plots = report.plots()
    for plot in plots { try render(plot, in: output) }
    log(tool, "wrote \(output)/\(name).{md,json}" + plots.map { ", \($0.name).{gp,svg}" }.joined())
    print(report.markdown())
}

/// The report a previous run wrote to `OUTPUT/NAME.json`.
public func readReport<Report: RenderedReport>(_ type: Report.Type, from output: String, named name: String) throws -> Report {
    try JSONDecoder().decode(type, from: Data(try ProcFS.readBytes("\(output)/\(name).json")))
}

extension Percentiles {
    /// "p50 (p90, p99)" with `decimals`.
    public func text(_ decimals: Int = 1) -> String {
        "\(ByteFormat.fixed(p50, decimals)) (\(ByteFormat.fixed(p90, decimals)), \(ByteFormat.fixed(p99, decimals)))"
    }

    /// "min / p50 / p90 / max" with `decimals`.
    public func rangeText(_ decimals: Int = 1) -> String {
        [min, p50, p90, max].map { ByteFormat.fixed($0, decimals) }.joined(separator: " / ")
    }
}

/// The machine a report was measured on, in one line.
public func machineLine() -> String {
    var total = "? GiB"
    do {
        let bytes = try ProcFS.readBytes("/proc/meminfo")
        if let t = bytes.withUnsafeBytes({ MemInfo.parse($0) }).totalBytes { total = "\(t >> 30) GiB" }
    } catch {
        total = "? GiB (\(error))"
    }
    return "Linux \(kernelRelease()), \(onlineCPUs) CPUs, \(total) RAM"
}

/// Removes a directory tree of the benchmark's own (plain files and directories).
public func removeTree(_ path: String) {
    do {
        for name in try ProcFS.listDirectory(path) {
            let child = "\(path)/\(String(decoding: name, as: UTF8.self))"
            if ProcFS.isDirectory(child) { removeTree(child) } else { unlink(child) }
        }
    } catch {
        // Already gone.
    }
    rmdir(path)
}

/// Runs `body` as a task that Ctrl-C (SIGINT), SIGTERM or SIGHUP cancels: the benchmark's
/// sections then kill what they started and remove their cgroups and files, and this throws
/// `interrupted`. SIGPIPE is ignored: a reader of the output that goes away (`| head`) makes the
/// writes fail; it does not end the benchmark before its cleanup.
@discardableResult
public func interruptible<T: Sendable>(
    _ body: @escaping @Sendable () async throws -> T,
    interrupted: String = "interrupted: what the benchmark started was killed and removed"
) async throws -> T {
    signal(SIGPIPE, SIG_IGN)
    let work = Task { try await body() }
    signal(SIGINT, SIG_IGN)
    signal(SIGTERM, SIG_IGN)
    signal(SIGHUP, SIG_IGN)
    let sources = [SIGINT, SIGTERM, SIGHUP].map { DispatchSource.makeSignalSource(signal: $0) }
    for source in sources {
        source.setEventHandler { work.cancel() }
        source.resume()
    }
    defer { for s in sources { s.cancel() } }
    do {
        return try await work.value
    } catch {
        if work.isCancelled { throw BenchError(interrupted) }
        throw error
    }
}

/// Drops one file's pages from the page cache (posix_fadvise DONTNEED): a cold cache for that
/// file alone, nothing else leaves it. Only clean pages go, so write and fsync the file first;
/// pages a running process has mapped stay.
public func dropPageCache(_ path: String) throws(SystemCallError) {
    let fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK)
    guard fd >= 0 else { throw SystemCallError("open", errno: Errno(rawValue: errno), subject: path) }
    defer { close(fd) }
    let rc = posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED)
    guard rc == 0 else { throw SystemCallError("posix_fadvise(POSIX_FADV_DONTNEED)", errno: Errno(rawValue: rc), subject: path) }
}
