// The user-space OOM killers jetsam is measured against, as Debian ships them: earlyoom and
// nohang, started by a benchmark inside a PID namespace of its own (`unshare --pid --fork
// --mount-proc`), where they can see, and kill, only the benchmark's processes, and where
// /proc/meminfo is the device's (`MeminfoView`).

import BenchSupport
import Glibc
import MemPressureSystem

/// A peer killer and the thresholds it runs with.
public enum PeerKillerKind: String, Codable, Sendable, CaseIterable {
    case earlyoom, nohang

    /// The Debian package it comes from.
    public var package: String { rawValue }
}

/// A running earlyoom or nohang. Start it only as (a child of) the first process of a PID
/// namespace of its own: it kills by its own reading of /proc, and there it reads only ours.
public final class PeerDaemon {
    public let kind: PeerKillerKind
    public let child: ChildProcess
    /// What it runs as, for the report: its version, command line and thresholds.
    public let notes: [String]
    /// What went wrong as it started (it wrote nothing in its first 10 s), if anything.
    public let problems: [String]

    /// Starts `kind` with its own default thresholds, or (`matched`) with jetsam's: SIGTERM at
    /// 20% available (where jetsam's usage source says warning) and SIGKILL at 5% (its
    /// critical). `data` is a directory of the benchmark's own (the log, nohang's matched
    /// configuration); `tag` names this run's files in it. Returns once the daemon has written
    /// its first line (its first look at memory), or after 10 s, said in `notes`.
    public init(_ kind: PeerKillerKind, matched: Bool, data: String, tag: String, tool: String) throws {
        self.kind = kind
        var notes = ["\(kind.rawValue) \(debianVersion(kind.package) ?? "(version unknown)") (Debian's package)"]
        let argv: [String]
        switch kind {
        case .earlyoom:
            // -s 100: act on memory alone (both must be low for earlyoom, and the device's swap
            // is not the budget's); -r 1: a report line a second.
            argv = ["/usr/bin/earlyoom", "-m", matched ? "20,5" : "10,5", "-s", "100", "-r", "1"]
            notes.append(matched ? "earlyoom -m 20,5 (jetsam's thresholds: SIGTERM at 20% available, SIGKILL at 5%)"
                : "earlyoom -m 10,5 (its default: SIGTERM at 10% available, SIGKILL at 5%)")
        case .nohang:
            var config = "/etc/nohang/nohang.conf"
            if matched {
                // The packaged configuration with jetsam's thresholds in place of its own.
                config = "\(data)/nohang-matched-\(tag).conf"
                var lines: [String] = []
                var replaced = 0
                for line in String(decoding: try ProcFS.readBytes("/etc/nohang/nohang.conf"), as: UTF8.self).split(separator: "\n", omittingEmptySubsequences: false) {
                    let key = line.split(separator: "=").first.map { String($0).filter { $0 != " " && $0 != "\t" } } ?? ""
                    switch key {
                    case "soft_threshold_min_mem": lines.append("soft_threshold_min_mem = 20 %"); replaced += 1
                    case "hard_threshold_min_mem": lines.append("hard_threshold_min_mem = 5 %"); replaced += 1
                    default: lines.append(String(line))
                    }
                }
                guard replaced == 2 else { throw BenchError("/etc/nohang/nohang.conf has no soft_threshold_min_mem or hard_threshold_min_mem line to set") }
                try writeText(lines.joined(separator: "\n"), to: config)
            }
            argv = ["/usr/bin/python3", "/usr/sbin/nohang", "--monitor", "-c", config]
            notes.append(matched ? "nohang with jetsam's thresholds (soft_threshold_min_mem 20 %, hard_threshold_min_mem 5 %; the rest as packaged)"
                : "nohang with its packaged configuration (SIGTERM at 5% available, SIGKILL at 2%)")
        }
        let log = "\(data)/\(kind.rawValue)-\(tag).log"
        child = try ChildProcess(name: kind.rawValue, tool: tool, argv: argv, logPath: log)
        // Its first look at memory before anything is measured: its log's first line. It has no
        // other way to say it started, so its log file is polled.
        let deadline = monotonicSeconds() + 10
        func started() -> Bool {
            do { return !(try ProcFS.readBytes(log)).isEmpty } catch { return false }  // not written yet
        }
        while monotonicSeconds() < deadline, !started() { pause(0.01) }
        problems = started() ? [] : ["\(kind.rawValue) wrote nothing within 10 s of its start"]
        self.notes = notes
    }

    /// Whether `pid` is the daemon itself.
    public func owns(_ pid: Int32) -> Bool { pid == child.pid }

    /// Kills it (through its pidfd) and reaps it. Idempotent.
    public func stop() { child.kill() }
}

/// The installed version of a Debian package, from dpkg's status file (nil when not installed
/// or unreadable).
public func debianVersion(_ package: String) -> String? {
    let text: String
    do {
        text = String(decoding: try ProcFS.readBytes("/var/lib/dpkg/status"), as: UTF8.self)
    } catch {
        return nil
    }
    for paragraph in text.split(separator: "\n\n") {
        let lines = paragraph.split(separator: "\n")
        guard lines.contains(where: { $0 == "Package: \(package)" }) else { continue }
        return lines.first { $0.hasPrefix("Version: ") }.map { String($0.dropFirst(9)) }
    }
    return nil
}
