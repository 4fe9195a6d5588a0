// mempressure-workload: the model app the demo, the tests and the benchmarks run under the
// supervisor. It holds what a real app holds, in sizes set by its arguments:
//
//   --state-mb N          app state: saved to --data-dir on didEnterBackground and willTerminate,
//                         restored from there when relaunched
//   --image-cache-mb N    decoded images in a PurgeableCache; decoding costs real CPU
//                         (--decode-cost iterations per KiB)
//   --backing-mb N        view backing stores in purgeable buffers
//   --assets-mb N         asset files, mmap'd
//   --trim F              fraction (0...1) of the rebuildable memory (images, backing stores)
//                         released on didEnterBackground
//   --restore lazy|eager  on resume, rebuild what was released before reporting ready (eager)
//                         or report ready at once and rebuild after (lazy)
//   --background-task S   on didEnterBackground, run a task ("uploadPhotos") for S seconds
//   --ignore-expiration   the task ignores its expiration handler (and overruns)
//   --ignore-warnings     memory warnings release nothing
//   --spin                burn CPU on a thread while running
//   --watch-pressure      watch memory pressure in-process (PressureMonitor) and shrink its
//                         caches at warning, as a supervisor's memory warning would
//
// It reports ready after launch (once active) and after each resume. Without a supervisor it
// runs once through launch and waits for end of file on its standard input.

import AppLifecycle
import CachePolicies
import Glibc
import LinuxSystem
import MappedFiles
import Pressure
import Purgeable
import Synchronization

struct Options: Sendable {
    var name = "workload"
    var dataDirectory: String?
    var stateMB = 8
    var imageCacheMB = 16
    var imageKB = 256
    var backingMB = 8
    var assetsMB = 8
    var decodeCost = 64
    var trim = 0.5
    var eagerRestore = false
    var backgroundTaskSeconds = 0.0
    var ignoreExpiration = false
    var ignoreWarnings = false
    var spin = false
    var watchPressure = false
}

func fail(_ message: String) -> Never {
    let text = "mempressure-workload: \(message)\n"
    _ = text.withCString { write(2, $0, strlen($0)) }
    exit(2)
}

func parseOptions() -> Options {
    var o = Options()
    if let env = getenv("MEMPRESSURE_APP") { o.name = String(cString: env) }
    var args = CommandLine.arguments.dropFirst()
    func value(_ flag: String) -> String {
        guard let v = args.popFirst() else { fail("\(flag) needs a value") }
        return v
    }
    func int(_ flag: String) -> Int {
        guard let v = Int(value(flag)), v >= 0 else { fail("\(flag) takes a non-negative integer") }
        return v
    }
    func double(_ flag: String) -> Double {
        guard let v = Double(value(flag)), v >= 0, v.isFinite else { fail("\(flag) takes a non-negative number") }
        return v
    }
    while let arg = args.popFirst() {
        switch arg {
        case "--name": o.name = value(arg)
        case "--data-dir": o.dataDirectory = value(arg)
        case "--state-mb": o.stateMB = int(arg)
        case "--image-cache-mb": o.imageCacheMB = int(arg)
        case "--image-kb": o.imageKB = max(4, int(arg))
        case "--backing-mb": o.backingMB = int(arg)
        case "--assets-mb": o.assetsMB = int(arg)
        case "--decode-cost": o.decodeCost = int(arg)
        case "--trim":
            o.trim = double(arg)
            guard o.trim <= 1 else { fail("--trim takes a fraction between 0 and 1") }
        case "--restore":
            switch value(arg) {
            case "lazy": o.eagerRestore = false
            case "eager": o.eagerRestore = true
            case let other: fail("--restore takes lazy or eager, not '\(other)'")
            }
        case "--background-task": o.backgroundTaskSeconds = double(arg)
        case "--ignore-expiration": o.ignoreExpiration = true
        case "--ignore-warnings": o.ignoreWarnings = true
        case "--spin": o.spin = true
        case "--watch-pressure": o.watchPressure = true
        default: fail("unknown argument '\(arg)'")
        }
    }
    return o
}

func monotonic() -> Double {
    var ts = timespec()
    clock_gettime(CLOCK_MONOTONIC, &ts)
    return Double(ts.tv_sec) + Double(ts.tv_nsec) / 1e9
}

/// The app's model: everything it holds, and how it builds, trims and restores it.
final class Workload: LifecycleDelegate, @unchecked Sendable {
    let o: Options
    let directory: String
    let images: PurgeableCache<Int, PurgeableBuffer>
    var state: [UInt8] = []
    var backingStores: [PurgeableBuffer] = []
    var assets: [MappedFile] = []
    let lock = Mutex<Void>(())
    let rebuilding = Atomic<Bool>(false)
    /// Set at launch and when returning from the background: the next didBecomeActive reports
    /// ready (an interruption's end is not a resume).
    let owesReady = Atomic<Bool>(true)
    let taskShouldStop = Atomic<Bool>(false)
    let taskBegun = Atomic<Bool>(false)
    var restoredFromDisk = false

    init(_ o: Options) {
        self.o = o
        directory = o.dataDirectory ?? "/tmp/mempressure-workload-\(o.name)"
        images = PurgeableCache(name: "images-\(o.name)", policy: .sieve)
        if mkdir(directory, 0o755) != 0 && errno != EEXIST { fail("cannot create \(directory): errno \(errno)") }
    }

    var imageCount: Int { o.imageCacheMB * 1024 / o.imageKB }
    var backingCount: Int { o.backingMB }  // 1 MiB each

    // MARK: Building

    /// Decodes image `id`: real CPU work, `decodeCost` rounds of mixing per KiB.
    func decode(_ id: Int) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: o.imageKB * 1024)
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
            let b = try PurgeableBuffer(count: 1 << 20, arena: PurgeableArena.named("backing stores: \(o.name)"))
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
        let path = "\(directory)/state.bin"
        let size = o.stateMB << 20
        do {
            let bytes = try FileLoader.load(path, mappingThreshold: Int.max)
            if bytes.count == size {
                state = try bytes.withUnsafeBytes { Array($0) }
                restoredFromDisk = true
            }
        } catch MappedFileError.notFound {
            // First launch: no saved state yet.
        } catch {
            fail("state: \(error)")
        }
        if !restoredFromDisk {
            state = [UInt8](repeating: 0, count: size)
            state.withUnsafeMutableBytes { raw in
                let words = raw.bindMemory(to: UInt64.self)
                for i in words.indices { words[i] = UInt64(truncatingIfNeeded: i) &* 0x9E37_79B9_7F4A_7C15 }
            }
        }
    }

    func saveState() {
        let path = "\(directory)/state.bin"
        let fd = open(path, O_CREAT | O_TRUNC | O_WRONLY | O_CLOEXEC, 0o644)
        guard fd >= 0 else { return }
        defer { close(fd) }
        var offset = 0
        state.withUnsafeBytes { raw in
            while offset < raw.count {
                let n = write(fd, raw.baseAddress! + offset, raw.count - offset)
                if n <= 0 { return }
                offset += n
            }
        }
        fsync(fd)
    }

    func mapAssets() {
        guard o.assetsMB > 0 else { return }
        let path = "\(directory)/assets.bin"
        let size = o.assetsMB << 20
        let existing: Int
        do {
            existing = try MappedFile(path: path).count
        } catch {
            existing = -1  // missing or empty: write it
        }
        if existing != size {
            let fd = open(path, O_CREAT | O_TRUNC | O_WRONLY | O_CLOEXEC, 0o644)
            var chunk = [UInt8](repeating: 0, count: 1 << 20)
            for i in chunk.indices { chunk[i] = UInt8(truncatingIfNeeded: i &* 7) }
            for _ in 0..<o.assetsMB { _ = chunk.withUnsafeBytes { write(fd, $0.baseAddress!, $0.count) } }
            fsync(fd)
            close(fd)
        }
        do {
            let file = try MappedFile(path: path)
            try file.touchAllPages()
            assets = [file]
        } catch {
            fail("assets: \(error)")
        }
    }

    /// Rebuilds whatever is missing: images not in the cache, backing stores discarded.
    func rebuildMissing() {
        for id in 0..<imageCount where images.object(forKey: id) == nil { buildImage(id) }
        lock.withLock { _ in
            for i in backingStores.indices where backingStores[i].isContentDiscarded || !backingStores[i].beginContentAccess() {
                backingStores[i] = buildBackingStore()
            }
            for b in backingStores where !b.isContentDiscarded && b.accessCount > 0 {
                do { try b.endContentAccess() } catch { fail("\(error)") }
            }
        }
        if !assets.isEmpty {
            do { try assets[0].touchAllPages() } catch { fail("assets: \(error)") }
        }
    }

    /// Releases `trim` of the rebuildable memory.
    func trimForBackground() {
        let images = Int((Double(imageCount) * o.trim).rounded())
        for id in 0..<images { self.images.removeObject(forKey: id) }
        lock.withLock { _ in
            let stores = Int((Double(backingStores.count) * o.trim).rounded())
            for b in backingStores.prefix(stores) { b.discardContentIfPossible() }
        }
        PurgeableArena.adviseIdleBuffersEverywhere()
    }

    /// Everything didFinishLaunching does.
    func launch() {
        loadState()
        mapAssets()
        for id in 0..<imageCount { buildImage(id) }
        lock.withLock { _ in backingStores = (0..<backingCount).map { _ in buildBackingStore() } }
    }

    // MARK: LifecycleDelegate

    func didFinishLaunching(_ client: LifecycleClient) { launch() }

    func didBecomeActive(_ client: LifecycleClient) {
        guard owesReady.exchange(false, ordering: .relaxed) else { return }
        if rebuilding.load(ordering: .relaxed) == false, !o.eagerRestore {
            // Lazy restore: ready now, rebuild after.
            client.reportReady()
            rebuilding.store(true, ordering: .relaxed)
            do {
                try OSThread.detached { [self] in
                    rebuildMissing()
                    rebuilding.store(false, ordering: .relaxed)
                }
            } catch {
                fail("cannot start the thread that restores the app after it is ready: \(error)")
            }
            return
        }
        client.reportReady()
    }

    func willEnterForeground(_ client: LifecycleClient) {
        owesReady.store(true, ordering: .relaxed)
        if o.eagerRestore { rebuildMissing() }
    }

    func didEnterBackground(_ client: LifecycleClient) {
        saveState()
        trimForBackground()
        guard o.backgroundTaskSeconds > 0 else { return }
        taskShouldStop.store(false, ordering: .relaxed)
        taskBegun.store(false, ordering: .relaxed)
        let seconds = o.backgroundTaskSeconds
        // The task begins on the thread that does the work (its stack is the one a crash report
        // shows), before didEnterBackground returns (or the app could be suspended first).
        let upload: @Sendable () -> Void = { [self] in
            let task = client.beginBackgroundTask(name: "uploadPhotos") { [self] in
                if !o.ignoreExpiration { taskShouldStop.store(true, ordering: .relaxed) }
            }
            taskBegun.store(true, ordering: .releasing)
            uploadPhotos(seconds: seconds) { taskShouldStop.load(ordering: .relaxed) }
            client.endBackgroundTask(task)
        }
        do {
            try OSThread.detached(upload)
        } catch {
            fail("cannot start the background task's thread: \(error)")  // waiting for it to begin would hang
        }
        while !taskBegun.load(ordering: .acquiring) { sched_yield() }
    }

    func willTerminate(_ client: LifecycleClient) { saveState() }

    func didReceiveMemoryWarning(_ client: LifecycleClient) {
        guard !o.ignoreWarnings else { return }
        MemoryEvents.shared.post(.memoryWarning)
    }
}

/// The background task: pretends to upload, checking for expiration between chunks.
@inline(never)
func uploadPhotos(seconds: Double, shouldStop: () -> Bool) {
    let end = monotonic() + seconds
    while monotonic() < end, !shouldStop() {
        var ts = timespec(tv_sec: 0, tv_nsec: 20_000_000)
        nanosleep(&ts, nil)  // one chunk of upload
    }
}

let options = parseOptions()
let workload = Workload(options)
let counter = Atomic<UInt64>(0)
if options.spin {
    do {
        try OSThread.detached {
            while true { counter.add(1, ordering: .relaxed) }
        }
    } catch {
        fail("--spin: cannot start the spinning thread: \(error)")
    }
}
if options.watchPressure {
    let monitor = PressureMonitor()
    monitor.subscribe { event in
        if event.level >= .warning { MemoryEvents.shared.post(.memoryWarning) }
    }
}
if LifecycleClient.start(delegate: workload) == nil {
    // Unsupervised: launch, report on standard output, and wait.
    workload.launch()
    let line = "ready \(getpid())\n"
    _ = line.withCString { write(1, $0, strlen($0)) }
    while getchar() != EOF {}
    exit(0)
}
// Supervised: everything happens on the client's thread.
while true { pause() }
