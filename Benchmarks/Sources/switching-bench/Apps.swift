import Foundation
import MemPressureWorkloadProtocol

/// One model app of the switching benchmark (`mempressure-workload`), its sizes a multiple of
/// a base profile: saved state, decoded images (a purgeable cache), view backing stores
/// (purgeable buffers), mmap'd assets (clean), a computed model (dirty, rebuildable) and plain
/// dirty memory. `--trim` releases that share of the images, backing stores and model when it
/// enters the background; `--restore` rebuilds them on resume.
struct AppProfile: Codable, Sendable, Hashable {
    var name: String
    var scale: Double
    var stateMB: Int
    var imageCacheMB: Int
    var backingMB: Int
    var assetsMB: Int
    var modelMB: Int
    var dirtyMB: Int
    /// The frame it draws whenever it comes to the foreground (launch and resume), KiB decoded
    /// (mempressure-workload's `--frame-kb`), sized by `sizeFrames` for a relaunch ratio; nil
    /// (no frame) in reports written before it existed.
    var frameKB: Int?

    /// The base profile (scale 1), in MiB.
    static let base = (state: 2.0, images: 4.0, backing: 2.0, assets: 2.0, model: 6.0, dirty: 2.0)
    /// The catalogue: mixed sizes, in order of popularity for a generated trace (the first is
    /// the most used).
    static let catalogue: [(String, Double)] = [
        ("Messages", 1.0), ("Safari", 1.5), ("Mail", 1.0), ("Photos", 2.0), ("Maps", 1.75), ("Music", 0.75),
        ("Notes", 0.5), ("Camera", 1.25), ("Podcasts", 0.75), ("Weather", 0.5), ("Calendar", 0.5), ("Books", 1.25),
    ]

    init(name: String, scale: Double) {
        func mb(_ x: Double) -> Int { max(1, Int((x * scale).rounded())) }
        self.name = name
        self.scale = scale
        stateMB = mb(Self.base.state)
        imageCacheMB = mb(Self.base.images)
        backingMB = mb(Self.base.backing)
        assetsMB = mb(Self.base.assets)
        modelMB = mb(Self.base.model)
        dirtyMB = mb(Self.base.dirty)
    }

    /// What it holds before any trim, in MiB (assets are clean, file-backed).
    var nominalMB: Int { stateMB + imageCacheMB + backingMB + assetsMB + modelMB + dirtyMB }

    func arguments(dataDirectory: String, trim: Double, restore: String, decodeCost: Int) -> [String] {
        ["--name", name, "--data-dir", dataDirectory, "--state-mb", "\(stateMB)", "--image-cache-mb", "\(imageCacheMB)", "--image-kb", "256",
         "--backing-mb", "\(backingMB)", "--assets-mb", "\(assetsMB)", "--model-mb", "\(modelMB)", "--dirty-mb", "\(dirtyMB)",
         "--decode-cost", "\(decodeCost)", "--trim", "\(trim)", "--restore", restore]
            + ((frameKB ?? 0) > 0 ? ["--frame-kb", "\(frameKB ?? 0)"] : [])
    }
}

/// The bytes of a saved state file (`DIR/state.bin`) that differ from what the model app must
/// have saved after `activations` activations: the comparison of its `verify N` command
/// (`WorkloadStateLayout`), for an app that is not running to answer it. A missing file is what
/// a relaunch would find then, a new state (no activations); a file of the wrong size counts whole.
func savedStateLostBytes(path: String, stateBytes: Int, activations: UInt64) -> Int {
    guard FileManager.default.fileExists(atPath: path) else { return WorkloadStateLayout.lostBytesOfNewState(activations: activations) }
    guard let data = FileManager.default.contents(atPath: path) else { return stateBytes }
    return data.withUnsafeBytes { WorkloadStateLayout.lostBytes($0, expectedBytes: stateBytes, activations: activations) }
}
