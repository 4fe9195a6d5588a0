import MemPressureSystem
import MemPressureValues

// The one PSI parser: the monitor's sources, the exporter and `top`'s header (through
// `MachineMemory.read`) read PSI files here.

extension PressureStall {
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

    /// Why a PSI file gave no reading.
    public enum ReadError: Error, Sendable, Hashable, CustomStringConvertible {
        case unreadable(SystemCallError)
        /// The file has no well-formed `some` line.
        case malformed(file: String)

        public var description: String {
            switch self {
            case .unreadable(let e): "\(e)"
            case .malformed(let file): "\(file) has no 'some' line"
            }
        }
    }

    /// Reads and parses the PSI file at `path` through `buffer`.
    public static func read(_ path: String, buffer: inout ReadBuffer) throws(ReadError) -> PressureStall {
        do {
            try ProcFS.readFile(path, into: &buffer)
        } catch {
            throw .unreadable(error)
        }
        guard let stall = buffer.withBytes({ parse($0) }) else { throw .malformed(file: path) }
        return stall
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

extension MachineMemory {
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
        do {
            memory.psi = try PressureStall.read("\(procRoot)/pressure/memory", buffer: &buffer)
        } catch {
            memory.notes.append("PSI unavailable: \(error.description)")
        }
        return memory
    }
}
