import Glibc
import LinuxSystem
import SystemPackage

/// Where a process publishes the address ranges its memory libraries own, so that a VM report
/// taken from any process can show them as their own type: the fallback for kernels without
/// `PR_SET_VMA_ANON_NAME` (CONFIG_ANON_VMA_NAME), and the only way to attach a call stack.
///
/// One file per process, `<directory>/<pid>`, replaced atomically (write, then rename):
///
///     mempressure-regions 1
///     pid 1234
///     start-ticks 987654
///     region 7f3a5c000000 7f3a5c400000 purgeable cache: images
///     frame MyApp.ImageCache.init() + 0x4c (MyApp)
///     frame ...
///     region ...
///
/// `start-ticks` is the process's start time (field 22 of /proc/PID/stat): a file left behind by
/// an earlier process with the same PID does not match and is ignored. A reader also ignores a
/// file not owned by the process's user (or root), so no one can label someone else's memory.
public struct RegionRegistry: RegionTagSource, Sendable, Hashable {
    public static let formatLine = "mempressure-regions 1"

    public var directory: String

    /// `$MEMPRESSURE_REGISTRY`, else `/dev/shm/mempressure-regions`.
    public static var defaultDirectory: String {
        if let env = getenv("MEMPRESSURE_REGISTRY") { return String(cString: env) }
        return "/dev/shm/mempressure-regions"
    }

    public init(directory: String = RegionRegistry.defaultDirectory) {
        self.directory = directory
    }

    /// What one process published.
    public struct Entry: Sendable, Hashable {
        public var pid: Int32
        public var startTicks: UInt64
        public var tags: [RegionTag]

        public init(pid: Int32, startTicks: UInt64, tags: [RegionTag]) {
            self.pid = pid
            self.startTicks = startTicks
            self.tags = tags
        }
    }

    // MARK: Writing

    /// Replaces this process's file with `entry`. Creates the directory (mode 1777, like /tmp,
    /// so every user's processes can publish) when missing.
    public func publish(_ entry: Entry) throws(SystemCallError) {
        if mkdir(directory, 0o1777) == 0 {
            chmod(directory, 0o1777)  // mkdir applies the umask
        } else if errno != EEXIST {
            throw SystemCallError("mkdir", errno: Errno(rawValue: errno), subject: directory)
        }
        var text = Self.formatLine + "\npid \(entry.pid)\nstart-ticks \(entry.startTicks)\n"
        for tag in entry.tags {
            text += "region \(String(tag.start, radix: 16)) \(String(tag.end, radix: 16)) \(Self.oneLine(tag.name))\n"
            for frame in tag.stack { text += "frame \(Self.oneLine(frame))\n" }
        }
        let temporary = "\(directory)/.\(entry.pid).tmp"
        try ProcFS.writeFile(temporary, Array(text.utf8))
        if rename(temporary, "\(directory)/\(entry.pid)") != 0 {
            throw SystemCallError("rename", errno: Errno(rawValue: errno), subject: temporary)
        }
    }

    /// Removes this process's file (at exit, or when it owns no tagged memory any more).
    public func withdraw(pid: Int32) {
        unlink("\(directory)/\(pid)")
    }

    /// Removes the file a process that has exited left behind (one killed by a signal cannot
    /// withdraw its own): only if it is that process's — the same PID and start time — so that
    /// the file of a new process that took the PID meanwhile stays. For whoever reaped it.
    /// Returns whether a file was removed.
    @discardableResult
    public func withdrawExited(pid: Int32, startTicks: UInt64) -> Bool {
        let path = "\(directory)/\(pid)"
        let fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK)
        guard fd >= 0 else { return false }  // none: it withdrew, or never published
        defer { close(fd) }
        var st = stat()
        guard fstat(fd, &st) == 0, (st.st_mode & S_IFMT) == S_IFREG, st.st_size < 1 << 20 else { return false }
        var buffer = ReadBuffer(capacity: 16 * 1024)
        do {
            try buffer.readAll(from: fd, subject: path)
        } catch {
            return false
        }
        guard let entry = buffer.withBytes({ Self.parse(Array($0)) }), entry.pid == pid, entry.startTicks == startTicks else { return false }
        return unlink(path) == 0
    }

    static func oneLine(_ text: String) -> String {
        String(text.unicodeScalars.map { $0.value < 0x20 || $0.value == 0x7f ? " " : Character($0) })
    }

    // MARK: Reading

    /// Parses a registry file. Unknown lines are skipped (a newer writer may add some).
    public static func parse(_ bytes: [UInt8]) -> Entry? {
        let lines = bytes.split(separator: 0x0a)
        guard let first = lines.first, first.elementsEqual(formatLine.utf8) else { return nil }
        var pid: Int32?
        var start: UInt64?
        var tags: [RegionTag] = []
        for line in lines.dropFirst() {
            if let value = field(line, "pid ") {
                pid = ByteScanner.signed(value).flatMap { Int32(exactly: $0) }
            } else if let value = field(line, "start-ticks ") {
                start = ByteScanner.unsigned(value)
            } else if let value = field(line, "region ") {
                // "START END NAME": the name may hold spaces.
                let parts = value.split(separator: 0x20, maxSplits: 2, omittingEmptySubsequences: false)
                guard parts.count == 3, let a = ByteScanner.hex(parts[0]), let b = ByteScanner.hex(parts[1]), a < b else { continue }
                tags.append(RegionTag(start: a, end: b, name: String(decoding: parts[2], as: UTF8.self)))
            } else if let value = field(line, "frame "), !tags.isEmpty {
                tags[tags.count - 1].stack.append(String(decoding: value, as: UTF8.self))
            }
        }
        guard let pid, let start else { return nil }
        return Entry(pid: pid, startTicks: start, tags: tags)
    }

    /// The rest of `line` after `prefix`, if it starts with it.
    private static func field(_ line: ArraySlice<UInt8>, _ prefix: StaticString) -> ArraySlice<UInt8>? {
        let n = prefix.utf8CodeUnitCount
        guard line.count >= n, prefix.withUTF8Buffer({ line.prefix(n).elementsEqual($0) }) else { return nil }
        return line.dropFirst(n)
    }

    public func tags(for process: ProcessStat, ownerUID: UInt32?) -> [RegionTag] {
        let path = "\(directory)/\(process.pid)"
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return [] }  // nothing published: the common case
        defer { close(fd) }
        var st = stat()
        guard fstat(fd, &st) == 0, st.st_uid == 0 || ownerUID == nil || st.st_uid == ownerUID else { return [] }
        var buffer = ReadBuffer(capacity: 16 * 1024)
        do {
            try buffer.readAll(from: fd, subject: path)
        } catch {
            return []  // the publisher replaced or removed it meanwhile: treated as unpublished
        }
        guard let entry = buffer.withBytes({ Self.parse(Array($0)) }),
            entry.pid == process.pid, entry.startTicks == process.startTicks
        else { return [] }
        return entry.tags
    }
}
