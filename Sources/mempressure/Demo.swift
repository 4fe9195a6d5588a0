import ArgumentParser
import MemHogClient
import VMTracker

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

struct Demo: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "The built-in scenario: start a process holding known memory and show its VM report.",
        discussion: """
            Starts mempressure-hog holding dirty anonymous memory, a clean read-only file mapping \
            it has read, and MADV_FREE'd (purgeable) memory; prints its VM Tracker report and the \
            three regions it holds, then ends it.
            """
    )

    @Option(name: .long, help: "Dirty anonymous memory the process holds (bytes; k, m, g suffixes).")
    var dirty = "16m"
    @Option(name: .long, help: "Size of the file it maps read-only and reads.")
    var file = "8m"
    @Option(name: .long, help: "Anonymous memory it writes and then marks MADV_FREE.")
    var purgeable = "12m"
    @Flag(name: .long, help: "Print the hog's VM report as JSON.")
    var json = false

    func run() async throws {
        do {
            let directory = getenv("TMPDIR").map { String(cString: $0) } ?? "/tmp"
            let path = "\(directory)/mempressure-demo-\(getpid()).dat"
            defer { unlink(path) }
            let args = ["--dirty", dirty, "--file", path, "--file-bytes", file, "--purgeable", purgeable]
            let text = try await Hog.with(args) { hog -> String in
                let app = try Snapshotter().app(.process(hog.pid), options: .detailed)
                let report = VMReport(app, includeRegions: true, sort: .address)
                if json { return try encodeJSON(report) }
                return Self.explain(report: report, hog: hog)
            }
            output(text)
        } catch {
            throw fail(error)
        }
    }

    static func explain(report: VMReport, hog: HogInfo) -> String {
        var summary = report
        summary.regions = nil
        var out = "mempressure demo: process \(hog.pid) (mempressure-hog) holds\n"
        if let d = hog.dirty { out += "  \(ByteFormat.human(UInt64(d.bytes))) of dirty anonymous memory (written)\n" }
        if let f = hog.file { out += "  \(ByteFormat.human(UInt64(f.bytes))) of a file mapped read-only and read (clean, backed by the file)\n" }
        if let p = hog.purgeable { out += "  \(ByteFormat.human(UInt64(p.bytes))) of anonymous memory written then marked MADV_FREE (purgeable)\n" }
        out += "\n" + summary.renderText() + "\n"

        var table = TextTable([
            .init("Held as", .left), .init("Type", .left), .init("Resident"), .init("Dirty"), .init("Clean"),
            .init("Purgeable"), .init("Footprint"), .init("Reclaimable without killing it", .left),
        ])
        func row(_ label: String, _ block: HogInfo.Block?, _ reclaim: String) {
            guard let block, let r = report.regions?.first(where: { $0.startAddress == block.start }) else { return }
            table.append([
                label, r.type, ByteFormat.human(r.residentBytes), ByteFormat.human(r.dirtyBytes), ByteFormat.human(r.cleanBytes),
                ByteFormat.human(r.purgeableBytes), ByteFormat.human(r.footprintBytes), reclaim,
            ])
        }
        row("dirty", hog.dirty, "no: only by swapping or terminating")
        row("file", hog.file, "yes: clean pages are dropped and refault from the file")
        row("purgeable", hog.purgeable, "yes: the kernel discards them; they read back as zero")
        out += "The three regions it holds:\n" + table.render()
        out += "\nFootprint (what jetsam charges) = Private_Dirty + Private_Hugetlb + Swap: the dirty region only.\n"
        return out
    }
}
