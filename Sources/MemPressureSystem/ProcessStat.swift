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
        var pidField = b[b.startIndex..<open]
        while pidField.last == 0x20 { pidField.removeLast() }
        guard let parsedPID = ByteScanner.signed(pidField), parsedPID >= 0, parsedPID <= Int64(Int32.max) else {
            throw fail("bad pid field")
        }
        let name = PathBytes(b[(open + 1)..<close])
        // Fields 3... after ") ".
        var tokens: [Slice<UnsafeBufferPointer<UInt8>>] = []
        tokens.reserveCapacity(52)
        tokens.append(contentsOf: ByteScanner.fields(b[(close + 1)...]))
        // tokens[0] is field 3 (state); field N is tokens[N - 3].
        guard tokens.count >= 22 else { throw fail("only \(tokens.count + 2) fields, expected at least 24") }
        func signed(_ field: Int) throws(ProcError) -> Int64 {
            guard let v = ByteScanner.signed(tokens[field - 3]) else { throw fail("field \(field) is not a number") }
            return v
        }
        func unsigned(_ field: Int) throws(ProcError) -> UInt64 {
            guard let v = ByteScanner.unsigned(tokens[field - 3]) else { throw fail("field \(field) is not a number") }
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
            pid: Int32(parsedPID), name: name, state: stateToken[stateToken.startIndex],
            ppid: try int32(4), processGroup: try int32(5), session: try int32(6), flags: try unsigned(9),
            minorFaults: try unsigned(10), majorFaults: try unsigned(12), userTicks: try unsigned(14),
            systemTicks: try unsigned(15), threads: try signed(20), startTicks: try unsigned(22),
            virtualBytes: try unsigned(23), residentPages: try signed(24))
    }
}
