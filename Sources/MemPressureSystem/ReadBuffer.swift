import Glibc
import SystemPackage

/// A growable byte buffer that a whole /proc file is read into, reused from file to file.
///
/// /proc files report `st_size == 0`, so the only correct way to read one is to call read(2)
/// until it returns 0. The buffer doubles when full and is never shrunk, so a thread that
/// reads thousands of smaps files allocates only a handful of times. This is the one type in
/// the module that holds an unsafe pointer to its storage.
public struct ReadBuffer: ~Copyable {
    private var storage: UnsafeMutableRawBufferPointer
    /// Number of valid bytes from the last read.
    public private(set) var count: Int = 0
    /// Files larger than this are refused rather than exhausting memory (a process at
    /// vm.max_map_count has about 65 000 regions, roughly 90 MiB of smaps text).
    public static let maximumSize = 1 << 30

    public init(capacity: Int = 256 * 1024) {
        self.init(exactCapacity: max(capacity, 4096))
    }

    /// A buffer of exactly `exactCapacity` bytes to start with (tests: reads that fill it and grow it).
    package init(exactCapacity: Int) {
        storage = .allocate(byteCount: max(exactCapacity, 1), alignment: 16)
    }

    deinit { storage.deallocate() }

    public var capacity: Int { storage.count }

    /// The valid bytes of the last read.
    public func withBytes<R, E: Error>(_ body: (UnsafeRawBufferPointer) throws(E) -> R) throws(E) -> R {
        try body(UnsafeRawBufferPointer(rebasing: storage[0..<count]))
    }

    /// Reads `fd` until end of file, replacing the contents. Retries EINTR. `oneRecord`: the
    /// file is one record of a /proc seq_file opened with single_open (stat, status, cgroup,
    /// smaps_rollup), which the kernel formats whole and copies out as far as the read asks: a
    /// read that returns less than it asked for has reached the end, and the read that would
    /// return 0 is spared.
    public mutating func readAll(from fd: CInt, subject: String, oneRecord: Bool = false) throws(SystemCallError) {
        count = 0
        while true {
            if count == storage.count {
                guard storage.count < Self.maximumSize else {
                    throw SystemCallError("read", errno: .fileTooLarge, subject: subject)
                }
                grow()
            }
            let free = storage.count - count
            let start = storage.baseAddress! + count
            let n = retryOnInterrupt { Glibc.read(fd, start, free) }
            if n > 0 {
                count += n
                if oneRecord && n < free { return }
            } else if n == 0 {
                return
            } else {
                throw SystemCallError("read", errno: Errno(rawValue: Glibc.errno), subject: subject)
            }
        }
    }

    private mutating func grow() {
        let bigger = UnsafeMutableRawBufferPointer.allocate(byteCount: storage.count * 2, alignment: 16)
        bigger.baseAddress!.copyMemory(from: storage.baseAddress!, byteCount: count)
        storage.deallocate()
        storage = bigger
    }
}
