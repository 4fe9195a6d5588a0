import CMemPressureJemalloc
import CMemoryPressure
import CMemPressureUnwind
import Testing

/// The system libraries are found through pkg-config and link: the foundation later issues
/// build on (purgeable memory on jemalloc arenas, call stacks with libunwind).
@Suite("system libraries")
struct SystemLibraryTests {
    @Test("jemalloc answers mallctl")
    func jemalloc() {
        var version: UnsafePointer<CChar>?
        var size = MemoryLayout<UnsafePointer<CChar>?>.size
        let rc = mallctl("version", &version, &size, nil, 0)
        #expect(rc == 0)
        let text = version.map { String(cString: $0) } ?? ""
        #expect(text.first?.isNumber == true, "version \(text)")
    }

    #if arch(x86_64)
    /// unw_getcontext, unw_init_local and unw_step are macros over these per-architecture names.
    @Test("libunwind walks the calling thread's stack")
    func unwind() {
        var context = unw_context_t()
        var cursor = unw_cursor_t()
        #expect(_Ux86_64_getcontext(&context) == 0)
        #expect(_ULx86_64_init_local(&cursor, &context) == 0)
        var frames = 0
        while frames < 64, _ULx86_64_step(&cursor) > 0 { frames += 1 }
        #expect(frames > 1)
    }
    #endif
}
