// The real programs programs-bench supervises, each described as an app: its command, its
// readiness probe (when it answers: PING, `select 1`, the DevTools endpoint listing the page),
// its check (when it is fully working with its data intact: the dataset's digest, a hash over
// every row after pg_prewarm, a page whose script has summed all its data again), how its data
// is made once, and where that data lives. The probe is configuration handed to the supervisor
// (`AppSpec` with a `ReadinessProbe`): nothing in the supervisor knows these programs.

import BenchSupport
import Foundation
import Glibc
import MemPressureLifecycle
import MemPressureSystem
import SystemPackage

/// One program under the supervisor.
struct RealProgram {
    /// The app's name ("redis", "postgres", "chromium").
    var name: String
    /// The program's version, as it reports it.
    var version: String
    /// What the supervisor runs, with the readiness probe: the program answers.
    var spec: AppSpec
    /// Whether it is fully working: its whole dataset read and found as it was made (a script
    /// run after each activation until it exits 0; the probe's and the check's scripts are the
    /// program's configuration, not the supervisor's code).
    var check: [String]
    /// Its data directory (the page cache of everything under it is dropped for a cold relaunch).
    var directory: String
    /// The check's expected answer goes here once the data exists.
    var expectedFile: String { "\(directory)/expected" }
    /// Where the time an activation begins is written (milliseconds since the epoch), for a
    /// check that must see work done after it (chromium's page summing its data again).
    var activationMark: String? = nil
    /// What its data is, in words for the report, and its size: what the check must read back.
    var data: String
    var dataBytes: UInt64
    /// Makes the data while the app runs (after its first launch) and writes `expectedFile`.
    var fill: @Sendable (_ program: RealProgram) throws -> Void

    static let tool = "programs-bench"

    /// Writes the time now to `activationMark`, if the program has one (a file of the
    /// benchmark's, in a directory only root can write in).
    func markActivation() throws {
        guard let path = activationMark else { return }
        let now = Int(Date().timeIntervalSince1970 * 1000)
        let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0o644)
        guard fd >= 0 else { throw SystemCallError("open", errno: Errno(rawValue: errno), subject: path) }
        defer { close(fd) }
        let text = Array("\(now)\n".utf8)
        guard text.withUnsafeBytes({ Glibc.write(fd, $0.baseAddress, $0.count) }) == text.count else {
            throw SystemCallError("write", errno: Errno(rawValue: errno), subject: path)
        }
    }

    /// Runs `argv` to its end (its output to `log`), failing with the log's end if it fails.
    static func run(_ argv: [String], log: String, timeout: Double = 600, in directory: String? = nil) throws {
        let p = try ChildProcess(name: URL(fileURLWithPath: argv[0]).lastPathComponent, tool: tool, argv: argv, logPath: log, workingDirectory: directory)
        do {
            try p.waitForExit(timeout: timeout, "running \(argv.joined(separator: " "))")
        } catch {
            p.kill()
            throw error
        }
        guard p.exitStatus == 0 else { throw BenchError("\(argv.joined(separator: " ")) exited \(describe(p.exitStatus ?? -1)); its output:\n\(p.logTail())") }
    }

    /// The standard output of `argv` (run to its end), without its last newline.
    static func output(_ argv: [String], scratch: String) throws -> String {
        let path = "\(scratch)/output-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        defer { unlink(path) }
        try run(argv, log: path)
        var text = String(decoding: try ProcFS.readBytes(path), as: UTF8.self)
        if text.hasSuffix("\n") { text.removeLast() }
        return text
    }

    static func version(_ argv: [String], scratch: String) -> String {
        do {
            // The last line: chromium's wrapper script may print a warning of its own first.
            return try output(argv, scratch: scratch).split(separator: "\n").last.map(String.init) ?? "?"
        } catch {
            return "? (\(error))"
        }
    }

    /// A file of the benchmark's own: created exclusively, never through a link.
    static func write(_ text: String, to path: String, mode: mode_t = 0o600) throws {
        let fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode)
        guard fd >= 0 else { throw SystemCallError("open", errno: Errno(rawValue: errno), subject: path) }
        defer { close(fd) }
        let bytes = Array(text.utf8)
        var done = 0
        while done < bytes.count {
            let n = bytes[done...].withUnsafeBytes { Glibc.write(fd, $0.baseAddress, $0.count) }
            guard n > 0 else { throw SystemCallError("write", errno: Errno(rawValue: errno), subject: path) }
            done += n
        }
    }

    // MARK: redis

    /// redis-server on a UNIX socket in its directory, saving its dataset on SIGTERM (`save`
    /// configured) and loading it at start. Ready: PING answers PONG (not LOADING). Working: DEBUG
    /// DIGEST, which reads every key and value, gives the digest taken after the load.
    static func redis(scratch: String, megabytes: Int) throws -> RealProgram {
        let dir = "\(scratch)/redis"
        guard mkdir(dir, 0o700) == 0 else { throw SystemCallError("mkdir", errno: Errno(rawValue: errno), subject: dir) }
        let socket = "\(dir)/redis.sock"
        let command = [
            "/usr/bin/redis-server", "--port", "0", "--unixsocket", socket, "--unixsocketperm", "700", "--dir", dir,
            "--dbfilename", "dump.rdb", "--save", "3600 1", "--appendonly", "no", "--enable-debug-command", "local",
            "--protected-mode", "yes", "--daemonize", "no", "--rdbcompression", "yes",
        ]
        let expected = "\(dir)/expected"
        let probe = "[ \"$(redis-cli -s \(socket) ping 2>/dev/null)\" = PONG ]"
        let check = "[ \"$(redis-cli -s \(socket) debug digest 2>/dev/null)\" = \"$(cat \(expected))\" ]"
        let dataset = Dataset(seed: 23, targetBytes: UInt64(megabytes) << 20)
        return RealProgram(
            name: "redis", version: version(["/usr/bin/redis-server", "--version"], scratch: scratch),
            spec: AppSpec(name: "redis", command: command, client: false, ready: ReadinessProbe(command: ["/bin/sh", "-c", probe], interval: 0.002, timeout: 120)),
            check: ["/bin/sh", "-c", check],
            directory: dir,
            data: "\(dataset.keys) keys of 512–1536 random bytes (\(ByteFormat.human(dataset.valueBytes)) of values), saved to dump.rdb on SIGTERM and loaded at start",
            dataBytes: dataset.valueBytes,
            fill: { program in
                // The keys as RESP SET commands, piped through redis-cli --pipe.
                let commands = "\(dir)/load.resp"
                var out: [UInt8] = []
                out.reserveCapacity(Int(dataset.valueBytes) + dataset.keys * 48)
                var key: [UInt8] = []
                var value: [UInt8] = []
                for i in 0..<dataset.keys {
                    key.removeAll(keepingCapacity: true)
                    value.removeAll(keepingCapacity: true)
                    dataset.appendKey(i, to: &key)
                    dataset.appendValue(i, to: &value)
                    out += Array("*3\r\n$3\r\nSET\r\n$\(key.count)\r\n".utf8) + key + Array("\r\n$\(value.count)\r\n".utf8) + value + [13, 10]
                }
                let fd = open(commands, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o600)
                guard fd >= 0 else { throw SystemCallError("open", errno: Errno(rawValue: errno), subject: commands) }
                var done = 0
                while done < out.count {
                    let n = out[done...].withUnsafeBytes { Glibc.write(fd, $0.baseAddress, min($0.count, 1 << 20)) }
                    guard n > 0 else {
                        close(fd)
                        throw SystemCallError("write", errno: Errno(rawValue: errno), subject: commands)
                    }
                    done += n
                }
                close(fd)
                defer { unlink(commands) }
                try run(["/bin/sh", "-c", "/usr/bin/redis-cli -s \(socket) --pipe < \(commands)"], log: "\(dir)/fill.log")
                let keys = try output(["/usr/bin/redis-cli", "-s", socket, "dbsize"], scratch: dir)
                guard keys == "\(dataset.keys)" else { throw BenchError("redis holds \(keys) keys after the load, not \(dataset.keys)") }
                try run(["/usr/bin/redis-cli", "-s", socket, "save"], log: "\(dir)/fill.log")
                let digest = try output(["/usr/bin/redis-cli", "-s", socket, "debug", "digest"], scratch: dir)
                guard digest.count == 40 else { throw BenchError("redis's DEBUG DIGEST answered '\(digest.prefix(80))'") }
                try write(digest + "\n", to: program.expectedFile)
            })
    }

    // MARK: postgres

    /// A PostgreSQL cluster of its own (initdb as the postgres user, which the postmaster runs as
    /// through setpriv: same PID), on a UNIX socket in its directory, shared buffers large enough
    /// for the table. SIGTERM is a smart shutdown with a checkpoint. Ready: a query answers.
    /// Working: `pg_prewarm` reads the table into shared buffers (as a warm server has it) and a
    /// hash over every row matches the one taken after the load.
    static func postgres(scratch: String, binDirectory: String, megabytes: Int) throws -> RealProgram {
        let dir = "\(scratch)/postgres"
        guard let pw = getpwnam("postgres") else { throw BenchError("no postgres user (Debian's postgresql package makes it)") }
        guard mkdir(dir, 0o700) == 0 else { throw SystemCallError("mkdir", errno: Errno(rawValue: errno), subject: dir) }
        guard chown(dir, pw.pointee.pw_uid, pw.pointee.pw_gid) == 0 else { throw SystemCallError("chown", errno: Errno(rawValue: errno), subject: dir) }
        func asUser(_ argv: [String]) -> [String] { ["/usr/bin/setpriv", "--reuid=postgres", "--regid=postgres", "--init-groups", "--reset-env", "--"] + argv }
        let data = "\(dir)/data"
        try run(
            asUser(["\(binDirectory)/initdb", "-D", data, "--auth=trust", "--username=postgres", "--encoding=UTF8", "--locale=C", "--no-instructions"]),
            log: "\(scratch)/initdb.log", in: dir)
        let rows = (megabytes << 20) / 1100
        let settings = [
            "listen_addresses=", "unix_socket_directories=\(dir)", "port=5432", "shared_buffers=\(megabytes * 3 / 2)MB", "huge_pages=off",
            "dynamic_shared_memory_type=mmap", "autovacuum=off", "max_parallel_workers_per_gather=0", "jit=off", "max_connections=20",
            "shared_preload_libraries=", "logging_collector=off",
        ]
        var command = asUser(["\(binDirectory)/postgres", "-D", data])
        for s in settings { command += ["-c", s] }
        let psql = "psql -X -A -t -q -h \(dir) -p 5432 -U postgres -d postgres"
        let check = "\(dir)/check.sql"
        try write("select pg_prewarm('t');\nselect count(*), bit_xor(hashtextextended(payload::text, 0)) from t;\n", to: check, mode: 0o644)
        let expected = "\(dir)/expected"
        let probe = "\(psql) -c 'select 1' >/dev/null 2>&1"
        let checkScript = "[ \"$(\(psql) -f \(check) 2>/dev/null)\" = \"$(cat \(expected))\" ]"
        return RealProgram(
            name: "postgres", version: version(["\(binDirectory)/postgres", "--version"], scratch: scratch),
            spec: AppSpec(name: "postgres", command: command, client: false, ready: ReadinessProbe(command: ["/bin/sh", "-c", probe], interval: 0.002, timeout: 120)),
            check: ["/bin/sh", "-c", checkScript],
            directory: dir,
            data: "a table of \(rows) rows of 1000 random bytes (pgcrypto's gen_random_bytes), read into \(megabytes * 3 / 2) MB of shared buffers by pg_prewarm",
            dataBytes: UInt64(rows) * 1000,
            fill: { program in
                let sql = """
                    create extension pg_prewarm;
                    create extension pgcrypto;
                    create table t (id int primary key, payload bytea);
                    insert into t select i, gen_random_bytes(1000) from generate_series(1, \(rows)) i;
                    vacuum (freeze, analyze) t;
                    checkpoint;
                    """
                try run(["/bin/sh", "-c", "\(psql) -v ON_ERROR_STOP=1 <<'EOF'\n\(sql)\nEOF"], log: "\(scratch)/fill-postgres.log")
                let answer = try output(["/bin/sh", "-c", "\(psql) -f \(check)"], scratch: scratch)
                guard answer.split(separator: "\n").count == 2, answer.contains("|") else { throw BenchError("the check query answered '\(answer.prefix(80))'") }
                try write(answer + "\n", to: program.expectedFile, mode: 0o644)
            })
    }

    // MARK: chromium

    /// Debian's chromium, headless, rendering a local page whose script fills typed arrays with
    /// seeded random numbers and, once a second, sums every one of them into the page's title
    /// with a tick and the time the sum began ("ready:SUM:TICK:MS"); a timer overdue after a
    /// freeze fires at once. Ready: the DevTools endpoint (its port from DevToolsActivePort) lists
    /// the page as summed. Working: the title shows the expected sum, begun after the activation
    /// began (`activationMark`), so a pass after a resume means the renderer has run and read all
    /// its data again.
    ///
    /// It runs as `nobody` (setpriv, same PID), never as root: its DevTools endpoint on loopback
    /// has no authentication, and `--no-sandbox` is needed to run it in a cgroup of ours. Its
    /// home, profile, configuration and cache are `nobody`'s directories under the run's own;
    /// the page and the check's files stay root's.
    static func chromium(scratch: String, megabytes: Int) throws -> RealProgram {
        let dir = "\(scratch)/chromium"
        guard mkdir(dir, 0o755) == 0 else { throw SystemCallError("mkdir", errno: Errno(rawValue: errno), subject: dir) }
        chmod(dir, 0o755)
        guard let pw = getpwnam("nobody") else { throw BenchError("no user nobody to run chromium as") }
        let (uid, gid) = (pw.pointee.pw_uid, pw.pointee.pw_gid)
        let home = "\(dir)/home"
        let profile = "\(home)/profile"
        for d in [home, profile] {
            guard mkdir(d, 0o700) == 0 else { throw SystemCallError("mkdir", errno: Errno(rawValue: errno), subject: d) }
            guard chown(d, uid, gid) == 0 else { throw SystemCallError("chown", errno: Errno(rawValue: errno), subject: d) }
        }
        let page = "\(dir)/page.html"
        let chunks = max(1, megabytes / 8)
        try write(
            """
            <!doctype html><html><head><title>loading</title></head><body><script>
            const chunks = [];
            let s = 0x9e3779b9 | 0;
            for (let c = 0; c < \(chunks); c++) {
              const a = new Float64Array(1 << 20);
              for (let i = 0; i < a.length; i++) { s ^= s << 13; s ^= s >>> 17; s ^= s << 5; a[i] = (s >>> 0) / 4294967296; }
              chunks.push(a);
            }
            let tick = 0;
            function sum() {
              const at = Date.now();
              let t = 0;
              for (const a of chunks) for (let i = 0; i < a.length; i++) t += a[i];
              tick += 1;
              document.title = "ready:" + t.toFixed(6) + ":" + tick + ":" + at;
            }
            sum();
            setInterval(sum, 1000);
            </script></body></html>
            """, to: page, mode: 0o644)
        let command = [
            "/usr/bin/setpriv", "--reuid=\(uid)", "--regid=\(gid)", "--clear-groups", "--",
            "/usr/bin/chromium", "--headless=new", "--no-sandbox", "--disable-gpu", "--no-first-run", "--no-default-browser-check",
            "--disable-background-networking", "--disable-component-update", "--disable-breakpad", "--disable-crash-reporter", "--disable-sync", "--metrics-recording-only",
            "--disable-features=Translate,MediaRouter", "--remote-debugging-address=127.0.0.1", "--remote-debugging-port=0",
            "--user-data-dir=\(profile)", "file://\(page)",
        ]
        let expected = "\(dir)/expected"
        let since = "\(dir)/activation-began"
        let list = """
            port=$(head -n 1 \(profile)/DevToolsActivePort 2>/dev/null) || exit 1
            [ -n "$port" ] || exit 1
            title=$(curl -s --max-time 5 http://127.0.0.1:$port/json/list | sed -n 's/.*"title": "ready:\\([0-9.]*:[0-9]*:[0-9]*\\)".*/\\1/p' | head -n 1)
            [ -n "$title" ] || exit 1
            """
        let probe = list
        let check = list + "\n" + """
            [ "${title%%:*}" = "$(cat \(expected))" ] || exit 1
            [ "${title##*:}" -ge "$(cat \(since))" ] || exit 1
            """
        return RealProgram(
            name: "chromium", version: version(["/usr/bin/chromium", "--version"], scratch: scratch),
            // Its home, configuration and cache in its own directory: nothing of it lands in the
            // invoking user's (dconf, crash reports).
            spec: AppSpec(
                name: "chromium", command: command,
                environment: ["HOME": home, "XDG_CONFIG_HOME": "\(home)/config", "XDG_CACHE_HOME": "\(home)/cache", "XDG_DATA_HOME": "\(home)/data"],
                client: false, ready: ReadinessProbe(command: ["/bin/sh", "-c", probe], interval: 0.002, timeout: 120)),
            check: ["/bin/sh", "-c", check],
            directory: dir, activationMark: since,
            data: "a local page whose script holds \(chunks * 8) MiB of seeded random doubles in Float64Arrays and sums them all once a second",
            dataBytes: UInt64(chunks) << 23,
            fill: { program in
                // The data is the page's own: the sum it computed at its first load is the one
                // every later pass must show.
                let port = try output(["/usr/bin/head", "-n", "1", "\(profile)/DevToolsActivePort"], scratch: scratch)
                let list = try output(["/usr/bin/curl", "-s", "--max-time", "10", "http://127.0.0.1:\(port)/json/list"], scratch: scratch)
                guard let range = list.range(of: "\"title\": \"ready:") else { throw BenchError("chromium lists no ready page: \(list.prefix(200))") }
                let sum = list[range.upperBound...].prefix { $0 != ":" }
                try write(String(sum) + "\n", to: program.expectedFile)
            })
    }
}
