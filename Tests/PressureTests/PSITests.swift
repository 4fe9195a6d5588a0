import Glibc
import MemPressureSystem
import MemPressureMonitor
import MemPressureValues
import SystemPackage
import Testing
import MemPressureTestSupport

/// The one PSI parser, on PSI files captured from this machine's kernel (Fixtures/psi), and the
/// machine's memory reading (`top`'s header) built on it.
@Suite("PSI")
struct PSITests {
    func parse(_ fixture: String) throws -> PressureStall? {
        try Fixtures.bytes(Fixtures.directory + "/psi/\(fixture)").withUnsafeBytes { PressureStall.parse($0) }
    }

    @Test("captured PSI files parse: averages as the kernel printed them, totals in microseconds")
    func captured() throws {
        let thrashing = try #require(try parse("memory-thrashing"))
        #expect(thrashing.some == .init(avg10: 20.19, avg60: 5.17, avg300: 1.15, totalMicroseconds: 3_655_472))
        #expect(thrashing.full == .init(avg10: 4.97, avg60: 1.27, avg300: 0.28, totalMicroseconds: 1_005_366))
        let idle = try #require(try parse("memory-idle"))
        #expect(idle.some.avg10 == 0 && idle.some.totalMicroseconds == 26_806 && idle.full?.totalMicroseconds == 7054)
        let cpu = try #require(try parse("cpu"))
        #expect(cpu.some.avg10 == 98.21 && cpu.some.avg300 == 87.16 && cpu.full?.totalMicroseconds == 0)
    }

    @Test("malformed PSI text: no 'some' line is no reading; a bad 'full' line is left out; unknown keys are skipped")
    func malformed() {
        func parse(_ text: String) -> PressureStall? { Array(text.utf8).withUnsafeBytes { PressureStall.parse($0) } }
        #expect(parse("garbage\n") == nil)
        #expect(parse("") == nil)
        #expect(parse("full avg10=1.00 avg60=0.00 avg300=0.00 total=5\n") == nil, "full alone is no reading")
        #expect(parse("some avg10=1.0.0 avg60=0.00 avg300=0.00 total=5\n") == nil)
        #expect(parse("some avg10=1.00 avg60=0.00 avg300=0.00 total=-5\n") == nil)
        let noFull = parse("some avg10=1.50 avg60=0.25 avg300=0.00 total=5 future=7\nfull avg10=x avg60=0.00 avg300=0.00 total=1\n")
        #expect(noFull?.some == .init(avg10: 1.5, avg60: 0.25, avg300: 0, totalMicroseconds: 5))
        #expect(noFull != nil && noFull?.full == nil)
    }

    @Test("reading a PSI file: missing and malformed files are errors that say which")
    func read() throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        var buffer = ReadBuffer()
        #expect {
            try PressureStall.read("\(dir.path)/memory", buffer: &buffer)
        } throws: { error in
            guard case PressureStall.ReadError.unreadable(let e) = error else { return false }
            return e.errno == .noSuchFileOrDirectory
        }
        try writeText("some nothing\n", to: "\(dir.path)/memory")
        #expect(throws: PressureStall.ReadError.malformed(file: "\(dir.path)/memory")) { try PressureStall.read("\(dir.path)/memory", buffer: &buffer) }
        try writeBytes(try Fixtures.bytes(Fixtures.directory + "/psi/memory-thrashing"), to: "\(dir.path)/memory")
        #expect(try PressureStall.read("\(dir.path)/memory", buffer: &buffer).full?.avg10 == 4.97)
    }

    @Test("the machine's memory: meminfo and PSI under a proc root; what cannot be read is a note")
    func machineMemory() throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let none = MachineMemory.read(procRoot: dir.path)
        #expect(none.memTotalBytes == nil && none.psi == nil)
        #expect(none.notes.count == 2 && none.notes[0].hasPrefix("machine memory unknown: ") && none.notes[1].hasPrefix("PSI unavailable: "), "\(none.notes)")

        try writeText("MemTotal:       16318124 kB\nMemFree: 1 kB\nMemAvailable:    8000000 kB\nSwapTotal: 1024 kB\nSwapFree: 512 kB\n", to: "\(dir.path)/meminfo")
        let noPSI = MachineMemory.read(procRoot: dir.path)
        #expect(noPSI.memTotalBytes == 16_318_124 * 1024 && noPSI.memAvailableBytes == 8_000_000 * 1024)
        #expect(noPSI.swapTotalBytes == 1024 * 1024 && noPSI.swapFreeBytes == 512 * 1024)
        #expect(noPSI.psi == nil && noPSI.notes.count == 1 && noPSI.notes[0].hasPrefix("PSI unavailable: "))

        try ProcFS.makeDirectory("\(dir.path)/pressure")
        try writeText("some broken\n", to: "\(dir.path)/pressure/memory")
        #expect(MachineMemory.read(procRoot: dir.path).notes == ["PSI unavailable: \(dir.path)/pressure/memory has no 'some' line"])
        try writeBytes(try Fixtures.bytes(Fixtures.directory + "/psi/memory-thrashing"), to: "\(dir.path)/pressure/memory")
        let withPSI = MachineMemory.read(procRoot: dir.path)
        #expect(withPSI.notes.isEmpty)
        #expect(withPSI.psi == (try parse("memory-thrashing")))
    }

    @Test("the machine's own PSI file parses", .enabled(if: ProcFS.isFile("/proc/pressure/memory"), "needs a kernel with PSI"))
    func live() throws {
        var buffer = ReadBuffer()
        let stall = try PressureStall.read("/proc/pressure/memory", buffer: &buffer)
        #expect(stall.full != nil, "memory's file has a full line")
    }
}
