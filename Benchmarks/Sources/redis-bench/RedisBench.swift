// redis-bench: a real program nobody here wrote. redis-server (Debian's) holding a dataset saved
// to an RDB file of at least 256 MiB: resume after SIGSTOP/SIGCONT, as is and after its pages
// went to swap, against relaunch loading the RDB file, page cache warm and cold; every key checked
// after each. Writes Reports/redis.{md,json,gp,svg}.
//
// Needs redis-server (`make bench-deps` installs it without starting its service). The swap
// condition needs root, a cgroup v1 memory controller and a file system that can hold a swap file;
// without them it is skipped and the report says why.

import ArgumentParser
import BenchSupport
import Foundation
import Glibc
import MemPressureSystem

@main
struct RedisBench: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "redis-bench",
        abstract: "redis-server: resume after SIGSTOP (and after swap) against relaunch from its RDB file; writes Reports/redis.{md,json,gp,svg}.")

    @OptionGroup var common: RoundsOptions
    @Option(help: "Directory for the RDB file, socket, log and swap file (on a disk: the cold page cache and swap need one).") var scratch = "/var/tmp"
    @Option(name: .customLong("dataset-mb"), help: "MiB of values to store (default 300, an RDB file over 256 MiB; 32 with --quick).") var datasetMB: Int?
    @Option(name: .customLong("sample-keys"), help: "Keys read back one at a time after each resume or relaunch (default 1000; 200 with --quick).") var sampleKeys: Int?
    @Option(name: .customLong("redis-server"), help: "The redis-server to run.") var redisServer = "/usr/bin/redis-server"

    func validate() throws {
        if let datasetMB, datasetMB < 1 { throw ValidationError("--dataset-mb must be at least 1 (got \(datasetMB))") }
        if let datasetMB, datasetMB > 1 << 20 { throw ValidationError("--dataset-mb \(datasetMB) is more than this benchmark means to handle") }
        if let sampleKeys, sampleKeys < 1 { throw ValidationError("--sample-keys must be at least 1 (got \(sampleKeys))") }
    }

    func run() async throws {
        let output = common.output
        if common.renderOnly {
            let report = try readReport(RedisReport.self, from: output, named: "redis")
            try writeReport(report, to: output, named: "redis", tool: "redis-bench")
            return
        }
        guard access(redisServer, X_OK) == 0 else {
            throw BenchError("no redis-server at \(redisServer): apt-get install -y redis-server (`make bench-deps` does, without starting its service), or give --redis-server")
        }
        guard ProcFS.isDirectory(scratch) else { throw BenchError("--scratch \(scratch) is not a directory") }
        guard ProcFS.isDirectory(output) else { throw BenchError("--output \(output) is not a directory") }

        let quick = common.quick
        let settings = Settings(
            rounds: common.roundsPerCondition, datasetBytes: UInt64(datasetMB ?? (quick ? 32 : 300)) << 20,
            sampleKeys: sampleKeys ?? (quick ? 200 : 1000), seed: common.seed, redisServer: redisServer, scratch: scratch,
            quick: quick, swap: !common.noSwap, command: regeneratingCommand("redis-bench"))

        // Ctrl-C (or SIGTERM) cancels the measurement: redis-server is killed through its pidfd
        // at once, the measurement fails where it stands, and the cleanup reaps redis, removes
        // the cgroup, turns the swap file off and deletes it and the scratch directory.
        try await runProgramBench(
            tool: "redis-bench", output: output, named: "redis",
            interrupted: "interrupted: redis-server was killed; its cgroup, swap file and files were removed",
            dataLost: { $0.dataIntact ? nil : $0.dataLoss ?? "see the report" }
        ) { killSwitch in
            try Bench(settings: settings, killSwitch: killSwitch)
        }
    }
}
