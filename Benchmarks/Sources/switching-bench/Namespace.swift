// earlyoom and nohang as rivals: a run under one of them happens inside a PID namespace of its
// own (`unshare --pid --fork --mount-proc`), where the peer sees, and can kill, only the run's
// processes (the supervisor and its apps), and where /proc/meminfo is the device's (the
// budget as MemTotal, the budget less the device cgroup's working set as MemAvailable). The
// benchmark starts itself there with `--peer-job FILE`; the run's result comes back as JSON.

import BenchSupport
import Foundation
import Glibc
import MemPressureCachePolicies
import MemPressureSystem
import PeerKillers

/// A peer rival's policy name: earlyoom or nohang with their own thresholds, or with jetsam's
/// (`-matched`).
struct PeerPolicy: Sendable {
    var kind: PeerKillerKind
    var matched: Bool

    init?(_ name: String) {
        for kind in PeerKillerKind.allCases {
            if name == kind.rawValue {
                self.kind = kind
                matched = false
                return
            }
            if name == kind.rawValue + "-matched" {
                self.kind = kind
                matched = true
                return
            }
        }
        return nil
    }

    /// The programs a run under it needs, missing ones named (nil: all there).
    static func missingPrograms(_ policies: [String]) -> String? {
        var needed: [String] = []
        for p in policies {
            guard let peer = PeerPolicy(p) else { continue }
            needed.append("/usr/bin/unshare")
            switch peer.kind {
            case .earlyoom: needed.append("/usr/bin/earlyoom")
            case .nohang: needed += ["/usr/bin/python3", "/usr/sbin/nohang", "/etc/nohang/nohang.conf"]
            }
        }
        var missing: [String] = []
        for path in needed where !missing.contains(path) && access(path, R_OK) != 0 { missing.append(path) }
        return missing.isEmpty ? nil : missing.joined(separator: ", ") + " not found (Debian's util-linux, earlyoom and nohang: make bench-deps installs them)"
    }
}

/// A run in the namespace: what it runs, and where its result and its cgroup's path go.
struct PeerJob: Codable {
    var run: RunSpec
    /// Where the result goes.
    var output: String
    /// Where the run writes its device memory cgroup as soon as it exists, so that the
    /// benchmark can remove it if the run is killed.
    var cgroupFile: String
}

/// Runs one switching run under a peer killer inside `unshare --pid --fork --mount-proc`, and
/// returns its result. Cancelled (Ctrl-C), unshare is killed, and with `--kill-child` its fork,
/// the namespace's first process — with it, the kernel kills every process in the namespace —
/// and the run's cgroups are removed.
func replayInNamespace(_ run: RunSpec, progress: BenchSupport.Progress) async throws -> RunResult {
    let (setup, runName, label) = (run.setup, run.runName, run.label)
    let jobPath = "\(setup.data)/\(runName)-job.json"
    let output = "\(setup.data)/\(runName)-result.json"
    let cgroupFile = "\(setup.data)/\(runName)-cgroup"
    let job = PeerJob(run: run, output: output, cgroupFile: cgroupFile)
    try writeText(String(decoding: try JSONEncoder().encode(job), as: UTF8.self), to: jobPath)
    let me = ProcFS.ownExecutablePath() ?? CommandLine.arguments[0]
    let logPath = "\(setup.data)/\(runName)-namespace.log"
    let child = try ChildProcess(name: "\(run.policy) run", tool: "switching-bench",
                                 argv: ["/usr/bin/unshare", "--pid", "--fork", "--mount-proc", "--kill-child", "--", me, "--peer-job", jobPath], logPath: logPath)
    progress.doing("\(label): in a PID namespace of its own")
    var reaped = false
    var finished = false
    defer {
        if !reaped { child.kill() }
        if !finished { removeRunGroup(recordedIn: cgroupFile) }
    }
    // Blocking on the child: this process has nothing else to do meanwhile. Cancelled, the
    // namespace's first process is killed, and the wait returns.
    let pid = child.pid, handle = child.handle
    let (waited, status) = await withTaskCancellationHandler {
        var status: Int32 = 0
        let r = retryOnInterrupt { waitpid(pid, &status, 0) }
        return (r, status)
    } onCancel: {
        do { try handle.signal(SIGKILL) } catch { _ = error }  // exited already
    }
    reaped = waited == pid
    try Task.checkCancellation()
    guard reaped, (status & 0x7f) == 0, (status >> 8) & 0xff == 0 else {
        throw BenchError("\(label): the run in its PID namespace failed (wait status \(status)); the end of its log (\(logPath)):\n\(child.logTail(lines: 25))")
    }
    finished = true
    let result = try JSONDecoder().decode(RunResult.self, from: Data(try ProcFS.readBytes(output)))
    for path in [jobPath, output, cgroupFile, logPath] { unlink(path) }
    return result
}

/// Removes a run's device memory cgroup (and its app groups) after its namespace was killed:
/// the kernel has killed their processes; what is left are empty directories.
func removeRunGroup(recordedIn file: String) {
    let path: String
    do {
        path = String(decoding: try ProcFS.readBytes(file), as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
    } catch {
        return  // the run never got as far as its cgroup
    }
    let root = "/sys/fs/cgroup/memory"
    guard path.hasPrefix(root + "/"), !path.contains("/../") else {
        log("switching-bench", "\(file) names \(path), not a memory cgroup: left alone")
        return
    }
    let group = CgroupDirectory(hierarchy: root, controller: "memory", relativePath: String(path.dropFirst(root.count)))
    guard group.exists else { return }
    do {
        for app in group.children() {
            _ = try app.end(timeout: 5)
            try app.remove()
        }
        _ = try group.end(timeout: 5)
        try group.remove()
    } catch {
        log("switching-bench", "the killed run's cgroup \(path) could not be removed: \(error); remove it with rmdir")
    }
}

extension SwitchingBench {
    /// `--peer-job FILE`: one run, as the first process of a PID namespace of its own.
    func runPeerJob(_ path: String) async throws {
        guard getpid() == 1 else { throw BenchError("--peer-job runs only as the first process of a PID namespace of its own (under unshare --pid --fork --mount-proc)") }
        let job = try JSONDecoder().decode(PeerJob.self, from: Data(try ProcFS.readBytes(path)))
        guard let peer = PeerPolicy(job.run.policy) else { throw BenchError("--peer-job: \(job.run.policy) is not earlyoom or nohang") }
        // The apps publish their purgeable regions in a registry of this run's own: their PIDs
        // are this namespace's, which would name other processes in /dev/shm.
        let registry = "\(job.run.setup.data)/\(job.run.runName)-registry"
        let made = try CheckedDirectory.open(registry, creating: true)
        defer { made.removeTree() }
        setenv("MEMPRESSURE_REGISTRY", registry, 1)
        // The supervisor is the system here, as Android's system_server and lmkd are: it is the
        // namespace's first process, which nohang never takes (it drops PID 1 from its
        // candidates) and earlyoom, if it did, would end the run as a failure, never counted.
        // (oom_score_adj -1000 would say so to every killer, but lowering one needs
        // CAP_SYS_RESOURCE, which this machine's root lacks.) Its apps carry their states' bands.
        let progress = BenchSupport.Progress("switching-bench", total: 1)
        let result = try await replay(job.run, progress: progress, peer: (peer, job.cgroupFile))
        try writeText(String(decoding: try JSONEncoder().encode(result), as: UTF8.self), to: job.output)
        // Returning ends the namespace's first process: the kernel kills whatever is left.
    }
}
