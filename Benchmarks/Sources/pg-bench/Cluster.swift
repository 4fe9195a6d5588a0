// A PostgreSQL cluster of the benchmark's own: initdb into a scratch directory, the postmaster
// started as a child of the benchmark (run as the postgres user through setpriv, which execs it:
// same PID, same pidfd) inside the benchmark's cgroup, listening only on a UNIX socket in the
// scratch directory, with settings chosen for the measurement and printed in the report. Never
// a system cluster: the data directory, the socket and the port are the benchmark's.

import BenchSupport
import Foundation
import Glibc
import MemPressureSystem
import SystemPackage

/// One server setting (`-c NAME=VALUE` on the postmaster's command line) and why it is so.
struct ServerSetting: Codable, Sendable {
    var name: String
    /// As the server shows it (`SHOW NAME`).
    var value: String
    var why: String
}

/// A postmaster the benchmark started, and what it wrote in postmaster.pid.
struct Postmaster {
    let process: ChildProcess
    /// When postmaster.pid first said "ready" (monotonic seconds).
    let readyAt: Double
    /// The System V shared memory segment it made (postmaster.pid's seventh line), to remove
    /// if it is killed (a fast shutdown removes it itself).
    let sharedMemoryID: Int32?
}

final class Cluster {
    let binDirectory: String
    /// The scratch directory (owned by the postgres user): the data directory, the socket, logs.
    let directory: String
    let user = "postgres"
    let port = 5432
    let settings: [ServerSetting]
    var dataDirectory: String { "\(directory)/data" }
    var logPath: String { "\(directory)/postgres.log" }
    let tool = "pg-bench"

    init(binDirectory: String, directory: String, sharedBuffersMB: Int) {
        self.binDirectory = binDirectory
        self.directory = directory
        settings = [
            ServerSetting(name: "listen_addresses", value: "", why: "no TCP at all: the only way in is the UNIX socket"),
            ServerSetting(name: "unix_socket_directories", value: directory, why: "the socket (.s.PGSQL.\(port)) is in the benchmark's scratch directory, never where a system cluster's is"),
            ServerSetting(name: "port", value: "\(port)", why: "names the socket file only (no TCP)"),
            ServerSetting(name: "shared_buffers", value: "\(sharedBuffersMB)MB", why: "room for the whole table and its index, which pg_prewarm loads before the resume rounds"),
            ServerSetting(name: "huge_pages", value: "off", why: "shared buffers in 4 KiB pages of shared memory, which the kernel can swap (hugetlbfs pages cannot be)"),
            ServerSetting(name: "dynamic_shared_memory_type", value: "mmap", why: "its segments are files in the data directory, so a postgres that is killed leaves nothing in /dev/shm"),
            ServerSetting(name: "fsync", value: "on", why: "as in production: a fast shutdown's checkpoint writes and fsyncs what is dirty, so a restart finds clean files (and the cold case can drop them from the page cache)"),
            ServerSetting(name: "synchronous_commit", value: "on", why: "the default, as in production"),
            ServerSetting(name: "full_page_writes", value: "on", why: "the default, as in production"),
            ServerSetting(name: "wal_level", value: "minimal", why: "no replication; the load (COPY into a table created in the same transaction) skips the WAL"),
            ServerSetting(name: "max_wal_senders", value: "0", why: "what wal_level minimal requires"),
            ServerSetting(name: "autovacuum", value: "off", why: "the table is frozen by VACUUM (FREEZE) after the load: nothing to do, and no worker starting in the middle of a measurement"),
            ServerSetting(name: "max_parallel_workers_per_gather", value: "0", why: "one backend does the full scan: on 2 shared CPUs, workers would add their start-up and the machine's load to the figure"),
            ServerSetting(name: "jit", value: "off", why: "the aggregate would otherwise be compiled by LLVM on every run"),
            ServerSetting(name: "max_connections", value: "20", why: "one measuring connection at a time; less shared memory for connection slots"),
            ServerSetting(name: "shared_preload_libraries", value: "", why: "no pg_prewarm autoprewarm: a restart begins with empty shared buffers"),
            ServerSetting(name: "logging_collector", value: "off", why: "the log goes to the benchmark's file"),
        ]
    }

    /// `argv` run as the postgres user (setpriv execs it: the PID stays that of the process
    /// the benchmark spawned), with that user's environment.
    func asUser(_ argv: [String]) -> [String] {
        ["/usr/bin/setpriv", "--reuid=\(user)", "--regid=\(user)", "--init-groups", "--reset-env", "--"] + argv
    }

    /// Why this machine cannot run the benchmark, or nil.
    static func unavailableReason(binDirectory: String) -> String? {
        for program in ["initdb", "postgres"] where access("\(binDirectory)/\(program)", X_OK) != 0 {
            return "no \(program) in \(binDirectory): apt-get install -y postgresql postgresql-contrib (`make bench-deps` does, without starting its service), or give --pg-bin"
        }
        if access("/usr/bin/setpriv", X_OK) != 0 { return "no /usr/bin/setpriv (util-linux): postgres runs as the postgres user" }
        if getpwnam("postgres") == nil { return "no postgres user (Debian's postgresql package makes it)" }
        if getuid() != 0 { return "not running as root (postgres runs as the postgres user; its cgroup needs root)" }
        return nil
    }

    /// Makes the scratch directory, owned by the postgres user, mode 0700.
    func makeDirectory() throws {
        guard let pw = getpwnam(user) else { throw BenchError("no user \(user)") }
        guard mkdir(directory, 0o700) == 0 else {
            throw BenchError("cannot make the scratch directory \(directory): \(String(cString: strerror(errno)))")
        }
        guard chown(directory, pw.pointee.pw_uid, pw.pointee.pw_gid) == 0 else {
            throw SystemCallError("chown", errno: Errno(rawValue: errno), subject: directory)
        }
    }

    /// initdb: trust authentication (the socket's directory is the postgres user's, mode 0700),
    /// the C locale, UTF-8.
    func initdb() throws {
        let p = try ChildProcess(
            name: "initdb", tool: tool,
            argv: asUser(["\(binDirectory)/initdb", "-D", dataDirectory, "--auth=trust", "--username=\(user)", "--encoding=UTF8", "--locale=C", "--no-instructions"]),
            logPath: "\(directory)/initdb.log", workingDirectory: directory)
        do {
            try p.waitForExit(timeout: 300, "running initdb")
        } catch {
            p.kill()
            throw error
        }
        guard p.exitStatus == 0 else {
            throw BenchError("initdb exited \(describe(p.exitStatus ?? -1)); its log:\n\(p.logTail())")
        }
    }

    /// Starts the postmaster inside `cgroup` and waits until postmaster.pid says it is ready
    /// (what pg_ctl -w waits for: it accepts connections), polling every 0.5 ms.
    func start(in cgroup: HarnessCgroup, timeout: Double = 600) throws -> Postmaster {
        let pidFile = "\(dataDirectory)/postmaster.pid"
        unlink("\(directory)/.s.PGSQL.\(port)")  // a killed postmaster leaves its socket; ours must wait for the new one
        var argv = ["\(binDirectory)/postgres", "-D", dataDirectory]
        for s in settings { argv += ["-c", "\(s.name)=\(s.value)"] }
        let p = try ChildProcess(name: "postgres", tool: tool, argv: asUser(argv), logPath: logPath, cgroupProcs: cgroup.procsFiles, workingDirectory: directory)
        let deadline = p.spawnedAt + timeout
        while true {
            do {
                try Task.checkCancellation()
                try p.checkAlive("before it was ready")
            } catch {
                p.kill()
                throw error
            }
            if let lines = readPidFile(pidFile), lines.count >= 8, Int32(lines[0]) == p.pid,
               lines[7].trimmingCharacters(in: .whitespaces) == "ready" {
                let readyAt = monotonicSeconds()
                let segment = lines[6].split(separator: " ").last.flatMap { Int32($0) }
                return Postmaster(process: p, readyAt: readyAt, sharedMemoryID: segment)
            }
            guard monotonicSeconds() < deadline else {
                p.kill()
                throw BenchError("postgres (pid \(p.pid)) was not ready within \(Int(timeout)) s; its log:\n\(p.logTail())")
            }
            pause(0.0005)
        }
    }

    /// postmaster.pid's lines, or nil while there is none (or it is being written).
    private func readPidFile(_ path: String) -> [String]? {
        do {
            return String(decoding: try ProcFS.readBytes(path), as: UTF8.self).split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        } catch {
            return nil
        }
    }

    /// A fast shutdown (SIGINT to the postmaster: sessions ended, a shutdown checkpoint, every
    /// process exits). Returns how long it took.
    func shutdownFast(_ postmaster: Postmaster) throws -> Double {
        let t = monotonicSeconds()
        try postmaster.process.signal(SIGINT)
        try postmaster.process.waitForExit(timeout: 300, "after a fast shutdown (SIGINT)")
        guard postmaster.process.exitStatus == 0 else {
            throw BenchError("postgres exited \(describe(postmaster.process.exitStatus ?? -1)) after a fast shutdown; its log:\n\(postmaster.process.logTail())")
        }
        return monotonicSeconds() - t
    }

    /// Removes the System V shared memory segment a killed postmaster left behind: only if the
    /// kernel says that postmaster made it and nothing is attached. Returns whether it did.
    @discardableResult
    static func removeSharedMemory(id: Int32, creator: Int32) -> Bool {
        var ds = shmid_ds()
        guard shmctl(id, IPC_STAT, &ds) == 0 else { return false }  // gone (a clean shutdown removes it)
        guard ds.shm_cpid == creator, ds.shm_nattch == 0 else { return false }
        return shmctl(id, IPC_RMID, nil) == 0
    }

    /// The files of a relation (its main fork and its 1 GiB segments), by its path relative
    /// to the data directory (`pg_relation_filepath`).
    func relationFiles(_ relativePath: String) throws -> [String] {
        let full = "\(dataDirectory)/\(relativePath)"
        let parent = String(full[..<full.lastIndex(of: "/")!])
        let base = String(full[full.index(after: full.lastIndex(of: "/")!)...])
        return try ProcFS.listDirectory(parent).map { String(decoding: $0, as: UTF8.self) }
            .filter { $0 == base || ($0.hasPrefix(base + ".") && Int($0.dropFirst(base.count + 1)) != nil) }
            .sorted().map { "\(parent)/\($0)" }
    }
}
