import BenchSupport
import Foundation
import MemPressureSystem
import MemPressurePurgeable

extension PurgeableBench {
    // MARK: Round trip

    func measureRoundTrip() throws -> RoundTrip {
        let arena = try PurgeableArena.named("purgeable-bench")
        let size = 1 << 20
        let buffer = try PurgeableBuffer(count: size, arena: arena)
        try fill(buffer, seed: 1)
        let deferredArena = try PurgeableArena.named("purgeable-bench-deferred")
        deferredArena.deferredAdviceLimit = 64 << 20
        let deferredBuffer = try PurgeableBuffer(count: size, arena: deferredArena)
        try fill(deferredBuffer, seed: 2)
        var m = Measurements()
        for round in 0..<rounds {
            log("purgeable-bench", "round trip round \(round + 1)/\(rounds)")
            try m.time("round trip") {
                for _ in 0..<roundTrips {
                    try buffer.endContentAccess()
                    guard buffer.beginContentAccess() else { throw BenchError("the kernel took the buffer during the benchmark") }
                }
            }
            try m.time("round trip (deferred advice)") {
                for _ in 0..<roundTrips {
                    try deferredBuffer.endContentAccess()
                    guard deferredBuffer.beginContentAccess() else { throw BenchError("the kernel took the buffer during the benchmark") }
                }
            }
            try m.time("recreate") {
                for i in 0..<roundTrips {
                    let fresh = try PurgeableBuffer(count: size, arena: arena)
                    try fill(fresh, seed: i)  // freed (back to the kernel, decay 0) when released
                }
            }
            try m.time("recreate (copy)") {
                let source = [UInt64](repeating: 7, count: size / 8)
                for _ in 0..<roundTrips {
                    let fresh = try PurgeableBuffer(count: size, arena: arena)
                    try fresh.withUnsafeMutableBytes { raw in
                        source.withUnsafeBytes { raw.copyMemory(from: $0) }
                    }
                }
            }
        }
        let rt = m.median("round trip")! / Double(roundTrips)
        let deferred = m.median("round trip (deferred advice)")! / Double(roundTrips)
        let re = m.median("recreate")! / Double(roundTrips)
        let copy = m.median("recreate (copy)")! / Double(roundTrips)
        return RoundTrip(
            entryBytes: size, roundTripMicroseconds: rt * 1e6, deferredRoundTripMicroseconds: deferred * 1e6,
            recreateMicroseconds: re * 1e6, recreateByCopyMicroseconds: copy * 1e6, fractionOfRecreate: rt / re,
            deferredFractionOfRecreate: deferred / re, fractionOfCopy: rt / copy)
    }

    func fill(_ buffer: PurgeableBuffer, seed: Int) throws {
        try buffer.withUnsafeMutableBytes { raw in
            let words = raw.bindMemory(to: UInt64.self)
            var z = UInt64(truncatingIfNeeded: seed) &+ 0x9E37_79B9_7F4A_7C15
            for i in words.indices {
                z = z &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
                words[i] = z
            }
        }
    }
}

struct RoundTrip: Codable {
    var entryBytes: Int
    var roundTripMicroseconds: Double
    var deferredRoundTripMicroseconds: Double
    var recreateMicroseconds: Double
    var recreateByCopyMicroseconds: Double
    var fractionOfRecreate: Double
    var deferredFractionOfRecreate: Double
    var fractionOfCopy: Double
}

extension Report {
    func roundTripMarkdown() -> String {
        var out = ""
        if let rt = roundTrip {
            out += """

                ## End/begin access round trip on a resident 1 MiB entry

                | | µs |
                |---|---:|
                | `endContentAccess()` + `beginContentAccess()`, immediate advice (canaries, MADV_FREE, atomic exchanges) | \(ByteFormat.fixed(rt.roundTripMicroseconds, 1)) |
                | the same with deferred advice (`deferredAdviceLimit` 64 MiB: the buffer waits idle, no system call) | \(ByteFormat.fixed(rt.deferredRoundTripMicroseconds, 2)) |
                | recreating the entry: a new 1 MiB purgeable buffer, content computed 8 bytes at a time | \(ByteFormat.fixed(rt.recreateMicroseconds, 1)) |
                | recreating it by copying from a ready source (the cheapest possible rebuild) | \(ByteFormat.fixed(rt.recreateByCopyMicroseconds, 1)) |

                Round trip as a fraction of recreating (target: under 5%): immediate advice \
                **\(ByteFormat.fixed(rt.fractionOfRecreate * 100, 1))%** (of a copy: \(ByteFormat.fixed(rt.fractionOfCopy * 100, 1))%); \
                deferred advice **\(ByteFormat.fixed(rt.deferredFractionOfRecreate * 100, 2))%**. Most of the immediate round trip is \
                the kernel's: MADV_FREE walks and cleans 256 page-table entries and flushes the TLB, and each \
                exchange then takes a TLB miss to set the page's dirty bit again. Deferral skips both while \
                the entry is reused, at the price of idle memory that is not reclaimable until the arena \
                advises it (beyond the limit, on a memory warning, or when the app enters the background).

                """
        }
        return out
    }
}
