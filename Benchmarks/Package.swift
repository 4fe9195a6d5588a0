// swift-tools-version: 6.2
//
// Benchmarks for MemoryPressure, in a package of their own so that the main build and
// `swift test` carry no benchmark dependencies. Run with `make bench` from the top level; each
// harness writes Markdown, JSON and SVG into ../Reports.

import PackageDescription

let package = Package(
    name: "MemoryPressureBenchmarks",
    dependencies: [
        .package(name: "MemoryPressure", path: "../"),
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.5.0"),
        .package(url: "https://github.com/swiftlang/swift-subprocess", from: "1.0.0", traits: []),
        .package(url: "https://github.com/apple/swift-system", from: "1.4.0"),
    ],
    targets: [
        .target(
            name: "BenchSupport",
            dependencies: [.product(name: "LinuxSystem", package: "MemoryPressure")],
            swiftSettings: [.swiftLanguageMode(.v6)]
        ),
        .executableTarget(
            name: "purgeable-bench",
            dependencies: [
                "BenchSupport",
                .product(name: "Purgeable", package: "MemoryPressure"),
                .product(name: "CachePolicies", package: "MemoryPressure"),
                .product(name: "LinuxSystem", package: "MemoryPressure"),
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ],
            swiftSettings: [.swiftLanguageMode(.v6)]
        ),
        .executableTarget(
            name: "mappedfiles-bench",
            dependencies: [
                "BenchSupport",
                .product(name: "MappedFiles", package: "MemoryPressure"),
                .product(name: "LinuxSystem", package: "MemoryPressure"),
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ],
            swiftSettings: [.swiftLanguageMode(.v6)]
        ),
        .executableTarget(
            name: "smaps-parse-bench",
            dependencies: [
                .product(name: "VMTracker", package: "MemoryPressure"),
                .product(name: "LinuxSystem", package: "MemoryPressure"),
            ],
            swiftSettings: [.swiftLanguageMode(.v6)]
        ),
        .executableTarget(
            name: "jetsam-bench",
            dependencies: [
                "BenchSupport",
                .product(name: "Jetsam", package: "MemoryPressure"),
                .product(name: "CachePolicies", package: "MemoryPressure"),
                .product(name: "AppLifecycle", package: "MemoryPressure"),
                .product(name: "LifecycleProtocol", package: "MemoryPressure"),
                .product(name: "LinuxSystem", package: "MemoryPressure"),
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ],
            swiftSettings: [.swiftLanguageMode(.v6)]
        ),
        .executableTarget(
            name: "switching-bench",
            dependencies: [
                "BenchSupport",
                .product(name: "Jetsam", package: "MemoryPressure"),
                .product(name: "CachePolicies", package: "MemoryPressure"),
                .product(name: "AppLifecycle", package: "MemoryPressure"),
                .product(name: "LifecycleProtocol", package: "MemoryPressure"),
                .product(name: "LinuxSystem", package: "MemoryPressure"),
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ],
            swiftSettings: [.swiftLanguageMode(.v6)]
        ),
        .executableTarget(
            name: "vmtracker-bench",
            dependencies: [
                "BenchSupport",
                .product(name: "VMTracker", package: "MemoryPressure"),
                .product(name: "LinuxSystem", package: "MemoryPressure"),
                .product(name: "MemHogClient", package: "MemoryPressure"),
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Subprocess", package: "swift-subprocess"),
                .product(name: "SystemPackage", package: "swift-system"),
            ],
            swiftSettings: [.swiftLanguageMode(.v6)]
        )
    ]
)
