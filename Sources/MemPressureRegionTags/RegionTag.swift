import MemPressureSystem

/// A range of addresses a library of this project registered under a name, so that reports
/// taken from any process show it as its own type even where the kernel cannot name anonymous
/// memory (no CONFIG_ANON_VMA_NAME).
public struct RegionTag: Sendable, Hashable, Codable {
    public var start: UInt64
    public var end: UInt64
    public var name: String
    /// The call stack that created the range, innermost first, when it was recorded.
    public var stack: [String]

    public init(start: UInt64, end: UInt64, name: String, stack: [String] = []) {
        self.start = start
        self.end = end
        self.name = name
        self.stack = stack
    }
}

/// Supplies the ranges this project's libraries registered for a process (see `RegionTag`).
public protocol RegionTagSource: Sendable {
    /// The ranges registered by `process`, whose files belong to `ownerUID`.
    func tags(for process: ProcessStat, ownerUID: UInt32?) -> [RegionTag]
    /// The same, and why what was there was not used (one line), if it was not.
    func tagsAndNote(for process: ProcessStat, ownerUID: UInt32?) -> (tags: [RegionTag], note: String?)
}

extension RegionTagSource {
    public func tagsAndNote(for process: ProcessStat, ownerUID: UInt32?) -> (tags: [RegionTag], note: String?) {
        (tags(for: process, ownerUID: ownerUID), nil)
    }
}
