/// What the model app's state holds, word by word: what `verify N` compares it with, and what a
/// harness compares a saved state file with when the app is not running to answer.
///
/// The state is `--state-mb` MiB of 64-bit words in the machine's byte order. Word `i` of a new
/// state is `i × 0x9E3779B97F4A7C15`, except word 0, which counts the app's activations (each
/// didBecomeActive adds one). A byte is lost when it differs from what the state must hold after
/// the activations the harness counted.
public enum WorkloadStateLayout {
    /// Word `i` of a state after `activations` activations since its first launch.
    public static func word(_ i: Int, activations: UInt64) -> UInt64 {
        i == 0 ? activations : UInt64(truncatingIfNeeded: i) &* 0x9E37_79B9_7F4A_7C15
    }

    /// The bytes of `state` that differ from what it must hold after `activations` activations;
    /// a state that is not `expectedBytes` long counts whole.
    public static func lostBytes(_ state: UnsafeRawBufferPointer, expectedBytes: Int, activations: UInt64) -> Int {
        guard state.count == expectedBytes else { return expectedBytes }
        var lost = 0
        for i in 0..<(expectedBytes / 8) {
            lost += differingBytes(state.loadUnaligned(fromByteOffset: i * 8, as: UInt64.self), word(i, activations: activations))
        }
        return lost
    }

    /// The bytes a new state (as a first launch makes it) loses against `activations`: its
    /// word 0 alone differs.
    public static func lostBytesOfNewState(activations: UInt64) -> Int {
        differingBytes(word(0, activations: 0), word(0, activations: activations))
    }

    /// How many of the 8 bytes of `a` and `b` differ.
    static func differingBytes(_ a: UInt64, _ b: UInt64) -> Int {
        let x = a ^ b
        var n = 0
        for byte in 0..<8 where (x >> (byte * 8)) & 0xFF != 0 { n += 1 }
        return n
    }
}
