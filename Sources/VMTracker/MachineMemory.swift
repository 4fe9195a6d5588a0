/// The machine's memory and memory pressure at one instant: the header above `mempressure top`
/// and its JSON `machine` object.

import LinuxSystem

public struct MachineMemory: Codable, Sendable, Hashable {
    /// `MemTotal`, `MemAvailable`, `SwapTotal` and `SwapFree` of /proc/meminfo; nil when the
    /// kernel did not print the field or the file could not be read (see `notes`).
    public var memTotalBytes: UInt64?
    public var memAvailableBytes: UInt64?
    public var swapTotalBytes: UInt64?
    public var swapFreeBytes: UInt64?
    /// The machine's memory pressure stall information (/proc/pressure/memory), nil when the
    /// kernel has none (built without CONFIG_PSI, or booted with psi=0): `notes` says why.
    public var psi: PressureStall?
    /// What could not be read, one line each.
    public var notes: [String]

    public init(
        memTotalBytes: UInt64? = nil, memAvailableBytes: UInt64? = nil, swapTotalBytes: UInt64? = nil,
        swapFreeBytes: UInt64? = nil, psi: PressureStall? = nil, notes: [String] = []
    ) {
        self.memTotalBytes = memTotalBytes
        self.memAvailableBytes = memAvailableBytes
        self.swapTotalBytes = swapTotalBytes
        self.swapFreeBytes = swapFreeBytes
        self.psi = psi
        self.notes = notes
    }

    /// Reads `procRoot/meminfo` and `procRoot/pressure/memory`. A file that cannot be read
    /// leaves its fields nil with a note naming the file and the error: the header of a table is
    /// never a reason to fail the table.
    public static func read(procRoot: String = "/proc") -> MachineMemory {
        var memory = MachineMemory()
        var buffer = ReadBuffer(capacity: 16 * 1024)
        do {
            try ProcFS.readFile("\(procRoot)/meminfo", into: &buffer)
            let info = buffer.withBytes { MemInfo.parse($0) }
            memory.memTotalBytes = info.totalBytes
            memory.memAvailableBytes = info.availableBytes
            memory.swapTotalBytes = info.swapTotalBytes
            memory.swapFreeBytes = info.swapFreeBytes
        } catch {
            memory.notes.append("machine memory unknown: \(error.description)")
        }
        let psiFile = "\(procRoot)/pressure/memory"
        do {
            try ProcFS.readFile(psiFile, into: &buffer)
            let stall = buffer.withBytes { PressureStall.parse($0) }
            if let stall {
                memory.psi = stall
            } else {
                memory.notes.append("PSI unavailable: \(psiFile) has no 'some' line")
            }
        } catch {
            memory.notes.append("PSI unavailable: \(error.description)")
        }
        return memory
    }
}

/// One PSI file (`/proc/pressure/memory`, a cgroup's `memory.pressure`):
///
///     some avg10=0.31 avg60=0.12 avg300=0.03 total=113651841
///     full avg10=0.00 avg60=0.00 avg300=0.00 total=107617793
///
/// `some` is the share of time at least one task stalled waiting for memory, `full` the share
/// in which all non-idle tasks did; averages are percentages over 10, 60 and 300 seconds,
/// totals cumulative microseconds.
public struct PressureStall: Codable, Sendable, Hashable {
    public var some: Line
    /// Absent on kernels before 5.13 for the machine's CPU file; memory always has it, but a
    /// file without it still parses.
    public var full: Line?

    public struct Line: Codable, Sendable, Hashable {
        public var avg10: Double
        public var avg60: Double
        public var avg300: Double
        /// Cumulative stall time in microseconds.
        public var totalMicroseconds: UInt64

        public init(avg10: Double, avg60: Double, avg300: Double, totalMicroseconds: UInt64) {
            self.avg10 = avg10
            self.avg60 = avg60
            self.avg300 = avg300
            self.totalMicroseconds = totalMicroseconds
        }
    }

    public init(some: Line, full: Line?) {
        self.some = some
        self.full = full
    }

    /// Parses the text of a PSI file; nil when it has no well-formed `some` line. A malformed
    /// `full` line is left out; unknown keys are skipped.
    public static func parse(_ bytes: UnsafeRawBufferPointer) -> PressureStall? {
        var some: Line?
        var full: Line?
        for line in bytes.split(separator: 0x0a) {
            var words = ByteScanner.fields(line).makeIterator()
            guard let kind = words.next() else { continue }
            var avg: [Double?] = [nil, nil, nil]
            var total: UInt64?
            while let word = words.next() {
                guard let eq = word.firstIndex(of: 0x3d) else { continue }
                let key = word[word.startIndex..<eq], value = word[word.index(after: eq)...]
                if key.elementsEqual("avg10".utf8) {
                    avg[0] = decimal(value)
                } else if key.elementsEqual("avg60".utf8) {
                    avg[1] = decimal(value)
                } else if key.elementsEqual("avg300".utf8) {
                    avg[2] = decimal(value)
                } else if key.elementsEqual("total".utf8) {
                    total = ByteScanner.unsigned(value)
                }
            }
            guard let a10 = avg[0], let a60 = avg[1], let a300 = avg[2], let total else { continue }
            let parsed = Line(avg10: a10, avg60: a60, avg300: a300, totalMicroseconds: total)
            if kind.elementsEqual("some".utf8) {
                some = parsed
            } else if kind.elementsEqual("full".utf8) {
                full = parsed
            }
        }
        return some.map { PressureStall(some: $0, full: full) }
    }

    /// "12.34" (the kernel prints two decimals) as a Double; nil for anything else.
    static func decimal<Bytes: Collection<UInt8>>(_ bytes: Bytes) -> Double? {
        guard let dot = bytes.firstIndex(of: 0x2e) else { return ByteScanner.unsigned(bytes).map(Double.init) }
        let fraction = bytes[bytes.index(after: dot)...]
        guard let whole = ByteScanner.unsigned(bytes[bytes.startIndex..<dot]), !fraction.isEmpty, fraction.count <= 9,
            let digits = ByteScanner.unsigned(fraction)
        else { return nil }
        var scale = 1.0
        for _ in 0..<fraction.count { scale *= 10 }
        return Double(whole) + Double(digits) / scale
    }
}
