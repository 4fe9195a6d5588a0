/// The model app's answer to a `WorkloadCommand`, as a typed value, and its one line on the wire.
///
///     dirty BYTES                      allocate, release: the plain dirty memory it holds now
///     growing                          grow: the spike has begun
///     state fnv=HEX launch=HEX restored=true|false bytes=N activations=N frames=N
///     lost BYTES                       verify: the bytes of the state that differ
///     restored images=N stores=N model=N first=N seconds=S cpu=S refault=S
///     ramped crossed=S before=S started=S ended=S chunks=N bytes=N usage=N
///                                      ramp: when its allocation crossed the line (`WorkloadRamp`)
///     error: MESSAGE                   the command was refused or failed
///     ready PID                        not an answer: an unsupervised app's first line, once it
///                                      has launched (PID is its process ID)
///
/// Parsing is strict: an unknown first word, a missing, repeated or unknown field, or a number
/// that does not parse is a `WorkloadProtocolError`, never a trap and never a default.
public enum WorkloadReply: Codable, Sendable, Hashable, CustomStringConvertible {
    /// The plain dirty memory it holds after `allocate` or `release`, in bytes.
    case dirty(bytes: Int)
    /// `grow` has begun (it runs on a thread of its own).
    case growing
    case state(WorkloadStateReport)
    /// The bytes of the state that differ from what `verify N` expected.
    case lost(bytes: Int)
    /// What the last rebuild did.
    case restored(WorkloadRebuild)
    /// When `ramp`'s allocation crossed its line.
    case ramped(WorkloadRamp)
    /// The app refused or failed the command; the message says why.
    case failed(String)
    /// An unsupervised app's first line on its standard output, once it has launched.
    case ready(pid: Int32)

    /// The line on the wire (without a line feed).
    public var line: String {
        switch self {
        case .dirty(let bytes): "dirty \(bytes)"
        case .growing: "growing"
        case .state(let s):
            "state fnv=\(String(s.checksum, radix: 16)) launch=\(String(s.launchChecksum, radix: 16)) restored=\(s.restoredFromDisk) bytes=\(s.bytes) activations=\(s.activations) frames=\(s.frames)"
        case .lost(let bytes): "lost \(bytes)"
        case .restored(let r):
            "restored images=\(r.images) stores=\(r.stores) model=\(r.modelChunks) first=\(r.beforeReady) seconds=\(r.seconds) cpu=\(r.cpuSeconds) refault=\(r.refaultSeconds)"
        case .ramped(let r): "ramped \(r.fields)"
        case .failed(let message): "error: \(message)"
        case .ready(let pid): "ready \(pid)"
        }
    }

    public var description: String { line }

    /// Parses one line.
    public init(line: some StringProtocol) throws(WorkloadProtocolError) {
        let text = Substring(line)
        if text.hasPrefix("error:") {
            let message = text.dropFirst("error:".count)
            self = .failed(String(message.hasPrefix(" ") ? message.dropFirst() : message))
            return
        }
        let words = text.split(separator: " ")
        guard let verb = words.first else { throw .emptyLine }
        let rest = words.dropFirst()
        func only() throws(WorkloadProtocolError) -> Substring {
            guard rest.count == 1, let value = rest.first else { throw .malformedReply(reply: String(verb), text: WorkloadText.excerpt(text)) }
            return value
        }
        switch verb {
        case "dirty":
            self = .dirty(bytes: try WorkloadText.size(try only(), field: "bytes"))
        case "growing":
            guard rest.isEmpty else { throw .malformedReply(reply: "growing", text: WorkloadText.excerpt(text)) }
            self = .growing
        case "lost":
            self = .lost(bytes: try WorkloadText.size(try only(), field: "bytes"))
        case "ready":
            let text = try only()
            let pid = try WorkloadText.decimal(text, field: "pid")
            guard pid >= 1, pid <= UInt64(Int32.max) else { throw .outOfRange(field: "pid", text: WorkloadText.excerpt(text), range: "1...\(Int32.max)") }
            self = .ready(pid: Int32(pid))
        case "state":
            let fields = try WorkloadFields(reply: "state", rest, known: ["fnv", "launch", "restored", "bytes", "activations", "frames"])
            self = .state(
                WorkloadStateReport(
                    checksum: try fields.hex("fnv"), launchChecksum: try fields.hex("launch"), restoredFromDisk: try fields.bool("restored"),
                    bytes: try fields.size("bytes"), activations: try fields.decimal("activations"), frames: try fields.decimal("frames")))
        case "restored":
            let fields = try WorkloadFields(reply: "restored", rest, known: ["images", "stores", "model", "first", "seconds", "cpu", "refault"])
            self = .restored(
                WorkloadRebuild(
                    images: try fields.size("images"), stores: try fields.size("stores"), modelChunks: try fields.size("model"), beforeReady: try fields.size("first"),
                    seconds: try fields.seconds("seconds"), cpuSeconds: try fields.seconds("cpu"), refaultSeconds: try fields.seconds("refault")))
        case "ramped":
            self = .ramped(try WorkloadRamp(try WorkloadFields(reply: "ramped", rest, known: WorkloadRamp.keys)))
        default:
            throw .unknownReply(WorkloadText.excerpt(text))
        }
    }
}

/// The answer to `state`.
public struct WorkloadStateReport: Codable, Sendable, Hashable {
    /// FNV-1a over the state's 64-bit words, now: what a relaunch must restore exactly.
    public var checksum: UInt64
    /// The checksum as launch found the state (restored from disk, or new).
    public var launchChecksum: UInt64
    /// Whether launch restored the state from disk.
    public var restoredFromDisk: Bool
    /// The state's size in bytes.
    public var bytes: Int
    /// Its activation count (the state's first word).
    public var activations: UInt64
    /// Frames drawn since this process launched (`--frame-kb`: one at launch and one on every
    /// resume; none without it).
    public var frames: UInt64

    public init(checksum: UInt64, launchChecksum: UInt64, restoredFromDisk: Bool, bytes: Int, activations: UInt64, frames: UInt64 = 0) {
        self.checksum = checksum
        self.launchChecksum = launchChecksum
        self.restoredFromDisk = restoredFromDisk
        self.bytes = bytes
        self.activations = activations
        self.frames = frames
    }
}

/// The answer to `restored`: what the last rebuild (after a resume, or the rest of a lazy
/// relaunch counting its first screen) did and cost.
public struct WorkloadRebuild: Codable, Sendable, Hashable {
    /// Decoded images rebuilt (missing from the cache).
    public var images: Int
    /// View backing stores rebuilt (their content discarded).
    public var stores: Int
    /// 1 MiB chunks of the model rebuilt (trimmed).
    public var modelChunks: Int
    /// Of the images, stores and chunks rebuilt, how many before the app reported ready: all of
    /// an eager restore's; a lazy restore's or a lazy relaunch's first screen (`--first-screen`).
    public var beforeReady: Int
    /// The rebuild's wall time.
    public var seconds: Double
    /// The CPU time of the thread that rebuilt.
    public var cpuSeconds: Double
    /// Of `seconds`, the time spent reading the working set again (assets, model, state): the
    /// refaults of whatever the kernel took.
    public var refaultSeconds: Double

    public init(images: Int = 0, stores: Int = 0, modelChunks: Int = 0, beforeReady: Int = 0, seconds: Double = 0, cpuSeconds: Double = 0, refaultSeconds: Double = 0) {
        self.images = images
        self.stores = stores
        self.modelChunks = modelChunks
        self.beforeReady = beforeReady
        self.seconds = seconds
        self.cpuSeconds = cpuSeconds
        self.refaultSeconds = refaultSeconds
    }
}
