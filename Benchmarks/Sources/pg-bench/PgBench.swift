// pg-bench: a real program nobody here wrote. PostgreSQL (Debian's) holding a seeded table of at
// least 256 MiB with its primary key, prewarmed into shared buffers: every one of its processes
// frozen and thawed (the cgroup freezer), as is and after its pages went to swap, against a
// restart (a fast shutdown and a new postmaster: shared buffers empty) with the page cache warm
// and cold. Each round: a new connection's first answer, point lookups by primary key, and a
// full scan, every row looked up and the aggregate over every row checked. Writes
// Reports/postgres.{md,json,gp,svg}.
//
// Needs root (postgres runs as the postgres user; its cgroups), a memory cgroup and a freezer
// (cgroup v1, or v2), and Debian's postgresql (`make bench-deps` installs it without starting
// its service; the benchmark never uses a system cluster). The swap condition also needs a file
// system that can hold a swap file; without one it is skipped and the report says why.

import ArgumentParser
import BenchSupport
import Foundation
import Glibc
import MemPressureSystem

@main
struct PgBench: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "pg-bench",
        abstract: "PostgreSQL: resume after the cgroup freezer (and after swap) against a restart with empty shared buffers; writes Reports/postgres.{md,json,gp,svg}.")

    @OptionGroup var common: RoundsOptions
    @Option(help: "Directory for the cluster, its socket, logs and the swap file (on a disk: the cold page cache and swap need one).") var scratch = "/var/tmp"
    @Option(name: .customLong("dataset-mb"), help: "MiB of payload to store (default 300, a table over 256 MiB; 32 with --quick).") var datasetMB: Int?
    @Option(help: "Point lookups by primary key after each resume or restart (default 1000; 200 with --quick).") var lookups: Int?
    @Option(name: .customLong("shared-buffers-mb"), help: "shared_buffers in MiB (default: room for the table and its index: 1.5 times the payload and 32 MiB, rounded up to 64 MiB, at least 128).") var sharedBuffersMB: Int?
    @Option(name: .customLong("pg-bin"), help: "The directory holding initdb and postgres.") var pgBin = "/usr/lib/postgresql/15/bin"

    func validate() throws {
        if let datasetMB, datasetMB < 1 { throw ValidationError("--dataset-mb must be at least 1 (got \(datasetMB))") }
        if let datasetMB, datasetMB > 1 << 20 { throw ValidationError("--dataset-mb \(datasetMB) is more than this benchmark means to handle") }
        if let lookups, lookups < 1 { throw ValidationError("--lookups must be at least 1 (got \(lookups))") }
        if let sharedBuffersMB, sharedBuffersMB < 16 { throw ValidationError("--shared-buffers-mb must be at least 16 (got \(sharedBuffersMB))") }
    }

    func run() async throws {
        let output = common.output
        if common.renderOnly {
            let report = try readReport(PgReport.self, from: output, named: "postgres")
            try writeReport(report, to: output, named: "postgres", tool: "pg-bench")
            return
        }
        if let reason = Cluster.unavailableReason(binDirectory: pgBin) { throw BenchError(reason) }
        guard ProcFS.isDirectory(scratch) else { throw BenchError("--scratch \(scratch) is not a directory") }
        guard ProcFS.isDirectory(output) else { throw BenchError("--output \(output) is not a directory") }
        // libpq reads PG* variables for what a connection does not name (PGOPTIONS would add
        // server settings): the benchmark's connections are what it says, nothing more.
        for name in ProcessInfo.processInfo.environment.keys where name.hasPrefix("PG") { unsetenv(name) }
        // The backends of a postmaster that is killed become the benchmark's children, which it
        // reaps: nothing is left as a zombie of PID 1.
        try becomeChildSubreaper()

        let quick = common.quick
        let datasetBytes = UInt64(datasetMB ?? (quick ? 32 : 300)) << 20
        let wantedMB = Int(datasetBytes >> 20) * 3 / 2 + 32
        let settings = Settings(
            rounds: common.roundsPerCondition, datasetBytes: datasetBytes, lookups: lookups ?? (quick ? 200 : 1000), seed: common.seed,
            sharedBuffersMB: sharedBuffersMB ?? max(128, (wantedMB + 63) / 64 * 64), binDirectory: pgBin, scratch: scratch,
            quick: quick, swap: !common.noSwap, command: regeneratingCommand("pg-bench"))

        // Ctrl-C, SIGTERM or SIGHUP cancels the measurement: every postgres process is killed
        // through its pidfd (found in the benchmark's cgroup, thawed) at once, the measurement
        // fails where it stands, and the cleanup reaps them, removes the shared memory segment,
        // the cgroups, the swap file and the scratch directory.
        try await runProgramBench(
            tool: "pg-bench", output: output, named: "postgres",
            interrupted: "interrupted: postgres was killed; its cgroups, shared memory, swap file and cluster were removed",
            dataLost: { $0.dataIntact ? nil : $0.dataLoss ?? "see the report" }
        ) { killSwitch in
            try Bench(settings: settings, killSwitch: killSwitch)
        }
    }
}
