// mappedfiles-bench: time to first byte and to a full scan, mapping a file versus reading it into
// the heap, for 1 MiB to 1 GiB, with a cold and a warm page cache; and the cost of a refault per
// page after the kernel reclaimed a mapping. Writes Reports/mapped-files.{md,json,svg}.

import ArgumentParser
import BenchSupport
import FoundationEssentials
import Glibc
import MemPressureSystem
import MemPressureMappedFiles

@main
struct MappedFilesBench: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "mappedfiles-bench")

    @Option(help: "File sizes in MiB.") var sizes: [Int] = [1, 16, 256, 1024]
    @Option(help: "Rounds of each measurement (interleaved).") var rounds = 3
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
        var m = Measurements()
        for round in 0..<rounds {
            log("mappedfiles-bench", "round \(round + 1)/\(rounds)")
            for mib in sizes {
                let path = "\(dir)/\(mib)m"
                for cache in ["cold", "warm"] {
                    for method in ["mapped", "read"] {
                        for what in ["first byte", "full scan"] {
                            if cache == "cold" { try dropPageCache(path) } else { try warm(path) }
                            let name = "\(mib)|\(cache)|\(method)|\(what)"
                            try m.time(name) {
                                if method == "mapped" {
                                    let file = try MappedFile(path: path)
                                    if what == "first byte" {
                                        blackHole(try file.withUnsafeBytes { UInt64($0[0]) })
                                    } else {
                                        blackHole(try file.withUnsafeBytes(scan))
                                    }
                                } else {
                                    // Reading into the heap: nothing is usable before the whole file is in.
                                    let bytes = try readAll(path)
                                    if what == "first byte" {
                                        blackHole(UInt64(bytes[0]))
                                    } else {
                                        blackHole(bytes.withUnsafeBytes(scan))
                                    }
                                }
                            }
                        }
                    }
                }
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
        try write(Report(kernel: kernelRelease(), cpus: onlineCPUs, rounds: rounds, scratch: scratch, rows: rows, refaults: refaults, measurements: m.summaries()))
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

    func markdown() -> String {
        func ms(_ s: Double) -> String { s < 0.001 ? ByteFormat.fixed(s * 1000, 3) : ByteFormat.fixed(s * 1000, 1) }
        var out = """
            # Mapped files versus reading into the heap

            Regenerate with `make bench` (or `cd Benchmarks && swift run -c release mappedfiles-bench`); \
            `mapped-files.json` holds every sample. Machine: Linux \(kernel), \(cpus) CPUs; files in \
            `\(scratch)`. \(rounds) rounds, interleaved; medians. "Cold": the file's pages dropped from the \
            page cache (posix_fadvise DONTNEED) before the measurement; "warm": the file read once before. \
            Reading loads the whole file into a heap buffer before its first byte can be used; mapping \
            costs a system call and one page fault for the first byte. The full scan sums every 8-byte word.

            | size | page cache | measure | mapped ms | read ms | mapped / read |
            |---:|---|---|---:|---:|---:|

            """
        for r in rows {
            out += "| \(r.mib) MiB | \(r.cache) | \(r.measure) | \(ms(r.mappedSeconds)) | \(ms(r.readSeconds)) | \(ByteFormat.fixed(r.mappedSeconds / r.readSeconds, 3))x |\n"
        }
        out += "\n![mapped / read](mapped-files.svg)\n\n## Refault after reclaim\n\n"
        out += "Map the file, touch every page, make the kernel drop them (MADV_PAGEOUT), touch every page again: the time per page that came back from the file.\n\n"
        out += "| size | µs per page |\n|---:|---:|\n"
        for r in refaults { out += "| \(r.mib) MiB | \(ByteFormat.fixed(r.nanosecondsPerPage / 1000, 2)) |\n" }
        out += """

            ## Reading the figures

            - The first byte of a mapping is available after a system call and one page fault whatever \
            the size, so its ratio to reading falls as files grow.
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
