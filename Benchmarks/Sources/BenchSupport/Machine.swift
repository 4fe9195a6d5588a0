// The machine a report was measured on: kernel, CPUs, memory, swap, the file system holding
// the benchmark's scratch files, and the load average when the run began and ended.

import Foundation
import Glibc
import MemPressureSystem

public struct Machine: Codable, Sendable {
    public var kernel: String
    public var cpus: Int
    public var cpuModel: String
    public var memoryBytes: UInt64
    public var swapBytesBefore: UInt64
    public var scratch: String
    public var scratchFileSystem: String
    /// vm.page-cluster: swap readahead is 2^N pages.
    public var pageCluster: String
    public var transparentHugepages: String
    /// /proc/loadavg's 1, 5 and 15 minute figures when the run began and when it ended: other
    /// work on the machine shares its CPUs.
    public var loadAverageAtStart: String
    public var loadAverageAtEnd: String?

    public static func loadAverage() -> String {
        do {
            return String(decoding: try ProcFS.readBytes("/proc/loadavg"), as: UTF8.self).split(separator: " ").prefix(3).joined(separator: " ")
        } catch {
            return "unknown (\(error))"
        }
    }

    public static func current(scratch: String) -> Machine {
        func text(_ path: String) -> String {
            do {
                return String(decoding: try ProcFS.readBytes(path), as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
            } catch {
                return "unknown (\(error))"
            }
        }
        let cpuinfo = text("/proc/cpuinfo")
        let model = cpuinfo.split(separator: "\n").first { $0.hasPrefix("model name") }
            .flatMap { $0.split(separator: ":", maxSplits: 1).last }.map { $0.trimmingCharacters(in: .whitespaces) } ?? "unknown"
        var memory = MemInfo()
        do {
            memory = try ProcFS.readBytes("/proc/meminfo").withUnsafeBytes { MemInfo.parse($0) }
        } catch {
            // Left unknown (0) in the report.
        }
        let fileSystem = fileSystemType(of: scratch)
        let thp = text("/sys/kernel/mm/transparent_hugepage/enabled")
        return Machine(
            kernel: kernelRelease(), cpus: onlineCPUs, cpuModel: model, memoryBytes: memory.totalBytes ?? 0,
            swapBytesBefore: memory.swapTotalBytes ?? 0, scratch: scratch, scratchFileSystem: fileSystem,
            pageCluster: text("/proc/sys/vm/page-cluster"),
            transparentHugepages: thp.split(separator: " ").first { $0.hasPrefix("[") }.map { String($0.dropFirst().dropLast()) } ?? thp,
            loadAverageAtStart: loadAverage())
    }
}

/// The type of the file system holding `path` (the mount in /proc/self/mountinfo with the
/// longest mount point that contains the path).
public func fileSystemType(of path: String) -> String {
    guard let resolved = realpath(path, nil) else { return "unknown (realpath: \(String(cString: strerror(errno))))" }
    let full = String(cString: resolved)
    free(resolved)
    let mountinfo: String
    do {
        mountinfo = String(decoding: try ProcFS.readBytes("/proc/self/mountinfo"), as: UTF8.self)
    } catch {
        return "unknown (\(error))"
    }
    var best: (point: String, type: String)?
    for line in mountinfo.split(separator: "\n") {
        // ID PARENT MAJ:MIN ROOT MOUNTPOINT OPTIONS [OPTIONAL...] - TYPE SOURCE SUPEROPTIONS
        let fields = line.split(separator: " ")
        guard fields.count > 6, let dash = fields.firstIndex(of: "-"), dash + 1 < fields.count else { continue }
        let point = String(fields[4])
        let inside = point == "/" || full == point || full.hasPrefix(point + "/")
        if inside && point.count >= (best?.point.count ?? -1) { best = (point, String(fields[dash + 1])) }
    }
    return best?.type ?? "unknown"
}


extension Machine {
    /// The machine in sentences for a report: "Machine: Linux ..., load average ... ".
    public var summary: String {
        var md = "Machine: Linux \(kernel), \(cpus) CPUs (\(cpuModel)), \(mib(memoryBytes)) RAM, "
        md += swapBytesBefore == 0 ? "no swap of its own" : "\(mib(swapBytesBefore)) of swap before the run"
        md += "; transparent huge pages \(transparentHugepages), vm.page-cluster \(pageCluster) (swap readahead of \(Int(pow(2, Double(Int(pageCluster) ?? 0)))) pages). "
        md += "Load average (1, 5, 15 min) \(loadAverageAtStart) when the run began" + (loadAverageAtEnd.map { ", \($0) when it ended" } ?? "") + ": other work shares the CPUs, and the p90 and p99 carry it. "
        return md
    }
}
