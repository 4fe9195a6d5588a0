// swift-tools-version: 6.2
//
// Benchmarks for MemoryPressure, in a package of their own so that the main build and
// `swift test` carry no benchmark dependencies. Run with `make bench` from the top level; each
// harness writes Markdown, JSON and SVG into ../Reports.
//
// The micro-benchmarks (package-benchmark) live in Benchmarks/<Name>/, where its plugin finds
// them: `make bench-micro` runs them; `make bench-micro MICRO_ARGS="baseline update NAME"`
// records a baseline, `MICRO_ARGS="baseline compare NAME"` compares a new run against it.

import PackageDescription

let package = Package(
    name: "MemoryPressureBenchmarks",
    dependencies: [
        .package(name: "MemoryPressure", path: "../"),
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.5.0"),
        .package(url: "https://github.com/swiftlang/swift-subprocess", from: "1.0.0", traits: []),
        .package(url: "https://github.com/apple/swift-system", from: "1.4.0"),
        // Its malloc counters come from its own interposer (LD_PRELOAD). Naming this trait alone
        // also turns off its default RuntimeInterposer trait (ARC counters on Swift 6.3, which
        // we do not measure), whose package is not among those our machines can resolve.
        .package(url: "https://github.com/ordo-one/benchmark", from: "1.38.1", traits: ["MallocInterposer"]),
    ],
    targets: [
        // What the harnesses need from C that Swift cannot call (prctl is variadic).
        .target(name: "CBenchSupport"),
        // libpq, PostgreSQL's client library, for pg-bench (pkg-config libpq; Debian's libpq-dev).
        .systemLibrary(
            name: "CLibpq",
            pkgConfig: "libpq",
            providers: [.apt(["libpq-dev"])]
        ),
        .target(
            name: "BenchSupport",
            dependencies: [
                "CBenchSupport",
                .product(name: "MemPressureLifecycle", package: "MemoryPressure"),
                .product(name: "MemPressureSystem", package: "MemoryPressure"),
                .product(name: "MemPressureMappedFiles", package: "MemoryPressure"),
                .product(name: "MemPressureCachePolicies", package: "MemoryPressure"),
                .product(name: "SystemPackage", package: "swift-system"),
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ],
            swiftSettings: [.swiftLanguageMode(.v6)]
        ),
        // earlyoom and nohang as the benchmarks run them (in PID namespaces of their own), and
        // the device's /proc/meminfo they read: shared by jetsam-bench and switching-bench.
        .target(
            name: "PeerKillers",
            dependencies: [
                "BenchSupport",
                .product(name: "MemPressureJetsam", package: "MemoryPressure"),
                .product(name: "MemPressureLifecycle", package: "MemoryPressure"),
                .product(name: "MemPressureMonitor", package: "MemoryPressure"),
                .product(name: "MemPressureSystem", package: "MemoryPressure"),
            ],
            swiftSettings: [.swiftLanguageMode(.v6)]
        ),
        // The ranker's input, shared by jetsam-bench and the JetsamBenchmarks micro-benchmarks.
        .target(
            name: "RankerInputs",
            dependencies: [
                .product(name: "MemPressureJetsam", package: "MemoryPressure"),
                .product(name: "MemPressureLifecycleProtocol", package: "MemoryPressure"),
                .product(name: "MemPressureCachePolicies", package: "MemoryPressure"),
            ],
            swiftSettings: [.swiftLanguageMode(.v6)]
        ),
        .executableTarget(
            name: "purgeable-bench",
            dependencies: [
                "BenchSupport",
                .product(name: "MemPressurePurgeable", package: "MemoryPressure"),
                .product(name: "MemPressureCachePolicies", package: "MemoryPressure"),
                .product(name: "MemPressureSystem", package: "MemoryPressure"),
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ],
            swiftSettings: [.swiftLanguageMode(.v6)]
        ),
        .executableTarget(
            name: "mappedfiles-bench",
            dependencies: [
                "BenchSupport",
                .product(name: "MemPressureMappedFiles", package: "MemoryPressure"),
                .product(name: "MemPressureCachePolicies", package: "MemoryPressure"),
                .product(name: "MemPressureSystem", package: "MemoryPressure"),
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ],
            swiftSettings: [.swiftLanguageMode(.v6)]
        ),
        .executableTarget(
            name: "smaps-parse-bench",
            dependencies: [
                .product(name: "MemPressureVMTracker", package: "MemoryPressure"),
                .product(name: "MemPressureSystem", package: "MemoryPressure"),
            ],
            swiftSettings: [.swiftLanguageMode(.v6)]
        ),
        .executableTarget(
            name: "jetsam-bench",
            dependencies: [
                "BenchSupport",
                "PeerKillers",
                "RankerInputs",
                .product(name: "MemPressureJetsam", package: "MemoryPressure"),
                .product(name: "MemPressureMonitor", package: "MemoryPressure"),
                .product(name: "MemPressureCachePolicies", package: "MemoryPressure"),
                .product(name: "MemPressureLifecycle", package: "MemoryPressure"),
                .product(name: "MemPressureLifecycleProtocol", package: "MemoryPressure"),
                .product(name: "MemPressureSystem", package: "MemoryPressure"),
                .product(name: "_MemPressureWorkloadProtocol", package: "MemoryPressure"),
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ],
            swiftSettings: [.swiftLanguageMode(.v6)]
        ),
        .executableTarget(
            name: "programs-bench",
            dependencies: [
                "BenchSupport",
                .product(name: "MemPressureMonitor", package: "MemoryPressure"),
                .product(name: "MemPressureJetsam", package: "MemoryPressure"),
                .product(name: "_MemPressureWorkloadProtocol", package: "MemoryPressure"),
                .product(name: "MemPressureLifecycle", package: "MemoryPressure"),
                .product(name: "MemPressureLifecycleProtocol", package: "MemoryPressure"),
                .product(name: "MemPressureSystem", package: "MemoryPressure"),
                .product(name: "SystemPackage", package: "swift-system"),
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ],
            swiftSettings: [.swiftLanguageMode(.v6)]
        ),
        .executableTarget(
            name: "resume-bench",
            dependencies: [
                "BenchSupport",
                .product(name: "MemPressureCachePolicies", package: "MemoryPressure"),
                .product(name: "MemPressureLifecycle", package: "MemoryPressure"),
                .product(name: "MemPressureLifecycleProtocol", package: "MemoryPressure"),
                .product(name: "MemPressureVMTracker", package: "MemoryPressure"),
                .product(name: "MemPressureSystem", package: "MemoryPressure"),
                .product(name: "_MemPressureWorkloadProtocol", package: "MemoryPressure"),
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ],
            swiftSettings: [.swiftLanguageMode(.v6)]
        ),
        .executableTarget(
            name: "switching-bench",
            dependencies: [
                "BenchSupport",
                "PeerKillers",
                .product(name: "MemPressureJetsam", package: "MemoryPressure"),
                .product(name: "MemPressureCachePolicies", package: "MemoryPressure"),
                .product(name: "MemPressureLifecycle", package: "MemoryPressure"),
                .product(name: "MemPressureLifecycleProtocol", package: "MemoryPressure"),
                .product(name: "MemPressureMonitor", package: "MemoryPressure"),
                .product(name: "MemPressureSystem", package: "MemoryPressure"),
                .product(name: "_MemPressureWorkloadProtocol", package: "MemoryPressure"),
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ],
            swiftSettings: [.swiftLanguageMode(.v6)]
        ),
        .executableTarget(
            name: "redis-bench",
            dependencies: [
                "BenchSupport",
                .product(name: "MemPressureSystem", package: "MemoryPressure"),
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "SystemPackage", package: "swift-system"),
            ],
            swiftSettings: [.swiftLanguageMode(.v6)]
        ),
        .executableTarget(
            name: "pg-bench",
            dependencies: [
                "BenchSupport",
                "CLibpq",
                .product(name: "MemPressureSystem", package: "MemoryPressure"),
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "SystemPackage", package: "swift-system"),
            ],
            swiftSettings: [.swiftLanguageMode(.v6)]
        ),
        .executableTarget(
            name: "vmtracker-bench",
            dependencies: [
                "BenchSupport",
                .product(name: "MemPressureCachePolicies", package: "MemoryPressure"),
                .product(name: "MemPressureVMTracker", package: "MemoryPressure"),
                .product(name: "MemPressureSystem", package: "MemoryPressure"),
                .product(name: "_MemPressureHogClient", package: "MemoryPressure"),
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Subprocess", package: "swift-subprocess"),
                .product(name: "SystemPackage", package: "swift-system"),
            ],
            swiftSettings: [.swiftLanguageMode(.v6)]
        ),
        // The supervisor daemon over thousands of launch/terminate cycles: bounded or not.
        .executableTarget(
            name: "soak-bench",
            dependencies: [
                "BenchSupport",
                .product(name: "MemPressureLifecycle", package: "MemoryPressure"),
                .product(name: "MemPressureLifecycleProtocol", package: "MemoryPressure"),
                .product(name: "MemPressureSystem", package: "MemoryPressure"),
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ],
            swiftSettings: [.swiftLanguageMode(.v6)]
        ),
        // The allocation counters' layout, shared with the LD_PRELOAD shim export-bench compiles
        // (Benchmarks/scripts/alloc-counter.c).
        .target(name: "CAllocCounter"),
        .executableTarget(
            name: "export-bench",
            dependencies: [
                "BenchSupport",
                "CAllocCounter",
                .product(name: "MemPressureSystem", package: "MemoryPressure"),
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ],
            path: "Sources/ExportBench",
            swiftSettings: [.swiftLanguageMode(.v6)]
        ),

        // Micro-benchmarks (package-benchmark): the VM Tracker's parser and snapshots, the
        // purgeable cache and buffers, the jetsam ranker; their shared configuration.
        .target(
            name: "MicroSupport",
            dependencies: [.product(name: "Benchmark", package: "benchmark")],
            swiftSettings: [.swiftLanguageMode(.v6)]
        ),
        .executableTarget(
            name: "VMTrackerBenchmarks",
            dependencies: [
                "MicroSupport",
                .product(name: "Benchmark", package: "benchmark"),
                .product(name: "MemPressureVMTracker", package: "MemoryPressure"),
                .product(name: "MemPressureSystem", package: "MemoryPressure"),
            ],
            path: "Benchmarks/VMTrackerBenchmarks",
            swiftSettings: [.swiftLanguageMode(.v6)],
            plugins: [.plugin(name: "BenchmarkPlugin", package: "benchmark")]
        ),
        .executableTarget(
            name: "PurgeableBenchmarks",
            dependencies: [
                "MicroSupport",
                .product(name: "Benchmark", package: "benchmark"),
                .product(name: "MemPressurePurgeable", package: "MemoryPressure"),
                .product(name: "MemPressureCachePolicies", package: "MemoryPressure"),
            ],
            path: "Benchmarks/PurgeableBenchmarks",
            swiftSettings: [.swiftLanguageMode(.v6)],
            plugins: [.plugin(name: "BenchmarkPlugin", package: "benchmark")]
        ),
        .executableTarget(
            name: "JetsamBenchmarks",
            dependencies: [
                "MicroSupport",
                "RankerInputs",
                .product(name: "Benchmark", package: "benchmark"),
                .product(name: "MemPressureJetsam", package: "MemoryPressure"),
            ],
            path: "Benchmarks/JetsamBenchmarks",
            swiftSettings: [.swiftLanguageMode(.v6)],
            plugins: [.plugin(name: "BenchmarkPlugin", package: "benchmark")]
        ),
    ]
)
