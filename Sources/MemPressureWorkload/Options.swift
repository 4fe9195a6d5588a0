// mempressure-workload's options (`--help` lists them).

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

enum Restore: String, ExpressibleByArgument, Sendable {
    case lazy, eager
}

struct Options: ParsableCommand, Sendable {
    static let configuration = CommandConfiguration(
        commandName: "mempressure-workload",
        abstract: "The model app: state, an image cache, backing stores, assets and dirty memory, supervised through its lifecycle.")

    @Option(help: "The app's name (default: $MEMPRESSURE_APP, else workload).") var name: String?
    @Option(name: .customLong("data-dir"), help: "Where its state and assets live: made 0700 if missing; one of another user, or that others may write in (unless sticky), is refused (default: mempressure-workload-NAME in $XDG_RUNTIME_DIR, else /run for root, /run/user/UID for others).") var dataDirectory: String?
    @Option(name: .customLong("state-mb"), help: "App state (MiB): saved on didEnterBackground and willTerminate, restored when relaunched.") var stateMB = 8
    @Option(name: .customLong("image-cache-mb"), help: "Decoded images in a PurgeableCache (MiB).") var imageCacheMB = 16
    @Option(name: .customLong("image-kb"), help: "The size of one image (KiB, at least 4).") var imageKB = 256
    @Option(name: .customLong("backing-mb"), help: "View backing stores in purgeable buffers (MiB, 1 MiB each).") var backingMB = 8
    @Option(name: .customLong("assets-mb"), help: "Asset files, mmap'd read-only (MiB).") var assetsMB = 8
    @Option(name: .customLong("model-mb"), help: "A model computed at launch (MiB, 1 MiB chunks of plain dirty memory, --decode-cost like images): trimmed in the background and rebuilt on resume.") var modelMB = 0
    @Option(name: .customLong("dirty-mb"), help: "Plain dirty memory allocated at launch (MiB); grows and shrinks with allocate and release.") var dirtyMB = 0
    @Option(name: .customLong("decode-cost"), help: "Rounds of mixing per KiB when decoding an image (real CPU).") var decodeCost = 64
    @Option(name: .customLong("frame-kb"), help: "A frame drawn each time the app comes to the foreground — at launch and on every resume — before it reports ready: this many KiB decoded like an image (real CPU at --decode-cost), a MiB at a time into a buffer freed after: the fixed cost of a resume, as a phone redraws its screen (default 0).") var frameKB = 0
    @Option(help: "Fraction (0...1) of the rebuildable memory (images, backing stores, the model) released on didEnterBackground.") var trim = 0.5
    @Option(help: "On resume, rebuild what was released before reporting ready (eager) or after (lazy).") var restore: Restore = .lazy
    @Option(help: "On launch, build everything before reporting ready (eager), or only the first screen's share (--first-screen) and the rest after ready (lazy), as real apps relaunch.") var relaunch: Restore = .eager
    @Option(name: .customLong("first-screen"), help: "Fraction (0...1) of the rebuildable memory (images, backing stores, the model: the first of each) the first screen needs: built before ready by a lazy relaunch and by a lazy restore (default 0: a lazy restore reports ready at once).") var firstScreen = 0.0
    @Option(name: .customLong("background-gate"), help: "On didEnterBackground, before saving, wait until a byte can be read from this FIFO (a save that lasts as long as a test wants).") var backgroundGate: String?
    @Option(name: .customLong("background-task"), help: "On didEnterBackground, run a task (uploadPhotos) for this many seconds.") var backgroundTaskSeconds = 0.0
    @Option(name: .customLong("warning-frees"), help: "Fraction (0...1) of its plain dirty memory freed on a memory warning (a cache it can rebuild).") var warningFrees = 0.0
    @Flag(name: .customLong("ignore-expiration"), help: "The background task ignores its expiration handler (and overruns).") var ignoreExpiration = false
    @Flag(name: .customLong("ignore-warnings"), help: "Memory warnings release nothing.") var ignoreWarnings = false
    @Flag(help: "Burn CPU on a thread while running.") var spin = false
    @Flag(name: .customLong("watch-pressure"), help: "Watch memory pressure in-process and shrink its caches at warning.") var watchPressure = false

    mutating func validate() throws {
        guard stateMB >= 0, imageCacheMB >= 0, backingMB >= 0, assetsMB >= 0, modelMB >= 0, dirtyMB >= 0, decodeCost >= 0, frameKB >= 0 else {
            throw ValidationError("sizes and costs are non-negative integers")
        }
        guard frameKB <= 1 << 20 else { throw ValidationError("--frame-kb is at most 1048576 (1 GiB)") }
        guard stateMB <= 1 << 20, imageCacheMB <= 1 << 20, backingMB <= 1 << 20, assetsMB <= 1 << 20, modelMB <= 1 << 20, dirtyMB <= 1 << 20 else {
            throw ValidationError("sizes are at most 1048576 MiB")
        }
        imageKB = max(4, imageKB)
        guard (0...1).contains(trim) else { throw ValidationError("--trim takes a fraction between 0 and 1") }
        guard (0...1).contains(firstScreen) else { throw ValidationError("--first-screen takes a fraction between 0 and 1") }
        guard (0...1).contains(warningFrees) else { throw ValidationError("--warning-frees takes a fraction between 0 and 1") }
        guard backgroundTaskSeconds >= 0, backgroundTaskSeconds.isFinite, backgroundTaskSeconds <= 86_400 else {
            throw ValidationError("--background-task takes a number of seconds from 0 to 86400")
        }
        if name == nil { name = getenv(ControlProtocol.appVariable).map { String(cString: $0) } ?? "workload" }
    }

    var appName: String { name ?? "workload" }
    var eagerRestore: Bool { restore == .eager }
}
