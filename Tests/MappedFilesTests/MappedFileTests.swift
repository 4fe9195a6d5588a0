import CMemoryPressure
import Glibc
import MemPressureSystem
import MemPressureMappedFiles
import Testing
import MemPressureTestSupport
import MemPressureVMTracker

/// A file of `bytes` with known content (byte i is a function of i), flushed to disk so its
/// page-cache pages are clean.
func makeFile(_ dir: TemporaryDirectory, _ name: String, bytes: Int) throws -> String {
    let path = "\(dir.path)/\(name)"
    try writeBytes((0..<bytes).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ $0 >> 12) }, to: path)
    let fd = open(path, O_RDONLY)
    defer { close(fd) }
    #expect(fsync(fd) == 0)
    return path
}

func expectedByte(_ i: Int) -> UInt8 { UInt8(truncatingIfNeeded: i &* 31 &+ i >> 12) }

@Suite("mapped files")
struct MappedFileTests {
    @Test("residency before and after eviction: mincore and smaps agree; content intact after the refault")
    func residencyAndRefault() throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let size = 4 << 20
        let path = try makeFile(dir, "data", bytes: size)
        let file = try MappedFile(path: path)
        #expect(file.count == size)
        try file.touchAllPages()

        func smaps() throws -> Region {
            let me = try Snapshotter().process(getpid(), options: SnapshotOptions(detail: .regions))
            return try #require(me.regions.first { UInt($0.start) == file.addressRange.lowerBound })
        }
        let before = try file.residency()
        #expect(before.total == size / MappedFile.pageSize)
        #expect(before.resident == before.total)
        let region = try smaps()
        #expect(region.type == .mappedFile, "shown as a mapped file")
        #expect(region.path.description == path, "attributed to its path")
        #expect(region.counters.resident == UInt64(before.resident * MappedFile.pageSize), "mincore and smaps agree")
        #expect(region.counters.clean == UInt64(size), "all clean")
        #expect(region.counters.dirty == 0)

        let eviction = try file.evict()
        #expect(eviction.residentPagesBefore == before.total)
        #expect(eviction.residentPagesAfter == 0, "\(eviction)")
        let after = try file.residency()
        #expect(after.resident == 0)
        #expect(try smaps().counters.resident == 0, "mincore and smaps agree after eviction")

        let intact = try file.withUnsafeBytes { bytes in bytes.indices.allSatisfy { bytes[$0] == expectedByte($0) } }
        #expect(intact, "the content came back from the file")
        #expect(try file.residency().resident == before.total)
        try file.advise(.sequential)
        try file.advise(.random)
        try file.advise(.willNeed)
        try file.advise(.normal)
    }

    @Test("a file that shrinks while mapped: access is refused before it could raise SIGBUS")
    func shrinking() throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let path = try makeFile(dir, "shrinks", bytes: 1 << 20)
        let file = try MappedFile(path: path)
        #expect(truncate(path, 4096) == 0)
        #expect(throws: MappedFileError.fileShrank(path, mappedBytes: 1 << 20, nowBytes: 4096)) {
            try file.withUnsafeBytes { $0[100_000] }
        }
        // pread is safe whatever the size: a short read.
        #expect(try file.copyBytes(in: 0..<100_000).count == 4096)
        #expect(try file.copyBytes(in: 0..<10) == (0..<10).map(expectedByte))
    }

    @Test("bad input: each a clear error", arguments: ["missing", "directory", "empty", "device"])
    func badInput(_ kind: String) throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let path: String
        let expected: MappedFileError
        switch kind {
        case "missing":
            path = "\(dir.path)/nothing"
            expected = .notFound(path)
        case "directory":
            path = dir.path
            expected = .isDirectory(path)
        case "empty":
            path = "\(dir.path)/empty"
            try writeBytes([], to: path)
            expected = .empty(path)
        default:
            path = "/dev/null"
            expected = .notRegularFile(path, kind: "character device")
        }
        #expect(throws: expected) { try MappedFile(path: path) }
        #expect(!expected.description.contains("\n"))
    }

    @Test("the loader maps large regular files and reads small ones and /proc files; FIFOs and links are refused")
    func loader() throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let big = try makeFile(dir, "big", bytes: 1 << 20)
        let small = try makeFile(dir, "small", bytes: 1000)
        #expect(try FileLoader.load(big).isMapped)
        let s = try FileLoader.load(small)
        #expect(!s.isMapped)
        #expect(try s.withUnsafeBytes { Array($0) } == (0..<1000).map(expectedByte))
        let status = try FileLoader.load("/proc/self/status")
        #expect(!status.isMapped)
        #expect(status.count > 100, "read to its end although st_size is 0")
        #expect(try FileLoader.load(small, mappingThreshold: 100).isMapped)
        try writeBytes([], to: "\(dir.path)/empty-too")
        #expect(try FileLoader.load("\(dir.path)/empty-too", mappingThreshold: 1).count == 0, "an empty file loads as empty bytes")

        // A FIFO is refused at once (opening it to read would wait for a writer), a link is
        // not followed.
        let fifo = "\(dir.path)/fifo"
        #expect(mkfifo(fifo, 0o600) == 0)
        #expect(throws: MappedFileError.notRegularFile(fifo, kind: "FIFO")) { try FileLoader.load(fifo) }
        #expect(symlink(big, "\(dir.path)/link") == 0)
        #expect(throws: MappedFileError.notRegularFile("\(dir.path)/link", kind: "symbolic link")) { try FileLoader.load("\(dir.path)/link") }
        #expect(throws: MappedFileError.isDirectory(dir.path)) { try FileLoader.load(dir.path) }
    }

    @Test("an access to a mapping whose file was truncated is stopped by the SIGBUS guard, and the process goes on")
    func truncatedWhileMapped() throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let path = try makeFile(dir, "shrinks", bytes: 4 * MappedFile.pageSize)
        let file = try MappedFile(path: path)
        let range = file.addressRange
        #expect(truncate(path, 0) == 0)
        // The guarded access itself, without the size check before it: a real SIGBUS.
        var sum: UInt64 = 0
        let base = try #require(UnsafeRawPointer(bitPattern: range.lowerBound))
        #expect(mp_guarded_touch(base, file.count, MappedFile.pageSize, &sum) == 1)
        // And again: the handler stays installed, the thread's guard is reset.
        #expect(mp_guarded_touch(base, file.count, MappedFile.pageSize, &sum) == 1)
        // Through the API, the size check before the access finds it first.
        #expect(throws: MappedFileError.truncatedWhileMapped(path, found: .beforeAccess)) { try file.touchAllPages() }
        var other = [UInt8](repeating: 0, count: file.count)
        #expect(throws: MappedFileError.truncatedWhileMapped(path, found: .beforeAccess)) { try other.withUnsafeMutableBytes { try file.copy(into: $0.baseAddress!) } }
    }
}
