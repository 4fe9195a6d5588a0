import CMemPressureBacktrace
import Glibc

/// One frame of a call stack, symbolized.
package struct StackFrame: Sendable, Hashable, Codable, CustomStringConvertible {
    package var address: UInt
    /// The function, demangled when it is a Swift symbol; nil when unknown.
    package var symbol: String?
    /// Bytes from the start of the function.
    package var offset: UInt
    /// The executable or shared library holding the frame.
    package var object: String?

    package init(address: UInt, symbol: String?, offset: UInt, object: String?) {
        self.address = address
        self.symbol = symbol
        self.offset = offset
        self.object = object
    }

    /// "MyApp.load(image:) + 0x2c (MyApp)" or "0x7f3a... (libfoo.so)".
    package var description: String {
        let where_ = object.map { " (" + ($0.split(separator: "/").last.map(String.init) ?? $0) + ")" } ?? ""
        if let symbol { return "\(symbol) + 0x\(String(offset, radix: 16))\(where_)" }
        return "0x\(String(address, radix: 16))\(where_)"
    }
}

/// Call stacks of the calling thread, walked with libunwind.
package enum Backtrace {
    /// The calling thread's stack, innermost first, without `capture`'s own frames and the
    /// `skip` frames above it.
    package static func capture(skip: Int = 0, maxFrames: Int = 48) -> [StackFrame] {
        var frames = [mp_frame](repeating: mp_frame(), count: max(1, maxFrames))
        let n = frames.withUnsafeMutableBufferPointer { mp_capture_stack($0.baseAddress, Int32($0.count), Int32(skip + 1)) }
        guard n > 0 else { return [] }
        return frames.prefix(Int(n)).map(symbolize)
    }

    /// Prepares `captureThread` (installs a handler for `signal`); call once, early.
    package static func installThreadCapture(signal: Int32) -> Bool {
        mp_thread_stack_install(signal) == 0
    }

    /// Interrupts thread `tid` of this process with `signal` and returns its call stack, the
    /// code it was running first; nil if it did not answer within `timeout` seconds (a thread
    /// that blocks `signal`, like libdispatch's workers, never answers) or if another capture is
    /// under way. Each capture is numbered: a late answer to an abandoned one is discarded.
    package static func captureThread(tid: Int32, signal: Int32, timeout: Double = 1, maxFrames: Int = 48) -> [StackFrame]? {
        var frames = [mp_frame](repeating: mp_frame(), count: max(1, maxFrames))
        let n = frames.withUnsafeMutableBufferPointer {
            mp_thread_stack_capture(tid, signal, $0.baseAddress, Int32($0.count), Int32(timeout * 1000))
        }
        guard n > 0 else { return nil }
        return frames.prefix(Int(n)).map(symbolize)
    }

    static func symbolize(_ f: mp_frame) -> StackFrame {
        let mangled = withUnsafeBytes(of: f.name) { raw in String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self) }
        let object = mp_object_of(f.ip).map { String(cString: $0) }
        return StackFrame(address: UInt(f.ip), symbol: mangled.isEmpty ? nil : demangle(mangled), offset: UInt(f.offset), object: object)
    }

    /// The readable form of a Swift symbol ("$s4main3fooyyF" -> "main.foo() -> ()"); other
    /// symbols are returned as they are.
    static func demangle(_ symbol: String) -> String {
        guard symbol.hasPrefix("$s") || symbol.hasPrefix("_T") || symbol.hasPrefix("$S") else { return symbol }
        return symbol.withCString { cName in
            guard let out = _swift_demangle(cName, strlen(cName), nil, nil, 0) else { return symbol }
            defer { free(out) }
            return String(cString: out)
        }
    }
}

/// The Swift runtime's demangler (exported by libswiftCore).
@_silgen_name("swift_demangle")
private func _swift_demangle(
    _ mangledName: UnsafePointer<CChar>?, _ mangledNameLength: Int, _ outputBuffer: UnsafeMutablePointer<CChar>?,
    _ outputBufferSize: UnsafeMutablePointer<Int>?, _ flags: UInt32
) -> UnsafeMutablePointer<CChar>?
