import MemPressureOneShot
import MemPressureLifecycle
import ArgumentParser
import FoundationEssentials
import Glibc
import MemPressureJetsam
import MemPressureLifecycleProtocol
import MemPressureSystem
import MemPressureHogClient
import MemPressureValues
import MemPressureScenarios
import SystemPackage
import MemPressureVMTracker

struct Demo: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "demo",
        abstract: "The built-in scenario: a process's VM report, then two apps through their lifecycle on a small device.",
        discussion: """
            Part 1 starts mempressure-hog holding dirty anonymous memory, a clean read-only file \
            mapping it has read, and MADV_FREE'd (purgeable) memory, and prints its VM Tracker \
            report and the three regions. Part 2 runs two model apps (mempressure-workload) under \
            the supervisor on a 512 MiB device (a memory cgroup, when the machine lets us make \
            one): launch, background with a background task, suspension, a system change queued \
            for the suspended app, a memory warning, resume; then the accounting per state. Part 3 \
            fills a 384 MiB device with six apps in every band until memory runs short: jetsam \
            warns the running apps, then kills in the iOS order, and prints its episode report.
            """
    )

    @Option(name: .long, help: "Dirty anonymous memory the process holds (bytes; k, m, g suffixes).")
    var dirty = "16m"
    @Option(name: .long, help: "Size of the file it maps read-only and reads.")
    var file = "8m"
    @Option(name: .long, help: "Anonymous memory it writes and then marks MADV_FREE.")
    var purgeable = "12m"
    @Flag(name: .long, help: "Print JSON: {\"vm\": the hog's VM report, \"lifecycle\": the scenario's log, \"jetsam\": part 3's log}.")
    var json = false
    @Flag(name: .customLong("vm-only"), help: "Only part 1.")
    var vmOnly = false
    @Option(name: .customLong("report-dir"), help: "Keep jetsam's episode reports in this directory (made 0700 if missing; by default they are written to the demo's own temporary directory and removed at the end).", completion: .directory)
    var reportDirectory: String?

    func run() async throws {
        let demo = self
        try await interruptible { try await demo.all() }
    }

    func all() async throws {
        do {
            // The hog holds these: a size the machine cannot hold is refused before it starts.
            for (text, flag) in [(dirty, "--dirty"), (file, "--file"), (purgeable, "--purgeable")] { _ = try parseBytesInMemory(text, flag: flag) }
            // Everything the demo writes (the hog's file, the apps' data, jetsam's reports unless
            // --report-dir) goes into a directory of its own, made exclusively (mode 0700, under
            // $TMPDIR or /tmp): never a name another user could make first. Removed at the end.
            let scratch = try CheckedDirectory.makeUnique(prefix: "mempressure-demo-")
            defer { scratch.removeTree() }
            let args = ["--dirty", dirty, "--file", "\(scratch.path)/hog.dat", "--file-bytes", file, "--purgeable", purgeable]
            let (report, text) = try await Hog.with(args) { hog -> (VMReport, String) in
                let app = try Snapshotter().app(.process(hog.pid), options: .detailed)
                let report = VMReport(app, includeRegions: true, sort: .address)
                return (report, Self.explain(report: report, hog: hog))
            }
            if !json { output("Part 1: a process's memory, as VM Tracker shows it\n\n" + text) }
            if vmOnly {
                if json { output(try encodeJSON(report)) }
                return
            }
            try Task.checkCancellation()
            let log = try await lifecycle(data: try scratch.subdirectory("lifecycle"))
            try Task.checkCancellation()
            let jetsamLog = try await jetsam(data: try scratch.subdirectory("jetsam"))
            if json {
                struct All: Encodable {
                    var vm: VMReport
                    var lifecycle: ScenarioLog
                    var jetsam: ScenarioLog?
                }
                output(try encodeJSON(All(vm: report, lifecycle: log, jetsam: jetsamLog)))
            }
        } catch {
            throw fail(error)
        }
    }

    /// Part 3: several apps switched among on a small device until memory runs short: their VM
    /// Tracker summaries as they are suspended, the warnings, jetsam's decisions and why, a
    /// freeze-dry when there is swap; then switching back: a resume against a relaunch. The apps'
    /// data (and the episode reports, without --report-dir) go into `data`, the demo's own.
    func jetsam(data directory: CheckedDirectory) async throws -> ScenarioLog? {
        guard Supervisor.canBudget() else {
            if !json { output("\nPart 3 (jetsam) needs a device budget: a memory cgroup, which needs root and the memory controller. Skipped.\n") }
            return nil
        }
        let data = directory.path
        let episodes = reportDirectory ?? "\(data)/episodes"
        let apps: [(String, Int, Bool)] = [("Photos", 60, false), ("Maps", 50, false), ("Music", 40, true), ("Notes", 20, false), ("Podcasts", 24, true), ("Weather", 4, false), ("Safari", 10, false)]
        var steps: [Command] = []
        for (name, _, running) in apps where name != "Safari" {
            steps += [.activate(name), .waitReady(name, count: nil, timeout: nil), .background(name, waitForSuspension: !running)]
            if running { steps.append(.waitState(name, .backgroundRunning, timeout: 20)) }
        }
        steps += [.activate("Safari"), .allocate("Safari", bytes: 100 << 20), .waitState("Photos", .notRunning, timeout: 30), .wait(seconds: 0.5)]
        // Switching back: Safari gives its memory back and goes to the background; Notes, kept
        // suspended, is resumed; Photos, which jetsam took, is relaunched with its state.
        steps += [.release("Safari", bytes: 100 << 20), .background("Safari", waitForSuspension: true),
                  .activate("Notes"), .waitReady("Notes", count: 2, timeout: 20), .background("Notes", waitForSuspension: true),
                  .activate("Photos"), .waitReady("Photos", count: 1, timeout: 30)]
        var j = JetsamConfiguration(policy: .ios)
        j.highMemoryBytes = 32 << 20
        j.targetAvailableShare = 0.5
        j.reportDirectory = episodes
        let scenario = Scenario(
            budgetBytes: 384 << 20, backgroundTaskLimit: 600, jetsam: j,
            apps: apps.map { name, dirty, running in
                AppSpec(name: name, command: ["mempressure-workload", "--data-dir", "\(data)/\(name)", "--state-mb", "1", "--image-cache-mb", "2", "--backing-mb", "1", "--assets-mb", "1", "--dirty-mb", "\(dirty)"] + (running ? ["--background-task", "600"] : []))
            },
            steps: steps)
        if !json {
            output("\nPart 3: apps switched among on a 384 MiB device until memory runs short. Photos, Maps, Notes and Weather are used, then suspended; Music and Podcasts keep running in the background; Safari comes to the foreground and allocates 100 MiB. Jetsam (ios policy, high memory from 32 MiB, half the budget to be free again) warns the running apps, then kills; then we switch back to Notes (resumed) and Photos (relaunched):\n\n")
        }
        let quiet = json
        let log = try await scenario.run { event in
            guard !quiet else { return }
            var levelChange = false
            if case .pressureLevel = event.payload { levelChange = true }
            if levelChange || ([.warning, .jetsam, .freeze, .exit, .launch].contains(event.kind) && event.app != nil) || event.kind == .note {
                output(renderEvent(event) + "\n")
            }
            // As each app is suspended, what it leaves in memory, from the VM Tracker.
            if case .state(_, .suspended) = event.payload, let app = event.app, let pid = event.pid {
                output(Self.backgroundSummary(app: app, pid: pid, at: event.t) + "\n")
            }
        }
        if !json {
            for e in log.episodes { output("\n" + e.renderText()) }
            output("\nKernel cgroup OOM kills during the run: \(log.kernelOOMKills.map(String.init) ?? "?") (jetsam acted first). `mempressure jetsam replay` runs the same decisions under the other policies.\n")
            output(Self.switchingBack(log))
            var written: [String] = []
            do throws(SystemCallError) {
                written = try ProcFS.listDirectory(episodes).map { "\(episodes)/\(String(decoding: $0, as: UTF8.self))" }.sorted()
            } catch where error.errno == .noSuchFileOrDirectory {
                // No episode, so no report: jetsam makes the directory with the first.
            } catch {
                output("cannot list \(episodes): \(error)\n")
            }
            for file in written {
                output("Episode report: \(file)" + (reportDirectory == nil ? " (removed when the demo ends; --report-dir DIR keeps it; `mempressure jetsam report FILE` renders it)\n" : "\n"))
            }
            for e in log.errors { output("error: \(e)\n") }
        }
        return log
    }

    /// One line: what a suspended app leaves in memory.
    static func backgroundSummary(app: String, pid: Int32, at t: Double) -> String {
        let head = ByteFormat.fixed(t, 3).padded(to: 9) + "  " + app.padded(to: 10, left: true) + "  " + String(pid).padded(to: 7) + "  " + "vm".padded(to: 12, left: true) + "  suspended: "
        do {
            let c = try Snapshotter().process(pid, options: .totalsOnly).totals
            return head + "footprint \(ByteFormat.human(c.footprint)) (dirty \(ByteFormat.human(c.dirty)), purgeable \(ByteFormat.human(c.purgeable)), clean \(ByteFormat.human(c.clean)), swapped \(ByteFormat.human(c.swapped)))"
        } catch {
            return head + "unreadable (\(error))"
        }
    }

    /// Switching back after the kills: the time to ready of a resume and of a relaunch.
    static func switchingBack(_ log: ScenarioLog) -> String {
        var out = "\nSwitching back, from the supervisor's command to the app's ready:\n"
        let notes = log.events.filter { $0.app == "Notes" }
        if let ready = notes.last(where: { $0.kind == .ready })?.t,
            let resume = notes.last(where: { $0.kind == .state && $0.from == .suspended && $0.t <= ready })?.t {
            out += "  Notes, kept suspended, resumed: \(ByteFormat.fixed((ready - resume) * 1000, 1)) ms\n"
        }
        let photos = log.events.filter { $0.app == "Photos" }
        if let ready = photos.last(where: { $0.kind == .ready })?.t, let launch = photos.last(where: { $0.kind == .launch && $0.t <= ready })?.t {
            out += "  Photos, taken by jetsam, relaunched with its saved state: \(ByteFormat.fixed((ready - launch) * 1000, 1)) ms\n"
        }
        out += "  (Reports/resume-relaunch.md measures this tradeoff at every trim level; Reports/switching.md over app-switching traces.)\n"
        return out
    }

    /// Part 2: the built-in lifecycle scenario; the apps' data go into `data`, the demo's own.
    func lifecycle(data directory: CheckedDirectory) async throws -> ScenarioLog {
        let data = directory.path
        let canBudget = Supervisor.canBudget()
        func workload(_ name: String, _ extra: [String]) -> AppSpec {
            AppSpec(name: name, command: ["mempressure-workload", "--data-dir", "\(data)/\(name)", "--state-mb", "16", "--image-cache-mb", "32", "--backing-mb", "8", "--assets-mb", "16"] + extra)
        }
        let scenario = Scenario(
            budgetBytes: canBudget ? 512 << 20 : nil, suspendWith: .sigstop, backgroundTaskLimit: 10, expirationWarning: 2,
            callbackTimeout: 10, launchTimeout: nil, warnOnPressure: false,
            apps: [
                workload("Photos", ["--trim", "0.5", "--restore", "lazy", "--background-task", "1"]),
                workload("Maps", ["--trim", "0.75", "--restore", "eager"]),
            ],
            steps: [
                .launch("Photos", registering: nil), .activate("Photos"), .waitReady("Photos", count: nil, timeout: nil),
                .background("Photos", waitForSuspension: true),
                .activate("Maps"), .waitReady("Maps", count: nil, timeout: nil),
                .notify(.all, kind: "localeChanged", value: "fr_FR"),
                .notify(.all, kind: "localeChanged", value: "de_DE"),
                .warn(.all),
                .background("Maps", waitForSuspension: true),
                .activate("Photos"), .waitReady("Photos", count: 2, timeout: nil),
                .terminate("Photos"), .terminate("Maps"),
            ])
        if !json {
            output("\nPart 2: two apps through their lifecycle on a \(canBudget ? "512 MiB device (a memory cgroup holding both)" : "machine without a RAM budget (creating a memory cgroup needs root and the memory controller)")\n\n")
        }
        let quiet = json
        let log = try await scenario.run { event in
            if !quiet { output(renderEvent(event) + "\n") }
        }
        if !json {
            output("\nAccounting per lifecycle state (CPU, faults and storage I/O from /proc, footprint from the VM Tracker):\n")
            output(renderAccounting(log.apps))
            output(Self.resumeVersusLaunch(log))
            for e in log.errors { output("error: \(e)\n") }
        }
        return log
    }

    /// Time from the supervisor's command to the app's ready: first launch versus resume.
    static func resumeVersusLaunch(_ log: ScenarioLog) -> String {
        var out = "\n"
        for app in ["Photos"] {
            let events = log.events.filter { $0.app == app }
            let readies = events.filter { $0.kind == .ready }.map(\.t)
            guard readies.count >= 2, let launch = events.first(where: { $0.kind == .launch })?.t,
                let resume = events.first(where: { $0.kind == .state && $0.from == .suspended })?.t
            else { continue }
            out += "\(app): ready \(ByteFormat.fixed((readies[0] - launch) * 1000, 0)) ms after launch, "
            out += "\(ByteFormat.fixed((readies[1] - resume) * 1000, 0)) ms after resume from suspension.\n"
        }
        return out
    }

    static func explain(report: VMReport, hog: HogInfo) -> String {
        var summary = report
        summary.regions = nil
        var out = "mempressure demo: process \(hog.pid) (mempressure-hog) holds\n"
        if let d = hog.dirty { out += "  \(ByteFormat.human(UInt64(d.bytes))) of dirty anonymous memory (written)\n" }
        if let f = hog.file { out += "  \(ByteFormat.human(UInt64(f.bytes))) of a file mapped read-only and read (clean, backed by the file)\n" }
        if let p = hog.purgeable { out += "  \(ByteFormat.human(UInt64(p.bytes))) of anonymous memory written then marked MADV_FREE (purgeable)\n" }
        out += "\n" + summary.renderText() + "\n"

        var table = TextTable([
            .init("Held as", .left), .init("Type", .left), .init("Resident"), .init("Dirty"), .init("Clean"),
            .init("Purgeable"), .init("Footprint"), .init("Reclaimable without killing it", .left),
        ])
        func row(_ label: String, _ block: HogInfo.Block?, _ reclaim: String) {
            guard let block, let r = report.regions?.first(where: { $0.startAddress == block.start }) else { return }
            table.append([
                label, r.type, ByteFormat.human(r.residentBytes), ByteFormat.human(r.dirtyBytes), ByteFormat.human(r.cleanBytes),
                ByteFormat.human(r.purgeableBytes), ByteFormat.human(r.footprintBytes), reclaim,
            ])
        }
        row("dirty", hog.dirty, "no: only by swapping or terminating")
        row("file", hog.file, "yes: clean pages are dropped and refault from the file")
        row("purgeable", hog.purgeable, "yes: the kernel discards them; they read back as zero")
        out += "The three regions it holds:\n" + table.render()
        out += "\nFootprint (what jetsam charges) = Private_Dirty + Private_Hugetlb + Swap: the dirty region only.\n"
        return out
    }
}
