// Names are compared by their UTF-8 bytes: the same order on every machine and in every locale,
// and unlike `String.<`, which calls canonically equivalent names equal. The sort compares
// them often, so all the input's names are copied once into one byte buffer and compared there,
// without touching (retaining, bridging) the Strings.

/// The input's names, by input index, as UTF-8 bytes in one buffer.
struct NameTable: Sendable {
    private var bytes: [UInt8] = []
    private var starts: [Int] = []
    private var counts: [Int] = []

    init(_ apps: [JetsamAppSnapshot]) {
        starts.reserveCapacity(apps.count)
        counts.reserveCapacity(apps.count)
        bytes.reserveCapacity(apps.count * 12)
        for app in apps {
            starts.append(bytes.count)
            bytes.append(contentsOf: app.name.utf8)
            counts.append(bytes.count - starts[starts.count - 1])
        }
    }

    /// Three-way comparison of the names at two input indices.
    func compare(_ i: Int, _ j: Int) -> Int {
        let (si, ci, sj, cj) = (starts[i], counts[i], starts[j], counts[j])
        return bytes.withUnsafeBufferPointer { b in
            let common = min(ci, cj)
            var k = 0
            while k < common {
                let (x, y) = (b[si + k], b[sj + k])
                if x != y { return x < y ? -1 : 1 }
                k += 1
            }
            return ci == cj ? 0 : (ci < cj ? -1 : 1)
        }
    }
}

/// Three-way comparison of two names' UTF-8 bytes (for the few comparisons outside the sort).
func compareNameBytes(_ a: String, _ b: String) -> Int {
    var a = a
    var b = b
    return a.withUTF8 { x in
        b.withUTF8 { y in
            let common = min(x.count, y.count)
            var i = 0
            while i < common {
                if x[i] != y[i] { return x[i] < y[i] ? -1 : 1 }
                i += 1
            }
            return x.count == y.count ? 0 : (x.count < y.count ? -1 : 1)
        }
    }
}
