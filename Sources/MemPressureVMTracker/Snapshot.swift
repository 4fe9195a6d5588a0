/// How much of a process to read.

import MemPressureLifecycleProtocol
import MemPressureSystem
import MemPressureRegionTags
public enum Detail: Sendable, Hashable {
    /// Every region (`/proc/PID/smaps`), classified by type.
    case regions
    /// Totals only (`/proc/PID/smaps_rollup`), much cheaper: for whole-machine views.
    case rollup
}

/// What to read for each process.
public struct SnapshotOptions: Sendable {
    public var detail: Detail = .regions
    /// Read `/proc/PID/task/TID/syscall` to find thread stacks (needs ptrace access; skipped
    /// quietly where it is not allowed, since it only refines labels).
    public var threadStacks: Bool = false
    /// Read `/proc/PID/status` too (peak resident size, RssAnon/RssFile/RssShmem).
    public var status: Bool = false
    /// Read `/proc/PID/cgroup`: the process's cgroup (for grouping by cgroup) and the supervised
    /// app whose cgroup holds it (a supervised app is one app, whatever its processes' parents).
    public var cgroup: Bool = false
    public var tagSource: (any RegionTagSource)?

    public init(detail: Detail = .regions, threadStacks: Bool = false, status: Bool = false, cgroup: Bool = false, tagSource: (any RegionTagSource)? = nil) {
        self.detail = detail
        self.threadStacks = threadStacks
        self.status = status
        self.cgroup = cgroup
        self.tagSource = tagSource
    }

    /// Everything, for a report on one process or app, with the ranges processes published in
    /// the default region registry.
    public static let detailed = SnapshotOptions(detail: .regions, threadStacks: true, status: true, tagSource: RegionRegistry())
    /// Totals only, for whole-machine views.
    public static let totalsOnly = SnapshotOptions(detail: .rollup)
}

/// One process at one instant.
public struct ProcessSnapshot: Sendable {
    public var pid: Int32 { stat.pid }
    public var stat: ProcessStat
    public var status: ProcessStatus?
    /// Every region with its type; empty when the snapshot was taken with `Detail.rollup`.
    public var regions: [Region]
    /// The sum over `regions`, or the kernel's rollup when regions were not read.
    public var totals: MemoryCounters
    public var detail: Detail
    public var capturedAt: Timestamp
    /// The process's cgroup (memory controller on v1, unified on v2), when asked for.
    public var cgroup: String?
    /// The supervised app whose cgroup holds the process, when its cgroup was asked for and is
    /// an app's (`SupervisedAppCgroup`).
    public var supervisedApp: SupervisedAppCgroup?
    /// What could not be used for this process, in one line each (a region registry file that
    /// is a FIFO, a link, another user's, ...): the report's notes.
    public var notes: [String] = []

    public init(stat: ProcessStat, status: ProcessStatus? = nil, regions: [Region], totals: MemoryCounters? = nil, detail: Detail = .regions, capturedAt: Timestamp, cgroup: String? = nil) {
        self.stat = stat
        self.status = status
        self.cgroup = cgroup
        self.regions = regions
        self.totals = totals ?? MemoryCounters.sum(of: regions)
        self.detail = detail
        self.capturedAt = capturedAt
    }

    /// The process name (`comm`), printable.
    public var name: String { stat.name.description }
}

/// Takes snapshots of processes, apps and the whole machine from /proc.
public struct Snapshotter: Sendable {
    public var proc: ProcFS
    /// Where cgroup file systems are mounted (v1 controllers below it, or v2 unified).
    public var cgroupRoot: String

    public init(proc: ProcFS = ProcFS(), cgroupRoot: String = "/sys/fs/cgroup") {
        self.proc = proc
        self.cgroupRoot = cgroupRoot
    }

    /// A snapshot of one process.
    public func process(_ pid: Int32, options: SnapshotOptions = .detailed) throws(ProcError) -> ProcessSnapshot {
        var buffer = ReadBuffer()
        return try process(pid, options: options, buffer: &buffer)
    }

    /// A snapshot of one process, reading through a caller-owned buffer.
    ///
    /// Reads `stat`, then `smaps` (or `smaps_rollup`), then `stat` again, all through one open
    /// `/proc/PID` directory: if the process exits in between, the second read fails or shows
    /// a zombie and the snapshot is refused rather than half-true.
    public func process(_ pid: Int32, options: SnapshotOptions, buffer: inout ReadBuffer) throws(ProcError) -> ProcessSnapshot {
        // Kernel threads (most of a machine's PIDs) and zombies end here, their directories
        // never opened; the second read of stat below, through the directory, checks that what
        // was read there is this process's.
        let statFile = try proc.readStat(pid, into: &buffer)
        let stat = try buffer.withBytes { (b) throws(ProcError) in try ProcessStat.parse(b, pid: pid, file: statFile) }
        if stat.isKernelThread { throw .kernelThread(pid: pid) }
        if stat.isZombie { throw .zombie(pid: pid) }
        let dir: ProcessDirectory
        do {
            dir = try proc.open(pid)
        } catch .noSuchProcess {
            // Gone since its stat was read, as a file read through the directory would say.
            throw .processExited(pid: pid, file: statFile)
        }
        let capturedAt = Timestamp.now()

        var regions: [Region] = []
        var totals: MemoryCounters?
        switch options.detail {
        case .regions:
            let file = "\(dir.path)/smaps"
            try dir.read("smaps", into: &buffer)
            regions = try buffer.withBytes { (b) throws(ProcError) in try SmapsParser.parse(b, pid: pid, file: file) }
        case .rollup:
            let file = "\(dir.path)/smaps_rollup"
            try dir.read("smaps_rollup", into: &buffer, oneRecord: true)
            if buffer.count == 0 { throw .processExited(pid: pid, file: file) }
            totals = try buffer.withBytes { (b) throws(ProcError) in try SmapsParser.parseRollup(b, pid: pid, file: file) }
        }

        var status: ProcessStatus?
        if options.status {
            let file = "\(dir.path)/status"
            try dir.read("status", into: &buffer, oneRecord: true)
            status = try buffer.withBytes { (b) throws(ProcError) in try ProcessStatus.parse(b, pid: pid, file: file) }
        }
        var cgroup: String?
        var supervisedApp: SupervisedAppCgroup?
        if options.cgroup {
            try dir.read("cgroup", into: &buffer, oneRecord: true)
            cgroup = buffer.withBytes { Self.cgroupPath(fromProcCgroup: $0, controller: "memory") }
            supervisedApp = buffer.withBytes { Self.supervisedApp(fromProcCgroup: $0) }
        }
        var stackPointers: [UInt64] = []
        if options.threadStacks && options.detail == .regions {
            stackPointers = threadStackPointers(dir: dir, buffer: &buffer)
        }

        // Still the same live process?
        try dir.read("stat", into: &buffer, oneRecord: true)
        let after = try buffer.withBytes { (b) throws(ProcError) in try ProcessStat.parse(b, pid: pid, file: statFile) }
        if after.isZombie || after.startTicks != stat.startTicks {
            throw .processExited(pid: pid, file: "\(dir.path)/\(options.detail == .regions ? "smaps" : "smaps_rollup")")
        }

        var notes: [String] = []
        if options.detail == .regions {
            var tags: [RegionTag] = []
            if let source = options.tagSource {
                let owner: UInt32?
                do { owner = try dir.ownerUID() } catch { owner = nil }
                let found = source.tagsAndNote(for: after, ownerUID: owner)
                tags = found.tags
                if let note = found.note { notes.append(note) }
            }
            let root = Array("\(proc.root)/\(pid)/root".utf8)
            RegionClassifier.classify(&regions, threadStackPointers: stackPointers, tags: tags) { region in
                // Seen from the process's own root: does a file of that name and inode exist?
                ProcFS.fileIdentity(root + region.path.bytes) == FileIdentity(device: region.device, inode: region.inode)
            }
        }
        var snapshot = ProcessSnapshot(stat: after, status: status, regions: regions, totals: totals, detail: options.detail, capturedAt: capturedAt, cgroup: cgroup)
        snapshot.notes = notes
        snapshot.supervisedApp = supervisedApp
        return snapshot
    }

    /// The cgroup path from the text of `/proc/PID/cgroup`: the v1 `controller` hierarchy's
    /// path if there is one, else the v2 ("0::") path.
    static func cgroupPath(fromProcCgroup bytes: UnsafeRawBufferPointer, controller: String) -> String? {
        CgroupDirectory.relativePath(inProcCgroup: bytes, controller: controller)
    }

    /// Stack pointers of the threads of a process, from `task/TID/syscall` ("nr args... sp pc",
    /// or "-1 sp pc" outside a system call, or "running"). Threads that cannot be read (no
    /// ptrace access, exited meanwhile) are left out: this only refines region labels.
    func threadStackPointers(dir: borrowing ProcessDirectory, buffer: inout ReadBuffer) -> [UInt64] {
        let taskDir = "\(dir.path)/task"
        let tids: [[UInt8]]
        do {
            tids = try ProcFS.listDirectory(taskDir)
        } catch {
            return []  // labels fall back to "anonymous"
        }
        var result: [UInt64] = []
        for tid in tids {
            let name = "task/\(String(decoding: tid, as: UTF8.self))/syscall"
            do {
                try dir.read(name, into: &buffer)
            } catch {
                continue
            }
            let sp: UInt64? = buffer.withBytes { b in
                let tokens = Array(ByteScanner.fields(b))
                guard tokens.count >= 3 else { return nil }
                let token = tokens[tokens.count - 2]
                guard token.starts(with: "0x".utf8) else { return nil }
                return ByteScanner.hex(token.dropFirst(2))
            }
            if let sp { result.append(sp) }
        }
        return result
    }
}
