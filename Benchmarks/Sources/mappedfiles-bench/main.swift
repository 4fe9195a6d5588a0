// mappedfiles-bench: time to first byte and to a full scan, mapping a file versus reading it into
// the heap, for 1 MiB to 1 GiB, with a cold and a warm page cache; and the cost of a refault per
// page after the kernel reclaimed a mapping. Writes Reports/mapped-files.{md,json,svg}.

import ArgumentParser
import BenchSupport
import FoundationEssentials
import Glibc
import MemPressureSystem
import MemPressureCachePolicies
import MemPressureMappedFiles

@main
struct MappedFilesBench: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "mappedfiles-bench")

    @Option(help: "File sizes in MiB.") var sizes: [Int] = [1, 16, 256, 1024]
    @Option(help: "Rounds of each measurement (interleaved, in a new order each round).") var rounds = 30
    @Option(help: "Directory for the test files (on the disk to measure).") var scratch = "/var/tmp"
    @Option(help: "Where to write mapped-files.md, .json, .gp and .svg.") var output = "../Reports"
    @Flag(help: "Re-render the Markdown and SVG from the JSON already in --output.") var renderOnly = false

    func run() async throws {
        if renderOnly {
            try write(try readReport(Report.self, from: output, named: "mapped-files"))
            return
        }
        // The test files in a directory of the run's own, made exclusively (mode 0700).
        let directory = try CheckedDirectory.makeUnique(in: scratch, prefix: "mappedfiles-bench-")
        defer { directory.removeTree() }
        let dir = directory.path
        for mib in sizes {
            log("mappedfiles-bench", "writing a \(mib) MiB file")
            try makeFile("\(mib)m", in: directory, bytes: mib << 20)
        }
        let loadAtStart = Machine.loadAverage()
        var m = Measurements()
        // Every condition in every round: the file's size, the page cache before, the method.
        var conditions: [(mib: Int, cache: String, method: String)] = []
        for mib in sizes { for cache in ["cold", "warm"] { for method in ["mapped", "read"] { conditions.append((mib, cache, method)) } } }
        for round in 0..<rounds {
            log("mappedfiles-bench", "round \(round + 1)/\(rounds)")
            // A new order every round (seeded: the same in every run), so that no condition always
            // follows the same one: what one leaves behind (a freed gigabyte, a dropped cache) is
            // spread over all of them instead of weighing on one.
            var order = SplitMix64(seed: 2000 + UInt64(round))
            for c in conditions.shuffled(using: &order) {
                let path = "\(dir)/\(c.mib)m"
                if c.cache == "cold" { try dropPageCache(path) } else { try warm(path) }
                // One operation, two moments: when its first byte can be used, and when every
                // word has been read. The full scan is the first byte and then the rest, so it can
                // never be the faster of the two.
                let start = monotonicSeconds()
                var firstByte = 0.0
                if c.method == "mapped" {
                    let file = try MappedFile(path: path)
                    try file.withUnsafeBytes { raw in
                        blackHole(UInt64(raw[0]))
                        firstByte = monotonicSeconds()
                        blackHole(scan(raw))
                    }
                } else {
                    // Reading into the heap: nothing is usable before the whole file is in.
                    let bytes = try readAll(path)
                    blackHole(UInt64(bytes[0]))
                    firstByte = monotonicSeconds()
                    blackHole(bytes.withUnsafeBytes(scan))
                }
                let end = monotonicSeconds()
                m.record("\(c.mib)|\(c.cache)|\(c.method)|first byte", firstByte - start)
                m.record("\(c.mib)|\(c.cache)|\(c.method)|full scan", end - start)
            }
            for mib in sizes {
                let path = "\(dir)/\(mib)m"
                // Refault after reclaim: map, touch, let the kernel take the pages, touch again.
                try warm(path)
                let file = try MappedFile(path: path)
                try file.touchAllPages()
                let eviction = try file.evict()
                let start = monotonicSeconds()
                try file.touchAllPages()
                let seconds = monotonicSeconds() - start
                let pages = max(1, eviction.pagesEvicted)
                m.record("\(mib)|refault per page", seconds / Double(pages))
            }
        }
        // What cannot be: a full scan (the first byte and then the rest) faster than its first byte.
        var impossible: [String] = []
        for c in conditions {
            let name = "\(c.mib)|\(c.cache)|\(c.method)"
            if let first = m.median(name + "|first byte"), let full = m.median(name + "|full scan"), full < first {
                impossible.append("\(c.mib) MiB, \(c.cache), \(c.method): full scan \(full) s at the median, first byte \(first) s")
            }
        }
        guard impossible.isEmpty else {
            throw BenchError("impossible results, nothing written (a bug in the harness, not a finding): " + impossible.joined(separator: "; "))
        }
        var rows: [Row] = []
        for mib in sizes {
            for cache in ["cold", "warm"] {
                for what in ["first byte", "full scan"] {
                    let mapped = m.median("\(mib)|\(cache)|mapped|\(what)")!
                    let read = m.median("\(mib)|\(cache)|read|\(what)")!
                    rows.append(Row(mib: mib, cache: cache, measure: what, mappedSeconds: mapped, readSeconds: read))
                }
            }
        }
        let refaults = sizes.map { Refault(mib: $0, nanosecondsPerPage: m.median("\($0)|refault per page")! * 1e9) }
        try write(Report(
            kernel: kernelRelease(), cpus: onlineCPUs, rounds: rounds, scratch: scratch, rows: rows, refaults: refaults, measurements: m.summaries(),
            loadAverageAtStart: loadAtStart, loadAverageAtEnd: Machine.loadAverage()))
    }

    func makeFile(_ name: String, in directory: CheckedDirectory, bytes: Int) throws {
        let file = try directory.createFile(name, mode: 0o644)
        var chunk = [UInt64](repeating: 0, count: 1 << 17)  // 1 MiB
        var written = 0
        var x: UInt64 = 0x9E37_79B9_7F4A_7C15
        while written < bytes {
            for i in chunk.indices {
                x = x &* 6_364_136_223_846_793_005 &+ 1
                chunk[i] = x
            }
            let n = min(chunk.count * 8, bytes - written)
            try file.write(chunk.withUnsafeBytes { Array($0[0..<n]) })
            written += n
        }
        try file.sync()
    }

    /// Reads the whole file once so its pages are in the page cache.
    func warm(_ path: String) throws { blackHole(UInt64(try readAll(path).count)) }

    func readAll(_ path: String) throws -> [UInt8] {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw BenchError("open \(path): errno \(errno)") }
        defer { close(fd) }
        var st = stat()
        fstat(fd, &st)
        let size = Int(st.st_size)
        return try [UInt8](unsafeUninitializedCapacity: size) { buffer, count in
            var done = 0
            while done < size {
                let n = retryOnInterrupt { read(fd, buffer.baseAddress! + done, size - done) }
                guard n > 0 else { throw BenchError("read \(path): errno \(errno)") }
                done += n
            }
            count = done
        }
    }

    func scan(_ raw: UnsafeRawBufferPointer) -> UInt64 {
        var sum: UInt64 = 0
        let words = raw.count / 8
        for i in 0..<words { sum &+= raw.loadUnaligned(fromByteOffset: i * 8, as: UInt64.self) }
        return sum
    }

    func write(_ report: Report) throws {
        try writeReport(report, to: output, named: "mapped-files", tool: "mappedfiles-bench")
    }
}

struct Row: Codable {
    var mib: Int
    var cache: String
    var measure: String
    var mappedSeconds: Double
    var readSeconds: Double
}

struct Refault: Codable {
    var mib: Int
    var nanosecondsPerPage: Double
}

struct Report: RenderedReport {
    var kernel: String
    var cpus: Int
    var rounds: Int
    var scratch: String
    var rows: [Row]
    var refaults: [Refault]
    var measurements: [Measurement]
    var loadAverageAtStart: String?
    var loadAverageAtEnd: String?

    func markdown() -> String {
        func ms(_ s: Double) -> String { s < 0.001 ? ByteFormat.fixed(s * 1000, 3) : ByteFormat.fixed(s * 1000, 1) }
        var out = """
            # Mapped files versus reading into the heap

            Regenerate with `make bench` (or `cd Benchmarks && swift run -c release mappedfiles-bench`); \
            `mapped-files.json` holds every sample. Machine: Linux \(kernel), \(cpus) CPUs; files in \
            `\(scratch)`. \(rounds) rounds, the conditions in a new order each round (seeded); medians, \
            with p90 and min–max in the table below. Load average (1, 5, 15 min) \(loadAverageAtStart ?? "not recorded") \
            when the run began, \(loadAverageAtEnd ?? "not recorded") when it ended. "First byte" and \
            "full scan" are two moments of one operation (the full scan is the first byte and then \
            the rest, so it can never be the faster; a run where it is stops with an error). "Cold": the file's pages dropped from the \
            page cache (posix_fadvise DONTNEED) before the measurement; "warm": the file read once before. \
            Reading loads the whole file into a heap buffer before its first byte can be used; mapping \
            costs a system call and one page fault for the first byte. The full scan sums every 8-byte word.

            | size | page cache | measure | mapped ms | read ms | mapped / read |
            |---:|---|---|---:|---:|---:|

            """
        for r in rows {
            out += "| \(r.mib) MiB | \(r.cache) | \(r.measure) | \(ms(r.mappedSeconds)) | \(ms(r.readSeconds)) | \(ByteFormat.fixed(r.mappedSeconds / r.readSeconds, 3))x |\n"
        }
        out += "\n![mapped / read](mapped-files.svg)\n\n## The spread of the rounds\n\n"
        out += "| size | page cache | method | measure | min ms | median ms | p90 ms | max ms |\n|---:|---|---|---|---:|---:|---:|---:|\n"
        // In the order of the table above (the samples were taken in a shuffled one).
        func sortKey(_ m: Measurement) -> [String] {
            let p = m.name.split(separator: "|").map(String.init)
            return [String(repeating: "0", count: max(0, 6 - (p.first?.count ?? 0))) + (p.first ?? "")] + p.dropFirst()
        }
        for x in measurements.sorted(by: { sortKey($0).lexicographicallyPrecedes(sortKey($1)) }) where !x.name.hasSuffix("refault per page") {
            let parts = x.name.split(separator: "|").map(String.init)
            guard parts.count == 4 else { continue }
            let p = Percentiles(x.samples)
            out += "| \(parts[0]) MiB | \(parts[1]) | \(parts[2]) | \(parts[3]) | \(ms(p.min)) | \(ms(x.medianSeconds)) | \(ms(p.p90)) | \(ms(p.max)) |\n"
        }
        out += "\n## Refault after reclaim\n\n"
        out += "Map the file, touch every page, make the kernel drop them (MADV_PAGEOUT), touch every page again: the time per page that came back from the file.\n\n"
        out += "| size | µs per page |\n|---:|---:|\n"
        for r in refaults { out += "| \(r.mib) MiB | \(ByteFormat.fixed(r.nanosecondsPerPage / 1000, 2)) |\n" }
        out += """

            ## Reading the figures

            - The first byte of a mapping is available after a system call and one page fault whatever \
            the size, so its ratio to reading falls as files grow.
            \(coldLine())
            - A full scan with a cold cache does the same disk reads either way. With a warm cache, \
            reading still pays for a new heap buffer (a page fault and a zeroed page for every page) \
            and a copy, while the mapping only maps pages already in the page cache (several per \
            fault, by fault-around): the larger the file, the more mapping wins.
            - What the figures do not show, and the reason to map: the heap copy is dirty memory that \
            the kernel can never take back, while the mapping's pages are clean and can be dropped \
            under pressure and refaulted at the cost above (see `mempressure load --compare`).

            """
        return out
    }

    /// The cold figures of the largest file, in words.
    func coldLine() -> String {
        guard let mib = rows.map(\.mib).max(),
            let first = rows.first(where: { $0.mib == mib && $0.cache == "cold" && $0.measure == "first byte" }),
            let full = rows.first(where: { $0.mib == mib && $0.cache == "cold" && $0.measure == "full scan" })
        else { return "" }
        func ms(_ s: Double) -> String { ByteFormat.fixed(s * 1000, 1) }
        return "- Cold, \(mib) MiB: the first byte of the mapping costs one page fault that reads a window around it from the disk (\(ms(first.mappedSeconds)) ms), while reading must bring the whole file in first (\(ms(first.readSeconds)) ms); the rest of the scan then adds \(ms(full.readSeconds - first.readSeconds)) ms to the read (summing memory already there) and brings the mapping to \(ms(full.mappedSeconds)) ms, less than the read because its faults read ahead in large windows into pages used where they land, while reading also faults in and zeroes a heap buffer of the file's size and copies every byte into it."
    }

    func plots() -> [Plot] {
        let chartRows = rows.map { r in
            (label: "\(r.mib) MiB, \(r.cache), \(r.measure)", value: r.mappedSeconds / r.readSeconds, highlight: r.measure == "full scan")
        }
        return [Plot.bars(name: "mapped-files", title: "time mapped / time read (below 1: mapping is faster)", rows: chartRows, unit: "x", decimals: 3)]
    }
}

@inline(never)
func blackHole(_ x: UInt64) {
    if x == 0x1234_5678_9ABC_DEF0 { print("") }
}
