// mempressure-workload: the model app the demo, the tests and the benchmarks run under the
// supervisor. It holds what a real app holds, in sizes set by its options (`--help` lists them):
// saved state, a decoded-image cache in a PurgeableCache, view backing stores in purgeable
// buffers, mmap'd asset files, a model it computed (plain dirty memory it can rebuild), and plain
// dirty memory it can be told to grow and shrink while it runs (`allocate N` / `release N`, from a
// scenario step or `mempressure app allocate`). Its commands and replies are WorkloadProtocol's.
//
// On didEnterBackground it saves its state and releases `--trim` of what it can rebuild (images,
// backing stores, the model); on resume it rebuilds what is missing, before reporting ready
// (`--restore eager`) or after (`lazy`: only the first screen's share, `--first-screen`, before).
// Relaunched, it builds everything before ready (`--relaunch eager`) or, as real apps do, only
// the first screen's share, the rest after ready (`--relaunch lazy`). The benchmarks ask it, through app commands, when the
// rebuild has finished and what it cost (`restored`), and check every byte of its state
// (`verify`).
//
// It reports ready after launch (once active) and after each resume. Without a supervisor it
// runs once through launch and waits for end of file on its standard input.

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

/// The app's model: everything it holds, and how it builds, trims and restores it.
final class Workload: LifecycleDelegate, @unchecked Sendable {
    let o: Options
    /// The data directory, written in only through its checked descriptor (`DataDirectory`).
    let directory: CheckedDirectory
    let images: PurgeableCache<Int, PurgeableBuffer>
    var state: [UInt8] = []
    /// nil where a lazy relaunch has not built it yet.
    var backingStores: [PurgeableBuffer?] = []
    var assets: [MappedFile] = []
    let lock = Mutex<Void>(())
    let rebuilding = Atomic<Bool>(false)
    /// Set at launch and when returning from the background: the next didBecomeActive reports
    /// ready (an interruption's end is not a resume).
    let owesReady = Atomic<Bool>(true)
    /// Set by a lazy relaunch (`--relaunch lazy`) that built only the first screen: the rest is
    /// built after the first ready.
    let launchRestPending = Atomic<Bool>(false)
    /// What a lazy relaunch built of the first screen (on the client's thread, as launch).
    var launchFirstScreen = WorkloadRebuild()
    /// Frames drawn (`drawFrame`), for the `state` reply.
    let framesDrawn = Atomic<UInt64>(0)
    let taskShouldStop = Atomic<Bool>(false)
    let taskBegun = Atomic<Bool>(false)
    var restoredFromDisk = false
    /// The checksum of the state as launch found it (restored from disk, or new).
    var launchChecksum: UInt64 = 0
    /// The model: 1 MiB chunks of computed content; nil where trimmed.
    var model: [[UInt8]?] = []
    /// What the last rebuild did and cost (read by the `restored` command).
    var lastRebuild = WorkloadRebuild()

    let dirty = DirtyMemory()

    init(_ o: Options) {
        self.o = o
        do {
            directory = try DataDirectory.open(o.dataDirectory, appName: o.appName)
        } catch {
            fail("its data directory: \(error)" + (o.dataDirectory == nil ? " (the default; --data-dir names another)" : ""))
        }
        images = PurgeableCache(name: "images-\(o.appName)", policy: .sieve)
    }

    var imageCount: Int { o.imageCacheMB * 1024 / o.imageKB }
    var backingCount: Int { o.backingMB }  // 1 MiB each

    // MARK: Building

    /// Decodes image `id` (or `bytes` of content): real CPU work, `decodeCost` rounds of mixing
    /// per KiB.
    func decode(_ id: Int, bytes: Int? = nil) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: bytes ?? o.imageKB * 1024)
        out.withUnsafeMutableBytes { raw in
            let words = raw.bindMemory(to: UInt64.self)
            var x = UInt64(truncatingIfNeeded: id) &* 0x9E37_79B9_7F4A_7C15 | 1
            let rounds = max(1, o.decodeCost / 128)
            for i in words.indices {
                for _ in 0..<rounds {
                    x ^= x << 13
                    x ^= x >> 7
                    x ^= x << 17
                }
                words[i] = x
            }
        }
        return out
    }

    func buildImage(_ id: Int) {
        do {
            try images.setContent(decode(id), forKey: id)
        } catch {
            fail("image cache: \(error)")
        }
    }

    func buildBackingStore() -> PurgeableBuffer {
        do {
            let b = try PurgeableBuffer(count: 1 << 20, arena: PurgeableArena.named("backing stores: \(o.appName)"))
            try b.withUnsafeMutableBytes { raw in
                raw.bindMemory(to: UInt64.self).update(repeating: 0x00FF_00FF_00FF_00FF)
            }
            try b.endContentAccess()
            return b
        } catch {
            fail("backing store: \(error)")
        }
    }

    func loadState() {
        let size = o.stateMB << 20
        do throws(FileOpenError) {
            let file = try directory.openFile("state.bin", maxBytes: Int.max)
            if file.size == size {
                state = try file.readToEnd(maxBytes: size)
                restoredFromDisk = state.count == size
            }
        } catch where error.isMissing {
            // First launch: no saved state yet.
        } catch {
            fail("state: \(error)")
        }
        if !restoredFromDisk {
            state = [UInt8](repeating: 0, count: size)
            state.withUnsafeMutableBytes { raw in
                let words = raw.bindMemory(to: UInt64.self)
                for i in words.indices { words[i] = Self.stateWord(i) }
            }
        }
        launchChecksum = stateChecksum
    }

    /// Word `i` of a new state (`WorkloadStateLayout`); word 0 then counts activations.
    static func stateWord(_ i: Int) -> UInt64 { WorkloadStateLayout.word(i, activations: 0) }

    /// The bytes of the state that differ from what it must hold after `activations`
    /// activations since its first launch: every byte is compared, and a missing or short state
    /// counts whole.
    func lostBytes(activations: UInt64) -> Int {
        state.withUnsafeBytes { WorkloadStateLayout.lostBytes($0, expectedBytes: o.stateMB << 20, activations: activations) }
    }

    /// Blocks until one byte can be read from the FIFO at `path` (EOF counts too).
    func waitAtGate(_ path: String) {
        let fd = retryOnInterrupt { open(path, O_RDONLY | O_CLOEXEC) }  // a FIFO: open waits for a writer
        guard fd >= 0 else { fail("cannot open the background gate \(path): errno \(errno)") }
        var byte: UInt8 = 0
        _ = retryOnInterrupt { read(fd, &byte, 1) }
        close(fd)
    }

    /// Writes the state to a new temporary file, syncs it, and renames it over the saved one
    /// (`CheckedDirectory.replaceFile`): a crash or a kill mid-save leaves the previous state
    /// whole, and a link planted in the directory is replaced, never written through. A save that
    /// fails ends the app loudly (status 2): the model app never loses its state silently.
    func saveState() {
        do {
            try directory.replaceFile("state.bin", durable: true) { (file: borrowing NewFile) throws(SystemCallError) in try file.write(state) }
        } catch {
            fail("cannot save its state: \(error)")
        }
    }

    /// FNV-1a over the state: what a relaunch must restore exactly.
    var stateChecksum: UInt64 {
        state.withUnsafeBytes { raw in
            var h: UInt64 = 0xcbf2_9ce4_8422_2325
            for word in raw.bindMemory(to: UInt64.self) { h = (h ^ word) &* 0x0000_0100_0000_01b3 }
            return h
        }
    }

    func mapAssets() {
        guard o.assetsMB > 0 else { return }
        let size = o.assetsMB << 20
        let existing: Int
        do {
            existing = try directory.openFile("assets.bin", maxBytes: MappedFile.maximumBytes).size
        } catch {
            existing = -1  // missing, or not a regular file: written anew (replacing whatever is there)
        }
        if existing != size {
            var chunk = [UInt8](repeating: 0, count: 1 << 20)
            for i in chunk.indices { chunk[i] = UInt8(truncatingIfNeeded: i &* 7) }
            do {
                // Synced, so that its page-cache pages are clean.
                try directory.replaceFile("assets.bin", durable: true) { (file: borrowing NewFile) throws(SystemCallError) in
                    for _ in 0..<o.assetsMB { try file.write(chunk) }
                }
            } catch {
                fail("assets: \(error)")
            }
        }
        do {
            let file = try MappedFile(file: directory.openFile("assets.bin", maxBytes: MappedFile.maximumBytes))
            try file.touchAllPages()
            assets = [file]
        } catch {
            fail("assets: \(error)")
        }
    }

    /// How many of `count` things the first `share` of them is (all of them at 1).
    static func share(_ count: Int, _ share: Double) -> Int {
        share >= 1 ? count : min(count, Int((Double(count) * share).rounded()))
    }

    /// Rebuilds whatever is missing among the first `share` of each kind (images not in the
    /// cache, backing stores discarded or not built, model chunks trimmed or not built: the
    /// first screen's share is the first of each, which a trim also releases first). With
    /// `share` 1 it also reads the working set again (the assets, the model, the state). Returns
    /// what it did and cost, added to `earlier` (the first screen's phase, before ready), and
    /// records that in `lastRebuild`; what it built counts as before ready if `beforeReady`.
    @discardableResult
    func rebuildMissing(share: Double = 1, beforeReady: Bool, adding earlier: WorkloadRebuild = WorkloadRebuild()) -> WorkloadRebuild {
        let start = monotonicSeconds(), cpu = threadCPUSeconds()
        var r = earlier
        for id in 0..<Self.share(imageCount, share) where images.object(forKey: id) == nil {
            buildImage(id)
            r.images += 1
        }
        lock.withLock { _ in
            for i in 0..<Self.share(backingStores.count, share) {
                if let b = backingStores[i], !b.isContentDiscarded, b.beginContentAccess() { continue }
                backingStores[i] = buildBackingStore()
                r.stores += 1
            }
            for case let b? in backingStores where !b.isContentDiscarded && b.accessCount > 0 {
                do { try b.endContentAccess() } catch { fail("\(error)") }
            }
            for i in 0..<Self.share(model.count, share) where model[i] == nil {
                model[i] = decode(1_000_000 + i, bytes: 1 << 20)
                r.modelChunks += 1
            }
        }
        if share >= 1 {
            // The working set is used again: the assets, the model and the state are read, a
            // word a page; pages the kernel took (clean file pages dropped, anonymous pages in
            // swap) fault back in here.
            let touch = monotonicSeconds()
            if !assets.isEmpty {
                do { try assets[0].touchAllPages() } catch { fail("assets: \(error)") }
            }
            var sum: UInt64 = 0
            lock.withLock { _ in
                for chunk in model { if let chunk { sum &+= touchPages(chunk) } }
            }
            sum &+= touchPages(state)
            blackHole(sum)
            r.refaultSeconds += monotonicSeconds() - touch
        }
        r.seconds += monotonicSeconds() - start
        r.cpuSeconds += threadCPUSeconds() - cpu
        if beforeReady { r.beforeReady = r.images + r.stores + r.modelChunks }
        lock.withLock { [r] _ in lastRebuild = r }
        return r
    }

    /// Waits for a rebuild running on the lazy-restore thread to finish (it is short: seconds
    /// at most).
    func awaitRebuild() {
        while rebuilding.load(ordering: .acquiring) { sched_yield() }
    }

    /// Releases `trim` of the rebuildable memory.
    func trimForBackground() {
        let images = Int((Double(imageCount) * o.trim).rounded())
        for id in 0..<images { self.images.removeObject(forKey: id) }
        lock.withLock { _ in
            let stores = Int((Double(backingStores.count) * o.trim).rounded())
            for b in backingStores.prefix(stores) { b?.discardContentIfPossible() }
            let chunks = Int((Double(model.count) * o.trim).rounded())
            for i in 0..<chunks { model[i] = nil }
        }
        PurgeableArena.adviseIdleBuffersEverywhere()
        // What was freed goes back to the kernel now: jemalloc keeps freed pages dirty for its
        // decay time (10 s by default) and purges them on later allocations, which a suspended
        // app never makes, so without this the trimmed model would stay in the footprint.
        // 4096 is MALLCTL_ARENAS_ALL (jemalloc 5): every arena.
        do { try Mallctl.run("arena.4096.purge") } catch { fail("\(error)") }
    }

    /// Everything didFinishLaunching does: the state restored, the assets mapped, and the
    /// images, backing stores and model built — all of them, or with `--relaunch lazy` only the
    /// first screen's share (`--first-screen`), the rest after the first ready.
    func launch() {
        loadState()
        mapAssets()
        if o.relaunch == .lazy, o.firstScreen < 1 {
            lock.withLock { _ in
                backingStores = Array(repeating: nil, count: backingCount)
                model = Array(repeating: nil, count: o.modelMB)
            }
            launchFirstScreen = rebuildMissing(share: o.firstScreen, beforeReady: true)
            launchRestPending.store(true, ordering: .relaxed)
        } else {
            for id in 0..<imageCount { buildImage(id) }
            lock.withLock { _ in
                backingStores = (0..<backingCount).map { _ in buildBackingStore() }
                model = (0..<o.modelMB).map { decode(1_000_000 + $0, bytes: 1 << 20) }
            }
        }
        if o.dirtyMB > 0, !dirty.allocate(o.dirtyMB << 20) { fail("cannot allocate \(o.dirtyMB) MiB") }
    }

    /// The frame drawn before ready, at launch and on every resume (`--frame-kb`): real CPU,
    /// the same decoding as an image, a MiB at a time into a buffer freed after (its work grows
    /// with `--frame-kb`, the memory it holds at once does not: a screen's worth).
    func drawFrame() {
        guard o.frameKB > 0 else { return }
        defer { framesDrawn.add(1, ordering: .relaxed) }
        var left = o.frameKB
        var sum: UInt64 = 0
        while left > 0 {
            let kb = min(left, 1024)
            sum &+= decode(2_000_000 + left, bytes: kb * 1024).withUnsafeBytes { $0.load(fromByteOffset: $0.count - 8, as: UInt64.self) }
            left -= kb
        }
        blackHole(sum)
    }

    // MARK: LifecycleDelegate

    func didFinishLaunching(_ client: LifecycleClient) { launch() }

    func didBecomeActive(_ client: LifecycleClient) {
        // The state changes while the app is used: each activation counts in its first word, so
        // a relaunch that restored an older state (or none) shows in the checksum.
        if state.count >= 8 { state.withUnsafeMutableBytes { $0.storeBytes(of: $0.load(as: UInt64.self) &+ 1, as: UInt64.self) } }
        guard owesReady.exchange(false, ordering: .relaxed) else { return }
        let launchRest = launchRestPending.exchange(false, ordering: .relaxed)
        if rebuilding.load(ordering: .relaxed) == false, launchRest || !o.eagerRestore {
            // Lazy: the first screen's share of what is missing now, ready, the rest after (a
            // lazy relaunch built the first screen in didFinishLaunching).
            let first = launchRest ? launchFirstScreen : rebuildMissing(share: o.firstScreen, beforeReady: true)
            drawFrame()
            rebuilding.store(true, ordering: .releasing)
            client.reportReady()
            thread("the lazy restore") { [self] in
                rebuildMissing(beforeReady: false, adding: first)
                rebuilding.store(false, ordering: .releasing)
            }
            return
        }
        drawFrame()
        client.reportReady()
    }

    func willEnterForeground(_ client: LifecycleClient) {
        owesReady.store(true, ordering: .relaxed)
        if o.eagerRestore {
            awaitRebuild()  // a lazy relaunch's rest, if it has not finished
            rebuildMissing(beforeReady: true)
        }
    }

    func didEnterBackground(_ client: LifecycleClient) {
        if let gate = o.backgroundGate { waitAtGate(gate) }
        // A lazy rebuild still running (a lazy restore's or a lazy relaunch's rest) finishes
        // first: the trim then frees exactly its share, and the next resume finds missing what
        // the trim freed (a lazy relaunch sent to the background before its first activation
        // has its rest rebuilt at the next resume, as missing).
        awaitRebuild()
        launchRestPending.store(false, ordering: .relaxed)
        saveState()
        trimForBackground()
        guard o.backgroundTaskSeconds > 0 else { return }
        taskShouldStop.store(false, ordering: .relaxed)
        taskBegun.store(false, ordering: .relaxed)
        let seconds = o.backgroundTaskSeconds
        // The task begins on the thread that does the work (its stack is the one a crash report
        // shows), before didEnterBackground returns (or the app could be suspended first).
        thread("the background task") { [self] in
            let task = client.beginBackgroundTask(name: "uploadPhotos") { [self] in
                if !o.ignoreExpiration { taskShouldStop.store(true, ordering: .relaxed) }
            }
            taskBegun.store(true, ordering: .releasing)
            uploadPhotos(seconds: seconds) { taskShouldStop.load(ordering: .relaxed) }
            client.endBackgroundTask(task)
        }
        while !taskBegun.load(ordering: .acquiring) { sched_yield() }
    }

    func willTerminate(_ client: LifecycleClient) { saveState() }

    func didReceiveMemoryWarning(_ client: LifecycleClient) {
        guard !o.ignoreWarnings else { return }
        MemoryEvents.shared.post(.memoryWarning)
        if o.warningFrees > 0 { dirty.release(Int(Double(dirty.bytes) * o.warningFrees)) }
    }

    /// An app command (from the supervisor, or a line on standard input when unsupervised): a
    /// `WorkloadCommand` line, answered with a `WorkloadReply` line (the grammar is there).
    func didReceiveCommand(_ client: LifecycleClient, _ text: String) -> String { command(text) }

    func command(_ text: String) -> String {
        do {
            return perform(try WorkloadCommand(line: text)).line
        } catch {
            return WorkloadReply.failed(error.description).line
        }
    }

    func perform(_ command: WorkloadCommand) -> WorkloadReply {
        switch command {
        case .state:
            let activations = state.count >= 8 ? state.withUnsafeBytes { $0.load(as: UInt64.self) } : 0
            return .state(
                WorkloadStateReport(
                    checksum: stateChecksum, launchChecksum: launchChecksum, restoredFromDisk: restoredFromDisk, bytes: state.count,
                    activations: activations, frames: framesDrawn.load(ordering: .relaxed)))
        case .restored:
            awaitRebuild()
            return .restored(lock.withLock { _ in lastRebuild })
        case .verify(let activations):
            return .lost(bytes: lostBytes(activations: activations))
        case .allocate(let bytes):
            guard dirty.allocate(bytes) else { return .failed("mmap of \(bytes) bytes refused") }
            return .dirty(bytes: dirty.bytes)
        case .release(let bytes):
            dirty.release(bytes)
            return .dirty(bytes: dirty.bytes)
        case .grow(let rate, let total):
            let step = 4 << 20
            thread("grow") { [dirty] in
                let start = monotonicSeconds()
                var done = 0
                while done < total {
                    let n = min(step, total - done)
                    guard dirty.allocate(n) else { fail("grow: mmap of \(n) bytes refused") }
                    done += n
                    // Paced: the next step when the rate says so.
                    let due = start + Double(done) / Double(rate)
                    let wait = due - monotonicSeconds()
                    if wait > 0 {
                        var ts = timespec(tv_sec: Int(wait), tv_nsec: Int((wait - Double(Int(wait))) * 1e9))
                        nanosleep(&ts, nil)
                    }
                }
            }
            return .growing
        case .ramp(let chunk, let line, let more, let limit): return ramp(chunk: chunk, line: line, more: more, limit: limit)
        }
    }
}

let options = Options.parseOrExit()
let workload = Workload(options)
let counter = Atomic<UInt64>(0)
if options.spin {
    thread("--spin") {
        while true { counter.add(1, ordering: .relaxed) }
    }
}
if options.watchPressure {
    let monitor = PressureMonitor()
    monitor.subscribe { event in
        if event.level >= .warning { MemoryEvents.shared.post(.memoryWarning) }
    }
}
if LifecycleClient.start(delegate: workload) == nil {
    // Unsupervised: launch, report on standard output, then answer commands, one per line on
    // standard input, until end of file.
    workload.launch()
    workload.drawFrame()
    func say(_ line: String) { _ = (line + "\n").withCString { write(1, $0, strlen($0)) } }
    say(WorkloadReply.ready(pid: getpid()).line)
    if workload.launchRestPending.exchange(false, ordering: .relaxed) {
        workload.rebuildMissing(beforeReady: false, adding: workload.launchFirstScreen)
    }
    while let line = readLine() { say(workload.command(line)) }
    exit(0)
}
// Supervised: everything happens on the client's thread.
while true { pause() }
