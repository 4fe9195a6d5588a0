// What mempressure-workload's work is made of: threads, plain dirty memory, pages touched, CPU time, the background upload.

import ArgumentParser
import MemPressureCachePolicies
import Glibc
import MemPressureLifecycleProtocol
import MemPressureMappedFiles
import MemPressureMonitor
import MemPressureValues
import MemPressurePurgeable
import MemPressureClient
import Synchronization
import MemPressureSystem
import MemPressureWorkloadProtocol

func fail(_ message: String) -> Never {
    let text = "mempressure-workload: \(message)\n"
    _ = text.withCString { write(2, $0, strlen($0)) }
    exit(2)
}

/// Starts `body` on a thread of its own; the model app cannot do its work without it.
func thread(_ what: String, _ body: @escaping @Sendable () -> Void) {
    do {
        try OSThread.detached(body)
    } catch {
        fail("cannot start a thread for \(what): \(error)")
    }
}

/// Plain dirty memory in anonymous mappings of its own, every page written: what `allocate`
/// grows and `release` shrinks (munmap: the pages go back to the kernel at once).
final class DirtyMemory: @unchecked Sendable {
    private let chunks = Mutex<[(address: UInt, bytes: Int)]>([])  // addresses as integers: Sendable
    static let page = Int(sysconf(Int32(_SC_PAGESIZE)))

    var bytes: Int { chunks.withLock { $0.reduce(0) { $0 + $1.bytes } } }

    /// Maps and writes `count` bytes (rounded up to pages); false if the kernel refused.
    func allocate(_ count: Int) -> Bool {
        let size = (count + Self.page - 1) / Self.page * Self.page
        guard size > 0 else { return true }
        let p = mmap(nil, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0)
        guard let p, p != MAP_FAILED else { return false }
        // A distinct non-zero word per page: dirty, and nothing the kernel could share or merge.
        var offset = 0
        while offset < size {
            p.storeBytes(of: UInt64(truncatingIfNeeded: offset) &* 0x9E37_79B9_7F4A_7C15 | 1, toByteOffset: offset, as: UInt64.self)
            offset += Self.page
        }
        let address = UInt(bitPattern: p)
        chunks.withLock { $0.append((address, size)) }
        return true
    }

    /// Unmaps `count` bytes (the newest first, whole pages); returns the bytes released.
    @discardableResult
    func release(_ count: Int) -> Int {
        chunks.withLock { list in
            var released = 0
            while released < count, let last = list.last {
                let want = (count - released + Self.page - 1) / Self.page * Self.page
                let base = UnsafeMutableRawPointer(bitPattern: last.address)
                if want >= last.bytes {
                    munmap(base, last.bytes)
                    released += last.bytes
                    list.removeLast()
                } else {
                    munmap(base.map { $0 + (last.bytes - want) }, want)
                    list[list.count - 1].bytes -= want
                    released += want
                }
            }
            return released
        }
    }
}

/// Reads one word of every page of `bytes`.
func touchPages(_ bytes: [UInt8]) -> UInt64 {
    bytes.withUnsafeBytes { raw in
        var sum: UInt64 = 0
        var offset = 0
        while offset + 8 <= raw.count {
            sum &+= raw.load(fromByteOffset: offset, as: UInt64.self)
            offset += 4096
        }
        return sum
    }
}

@inline(never)
func blackHole(_ x: UInt64) {
    if x == 0x5EED_5EED_5EED_5EED { _ = write(2, "", 0) }
}

/// CPU time of the calling thread, in seconds.
func threadCPUSeconds() -> Double {
    var ts = timespec()
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts)
    return Double(ts.tv_sec) + Double(ts.tv_nsec) / 1e9
}

/// The background task: pretends to upload, checking for expiration between chunks.
@inline(never)
func uploadPhotos(seconds: Double, shouldStop: () -> Bool) {
    let end = monotonicSeconds() + seconds
    while monotonicSeconds() < end, !shouldStop() {
        var ts = timespec(tv_sec: 0, tv_nsec: 20_000_000)
        nanosleep(&ts, nil)  // one chunk of upload
    }
}
