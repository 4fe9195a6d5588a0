// smaps-parse-bench FILE [ITERATIONS]: parses one saved smaps file repeatedly and prints the
// parser's throughput, separating parsing from the kernel's cost of producing the text.
import Glibc
import MemPressureSystem
import MemPressureVMTracker

let args = CommandLine.arguments
guard args.count >= 2 else {
    print("usage: smaps-parse-bench FILE [ITERATIONS]")
    exit(2)
}
let iterations = args.count > 2 ? Int(args[2]) ?? 100 : 100
var buffer = ReadBuffer()
do {
    try ProcFS.readFile(args[1], into: &buffer)
} catch {
    print("smaps-parse-bench: \(error)")
    exit(1)
}
var regions = 0
let start = monotonicSeconds()
for _ in 0..<iterations {
    do {
        var parsed = try buffer.withBytes { (b) throws(ProcError) in try SmapsParser.parse(b) }
        RegionClassifier.classify(&parsed)
        regions = parsed.count
    } catch {
        print("smaps-parse-bench: \(error)")
        exit(1)
    }
}
let seconds = monotonicSeconds() - start
let perRegion = seconds / Double(iterations * max(regions, 1)) * 1e9
let perByte = seconds / Double(iterations * buffer.count) * 1e9
print("\(regions) regions, \(buffer.count) bytes: \(ByteFormat.fixed(perRegion, 1)) ns/region, \(ByteFormat.fixed(perByte, 2)) ns/byte, \(ByteFormat.fixed(Double(buffer.count * iterations) / seconds / 1e6, 1)) MB/s")
