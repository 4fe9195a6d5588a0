/// `/proc/PID/stat`: one line of space-separated fields (proc(5)).
public struct ProcessStat: Sendable, Hashable {
    public var pid: Int32
    /// `comm`, at most 15 bytes, as raw bytes (a process may name itself anything).
    public var name: PathBytes
    /// The state letter: R, S, D, T (stopped), t (tracing stop), Z (zombie), X, I (idle), P.
    public var state: UInt8
    public var ppid: Int32
    public var processGroup: Int32
    public var session: Int32
    /// `flags` (PF_*): PF_KTHREAD marks kernel threads.
    public var flags: UInt64
    public var minorFaults: UInt64
    public var majorFaults: UInt64
    /// User and system CPU time in clock ticks (sysconf(_SC_CLK_TCK)).
    public var userTicks: UInt64
    public var systemTicks: UInt64
    public var threads: Int64
    /// Start time after boot, in clock ticks: with the pid, it identifies a process across PID reuse.
    public var startTicks: UInt64
    public var virtualBytes: UInt64
    public var residentPages: Int64

    public var isKernelThread: Bool { flags & 0x0020_0000 != 0 }
    public var isZombie: Bool { state == UInt8(ascii: "Z") || state == UInt8(ascii: "X") }
    public var isStopped: Bool { state == UInt8(ascii: "T") || state == UInt8(ascii: "t") }
    public var stateLetter: String { String(UnicodeScalar(state)) }

    public init(
        pid: Int32, name: PathBytes, state: UInt8 = UInt8(ascii: "S"), ppid: Int32 = 0, processGroup: Int32 = 0,
        session: Int32 = 0, flags: UInt64 = 0, minorFaults: UInt64 = 0, majorFaults: UInt64 = 0, userTicks: UInt64 = 0,
        systemTicks: UInt64 = 0, threads: Int64 = 1, startTicks: UInt64 = 0, virtualBytes: UInt64 = 0, residentPages: Int64 = 0
    ) {
        self.pid = pid
        self.name = name
        self.state = state
        self.ppid = ppid
        self.processGroup = processGroup
        self.session = session
        self.flags = flags
        self.minorFaults = minorFaults
        self.majorFaults = majorFaults
        self.userTicks = userTicks
        self.systemTicks = systemTicks
        self.threads = threads
        self.startTicks = startTicks
        self.virtualBytes = virtualBytes
        self.residentPages = residentPages
    }

    /// Parses the text of `/proc/PID/stat`. The name sits between the first '(' and the *last*
    /// ')' because a process may put parentheses and spaces in its own name.
    public static func parse(_ bytes: UnsafeRawBufferPointer, pid: Int32?, file: String = "stat") throws(ProcError) -> ProcessStat {
        func fail(_ reason: String) -> ProcError { .malformed(pid: pid, file: file, line: 1, reason: reason) }
        let b = bytes.bindMemory(to: UInt8.self)
        guard let open = b.firstIndex(of: UInt8(ascii: "(")), let close = b.lastIndex(of: UInt8(ascii: ")")), close > open else {
            throw fail("no '(name)' field")
        }
        let parsedPID = parseSigned(b[b.startIndex..<open].dropLast(while: { $0 == 0x20 }))
        guard let parsedPID, parsedPID >= 0, parsedPID <= Int64(Int32.max) else { throw fail("bad pid field") }
        let name = PathBytes(b[(open + 1)..<close])
        // Fields 3... after ") ".
        var tokens: [Range<Int>] = []
        tokens.reserveCapacity(52)
        var i = close + 1
        while i < b.endIndex {
            while i < b.endIndex, b[i] == 0x20 || b[i] == 0x0a { i += 1 }
            let s = i
            while i < b.endIndex, b[i] != 0x20, b[i] != 0x0a { i += 1 }
            if i > s { tokens.append(s..<i) }
        }
        // tokens[0] is field 3 (state); field N is tokens[N - 3].
        guard tokens.count >= 22 else { throw fail("only \(tokens.count + 2) fields, expected at least 24") }
        func signed(_ field: Int) throws(ProcError) -> Int64 {
            guard let v = parseSigned(b[tokens[field - 3]]) else { throw fail("field \(field) is not a number") }
            return v
        }
        func unsigned(_ field: Int) throws(ProcError) -> UInt64 {
            guard let v = parseUnsigned(b[tokens[field - 3]]) else { throw fail("field \(field) is not a number") }
            return v
        }
        let stateToken = tokens[0]
        guard stateToken.count == 1 else { throw fail("bad state field") }
        func int32(_ field: Int) throws(ProcError) -> Int32 {
            let v = try signed(field)
            guard v >= Int64(Int32.min), v <= Int64(Int32.max) else { throw fail("field \(field) is out of range") }
            return Int32(v)
        }
        return ProcessStat(
            pid: Int32(parsedPID), name: name, state: b[stateToken.lowerBound],
            ppid: try int32(4), processGroup: try int32(5), session: try int32(6), flags: try unsigned(9),
            minorFaults: try unsigned(10), majorFaults: try unsigned(12), userTicks: try unsigned(14),
            systemTicks: try unsigned(15), threads: try signed(20), startTicks: try unsigned(22),
            virtualBytes: try unsigned(23), residentPages: try signed(24))
    }
}

/// The fields of `/proc/PID/status` a report shows (sizes in bytes).
public struct ProcessStatus: Sendable, Hashable, Codable {
    public var name: String = ""
    public var uid: UInt32?
    public var peakVirtualBytes: UInt64?
    public var peakResidentBytes: UInt64?
    public var residentBytes: UInt64?
    public var residentAnonBytes: UInt64?
    public var residentFileBytes: UInt64?
    public var residentShmemBytes: UInt64?
    public var swapBytes: UInt64?
    public var threads: Int?

    public init() {}

    /// Parses `Key:\tvalue` lines; unknown keys are skipped, and a known key with a value that
    /// is not a number is an error.
    public static func parse(_ bytes: UnsafeRawBufferPointer, pid: Int32?, file: String = "status") throws(ProcError) -> ProcessStatus {
        let b = bytes.bindMemory(to: UInt8.self)
        var status = ProcessStatus()
        var line = 0
        var i = b.startIndex
        while i < b.endIndex {
            line += 1
            var end = i
            while end < b.endIndex, b[end] != 0x0a { end += 1 }
            defer { i = end + 1 }
            guard let colon = b[i..<end].firstIndex(of: 0x3a) else { continue }
            let key = b[i..<colon]
            var v = colon + 1
            while v < end, b[v] == 0x20 || b[v] == 0x09 { v += 1 }
            let value = b[v..<end]
            func number() throws(ProcError) -> UInt64 {
                // "1234 kB" or "1234"
                var digitsEnd = value.startIndex
                while digitsEnd < value.endIndex, value[digitsEnd] >= 0x30, value[digitsEnd] <= 0x39 { digitsEnd += 1 }
                guard let n = parseUnsigned(value[value.startIndex..<digitsEnd]) else {
                    throw .malformed(pid: pid, file: file, line: line, reason: "\(escapedText(key)) is not a number")
                }
                let rest = value[digitsEnd...].drop(while: { $0 == 0x20 })
                if rest.elementsEqual("kB".utf8) {
                    guard n <= UInt64.max / 1024 else {
                        throw .malformed(pid: pid, file: file, line: line, reason: "\(escapedText(key)) is too large")
                    }
                    return n * 1024
                }
                return n
            }
            func isKey(_ name: StaticString) -> Bool {
                key.count == name.utf8CodeUnitCount && name.withUTF8Buffer { key.elementsEqual($0) }
            }
            if isKey("Name") {
                status.name = escapedText(value)
            } else if isKey("Uid") {
                // "real effective saved filesystem"
                var e = value.startIndex
                while e < value.endIndex, value[e] >= 0x30, value[e] <= 0x39 { e += 1 }
                guard let uid = parseUnsigned(value[value.startIndex..<e]), uid <= UInt64(UInt32.max) else {
                    throw .malformed(pid: pid, file: file, line: line, reason: "Uid is not a number")
                }
                status.uid = UInt32(uid)
            } else if isKey("VmPeak") {
                status.peakVirtualBytes = try number()
            } else if isKey("VmHWM") {
                status.peakResidentBytes = try number()
            } else if isKey("VmRSS") {
                status.residentBytes = try number()
            } else if isKey("RssAnon") {
                status.residentAnonBytes = try number()
            } else if isKey("RssFile") {
                status.residentFileBytes = try number()
            } else if isKey("RssShmem") {
                status.residentShmemBytes = try number()
            } else if isKey("VmSwap") {
                status.swapBytes = try number()
            } else if isKey("Threads") {
                let n = try number()
                status.threads = n <= UInt64(Int.max) ? Int(n) : nil
            }
        }
        return status
    }
}

/// Parses an unsigned decimal number of at most 19 digits (so it cannot overflow).
func parseUnsigned<C: Collection<UInt8>>(_ bytes: C) -> UInt64? {
    guard !bytes.isEmpty, bytes.count <= 19 else { return nil }
    var v: UInt64 = 0
    for c in bytes {
        let d = c &- 0x30
        guard d < 10 else { return nil }
        v = v * 10 + UInt64(d)
    }
    return v
}

/// Parses a decimal number with an optional leading '-'.
func parseSigned<C: Collection<UInt8>>(_ bytes: C) -> Int64? {
    if bytes.first == UInt8(ascii: "-") {
        guard let v = parseUnsigned(bytes.dropFirst()), v <= UInt64(Int64.max) else { return nil }
        return -Int64(v)
    }
    guard let v = parseUnsigned(bytes), v <= UInt64(Int64.max) else { return nil }
    return Int64(v)
}

extension Collection where Element == UInt8 {
    func dropLast(while predicate: (UInt8) -> Bool) -> SubSequence where Self: BidirectionalCollection {
        var end = endIndex
        while end > startIndex, predicate(self[index(before: end)]) { end = index(before: end) }
        return self[startIndex..<end]
    }
}
