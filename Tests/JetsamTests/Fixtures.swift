import MemPressureCachePolicies
import MemPressureJetsam
import MemPressureLifecycleProtocol
import MemPressureValues

let mib: UInt64 = 1 << 20

/// CachePolicies' SplitMix64 (Steele, Lea, Flood 2014): a fixed-seed generator for the
/// randomized tests, so a failure reproduces.
extension SplitMix64 {
    mutating func below(_ n: UInt64) -> UInt64 { next() % n }
    mutating func unit() -> Double { Double(next() >> 11) / Double(UInt64(1) << 53) }
    /// Fisher–Yates with this generator.
    mutating func shuffle<T>(_ array: inout [T]) {
        guard array.count > 1 else { return }
        for i in stride(from: array.count - 1, to: 0, by: -1) {
            let j = Int(below(UInt64(i + 1)))
            array.swapAt(i, j)
        }
    }
}

func app(
    _ name: String,
    _ pid: Int32,
    _ state: LifecycleState,
    mib footprint: UInt64,
    resident: UInt64? = nil,
    purgeable: UInt64 = 0,
    since: Double? = nil,
    activations: Int = 0,
    relaunch: Double? = nil,
    protected: Bool = false,
    age: Double = 0.1
) -> JetsamAppSnapshot {
    JetsamAppSnapshot(
        name: name,
        pid: pid,
        state: state,
        footprintBytes: footprint * mib,
        purgeableBytes: purgeable * mib,
        residentBytes: (resident ?? footprint) * mib,
        lifetimeMaxFootprintBytes: footprint * mib,
        secondsInState: 10,
        secondsSinceActive: since,
        activations: activations,
        isProtected: protected,
        relaunchSeconds: relaunch,
        sampleAgeSeconds: age
    )
}

/// The mixed set every policy's order is spelled out on. Budget 1024 MiB, so the default
/// high-memory threshold (1/8) is 128 MiB.
///
/// | app      | state      | footprint | resident | since active | activations | relaunch |
/// |----------|------------|-----------|----------|--------------|-------------|----------|
/// | Mail     | suspended  | 300       | 320      | 600 s        | 3           | 1.2 s    |
/// | Maps     | suspended  | 150       | 400      | 60 s         | 5           | 2.0 s    |
/// | Notes    | suspended  | 40        | 50       | 1200 s       | 1           | 0.5 s    |
/// | Clock    | suspended  | 20        | 30       | never        | 0           | —        |
/// | Music    | background | 200       | 210      | 30 s         | 10          | 1.5 s    |
/// | Podcasts | background | 60        | 64       | 900 s        | 2           | 0.8 s    |
/// | Camera   | inactive   | 80        | 90       | 5 s          | 4           | 0.6 s    |
/// | Messages | inactive   | 100       | 85       | 10 s         | 2           | 0.9 s    |
/// | Safari   | active     | 250       | 260      | 0            | 20          | 1.0 s    |
/// | Photos   | suspended, protected, 500 MiB                                             |
/// | Weather  | not running                                                               |
func mixedApps() -> [JetsamAppSnapshot] {
    [
        app("Mail", 101, .suspended, mib: 300, resident: 320, since: 600, activations: 3, relaunch: 1.2),
        app("Maps", 102, .suspended, mib: 150, resident: 400, since: 60, activations: 5, relaunch: 2.0),
        app("Notes", 103, .suspended, mib: 40, resident: 50, since: 1200, activations: 1, relaunch: 0.5),
        app("Clock", 104, .suspended, mib: 20, resident: 30),
        app("Music", 105, .backgroundRunning, mib: 200, resident: 210, since: 30, activations: 10, relaunch: 1.5),
        app("Podcasts", 106, .backgroundRunning, mib: 60, resident: 64, since: 900, activations: 2, relaunch: 0.8),
        app("Camera", 107, .inactive, mib: 80, resident: 90, since: 5, activations: 4, relaunch: 0.6),
        app("Messages", 108, .inactive, mib: 100, resident: 85, since: 10, activations: 2, relaunch: 0.9),
        app("Safari", 109, .active, mib: 250, resident: 260, since: 0, activations: 20, relaunch: 1.0),
        app("Photos", 110, .suspended, mib: 500, since: 3000, activations: 1, protected: true),
        app("Weather", 0, .notRunning, mib: 0),
    ]
}

/// The mixed set with 100 MiB available and a target of 350 MiB: 250 MiB needed.
func mixedInput(level: PressureLevel = .warning, available: UInt64 = 100, target: UInt64 = 350, budget: UInt64 = 1024) -> RankingInput {
    RankingInput(
        apps: mixedApps(),
        budgetBytes: budget * mib,
        availableBytes: available * mib,
        targetAvailableBytes: target * mib,
        level: level
    )
}

func names(_ ranking: Ranking) -> [String] { ranking.order.map(\.snapshot.name) }
func names(_ decision: Decision) -> [String] { decision.victims.map(\.snapshot.name) }

/// What a test asserts about an error without spelling out its reason text.
extension RankingError {
    var kind: String {
        switch self {
        case .unsupportedFormatVersion: "unsupportedFormatVersion"
        case .duplicatePID: "duplicatePID"
        case .duplicateName: "duplicateName"
        case .invalidField: "invalidField"
        case .invalidInput: "invalidInput"
        case .invalidPolicy: "invalidPolicy"
        }
    }

    var app: String? {
        if case .invalidField(let app, _, _) = self { return app }
        return nil
    }

    var field: String? {
        switch self {
        case .invalidField(_, let field, _), .invalidInput(let field, _), .invalidPolicy(let field, _): field
        default: nil
        }
    }
}
