import Glibc
import MemPressureSystem
import SystemPackage

/// Where a process publishes the address ranges its memory libraries own, so that a VM report
/// taken from any process can show them as their own type: the fallback for kernels without
/// `PR_SET_VMA_ANON_NAME` (CONFIG_ANON_VMA_NAME), and the only way to attach a call stack.
///
/// One file per process, `<directory>/<pid>`, mode 0600 (what /proc/PID/maps shows only to the
/// process's user and root, the registry shows to no one else either), replaced atomically
/// (write, then rename):
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
/// an earlier process with the same PID does not match, is ignored and removed.
///
/// The directory is shared by every user (mode 1777 in /dev/shm), so anyone can plant anything
/// in it. A reader opens an entry with O_NOFOLLOW|O_NONBLOCK (`RegularFile`) and checks on the
/// descriptor, before reading a byte, that it is a regular file, owned by the process's user
/// or root (so no one can label someone else's memory), and at most `maximumFileBytes`: a FIFO
/// (which would block the reader), a link to /dev/zero (which would be read without end), a
/// file of another user are skipped with the reason (`lookup`). A writer checks the directory
/// on its descriptor (a directory, not a link; owned by this user or root, or sticky) and
/// writes through that descriptor; its first publication removes the files of processes that
/// are gone (`removeStale`), such as those of apps ended by a signal, which cannot withdraw.
public struct RegionRegistry: RegionTagSource, Sendable, Hashable {
    package static let formatLine = "mempressure-regions 1"
    /// The largest registry file read: thousands of regions with their call stacks.
    package static let maximumFileBytes = 4 << 20

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

    /// Replaces this process's file with `entry` (mode 0600: only its user and root may read the
    /// addresses and call stacks of its memory, as only they may read its /proc/PID/maps).
    /// Creates the directory (mode 1777, like /tmp, so every user's processes can publish) when
    /// missing; checks it on its descriptor and writes through it (`CheckedDirectory`): a name
    /// planted in the way (a link, a FIFO) is replaced, never followed.
    public func publish(_ entry: Entry) throws(RegistryError) {
        var text = Self.formatLine + "\npid \(entry.pid)\nstart-ticks \(entry.startTicks)\n"
        for tag in entry.tags {
            text += "region \(String(tag.start, radix: 16)) \(String(tag.end, radix: 16)) \(Self.oneLine(tag.name))\n"
            for frame in tag.stack { text += "frame \(Self.oneLine(frame))\n" }
        }
        do {
            // A directory, not a link; this user's or root's, or anyone's if sticky (then only a
            // file's owner can replace or remove it).
            let dir = try CheckedDirectory.open(directory, creating: true, mode: 0o1777, owners: .anyoneIfSticky)
            try dir.replaceFile("\(entry.pid)", with: Array(text.utf8), mode: 0o600)
        } catch {
            throw .write(error)
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
    package func withdrawExited(pid: Int32, startTicks: UInt64) -> Bool {
        guard case .read(let entry, let identity) = readEntry(named: "\(pid)", ownedBy: nil), entry.pid == pid, entry.startTicks == startTicks
        else { return false }
        return removeEntry(named: "\(pid)", identity)
    }

    /// Removes the files of processes that are gone: the PID runs no more, or runs a process
    /// that started at another time. Also the temporary files of writers that are gone. Files
    /// this user may not remove (another's, in the sticky directory) stay. Returns how many
    /// were removed. The first publication of each process calls it.
    @discardableResult
    package func removeStale(proc: ProcFS = ProcFS()) -> Int {
        let names: [[UInt8]]
        do {
            names = try ProcFS.listDirectory(directory)
        } catch {
            return 0  // no directory: nothing published
        }
        var removed = 0
        for raw in names {
            var digits = raw[...]
            // A writer's temporary file: ".PID.RANDOM" (CheckedDirectory.replaceFile).
            let temporary = digits.first == UInt8(ascii: ".")
            if temporary {
                digits = digits.dropFirst()
                guard let dot = digits.firstIndex(of: UInt8(ascii: ".")), dot < digits.endIndex - 1 else { continue }
                digits = digits[..<dot]
            }
            guard let value = ByteScanner.unsigned(digits), let pid = Int32(exactly: value) else { continue }
            let name = String(decoding: raw, as: UTF8.self)
            let running = Self.startTicks(of: pid, proc: proc)
            if temporary {
                // A writer's half-written file: stale once that writer is gone.
                if running == nil, unlink("\(directory)/\(name)") == 0 { removed += 1 }
                continue
            }
            guard case .read(let entry, let identity) = readEntry(named: name, ownedBy: nil) else { continue }
            if running == nil || running != entry.startTicks, removeEntry(named: name, identity) { removed += 1 }
        }
        return removed
    }

    /// The start time of the process `pid` now, or nil if there is none.
    static func startTicks(of pid: Int32, proc: ProcFS) -> UInt64? {
        do {
            let bytes = try ProcFS.readBytes(proc.path(pid, "stat"))
            return try bytes.withUnsafeBytes { raw throws(ProcError) in try ProcessStat.parse(raw, pid: pid) }.startTicks
        } catch {
            return nil  // gone (or never there)
        }
    }

    enum ReadOutcome {
        case missing
        case skipped(String)
        case read(Entry, FileIdentity)
    }

    /// Reads the entry `name` safely (see the type's documentation); `ownedBy` nil: any owner.
    func readEntry(named name: String, ownedBy owner: UInt32?) -> ReadOutcome {
        let path = "\(directory)/\(name)"
        let bytes: [UInt8]
        let identity: FileIdentity
        do {
            let file = try RegularFile.open(path, maxBytes: Self.maximumFileBytes, ownedBy: owner)
            identity = file.identity
            bytes = try file.readToEnd(maxBytes: Self.maximumFileBytes)
        } catch {
            if error.errno == .noSuchFileOrDirectory { return .missing }  // nothing published: the common case
            return .skipped("\(error)")
        }
        guard let entry = Self.parse(bytes) else { return .skipped("\(path): not a region registry file") }
        return .read(entry, identity)
    }

    /// Removes the entry `name` if it is still the file that was read (a writer may have
    /// replaced it since).
    func removeEntry(named name: String, _ identity: FileIdentity) -> Bool {
        let path = "\(directory)/\(name)"
        var st = stat()
        guard lstat(path, &st) == 0, FileIdentity(st) == identity else { return false }
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

    /// What a process published, or why its file was not used.
    public enum Lookup: Sendable, Hashable {
        /// It published nothing (no file).
        case unpublished
        case tags([RegionTag])
        /// A file is there but was not used: the reason, one line (not a regular file, another
        /// user's, too large, not a registry file, left by an earlier process with this PID).
        case skipped(String)
    }

    /// The ranges `process` published. The file must belong to `ownerUID` (the process's user)
    /// or root; with `ownerUID` nil (unknown), to root. A file left by an earlier process with
    /// the same PID is removed (when this user may).
    public func lookup(for process: ProcessStat, ownerUID: UInt32?) -> Lookup {
        let name = "\(process.pid)"
        switch readEntry(named: name, ownedBy: ownerUID ?? 0) {
        case .missing:
            return .unpublished
        case .skipped(let reason):
            return .skipped(reason)
        case .read(let entry, let identity):
            guard entry.pid == process.pid else { return .skipped("\(directory)/\(name): written for pid \(entry.pid)") }
            guard entry.startTicks == process.startTicks else {
                let removed = removeEntry(named: name, identity)
                return .skipped("\(directory)/\(name): left by an earlier process with this PID\(removed ? ", removed" : "")")
            }
            return .tags(entry.tags)
        }
    }

    public func tags(for process: ProcessStat, ownerUID: UInt32?) -> [RegionTag] {
        tagsAndNote(for: process, ownerUID: ownerUID).tags
    }

    /// A skipped file's reason is the note (`vm` prints it: nothing is tagged, and says why).
    public func tagsAndNote(for process: ProcessStat, ownerUID: UInt32?) -> (tags: [RegionTag], note: String?) {
        switch lookup(for: process, ownerUID: ownerUID) {
        case .unpublished: ([], nil)
        case .tags(let tags): (tags, nil)
        case .skipped(let reason): ([], "pid \(process.pid): region registry file not used: \(reason)")
        }
    }
}

/// Why publishing in the registry failed.
public enum RegistryError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The directory is not one this process may trust with its file, or the file could not
    /// be written.
    case write(FileWriteError)

    public var description: String {
        switch self {
        case .write(let e): "region registry: \(e)"
        }
    }
}
