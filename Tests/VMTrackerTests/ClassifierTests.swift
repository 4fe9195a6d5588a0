import MemPressureSystem
import MemPressureRegionTags
import Testing
import MemPressureVMTracker

@Suite("region types")
struct ClassifierTests {
    func region(_ start: UInt64, _ end: UInt64, _ perms: String, inode: UInt64 = 0, _ path: String = "") -> Region {
        Region(start: start, end: end, permissions: Permissions(perms)!, inode: inode, path: PathBytes(stringLiteral: path))
    }

    @Test("each kind of region gets its type")
    func types() {
        var regions = [
            region(0x1000, 0x2000, "r--p", inode: 7, "/usr/bin/app"),
            region(0x2000, 0x3000, "r-xp", inode: 7, "/usr/bin/app"),
            region(0x3000, 0x4000, "rw-p", inode: 7, "/usr/bin/app"),
            region(0x4000, 0x5000, "rw-p"),  // .bss (merged with any adjacent anonymous mapping)
            region(0x5000, 0x9000, "rw-p", "[heap]"),
            region(0x10000, 0x11000, "r--p", inode: 9, "/usr/share/fonts/a.ttf"),
            region(0x11000, 0x12000, "rw-s", inode: 10, "/var/db/shared.map"),
            region(0x12000, 0x13000, "rw-s", inode: 11, "/dev/shm/pool"),
            region(0x13000, 0x14000, "rw-s", inode: 12, "/memfd:wayland (deleted)"),
            region(0x14000, 0x15000, "r--p", inode: 13, "/tmp/old (deleted)"),
            region(0x15000, 0x16000, "rw-s", inode: 14, "/dev/zero (deleted)"),
            region(0x16000, 0x17000, "---p"),
            region(0x17000, 0x18000, "rw-p"),
            region(0x18000, 0x20000, "rw-p"),
            region(0x100000, 0x10_0000_0000, "---p"),
            region(0x20_0000_0000, 0x20_0000_1000, "rw-p", "[anon:jit cache]"),
            region(0x7ff0_0000_0000, 0x7ff0_0002_0000, "rw-p", "[stack]"),
            region(0x7ff0_0003_0000, 0x7ff0_0003_2000, "r--p", "[vvar]"),
            region(0x7ff0_0003_2000, 0x7ff0_0003_4000, "r-xp", "[vdso]"),
            region(0xffff_ffff_ff60_0000, 0xffff_ffff_ff60_1000, "--xp", "[vsyscall]"),
            region(0x7ff0_0004_0000, 0x7ff0_0004_1000, "r-xp", "[uprobes]"),
        ]
        RegionClassifier.classify(&regions, threadStackPointers: [0x18800])
        #expect(regions.map(\.type) == [
            .readOnlyData, .code, .data, .anonymous, .heap, .mappedFile, .sharedMappedFile, .sharedMemory,
            .memfd("wayland"), .deletedFile, .sharedMemory, .guardPage, .anonymous, .threadStack, .reserved,
            .anonNamed("jit cache"), .stack, .vvar, .vdso, .vsyscall, .kernel("uprobes"),
        ])
    }

    @Test("a tag registered by the library wins over the kernel's view")
    func tags() {
        var regions = [region(0x1000, 0x3000, "rw-p")]
        RegionClassifier.classify(&regions, tags: [RegionTag(start: 0x2000, end: 0x2800, name: "purgeable cache: images")])
        #expect(regions[0].type == .tagged("purgeable cache: images"))
    }

    @Test("a name ending in (deleted) is not deleted when the file is still there")
    func literalDeleted() {
        var regions = [region(0x1000, 0x2000, "r--p", inode: 5, "/tmp/x (deleted)")]
        RegionClassifier.classify(&regions, fileExists: { _ in true })
        #expect(regions[0].type == .mappedFile)
        RegionClassifier.classify(&regions, fileExists: { _ in false })
        #expect(regions[0].type == .deletedFile)
    }

    @Test("type names read back")
    func names() {
        let all: [RegionType] = [
            .heap, .stack, .threadStack, .anonymous, .anonNamed("x"), .code, .data, .readOnlyData, .mappedFile,
            .sharedMappedFile, .sharedMemory, .memfd("m"), .deletedFile, .guardPage, .reserved, .vdso, .vvar, .vsyscall,
            .kernel("uprobes"), .tagged("purgeable cache: images"),
        ]
        for t in all { #expect(RegionType(name: t.name) == t) }
    }
}
