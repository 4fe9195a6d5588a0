// swift-tools-version: 6.2
//
// libFuzzer targets for MemoryPressure's parsers, decoders and renderers, in a package of their
// own (depending on the top-level package by path) so that the main build and `swift test` never
// see them. `make fuzz` builds them with the fuzzer sanitizer and runs each on a scratch copy of
// its corpus (Corpus/<target>/) with its dictionary (Dictionaries/<target>.dict):
//
//     swift build -c release -Xswiftc -sanitize=fuzzer -Xswiftc -parse-as-library
//     .build/release/fuzz-smaps -dict=Dictionaries/fuzz-smaps.dict CORPUS_COPY
//
// Every target works on the bytes libFuzzer hands it and nothing else: no /proc, no processes,
// no files, no sockets.

import PackageDescription

let strict: [SwiftSetting] = [
    .swiftLanguageMode(.v6),
    .enableUpcomingFeature("ExistentialAny"),
    .enableUpcomingFeature("MemberImportVisibility"),
]

/// One fuzz target: an executable with LLVMFuzzerTestOneInput, whose entry point hands it to
/// libFuzzer (FuzzDriver).
func fuzzTarget(_ name: String, _ dependencies: [Target.Dependency]) -> Target {
    .executableTarget(name: name, dependencies: ["FuzzSupport", "FuzzDriver"] + dependencies, path: "Sources/\(name)", swiftSettings: strict)
}

let package = Package(
    name: "MemoryPressureFuzz",
    dependencies: [
        .package(name: "MemoryPressure", path: "../.."),
    ],
    targets: [
        // The entry point that starts libFuzzer (SwiftPM renames `main`; see FuzzDriver.h).
        .target(name: "FuzzDriver"),
        // What the targets share: rendering a report in the three output formats.
        .target(
            name: "FuzzSupport",
            dependencies: [
                .product(name: "MemPressureVMTracker", package: "MemoryPressure"),
                .product(name: "MemPressureSystem", package: "MemoryPressure"),
            ],
            swiftSettings: strict
        ),
        // /proc parsers, each result rendered as text, CSV and JSON.
        fuzzTarget("fuzz-smaps", [.product(name: "MemPressureVMTracker", package: "MemoryPressure"), .product(name: "MemPressureSystem", package: "MemoryPressure")]),
        fuzzTarget("fuzz-stat", [.product(name: "MemPressureVMTracker", package: "MemoryPressure"), .product(name: "MemPressureSystem", package: "MemoryPressure")]),
        fuzzTarget("fuzz-status", [.product(name: "MemPressureVMTracker", package: "MemoryPressure"), .product(name: "MemPressureSystem", package: "MemoryPressure")]),
        fuzzTarget("fuzz-meminfo", [.product(name: "MemPressureVMTracker", package: "MemoryPressure"), .product(name: "MemPressureSystem", package: "MemoryPressure")]),
        // Two VM reports (JSON) decoded, diffed, the diff rendered.
        fuzzTarget("fuzz-diff", [.product(name: "MemPressureVMTracker", package: "MemoryPressure"), .product(name: "MemPressureSystem", package: "MemoryPressure")]),
        // A scenario file decoded and validated; an admin request line decoded and validated.
        fuzzTarget("fuzz-scenario", [.product(name: "MemPressureScenarios", package: "MemoryPressure"), .product(name: "MemPressureLifecycle", package: "MemoryPressure")]),
        fuzzTarget("fuzz-admin", [.product(name: "MemPressureLifecycle", package: "MemoryPressure"), .product(name: "MemPressureLifecycleProtocol", package: "MemoryPressure")]),
        // The control protocol: bytes split into lines, each parsed as an app's and a supervisor's
        // message, and as the model app's command and reply.
        fuzzTarget("fuzz-protocol", [
            .product(name: "MemPressureLifecycleProtocol", package: "MemoryPressure"), .product(name: "_MemPressureWorkloadProtocol", package: "MemoryPressure"),
        ]),
        // The CSV cache trace of `cache simulate`.
        fuzzTarget("fuzz-trace", [.product(name: "MemPressureCachePolicies", package: "MemoryPressure")]),
    ]
)
