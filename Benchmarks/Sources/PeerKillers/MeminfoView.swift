import BenchSupport
import Glibc
import MemPressureJetsam
import MemPressureSystem
import MemPressureMonitor
import Synchronization

/// The device as the peers see it, the way LXCFS shows a container its own memory: inside the
/// benchmark's mount namespace, /proc/meminfo is replaced (a bind mount) by a file whose
/// MemTotal is the device budget and whose MemFree and MemAvailable are the budget less the
/// cgroup's working set, rewritten every 5 ms from the real cgroup; every other line is the
/// machine's. earlyoom and nohang read it as they would read a small machine's /proc/meminfo,
/// so their own default thresholds apply to the budget as they are (a 24 GiB machine cannot be
/// given a 1 GiB budget by their options: nohang refuses thresholds above half of MemTotal).
/// The figures are real; only their frame is the device's.
public final class MeminfoView: @unchecked Sendable {
    private final class Shared: Sendable {
        let stop = Atomic<Bool>(false)
    }
    private let shared = Shared()
    private var thread: OSThread?
    public let path: String

    public init(path: String, cgroup: String, budgetBytes: UInt64) throws {
        self.path = path
        let real = String(decoding: try ProcFS.readBytes("/proc/meminfo"), as: UTF8.self)
        let lines = real.split(separator: "\n").map(String.init)
        let reader = MemoryStatusReader(cgroup: cgroup)
        // Fixed-width lines, so that every rewrite has the same length: a reader never sees a
        // file cut short.
        @Sendable func render(available: UInt64) -> [UInt8] {
            var out = ""
            for line in lines {
                guard let colon = line.firstIndex(of: ":") else { continue }
                let key = String(line[..<colon])
                let rest = String(line[line.index(after: colon)...]).trimmingCharacters(in: " ")
                var value = rest
                switch key {
                case "MemTotal": value = "\(budgetBytes / 1024) kB"
                case "MemFree", "MemAvailable": value = "\(available / 1024) kB"
                default: break
                }
                let number = value.hasSuffix(" kB") ? String(value.dropLast(3)) : value
                let unit = value.hasSuffix(" kB") ? " kB" : "   "
                out += (key + ":").padding(16) + number.leftPadding(14) + unit + "\n"
            }
            return Array(out.utf8)
        }
        do {
            let (directory, name) = try CheckedDirectory.containing(path)
            try directory.createFile(name, mode: 0o644).write(render(available: try reader.read().availableBytes))
        }
        guard mount(path, "/proc/meminfo", nil, UInt(MS_BIND), nil) == 0 else { throw BenchError("bind mount over /proc/meminfo: errno \(errno) (needs a mount namespace of its own)") }
        thread = try OSThread { [shared] in
            let fd = open(path, O_WRONLY | O_NOFOLLOW | O_CLOEXEC)
            defer { close(fd) }
            while !shared.stop.load(ordering: .relaxed) {
                do {
                    let bytes = render(available: try reader.read().availableBytes)
                    _ = bytes.withUnsafeBytes { pwrite(fd, $0.baseAddress!, $0.count, 0) }
                } catch {
                    return  // the cgroup is gone: the run is over
                }
                var ts = timespec(tv_sec: 0, tv_nsec: 5_000_000)
                nanosleep(&ts, nil)  // the view's refresh period
            }
        }
    }

    /// Stops the refresh and removes the bind mount. Idempotent.
    public func stop() {
        guard let thread else { return }
        self.thread = nil
        shared.stop.store(true, ordering: .relaxed)
        thread.join()
        umount2("/proc/meminfo", Int32(MNT_DETACH))
    }
}

extension String {
    fileprivate func padding(_ width: Int) -> String { self + String(repeating: " ", count: max(0, width - count)) }
    fileprivate func leftPadding(_ width: Int) -> String { String(repeating: " ", count: max(0, width - count)) + self }
    fileprivate func trimmingCharacters(in set: Character) -> String {
        String(drop { $0 == set }.reversed().drop { $0 == set }.reversed())
    }
}
