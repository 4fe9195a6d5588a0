// swift-tools-version: 6.2
//
// MemoryPressure: a memory-pressure and resource-accounting profiler for Linux.
// See ../shared/design.md for the shape of the modules and README.md for the quick start.

import PackageDescription

let strict: [SwiftSetting] = [
    .swiftLanguageMode(.v6),
    .enableUpcomingFeature("ExistentialAny"),
    .enableUpcomingFeature("MemberImportVisibility"),
    // Release code asks for a generic type's metadata through its accessor, not through its
    // mangled name: the runtime's demangler and its scans for the conformances a mangled name
    // names were a third of the instructions of a one-shot command (`mempressure top`,
    // Reports/vmtracker.md). The code grows a little.
    .unsafeFlags(["-Xfrontend", "-disable-concrete-type-metadata-mangled-name-accessors"], .when(configuration: .release)),
]

/// jemalloc and libstdc++ linked into the release `mempressure-commands` instead of loaded as shared
/// objects, when the Makefile names a directory holding them (`make static-libs`: jemalloc's PIC
/// archive as one relocatable object, `jemalloc.o`; an empty `libjemalloc.a` that answers the
/// module map's `-ljemalloc`; a link to the toolchain's `libstdc++.a`). Debian's libjemalloc.so
/// needs libstdc++.so, whose ~1,700 symbol bindings were most of the dynamic loader's work at
/// every start (about 0.4 ms of CPU and 2 MB of relocated pages, measured as whole processes).
/// jemalloc stays the process's malloc: its entry points are exported from the executable, so
/// that the C library's own allocations go to it as they did to the shared one (an object, not
/// an archive, because the static runtime's `--exclude-libs ALL` would hide an archive's symbols).
/// Without the variable (a plain `swift build`), both are shared objects as before. With it,
/// nothing loads libgcc_s: the static libstdc++'s `_Unwind_*` (reached only by a C++ exception,
/// such as a `bad_alloc` that ends in `terminate` anyway) resolve to libunwind's, which the
/// backtraces load. `make check-static` checks the result on the built binary.
let staticLinking: [String] = {
    guard let dir = Context.environment["MEMPRESSURE_STATIC_LIBS"], !dir.isEmpty else { return [] }
    let allocator = ["malloc", "free", "calloc", "realloc", "posix_memalign", "aligned_alloc", "memalign", "valloc", "malloc_usable_size"]
    return ["-L", dir, dir + "/jemalloc.o"] + allocator.flatMap { ["-Xlinker", "--export-dynamic-symbol=" + $0] }
}()

let package = Package(
    name: "MemoryPressure",
    products: [
        .executable(name: "mempressure", targets: ["mempressure"]),
        // Every command: `mempressure` answers the quickest one-shot lines itself and becomes this
        // program for the rest.
        .executable(name: "mempressure-commands", targets: ["mempressure-commands"]),
        // The same commands with the HTTP stack: `mempressure export` and `supervise --export`
        // run in it (mempressure-commands executes it for them), so that the other commands load none of it.
        .executable(name: "mempressure-server", targets: ["mempressure-server"]),
        .executable(name: "mempressure-hog", targets: ["MemPressureHog"]),
        .executable(name: "mempressure-exec", targets: ["mempressure-exec"]),
        .executable(name: "mempressure-guard", targets: ["mempressure-guard"]),
        .executable(name: "mempressure-workload", targets: ["MemPressureWorkload"]),
        .library(name: "MemPressureSystem", targets: ["MemPressureSystem"]),
        .library(name: "MemPressureRegionTags", targets: ["MemPressureRegionTags"]),
        .library(name: "MemPressureVMTracker", targets: ["MemPressureVMTracker"]),
        .library(name: "MemPressureCachePolicies", targets: ["MemPressureCachePolicies"]),
        .library(name: "MemPressurePurgeable", targets: ["MemPressurePurgeable"]),
        .library(name: "MemPressureMappedFiles", targets: ["MemPressureMappedFiles"]),
        .library(name: "MemPressureValues", targets: ["MemPressureValues"]),
        .library(name: "MemPressureMonitor", targets: ["MemPressureMonitor"]),
        .library(name: "MemPressureLifecycleProtocol", targets: ["MemPressureLifecycleProtocol"]),
        .library(name: "MemPressureClient", targets: ["MemPressureClient"]),
        // The lifecycle protocol's C client: libmempressure-client.a, its header in
        // Sources/MemPressureClientC/include, its pkg-config file from mempressure-client.pc.in.
        .library(name: "mempressure-client", type: .static, targets: ["MemPressureClientC"]),
        .executable(name: "mempressure-example-c", targets: ["mempressure-example-c"]),
        .library(name: "MemPressureLifecycle", targets: ["MemPressureLifecycle"]),
        .library(name: "MemPressureJetsam", targets: ["MemPressureJetsam"]),
        .library(name: "MemPressureScenarios", targets: ["MemPressureScenarios"]),
        .library(name: "MemPressureExporter", targets: ["MemPressureExporter", "MemPressureExporterServer"]),
        // Not for users: the model app's wire protocol and the memory hog's client, which the
        // benchmarks and fuzz targets (packages of their own) link. The underscore says so, as
        // swift-nio's _NIO* products do; test support (MemPressureTestSupport) is no product at all.
        .library(name: "_MemPressureWorkloadProtocol", targets: ["MemPressureWorkloadProtocol"]),
        .library(name: "_MemPressureHogClient", targets: ["MemPressureHogClient"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.5.0"),
        .package(url: "https://github.com/apple/swift-system", from: "1.4.0"),
        // Without its Foundation trait: we use FoundationEssentials only.
        .package(url: "https://github.com/swiftlang/swift-subprocess", from: "1.0.0", traits: []),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle", from: "2.6.0"),
        .package(url: "https://github.com/apple/swift-log", from: "1.8.0"),  // 1.8: InMemoryLogging, for the tests
        .package(url: "https://github.com/apple/swift-collections", from: "1.1.0"),
        // The exporter: swift-metrics is the API the libraries emit through, swift-prometheus the
        // backend and exposition, Hummingbird the HTTP server.
        .package(url: "https://github.com/apple/swift-metrics", from: "2.5.0"),
        .package(url: "https://github.com/swift-server/swift-prometheus", from: "2.1.0"),
        .package(url: "https://github.com/hummingbird-project/hummingbird", from: "2.5.0"),
        // `make docs`: DocC catalogs of the libraries.
        .package(url: "https://github.com/swiftlang/swift-docc-plugin", from: "1.4.0"),
    ],
    targets: [
        // Every target's name carries the package's prefix (MemPressure…, CMemPressure…,
        // mempressure-…): SwiftPM refuses two targets of one name anywhere in a package graph, so
        // a user's package that has its own `Backtrace`, `Scenarios` or `CZlib`, or depends on
        // one that does, could not link ours under short names (checked by PackageNamesTests).

        // System libraries, in the system's own directories (the Makefile installs them: Debian's
        // libjemalloc-dev, libunwind-dev, zlib1g-dev). Not through pkg-config: SwiftPM reads the
        // .pc files itself and would put their libdir, /usr/lib/x86_64-linux-gnu, ahead of every
        // other search directory, where the shared libjemalloc would win over the static one that
        // `staticLinking` (below) offers the release build of `mempressure-commands`.
        .systemLibrary(name: "CMemPressureJemalloc"),
        .systemLibrary(name: "CMemPressureUnwind"),
        // zlib, for the exporter's gzip-encoded answers.
        .systemLibrary(name: "CMemPressureZlib"),
        // A prefetch hint (header only), for the W-TinyLFU sketch's read-ahead.
        .systemLibrary(name: "CMemPressurePrefetch"),
        // What Swift cannot import: function-like macros, syscalls glibc does not wrap.
        .target(name: "CMemoryPressure"),
        // jemalloc arenas with extent hooks, flag macros, atomics on raw memory.
        // (A C target's own link: the module maps' `link` reaches only what Swift imports them into.)
        .target(name: "CMemPressurePurgeable", dependencies: ["CMemPressureJemalloc"], linkerSettings: [.linkedLibrary("jemalloc")]),
        // Stack walking with libunwind (its entry points are macros).
        .target(name: "CMemPressureBacktrace", dependencies: ["CMemPressureUnwind"], linkerSettings: [.linkedLibrary("unwind")]),

        .target(name: "MemPressureBacktrace", dependencies: ["CMemPressureBacktrace"], swiftSettings: strict),
        // The base module: typed system-call errors, /proc access and its parsers, the scanner
        // for the numbers the kernel writes, threads, time, UNIX sockets.
        .target(
            name: "MemPressureSystem",
            dependencies: ["CMemoryPressure", .product(name: "SystemPackage", package: "swift-system")],
            swiftSettings: strict
        ),
        // The region registry format: Purgeable writes it, VMTracker reads it.
        .target(
            name: "MemPressureRegionTags",
            dependencies: ["MemPressureSystem", .product(name: "SystemPackage", package: "swift-system")],
            swiftSettings: strict
        ),
        // The values memory pressure is told in, and nothing else (a leaf: no dependencies): the
        // one `PressureLevel` (encoded "normal", "warning", "critical"), a PSI reading
        // (`PressureStall`) and the machine's memory (`MachineMemory`, top's header). VMTracker
        // renders them without carrying the monitor; MemPressureMonitor reads, parses and judges them.
        .target(name: "MemPressureValues", swiftSettings: strict),
        // Memory pressure: the one PSI parser, the device's memory reading (`MemoryStatusReader`),
        // the one judgement of how short memory is (`PressureConfiguration.judge`), and the
        // monitor: sources woken by kernel events (cgroup v1 thresholds, pressure_level and OOM
        // eventfds, PSI triggers), polled only where none exists, merged into one level stream.
        .target(
            name: "MemPressureMonitor",
            dependencies: ["MemPressureValues", "MemPressureSystem", "CMemoryPressure", .product(name: "SystemPackage", package: "swift-system")],
            swiftSettings: strict
        ),
        // The control channel's wire protocol and the lifecycle vocabulary (apps and supervisor).
        .target(name: "MemPressureLifecycleProtocol", swiftSettings: strict),
        // The model app's commands and replies, typed, with their one line on the wire.
        .target(name: "MemPressureWorkloadProtocol", swiftSettings: strict),
        // The client library a supervised app links: callbacks, background tasks, readiness.
        .target(
            name: "MemPressureClient",
            dependencies: ["MemPressureLifecycleProtocol", "MemPressureBacktrace", "CMemoryPressure", "MemPressureSystem"],
            swiftSettings: strict
        ),
        // The lifecycle protocol's client in C (a header and a static library, for apps in C
        // and anything that links C), and the example app in C that frees a cache on a warning.
        .target(name: "MemPressureClientC", exclude: ["mempressure-client.pc.in", "tests"], linkerSettings: [.linkedLibrary("pthread")]),
        .executableTarget(name: "mempressure-example-c", dependencies: ["MemPressureClientC"]),
        // The supervisor of app processes: the mechanism core with seams for policies.
        .target(
            name: "MemPressureLifecycle",
            dependencies: [
                "MemPressureLifecycleProtocol", "MemPressureMonitor", "MemPressureValues", "MemPressureRegionTags", "MemPressureVMTracker", "MemPressureSystem", "CMemoryPressure", "MemPressureWorkloadProtocol",
                .product(name: "SystemPackage", package: "swift-system"),
                .product(name: "DequeModule", package: "swift-collections"),
                .product(name: "CoreMetrics", package: "swift-metrics"),
            ],
            swiftSettings: strict
        ),
        // Jetsam: the pure ranker (policies, explanations, replay) and the killer attached to a supervisor.
        .target(
            name: "MemPressureJetsam",
            dependencies: ["MemPressureLifecycle", "MemPressureLifecycleProtocol", "MemPressureMonitor", "MemPressureValues", "MemPressureVMTracker", "MemPressureSystem"],
            swiftSettings: strict
        ),
        // The Prometheus/OpenMetrics exporter: collects at scrape time and renders the exposition.
        // Operator/ holds what ships beside it for operators (rules, their promtool tests, a
        // Grafana dashboard): files, not sources.
        .target(
            name: "MemPressureExporter",
            dependencies: [
                "MemPressureVMTracker", "MemPressureMonitor", "MemPressureValues", "MemPressureSystem", "CMemPressureZlib",
                .product(name: "SystemPackage", package: "swift-system"),
                .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "CoreMetrics", package: "swift-metrics"),
                .product(name: "Logging", package: "swift-log"),
            ],
            exclude: ["Operator"],
            swiftSettings: strict
        ),
        // The exporter's HTTP server (`ExporterService`, over Hummingbird), apart from the rest:
        // Hummingbird brings SwiftNIO and Foundation with ICU, which the one-shot commands must
        // not load (their start-up is measured in Reports/vmtracker.md).
        .target(
            name: "MemPressureExporterServer",
            dependencies: [
                "MemPressureExporter", "MemPressureVMTracker", "MemPressureSystem",
                .product(name: "SystemPackage", package: "swift-system"),
                .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: strict
        ),
        // Scripted experiments: a device, its apps, the steps; run under a supervisor of their own.
        .target(
            name: "MemPressureScenarios",
            dependencies: ["MemPressureLifecycle", "MemPressureJetsam", "MemPressureLifecycleProtocol", "MemPressureSystem", "MemPressureVMTracker"],
            swiftSettings: strict
        ),
        // Read-only file mappings: residency, hints, eviction; the map-or-read loader.
        .target(
            name: "MemPressureMappedFiles",
            dependencies: ["CMemoryPressure", "MemPressureSystem", .product(name: "SystemPackage", package: "swift-system")],
            swiftSettings: strict
        ),
        // Purgeable buffers on a jemalloc arena, and a purgeable cache built on CachePolicies.
        .target(
            name: "MemPressurePurgeable",
            dependencies: [
                "CMemPressurePurgeable", "CMemPressureJemalloc", "CMemoryPressure", "MemPressureCachePolicies", "MemPressureSystem", "MemPressureRegionTags", "MemPressureBacktrace",
                .product(name: "SystemPackage", package: "swift-system"),
                .product(name: "CoreMetrics", package: "swift-metrics"),
            ],
            swiftSettings: strict
        ),

        // Eviction and admission policies as pure value code, with a trace simulator.
        .target(name: "MemPressureCachePolicies", dependencies: ["CMemPressurePrefetch"], swiftSettings: strict),
        .target(
            name: "MemPressureVMTracker",
            dependencies: ["MemPressureSystem", "MemPressureRegionTags", "MemPressureLifecycleProtocol", "MemPressureValues"],
            swiftSettings: strict
        ),
        // The one-shot commands' common lines (`--version`, `vm`, a single `top`), read and run
        // without ArgumentParser: all of the `mempressure` program, and the same lines in the others.
        .target(
            name: "MemPressureOneShot",
            dependencies: ["MemPressureVMTracker", "MemPressureSystem", "MemPressureMonitor", "MemPressureValues", "MemPressureRegionTags", "MemPressureLifecycleProtocol"],
            swiftSettings: strict
        ),
        // The command line: every command, for `mempressure-commands` and `mempressure-server`.
        .target(
            name: "MemPressureCommands",
            dependencies: [
                "MemPressureOneShot",
                "MemPressureVMTracker",
                "MemPressureSystem",
                "MemPressureCachePolicies",
                "MemPressurePurgeable",
                "MemPressureMappedFiles",
                "MemPressureLifecycle",
                "MemPressureLifecycleProtocol",
                "MemPressureScenarios",
                "MemPressureJetsam",
                "MemPressureMonitor",
                "MemPressureValues",
                "CMemoryPressure",
                "MemPressureHogClient",
                "MemPressureRegionTags",
                "MemPressureExporter",
                .product(name: "SystemPackage", package: "swift-system"),
                .product(name: "CoreMetrics", package: "swift-metrics"),
                .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: strict
        ),
        // `mempressure`: the program users run (`OneShot`). Release builds on Linux link it fully
        // static: no dynamic loader, no shared library, nothing relocated at start, so `top`
        // costs little more than its reads (Reports/vmtracker.md); lld, because the C library's
        // static dlopen carries a link-time warning that gold prints and lld does not.
        // Packaging/: what `make install` and `make deb` put beside the binaries (systemd units,
        // the man page, the package's control file).
        .executableTarget(
            name: "mempressure",
            dependencies: ["MemPressureOneShot"],
            exclude: ["Packaging"],
            swiftSettings: strict,
            linkerSettings: [.unsafeFlags(["-static-executable", "-use-ld=lld"], .when(platforms: [.linux], configuration: .release))]
        ),
        // `mempressure-commands`: every command, without the HTTP stack (no SwiftNIO, no
        // Foundation with ICU); `mempressure` becomes it for all but the quickest lines.
        .executableTarget(
            name: "mempressure-commands",
            dependencies: ["MemPressureCommands", "MemPressureSystem"],
            path: "Sources/MempressureCommandsProgram",
            swiftSettings: strict,
            // lld (the toolchain's own) packs the ~57,000 relative relocations into a few KB of
            // DT_RELR (glibc 2.36+) instead of 1.4 MB of RELA that gold writes and the loader
            // reads at every start: 1 MB less at the peak of a command's start.
            linkerSettings: [.unsafeFlags(["-use-ld=lld", "-Xlinker", "-z", "-Xlinker", "pack-relative-relocs"] + staticLinking, .when(platforms: [.linux], configuration: .release))]
        ),
        // `mempressure-server`: the same commands with the exporter's HTTP server, for `export`
        // and `supervise --export`.
        .executableTarget(
            name: "mempressure-server",
            dependencies: [
                "MemPressureCommands", "MemPressureExporter", "MemPressureExporterServer",
                .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ],
            path: "Sources/MempressureServer",
            swiftSettings: strict
        ),
        // Joins cgroups, then execs the app: how the supervisor starts apps inside their cgroups.
        .executableTarget(name: "mempressure-exec", path: "Sources/MempressureExec"),
        // The supervisor's guardian: outlives a supervisor that dies without shutting down, and
        // then releases the kernel's OOM killer, ends the apps and removes their cgroups.
        .executableTarget(name: "mempressure-guard", dependencies: ["CMemoryPressure"], path: "Sources/MempressureGuard"),
        // A small process that holds known amounts of dirty, clean file-backed and purgeable
        // memory: the subject of `make demo`, the live tests and the benchmarks.
        .executableTarget(
            name: "MemPressureHog",
            dependencies: ["CMemoryPressure", "MemPressureSystem", "MemPressurePurgeable"],
            swiftSettings: strict
        ),

        // Starts the hog and reads what it holds (demo, tests, benchmarks).
        .target(
            name: "MemPressureHogClient",
            dependencies: [
                "MemPressureSystem",
                .product(name: "Subprocess", package: "swift-subprocess"),
                .product(name: "SystemPackage", package: "swift-system"),
            ],
            swiftSettings: strict
        ),

        // The model app: state, a decoded-image cache, purgeable backing stores, mapped assets.
        .executableTarget(
            name: "MemPressureWorkload",
            dependencies: [
                "MemPressureClient", "MemPressureLifecycleProtocol", "MemPressureWorkloadProtocol", "MemPressurePurgeable", "MemPressureMappedFiles", "MemPressureCachePolicies", "MemPressureMonitor", "MemPressureValues", "MemPressureSystem",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "SystemPackage", package: "swift-system"),
            ],
            swiftSettings: strict
        ),

        .target(
            name: "MemPressureTestSupport",
            dependencies: [
                "MemPressureVMTracker", "MemPressureSystem", "MemPressureHogClient", "MemPressureLifecycle", "MemPressureLifecycleProtocol", "MemPressureMonitor", "MemPressureValues",
                .product(name: "Subprocess", package: "swift-subprocess"),
                .product(name: "SystemPackage", package: "swift-system"),
            ],
            path: "Tests/TestSupport",
            exclude: ["Fixtures"],
            swiftSettings: strict
        ),
        .testTarget(
            name: "VMTrackerTests",
            dependencies: ["MemPressureVMTracker", "MemPressureValues", "MemPressureSystem", "MemPressureLifecycleProtocol", "MemPressureRegionTags", "MemPressureTestSupport", "MemPressureHogClient", "MemPressureHog"],
            swiftSettings: strict
        ),
        .testTarget(
            name: "CLITests",
            dependencies: [
                "MemPressureTestSupport", "MemPressureVMTracker", "MemPressureValues", "MemPressureSystem", "MemPressureHogClient", "MemPressureLifecycle", "MemPressureLifecycleProtocol", "mempressure", "mempressure-commands", "mempressure-server", "MemPressureCommands", "MemPressureOneShot", "MemPressureCachePolicies", "MemPressureHog", "MemPressureWorkload",
                "mempressure-exec", "mempressure-guard", .product(name: "Subprocess", package: "swift-subprocess"),
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "SystemPackage", package: "swift-system"),
            ],
            swiftSettings: strict
        ),
        .testTarget(
            name: "PurgeableTests",
            dependencies: [
                "MemPressurePurgeable", "MemPressureVMTracker", "MemPressureRegionTags", "MemPressureCachePolicies", "MemPressureTestSupport",
                .product(name: "MetricsTestKit", package: "swift-metrics"),
            ],
            swiftSettings: strict
        ),
        .testTarget(
            name: "MappedFilesTests",
            dependencies: ["MemPressureMappedFiles", "MemPressureVMTracker", "MemPressureSystem", "MemPressureTestSupport"],
            swiftSettings: strict
        ),
        .testTarget(
            name: "AppLifecycleTests",
            dependencies: [
                "MemPressureLifecycle", "MemPressureLifecycleProtocol", "MemPressureScenarios", "MemPressureVMTracker", "MemPressureSystem", "MemPressureTestSupport", "MemPressureWorkload", "mempressure-exec", "mempressure-guard",
                .product(name: "SystemPackage", package: "swift-system"),
                .product(name: "MetricsTestKit", package: "swift-metrics"),
            ],
            swiftSettings: strict
        ),
        .testTarget(
            name: "PressureTests",
            dependencies: [
                "MemPressureMonitor", "MemPressureValues", "MemPressureSystem", "MemPressureTestSupport", "MemPressureHogClient", "MemPressureHog",
                .product(name: "SystemPackage", package: "swift-system"),
            ],
            swiftSettings: strict
        ),
        .testTarget(
            name: "JetsamTests",
            dependencies: [
                "MemPressureJetsam", "MemPressureMonitor", "MemPressureValues", "MemPressureCachePolicies", "MemPressureLifecycleProtocol", "MemPressureLifecycle", "MemPressureScenarios", "MemPressureVMTracker", "MemPressureSystem", "MemPressureTestSupport", "MemPressureWorkload",
                "MemPressureWorkloadProtocol", "mempressure-exec", "mempressure-guard",
                .product(name: "MetricsTestKit", package: "swift-metrics"),
            ],
            swiftSettings: strict
        ),
        .testTarget(
            name: "ExporterTests",
            dependencies: [
                "MemPressureExporter", "MemPressureExporterServer", "MemPressureMonitor", "MemPressureValues", "MemPressureVMTracker", "MemPressureSystem", "MemPressureTestSupport", "MemPressureHogClient", "MemPressureHog", "mempressure", "mempressure-server",
                "mempressure-exec", "MemPressureWorkload", "CMemPressureZlib",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "InMemoryLogging", package: "swift-log"),
                .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "Subprocess", package: "swift-subprocess"),
                .product(name: "SystemPackage", package: "swift-system"),
            ],
            swiftSettings: strict
        ),
        // The lifecycle protocol's clients (Swift, C, Python): the golden transcripts replayed
        // against each, the C and Python example apps under a real supervisor, the C client
        // built through its pkg-config file and the Python client installed with pip.
        .testTarget(
            name: "ClientTests",
            dependencies: [
                "MemPressureClient", "MemPressureLifecycleProtocol", "MemPressureLifecycle", "MemPressureVMTracker", "MemPressureSystem", "MemPressureTestSupport",
                "mempressure-example-c", "mempressure-exec", "mempressure-guard",
            ],
            swiftSettings: strict
        ),
        .testTarget(
            name: "WorkloadProtocolTests",
            dependencies: ["MemPressureWorkloadProtocol"],
            swiftSettings: strict
        ),
        .testTarget(
            name: "CachePoliciesTests",
            dependencies: ["MemPressureCachePolicies", "MemPressureTestSupport"],
            swiftSettings: strict
        ),
        .testTarget(
            name: "SystemLibraryTests",
            dependencies: ["CMemPressureJemalloc", "CMemPressureUnwind", "CMemoryPressure"],
            swiftSettings: strict
        ),
    ]
)
