import Glibc
import MemPressureSystem

// The kernel files lmkd reads on every wake (lmkd.cpp `vmstat_parse`, `meminfo_parse`) and once a
// minute (`zoneinfo_parse`), parsed as bytes the way the rest of the project parses /proc: one
// pass, unknown keys skipped, never a trap on what the kernel wrote.

/// The reclaim and refault counters of lmkd's `union vmstat` (lmkd.cpp `vmstat_field_names`):
/// workingset refaults of file pages, the file LRU they are measured against, and the scan
/// counters that tell kswapd's and direct reclaim apart.
///
/// Read from the machine's `/proc/vmstat` (pages and event counts) or, for a device that is a
/// cgroup v2 memory cgroup, from its `memory.stat` (the same counters charged to the cgroup; its
/// LRU sizes in bytes, converted to pages here).
struct LmkdVMCounters: Sendable, Hashable {
    /// `workingset_refault` (kernels before 5.9) and `workingset_refault_file` (5.9 on).
    var workingsetRefault: Int64 = 0
    var workingsetRefaultFile: Int64 = 0
    var inactiveFilePages: Int64 = 0
    var activeFilePages: Int64 = 0
    var pgscanKswapd: Int64 = 0
    var pgscanDirect: Int64 = 0
    var pgrefill: Int64 = 0
    /// Whether either refault key was there at all (a cgroup v1 `memory.stat` has none).
    var hasRefaults = false

    /// lmkd: "Starting 5.9 kernel workingset_refault vmstat field was renamed
    /// workingset_refault_file" — the old one when it is non-zero, else the new one.
    var refaults: Int64 { workingsetRefault != 0 ? workingsetRefault : workingsetRefaultFile }
    /// `nr_inactive_file + nr_active_file`: the file-backed page cache refaults are a share of.
    var fileLRUPages: Int64 { inactiveFilePages &+ activeFilePages }

    /// Where the counters are read.
    enum Source: Sendable, Hashable {
        /// `/proc/vmstat`: LRU sizes `nr_inactive_file`, `nr_active_file` in pages.
        case machine(path: String)
        /// A cgroup v2 `memory.stat`: LRU sizes `inactive_file`, `active_file` in bytes.
        case cgroup(path: String)

        var path: String {
            switch self {
            case .machine(let p), .cgroup(let p): p
            }
        }
    }

    /// Parses "key value" lines; `lruInBytes` for a cgroup's `memory.stat`.
    static func parse(_ bytes: UnsafeRawBufferPointer, lruInBytes: Bool, pageSize: Int64) -> LmkdVMCounters {
        var c = LmkdVMCounters()
        let inactiveKey = lruInBytes ? "inactive_file" : "nr_inactive_file"
        let activeKey = lruInBytes ? "active_file" : "nr_active_file"
        var rest = bytes[...]
        while !rest.isEmpty {
            let end = rest.firstIndex(of: 0x0a) ?? rest.endIndex
            var words = ByteScanner.fields(rest[rest.startIndex..<end])
            rest = end == rest.endIndex ? rest[end...] : rest[rest.index(after: end)...]
            guard let key = words.next(), let word = words.next(), let raw = ByteScanner.unsigned(word) else { continue }
            let value = Int64(clamping: raw)
            if key.elementsEqual("workingset_refault".utf8) {
                c.workingsetRefault = value
                c.hasRefaults = true
            } else if key.elementsEqual("workingset_refault_file".utf8) {
                c.workingsetRefaultFile = value
                c.hasRefaults = true
            } else if key.elementsEqual(inactiveKey.utf8) {
                c.inactiveFilePages = lruInBytes ? value / max(1, pageSize) : value
            } else if key.elementsEqual(activeKey.utf8) {
                c.activeFilePages = lruInBytes ? value / max(1, pageSize) : value
            } else if key.elementsEqual("pgscan_kswapd".utf8) {
                c.pgscanKswapd = value
            } else if key.elementsEqual("pgscan_direct".utf8) {
                c.pgscanDirect = value
            } else if key.elementsEqual("pgrefill".utf8) {
                c.pgrefill = value
            }
        }
        return c
    }
}

/// lmkd.cpp `calc_zone_watermarks`: over every populated zone (`present` above 0) of
/// `/proc/zoneinfo`, the largest of its `protection:` values (the lowmem reserve it keeps from
/// allocations meant for higher zones) plus its `min`, `low` and `high` watermark, summed; in
/// pages.
struct LmkdZoneWatermarks: Sendable, Hashable {
    var minPages: Int64 = 0
    var lowPages: Int64 = 0
    var highPages: Int64 = 0

    /// Nil when the text holds no populated zone ("Node N, zone NAME" with `present` above 0).
    static func parse(_ bytes: UnsafeRawBufferPointer) -> LmkdZoneWatermarks? {
        struct Zone {
            var min: Int64 = 0, low: Int64 = 0, high: Int64 = 0, present: Int64 = 0, maxProtection: Int64 = 0
            /// Past "pagesets": lmkd's parser stops reading the zone there (`ZI_ZONE_SPEC_PAGESETS`).
            var done = false
        }
        var zones: [Zone] = []
        var rest = bytes[...]
        while !rest.isEmpty {
            let end = rest.firstIndex(of: 0x0a) ?? rest.endIndex
            let line = rest[rest.startIndex..<end]
            rest = end == rest.endIndex ? rest[end...] : rest[rest.index(after: end)...]
            var words = ByteScanner.fields(line)
            guard let key = words.next() else { continue }
            if key.elementsEqual("Node".utf8) {
                zones.append(Zone())
                continue
            }
            guard var z = zones.last, !z.done else { continue }
            if key.elementsEqual("pagesets".utf8) {
                z.done = true
            } else if key.elementsEqual("protection:".utf8) {
                // "protection: (0, 3019, 12619, 12619)": the largest.
                while let word = words.next() {
                    let digits = word.filter { $0 &- 0x30 < 10 }
                    if let v = ByteScanner.unsigned(digits) { z.maxProtection = max(z.maxProtection, Int64(clamping: v)) }
                }
            } else if let word = words.next(), let raw = ByteScanner.unsigned(word) {
                let v = Int64(clamping: raw)
                if key.elementsEqual("min".utf8) {
                    z.min = v
                } else if key.elementsEqual("low".utf8) {
                    z.low = v
                } else if key.elementsEqual("high".utf8) {
                    z.high = v
                } else if key.elementsEqual("present".utf8) {
                    z.present = v
                }
            }
            zones[zones.count - 1] = z
        }
        let populated = zones.filter { $0.present > 0 }
        guard !populated.isEmpty else { return nil }
        var sums = LmkdZoneWatermarks()
        for z in populated {
            sums.minPages = sums.minPages &+ z.maxProtection &+ z.min
            sums.lowPages = sums.lowPages &+ z.maxProtection &+ z.low
            sums.highPages = sums.highPages &+ z.maxProtection &+ z.high
        }
        return sums
    }
}

/// The /proc/meminfo fields lmkd's swap figures need (lmkd.cpp `meminfo_field_names`): MemTotal
/// (for the watermarks' share), SwapFree (`get_free_swap`), and the anonymous and shared memory
/// `calc_swap_utilization` weighs swap against. In bytes; nil where the kernel printed none.
struct LmkdMemInfo: Sendable, Hashable {
    var memTotal: UInt64?
    var swapFree: UInt64?
    var activeAnon: UInt64?
    var inactiveAnon: UInt64?
    var shmem: UInt64?

    static func parse(_ bytes: UnsafeRawBufferPointer) -> LmkdMemInfo {
        var info = LmkdMemInfo()
        for line in ByteScanner.keyValueLines(bytes) {
            let field: WritableKeyPath<LmkdMemInfo, UInt64?>
            if line.keyIs("MemTotal") {
                field = \.memTotal
            } else if line.keyIs("SwapFree") {
                field = \.swapFree
            } else if line.keyIs("Active(anon)") {
                field = \.activeAnon
            } else if line.keyIs("Inactive(anon)") {
                field = \.inactiveAnon
            } else if line.keyIs("Shmem") {
                field = \.shmem
            } else {
                continue
            }
            do {
                info[keyPath: field] = try line.byteCount()
            } catch {
                continue  // not a number: as if the kernel had not printed it
            }
        }
        return info
    }
}

enum LmkdPage {
    /// The machine's page size in bytes (lmkd: `pagesize = getpagesize()`).
    static let size = Int64(max(1, sysconf(Int32(_SC_PAGESIZE))))
}
