/// The answer to `ramp CHUNK LINE MORE LIMIT`: when the allocation that took the device's usage
/// to LINE was made, timed by the app that made it.
///
/// The app allocates plain dirty memory CHUNK bytes at a time (each page written), and after
/// each chunk reads its device's usage — the memory cgroup above its own, where its supervisor
/// put it (`memory.usage_in_bytes` on cgroup v1, `memory.current` on v2): the counter the kernel
/// holds a usage threshold against — and then CLOCK_MONOTONIC. The chunk after which the reading
/// first reached LINE is the one that crossed it: the kernel's counter went past LINE while that
/// chunk was being allocated, between `before` and `crossed`. It then allocates MORE bytes more
/// in the same way (the kernel checks a cgroup's thresholds only every so many pages charged, so
/// an allocation that stopped at the line could go unnoticed), and keeps all of it as plain dirty
/// memory (`release` gives it back). Times are CLOCK_MONOTONIC seconds, comparable with any other
/// process's on the machine.
///
///     ramped crossed=S before=S started=S ended=S chunks=N bytes=N usage=N
public struct WorkloadRamp: Codable, Sendable, Hashable {
    /// After the chunk whose reading first reached LINE.
    public var crossedAt: Double
    /// After the chunk before it, whose reading was still below LINE (`startedAt` when the first
    /// chunk crossed): the kernel's counter crossed LINE after this and by `crossedAt`.
    public var beforeAt: Double
    /// Before the first chunk, and after the last.
    public var startedAt: Double
    public var endedAt: Double
    /// Chunks allocated, and their bytes (now held as plain dirty memory).
    public var chunks: Int
    public var bytes: Int
    /// The device's usage read after the crossing chunk.
    public var usageBytes: Int

    public init(crossedAt: Double, beforeAt: Double, startedAt: Double, endedAt: Double, chunks: Int, bytes: Int, usageBytes: Int) {
        self.crossedAt = crossedAt
        self.beforeAt = beforeAt
        self.startedAt = startedAt
        self.endedAt = endedAt
        self.chunks = chunks
        self.bytes = bytes
        self.usageBytes = usageBytes
    }

    /// The fields of its line, after `ramped`.
    var fields: String {
        "crossed=\(crossedAt) before=\(beforeAt) started=\(startedAt) ended=\(endedAt) chunks=\(chunks) bytes=\(bytes) usage=\(usageBytes)"
    }

    static let keys = ["crossed", "before", "started", "ended", "chunks", "bytes", "usage"]

    init(_ fields: WorkloadFields) throws(WorkloadProtocolError) {
        self.init(
            crossedAt: try fields.seconds("crossed"), beforeAt: try fields.seconds("before"), startedAt: try fields.seconds("started"),
            endedAt: try fields.seconds("ended"), chunks: try fields.size("chunks"), bytes: try fields.size("bytes"), usageBytes: try fields.size("usage"))
    }
}
