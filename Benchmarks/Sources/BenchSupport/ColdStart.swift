// A cold relaunch that is cold: every file the app's processes map (its executable, the Swift
// runtime, jemalloc, the C library...) and every file of its data dropped from the page cache,
// each one listed with what stayed (pages mapped by another process of the machine stay: the
// kernel does not drop a page someone has mapped).

import Glibc
import MemPressureSystem

/// A file dropped from the page cache for a cold relaunch.
public struct DroppedFile: Codable, Sendable, Hashable {
    public var path: String
    public var bytes: UInt64
    /// Still in the page cache after the drop (mapped by other processes).
    public var residentAfterBytes: UInt64
    /// Why it could not be dropped, if it could not.
    public var error: String?
}

/// Every file mapped by the processes (/proc/PID/maps), sorted; a process that has exited
/// meanwhile is skipped. Deleted files, devices and memfds are left out.
public func mappedFiles(of pids: [Int32]) -> [String] {
    var files = Set<String>()
    for pid in pids {
        let maps: [UInt8]
        do {
            maps = try ProcFS.readBytes("/proc/\(pid)/maps")
        } catch {
            continue  // exited meanwhile
        }
        for line in String(decoding: maps, as: UTF8.self).split(separator: "\n") {
            guard let slash = line.firstIndex(of: "/") else { continue }
            let path = String(line[slash...])
            if path.hasSuffix(" (deleted)") || path.hasPrefix("/dev/") || path.hasPrefix("/memfd:") { continue }
            files.insert(path)
        }
    }
    return files.sorted()
}

/// A cgroup and every cgroup below it, the root first.
public func cgroupTree(_ root: String) throws -> [String] {
    var groups = [root]
    var i = 0
    while i < groups.count {
        for entry in try ProcFS.listDirectory(groups[i]) {
            let child = "\(groups[i])/\(String(decoding: entry, as: UTF8.self))"
            if ProcFS.isDirectory(child) { groups.append(child) }
        }
        i += 1
    }
    return groups
}

/// The processes of a cgroup and of every cgroup below it.
public func processes(inCgroupTree root: String) throws -> [Int32] {
    try cgroupTree(root).flatMap { group in
        String(decoding: try ProcFS.readBytes("\(group)/cgroup.procs"), as: UTF8.self).split(separator: "\n").compactMap { Int32($0) }
    }
}

/// Lowers a cgroup v1 memory limit (`group`/memory.limit_in_bytes) to `start`, 4 MiB higher
/// each time the kernel refuses (EBUSY: it cannot reclaim down to it), at most `attempts` tries;
/// then sets it back to `restore`. Returns the limit reached. Cgroup v2 is refused by name: its
/// memory.max would OOM-kill what it cannot reclaim.
public func squeezeV1MemoryLimit(_ group: String, from start: UInt64, attempts: Int, restore: UInt64) throws -> UInt64 {
    let mib: UInt64 = 1 << 20
    let file = "\(group)/memory.limit_in_bytes"
    guard ProcFS.isFile(file) else {
        throw BenchError("no \(file): the squeeze lowers cgroup v1's memory limit (cgroup v2's memory.max would OOM-kill what it cannot reclaim); it needs the v1 memory controller")
    }
    var limit = start
    var reached: UInt64?
    for _ in 0..<attempts where reached == nil {
        do {
            try ProcFS.writeFileInPlace(file, Array(String(limit).utf8))
            reached = limit
        } catch {
            guard error.errno.rawValue == EBUSY else { throw error }
            limit += 4 * mib
        }
    }
    try ProcFS.writeFileInPlace(file, Array(String(restore).utf8))
    guard let reached else { throw BenchError("the kernel refused every limit up to \(limit / mib) MiB on \(group)") }
    return reached
}

/// Drops `mapped` (the files an app mapped, read before it ended) and every file below
/// `dataDirectory` (fsynced first: only clean pages can go) from the page cache, and says for
/// each what stayed.
public func dropForColdStart(mapped: [String], dataDirectory: String) throws -> [DroppedFile] {
    try dropPageCache(tree: dataDirectory)
    var out: [DroppedFile] = []
    // Each file once, by its real path (a build directory's link and its target are one file).
    var files = Set<String>()
    for path in mapped + (try regularFiles(under: dataDirectory)) {
        guard let real = realpath(path, nil) else {
            files.insert(path)  // gone meanwhile: said below, when it cannot be opened
            continue
        }
        files.insert(String(cString: real))
        free(real)
    }
    for file in files.sorted() {
        do {
            try dropPageCache(file)
            let (resident, total) = try residentPages(file)
            out.append(DroppedFile(path: file, bytes: UInt64(total) * 4096, residentAfterBytes: UInt64(resident) * 4096))
        } catch {
            out.append(DroppedFile(path: file, bytes: 0, residentAfterBytes: 0, error: "\(error)"))
        }
    }
    return out
}

/// Reads `mapped` (the files an app mapped) and every file below `dataDirectory` into the page
/// cache, so that a warm relaunch is warm even after a squeeze took the app's file pages.
/// Returns the bytes read (a file gone meanwhile is skipped).
@discardableResult
public func warmForStart(mapped: [String], dataDirectory: String) throws -> UInt64 {
    var total: UInt64 = try readWhole(tree: dataDirectory)
    for file in Set(mapped).sorted() {
        do {
            try readWhole(file)
            total += try fileSize(file)
        } catch {
            continue  // gone meanwhile: nothing to warm
        }
    }
    return total
}

/// The memory cgroup's counters that prove a swap-in (its own and its children's, from
/// memory.stat; cgroup v1's total_* names, v2's plain ones), and the machine's pswpin.
public struct SwapInCounters: Sendable {
    public var swapBytes: UInt64
    public var majorFaults: UInt64
    public var pagesSwappedIn: UInt64
    public var residentBytes: UInt64

    public init(memoryCgroup: String) throws {
        let stat = String(decoding: try ProcFS.readBytes("\(memoryCgroup)/memory.stat"), as: UTF8.self)
        func field(_ text: String, _ keys: [String]) -> UInt64 {
            for key in keys {
                for line in text.split(separator: "\n") where line.hasPrefix(key + " ") {
                    return UInt64(line.dropFirst(key.count + 1)) ?? 0
                }
            }
            return 0
        }
        let v1 = stat.contains("total_rss ")
        swapBytes = v1 ? field(stat, ["total_swap"]) : 0
        majorFaults = field(stat, v1 ? ["total_pgmajfault"] : ["pgmajfault"])
        residentBytes = v1 ? field(stat, ["total_rss"]) + field(stat, ["total_shmem"]) : field(stat, ["anon"]) + field(stat, ["shmem"])
        if !v1 {
            // v2 keeps swap in memory.swap.current (absent without swap accounting: 0).
            do {
                let current = String(decoding: try ProcFS.readBytes("\(memoryCgroup)/memory.swap.current"), as: UTF8.self)
                swapBytes = UInt64(current.split(separator: "\n").first ?? "") ?? 0
            } catch {
                swapBytes = 0
            }
        }
        let vmstat = String(decoding: try ProcFS.readBytes("/proc/vmstat"), as: UTF8.self)
        pagesSwappedIn = field(vmstat, ["pswpin"])
    }
}

/// Why a resume from swap does not prove a real swap-in, or nil if it does: less than half of
/// `mustReadBytes` (what the resume must read back: the data, or what a page-out wrote) was on
/// swap; the machine read back (pswpin) less than half of the part that was; or the major faults
/// are below a quarter of what reading it back takes at one fault per readahead window
/// (2^page-cluster pages from a swap file; one page from zram, which the kernel reads
/// synchronously without readahead). pswpin is the machine's: the benchmarks run alone.
public func swapInShortfall(
    swappedBytes: UInt64, mustReadBytes: UInt64, majorFaults: UInt64, pagesSwappedIn: UInt64, zram: Bool, pageCluster: Int
) -> String? {
    let window: UInt64 = zram ? 4096 : 4096 << UInt64(max(0, min(pageCluster, 10)))
    let mustRead = min(swappedBytes, mustReadBytes)
    let needed = mustRead / window
    if mustReadBytes == 0 || swappedBytes < mustReadBytes / 2 {
        return "only \(ByteFormat.human(swappedBytes)) was on swap, less than half of \(ByteFormat.human(mustReadBytes))"
    }
    if pagesSwappedIn * 4096 < mustRead / 2 {
        return "\(ByteFormat.human(pagesSwappedIn * 4096)) read from swap, less than half of the \(ByteFormat.human(mustRead)) to read back"
    }
    if majorFaults * 4 < needed {
        return "\(majorFaults) major faults to read back \(ByteFormat.human(mustRead)) of swapped memory (\(needed) needed at one a window)"
    }
    return nil
}
