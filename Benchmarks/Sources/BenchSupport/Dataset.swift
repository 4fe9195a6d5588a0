// A seeded dataset of keys and values: keys `mp:000000000`, `mp:000000001`, ..., each value a
// byte string of 512 to 1536 bytes (mean 1 KiB) drawn from a seeded generator, so every value can
// be rebuilt from the seed and the key's index and checked byte for byte. The bytes are random,
// so compression gains nothing (redis's LZF, PostgreSQL's pglz): what is stored is as large as
// the values. redis-bench stores it as keys; pg-bench as rows (the index as the primary key).

/// The keys and values, from a seed.
public struct Dataset: Codable, Sendable {
    public var seed: UInt64
    public var keys: Int
    /// The sum of the values' lengths.
    public var valueBytes: UInt64

    public static let shortestValue = 512
    public static let valueSpread = 1025  // lengths 512 ... 1536

    /// As many keys as it takes for the values to hold at least `targetBytes`.
    public init(seed: UInt64, targetBytes: UInt64) {
        self.seed = seed
        keys = 0
        valueBytes = 0
        while valueBytes < targetBytes {
            valueBytes += UInt64(valueLength(keys))
            keys += 1
        }
    }

    /// splitmix64's finalizer: a bijective mix of 64 bits.
    public static func mix(_ x: UInt64) -> UInt64 {
        var z = x &+ 0x9E37_79B9_7F4A_7C15
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    public func valueLength(_ i: Int) -> Int {
        Self.shortestValue + Int(Self.mix(seed ^ (UInt64(i) &* 0xD1B5_4A32_D192_ED03)) % UInt64(Self.valueSpread))
    }

    /// Every key is `mp:` and the index in nine digits: 12 bytes.
    public static let keyLength = 12

    /// Appends key `i` to `out`.
    public func appendKey(_ i: Int, to out: inout [UInt8]) {
        var digits: (UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8) = (48, 48, 48, 48, 48, 48, 48, 48, 48)
        withUnsafeMutableBytes(of: &digits) { d in
            var n = i
            var at = 8
            while n > 0 && at >= 0 {
                d[at] = UInt8(ascii: "0") + UInt8(n % 10)
                n /= 10
                at -= 1
            }
        }
        out += [UInt8(ascii: "m"), UInt8(ascii: "p"), UInt8(ascii: ":")]
        withUnsafeBytes(of: digits) { out.append(contentsOf: $0) }
    }

    public func key(_ i: Int) -> [UInt8] {
        var out: [UInt8] = []
        appendKey(i, to: &out)
        return out
    }

    public func keyText(_ i: Int) -> String { String(decoding: key(i), as: UTF8.self) }

    /// The generator of value `i`: each step gives its next 8 bytes (little-endian).
    private func firstState(_ i: Int) -> UInt64 { Self.mix(seed &+ 0x5851_F42D_4C95_7F2D &* UInt64(i + 1)) }

    /// Appends value `i` to `out`.
    public func appendValue(_ i: Int, to out: inout [UInt8]) {
        var left = valueLength(i)
        var state = firstState(i)
        while left > 0 {
            state &+= 0x9E37_79B9_7F4A_7C15
            let word = Self.mix(state).littleEndian
            let n = min(8, left)
            withUnsafeBytes(of: word) { out.append(contentsOf: $0.prefix(n)) }
            left -= n
        }
    }

    /// Whether `bytes` is value `i` (compared as it is generated, nothing allocated).
    public func matches(_ i: Int, _ bytes: UnsafeRawBufferPointer) -> Bool {
        let length = valueLength(i)
        guard bytes.count == length else { return false }
        var state = firstState(i)
        var offset = 0
        while offset + 8 <= length {
            state &+= 0x9E37_79B9_7F4A_7C15
            guard UInt64(littleEndian: bytes.loadUnaligned(fromByteOffset: offset, as: UInt64.self)) == Self.mix(state) else { return false }
            offset += 8
        }
        if offset < length {
            state &+= 0x9E37_79B9_7F4A_7C15
            var word = Self.mix(state)
            for at in offset..<length {
                guard bytes[at] == UInt8(truncatingIfNeeded: word) else { return false }
                word >>= 8
            }
        }
        return true
    }

    /// `count` distinct keys spread over the whole key space (one from each of `count` equal
    /// strata, at a seeded place within it), in a seeded random order: the same on every call.
    public func sample(_ count: Int) -> [Int] {
        let n = min(count, keys)
        guard n > 0 else { return [] }
        var out: [Int] = []
        out.reserveCapacity(n)
        for j in 0..<n {
            let low = j * keys / n
            let high = (j + 1) * keys / n
            out.append(low + Int(Self.mix(seed ^ 0xA076_1D64_78BD_642F ^ UInt64(j)) % UInt64(high - low)))
        }
        for j in stride(from: n - 1, to: 0, by: -1) {
            out.swapAt(j, Int(Self.mix(seed ^ 0xE703_7ED1_A0B4_28DB ^ UInt64(j)) % UInt64(j + 1)))
        }
        return out
    }
}
