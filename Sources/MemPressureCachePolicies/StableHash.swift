/// A 64-bit hash of a key that is the same in every process, for the frequency sketch.
///
/// Swift's `Hasher` (and so `hashValue`) is seeded per process, so a sketch that hashed with it
/// would count collisions differently on every run and a policy's hits would change from run to
/// run. `StableKeyHash` hashes with fixed seeds instead:
///
/// - fixed-width integers (`Int`, `UInt`, `Int8`...`Int64`, `UInt8`...`UInt64`): their value,
///   mixed by the SplitMix64 finalizer;
/// - `String`: the bytes of its UTF-8 form (so two strings that are equal only by canonical
///   equivalence, such as a precomposed "é" and "e" plus a combining accent, hash differently:
///   the sketch then counts them apart, which costs a little accuracy and never correctness);
/// - `[UInt8]` and `ArraySlice<UInt8>`: their bytes.
///
/// Which of these applies is decided once, when the hash is made for a key type, by comparing
/// metatypes; hashing a key is then a switch on that choice and a bit cast, never a dynamic cast
/// (for `Int` and `String`, the commonest keys, a metatype test that code specialized for them
/// decides when compiling, before the switch).
/// Any other key type falls back to `hashValue`: for those (and only those) the sketch, and so
/// W-TinyLFU's admissions, vary from process to process.
@usableFromInline
struct StableKeyHash<Key: Hashable & Sendable>: Sendable {
    @usableFromInline
    enum Kind: Sendable {
        case int, uint, int64, uint64, int32, uint32, int16, uint16, int8, uint8
        case string, bytes, byteSlice
        /// `hashValue`: stable within a process only.
        case perProcess
    }

    @usableFromInline let kind: Kind

    @inlinable init() {
        kind = Self.kind(of: Key.self)
    }

    /// Whether keys of this type hash the same in every process.
    @inlinable var isStable: Bool { kind != .perProcess }

    @usableFromInline static func kind(of type: Key.Type) -> Kind {
        // Exact metatype equality (not `is`, which would also match a subclass).
        let table: [(any Any.Type, Kind)] = [
            (Int.self, .int),
            (UInt.self, .uint),
            (Int64.self, .int64),
            (UInt64.self, .uint64),
            (Int32.self, .int32),
            (UInt32.self, .uint32),
            (Int16.self, .int16),
            (UInt16.self, .uint16),
            (Int8.self, .int8),
            (UInt8.self, .uint8),
            (String.self, .string),
            ([UInt8].self, .bytes),
            (ArraySlice<UInt8>.self, .byteSlice),
        ]
        for (candidate, kind) in table where candidate == type { return kind }
        return .perProcess
    }

    /// The key's hash. The bit casts are sound: `kind` was chosen from `Key`'s own metatype.
    @inlinable @inline(__always) func hash(_ key: Key) -> UInt64 {
        // The commonest key types first, by metatype: in code specialized for them the test is
        // decided when compiling, and the hash is a few instructions with no call.
        if Key.self == Int.self { return StableHash.mix(UInt64(bitPattern: Int64(unsafeBitCast(key, to: Int.self)))) }
        if Key.self == String.self { return StableHash.string(unsafeBitCast(key, to: String.self)) }
        return switch kind {
        case .int: StableHash.mix(UInt64(bitPattern: Int64(unsafeBitCast(key, to: Int.self))))
        case .uint: StableHash.mix(UInt64(unsafeBitCast(key, to: UInt.self)))
        case .int64: StableHash.mix(UInt64(bitPattern: unsafeBitCast(key, to: Int64.self)))
        case .uint64: StableHash.mix(unsafeBitCast(key, to: UInt64.self))
        case .int32: StableHash.mix(UInt64(bitPattern: Int64(unsafeBitCast(key, to: Int32.self))))
        case .uint32: StableHash.mix(UInt64(unsafeBitCast(key, to: UInt32.self)))
        case .int16: StableHash.mix(UInt64(bitPattern: Int64(unsafeBitCast(key, to: Int16.self))))
        case .uint16: StableHash.mix(UInt64(unsafeBitCast(key, to: UInt16.self)))
        case .int8: StableHash.mix(UInt64(bitPattern: Int64(unsafeBitCast(key, to: Int8.self))))
        case .uint8: StableHash.mix(UInt64(unsafeBitCast(key, to: UInt8.self)))
        case .string: StableHash.string(unsafeBitCast(key, to: String.self))
        case .bytes: unsafeBitCast(key, to: [UInt8].self).withUnsafeBytes { StableHash.bytes($0) }
        case .byteSlice: unsafeBitCast(key, to: ArraySlice<UInt8>.self).withUnsafeBytes { StableHash.bytes($0) }
        case .perProcess: StableHash.mix(UInt64(bitPattern: Int64(key.hashValue)))
        }
    }
}

/// Fixed-seed hash functions (no per-process state).
@usableFromInline
enum StableHash {
    @inlinable static var seed: UInt64 { 0x243F_6A88_85A3_08D3 }  // π's fraction: nothing up the sleeve

    /// The SplitMix64 finalizer of `x` plus a fixed seed: every input bit affects every output bit.
    @inlinable static func mix(_ x: UInt64) -> UInt64 {
        SplitMix64.finalize(x &+ seed)
    }

    /// Bytes: the same fixed-seed hash that gives text keys of trace files their ids
    /// (`TraceKeyHash`), so one byte string has one hash throughout the module.
    @inlinable static func bytes(_ buffer: UnsafeRawBufferPointer) -> UInt64 {
        TraceKeyHash.hash(buffer)
    }

    @inlinable static func string(_ s: String) -> UInt64 {
        if let h = s.utf8.withContiguousStorageIfAvailable({ bytes(UnsafeRawBufferPointer($0)) }) { return h }
        var copy = s
        return copy.withUTF8 { bytes(UnsafeRawBufferPointer($0)) }
    }
}
