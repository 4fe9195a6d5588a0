import MemPressureSystem
import Testing
import MemPressureTestSupport
import MemPressureVMTracker

/// SplitMix64: a small deterministic generator, so a failing mutation can be replayed by seed.
struct SplitMix64: RandomNumberGenerator {
    var state: UInt64
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

/// The parser is fed corrupted smaps text and must never crash: each input either parses or is
/// refused with a `malformed` error naming a line.
@Suite("mutation: corrupted smaps never crash the parser")
struct MutationTests {
    static let seeds: [UInt64] = [1, 2, 3, 4]

    @Test(arguments: seeds)
    func randomMutations(seed: UInt64) throws {
        let originals = try Fixtures.processes().map { try Fixtures.bytes("\(Fixtures.procRoot)/\($0.pid)/smaps") }
        var rng = SplitMix64(state: seed)
        var parsed = 0
        var refused = 0
        for iteration in 0..<1500 {
            var text = originals[Int.random(in: 0..<originals.count, using: &rng)]
            let mutations = Int.random(in: 1...4, using: &rng)
            for _ in 0..<mutations { mutate(&text, using: &rng) }
            do {
                let regions = try SmapsParser.parse(text, pid: 7, file: "smaps")
                for r in regions {
                    #expect(r.end >= r.start)
                    #expect(r.counters.size == r.end - r.start, "seed \(seed) iteration \(iteration)")
                }
                parsed += 1
            } catch {
                guard case .malformed(_, _, let line, _) = error else {
                    Issue.record("seed \(seed) iteration \(iteration): unexpected error \(error)")
                    continue
                }
                #expect(line >= 1)
                refused += 1
            }
        }
        // Both outcomes occur: the mutations are neither all harmless nor all fatal.
        #expect(parsed > 0)
        #expect(refused > 0)
    }

    @Test("truncation at every line boundary")
    func truncations() throws {
        let text = try Fixtures.bytes("\(Fixtures.procRoot)/\(try Fixtures.process(labelled: "sleep").pid)/smaps")
        let full = try SmapsParser.parse(text)
        var complete = 0
        for end in text.indices where text[end] == 0x0a {
            let prefix = Array(text[...end])
            do {
                let regions = try SmapsParser.parse(prefix)
                // Only a cut right after a VmFlags line is a whole number of records.
                #expect(regions == Array(full.prefix(regions.count)))
                complete += 1
            } catch {
                #expect(error.description.contains("VmFlags"))
            }
        }
        #expect(complete == full.count)
    }

    func mutate(_ text: inout [UInt8], using rng: inout SplitMix64) {
        guard !text.isEmpty else {
            text = Array("x".utf8)
            return
        }
        let at = Int.random(in: 0..<text.count, using: &rng)
        switch Int.random(in: 0..<9, using: &rng) {
        case 0:  // flip a byte
            text[at] = UInt8.random(in: 0...255, using: &rng)
        case 1:  // truncate
            text.removeSubrange(at...)
        case 2:  // delete a range
            text.removeSubrange(at..<min(text.count, at + Int.random(in: 1...200, using: &rng)))
        case 3:  // insert random bytes
            text.insert(contentsOf: (0..<Int.random(in: 1...20, using: &rng)).map { _ in UInt8.random(in: 0...255, using: &rng) }, at: at)
        case 4:  // a huge number
            text.insert(contentsOf: Array("99999999999999999999999999".utf8), at: at)
        case 5:  // duplicate a line
            let lines = text.split(separator: 0x0a, omittingEmptySubsequences: false)
            let i = Int.random(in: 0..<lines.count, using: &rng)
            var copy = Array(lines)
            copy.insert(lines[i], at: i)
            text = Array(copy.joined(separator: [0x0a]))
        case 6:  // delete a line
            var lines = Array(text.split(separator: 0x0a, omittingEmptySubsequences: false))
            lines.remove(at: Int.random(in: 0..<lines.count, using: &rng))
            text = Array(lines.joined(separator: [0x0a]))
        case 7:  // replace a digit run's digit
            if let d = text[at...].firstIndex(where: { $0 >= 0x30 && $0 <= 0x39 }) {
                text[d] = UInt8.random(in: 0x30...0x39, using: &rng)
            }
        default:  // a NUL or a newline somewhere
            text[at] = Bool.random(using: &rng) ? 0 : 0x0a
        }
    }
}
