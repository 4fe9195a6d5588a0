import FoundationEssentials
import Testing
import MemPressureWorkloadProtocol

/// The model app's commands and replies: every value prints as a line that parses back to it,
/// the lines the app has always written parse, and malformed or unknown lines are typed errors.
@Suite("workload protocol")
struct WorkloadProtocolTests {
    static let commands: [WorkloadCommand] = [
        .allocate(bytes: 1), .allocate(bytes: 48 << 20), .allocate(bytes: WorkloadCommand.maximumBytes), .release(bytes: 4096),
        .grow(bytesPerSecond: 300 << 20, totalBytes: 1 << 30), .state, .verify(activations: 0), .verify(activations: UInt64.max),
        .restored, .ramp(chunkBytes: 65536, lineBytes: 1_020_054_732, moreBytes: 2 << 20, limitBytes: 1 << 30),
        .ramp(chunkBytes: 1, lineBytes: 1, moreBytes: 1, limitBytes: WorkloadCommand.maximumBytes),
    ]

    static let replies: [WorkloadReply] = [
        .dirty(bytes: 0), .dirty(bytes: 50_331_648), .growing, .lost(bytes: 0), .lost(bytes: 8_388_608),
        .state(WorkloadStateReport(checksum: 0xcbf2_9ce4_8422_2325, launchChecksum: 0, restoredFromDisk: true, bytes: 8 << 20, activations: 3)),
        .state(WorkloadStateReport(checksum: UInt64.max, launchChecksum: 0x1, restoredFromDisk: false, bytes: 0, activations: UInt64.max, frames: UInt64.max)),
        .restored(WorkloadRebuild(images: 12, stores: 4, modelChunks: 3, beforeReady: 19, seconds: 0.012345678901234567, cpuSeconds: 5e-05, refaultSeconds: 0)),
        .restored(WorkloadRebuild()),
        .failed("mmap of 1099511627776 bytes refused"), .failed(""), .ready(pid: 1), .ready(pid: Int32.max),
        .ramped(WorkloadRamp(crossedAt: 11_234.567_891_234, beforeAt: 11_234.567_87, startedAt: 11_234.4, endedAt: 11_234.6, chunks: 4321, bytes: 283_181_056, usageBytes: 1_020_100_608)),
        .ramped(WorkloadRamp(crossedAt: 0, beforeAt: 0, startedAt: 0, endedAt: 1e-05, chunks: 1, bytes: 4096, usageBytes: 0)),
    ]

    @Test("a command prints as a line that parses back to it", arguments: commands)
    func commandRoundTrip(_ command: WorkloadCommand) throws {
        #expect(try WorkloadCommand(line: command.line) == command)
        #expect(command.line.hasPrefix(command.name))
    }

    @Test("a reply prints as a line that parses back to it", arguments: replies)
    func replyRoundTrip(_ reply: WorkloadReply) throws {
        #expect(try WorkloadReply(line: reply.line) == reply)
    }

    @Test("commands and replies round-trip through JSON")
    func codable() throws {
        for c in Self.commands {
            #expect(try JSONDecoder().decode(WorkloadCommand.self, from: JSONEncoder().encode(c)) == c)
        }
        for r in Self.replies {
            #expect(try JSONDecoder().decode(WorkloadReply.self, from: JSONEncoder().encode(r)) == r)
        }
    }

    @Test("the lines the model app writes parse to their values")
    func existingLines() throws {
        #expect(
            try WorkloadReply(line: "state fnv=8f3c0a1b2c3d4e5f launch=cbf29ce484222325 restored=true bytes=8388608 activations=2 frames=3")
                == .state(WorkloadStateReport(checksum: 0x8f3c_0a1b_2c3d_4e5f, launchChecksum: 0xcbf2_9ce4_8422_2325, restoredFromDisk: true, bytes: 8_388_608, activations: 2, frames: 3)))
        #expect(
            try WorkloadReply(line: "restored images=32 stores=4 model=6 first=10 seconds=0.0421 cpu=0.0398 refault=0.0012")
                == .restored(WorkloadRebuild(images: 32, stores: 4, modelChunks: 6, beforeReady: 10, seconds: 0.0421, cpuSeconds: 0.0398, refaultSeconds: 0.0012)))
        #expect(try WorkloadReply(line: "dirty 50331648") == .dirty(bytes: 50_331_648))
        #expect(try WorkloadReply(line: "lost 0") == .lost(bytes: 0))
        #expect(try WorkloadReply(line: "growing") == .growing)
        #expect(try WorkloadReply(line: "error: mmap of 4096 bytes refused") == .failed("mmap of 4096 bytes refused"))
        #expect(try WorkloadReply(line: "ready 4242") == .ready(pid: 4242))
        #expect(
            try WorkloadReply(line: "ramped crossed=8123.000412 before=8123.000398 started=8122.81 ended=8123.0015 chunks=3001 bytes=196673536 usage=1020067840")
                == .ramped(WorkloadRamp(crossedAt: 8123.000412, beforeAt: 8123.000398, startedAt: 8122.81, endedAt: 8123.0015, chunks: 3001, bytes: 196_673_536, usageBytes: 1_020_067_840)))
        // Spaces between a command's words count as one, as the app has always read them.
        #expect(try WorkloadCommand(line: "allocate  1048576") == .allocate(bytes: 1_048_576))
        #expect(try WorkloadCommand(line: " grow 1 2 ") == .grow(bytesPerSecond: 1, totalBytes: 2))
    }

    static let badCommands: [(String, WorkloadProtocolError)] = [
        ("", .emptyLine),
        ("   ", .emptyLine),
        ("free 5", .unknownCommand("free")),
        ("STATE", .unknownCommand("STATE")),
        ("allocate", .wrongArguments(command: "allocate", usage: "allocate N")),
        ("allocate 1 2", .wrongArguments(command: "allocate", usage: "allocate N")),
        ("state now", .wrongArguments(command: "state", usage: "state")),
        ("grow 5", .wrongArguments(command: "grow", usage: "grow RATE TOTAL")),
        ("ramp 65536 1000 2", .wrongArguments(command: "ramp", usage: "ramp CHUNK LINE MORE LIMIT")),
        ("ramp 0 1000 2 3", .outOfRange(field: "chunk", text: "0", range: "1...1099511627776")),
        ("ramp 65536 1000 x 3", .notANumber(field: "more", text: "x")),
        ("ramp 65536 1000 2 1099511627777", .outOfRange(field: "limit", text: "1099511627777", range: "1...1099511627776")),
        ("allocate 0", .outOfRange(field: "bytes", text: "0", range: "1...1099511627776")),
        ("release 1099511627777", .outOfRange(field: "bytes", text: "1099511627777", range: "1...1099511627776")),
        ("allocate -5", .notANumber(field: "bytes", text: "-5")),
        ("allocate +5", .notANumber(field: "bytes", text: "+5")),
        ("allocate 1k", .notANumber(field: "bytes", text: "1k")),
        ("allocate 0x10", .notANumber(field: "bytes", text: "0x10")),
        ("grow 100 nan", .notANumber(field: "total", text: "nan")),
        ("verify 18446744073709551616", .outOfRange(field: "activations", text: "18446744073709551616", range: "0...18446744073709551615")),
        ("verify 123456789012345678901", .notANumber(field: "activations", text: "123456789012345678901")),
    ]

    @Test("a malformed command is a typed error that says why", arguments: badCommands)
    func badCommand(_ line: String, _ expected: WorkloadProtocolError) {
        #expect(throws: expected) { try WorkloadCommand(line: line) }
    }

    static let badReplies: [(String, WorkloadProtocolError)] = [
        ("", .emptyLine),
        ("ok", .unknownReply("ok")),
        ("done 5", .unknownReply("done 5")),
        ("dirty", .malformedReply(reply: "dirty", text: "dirty")),
        ("dirty 5 6", .malformedReply(reply: "dirty", text: "dirty 5 6")),
        ("dirty five", .notANumber(field: "bytes", text: "five")),
        ("lost -1", .notANumber(field: "bytes", text: "-1")),
        ("lost 99999999999999999999", .outOfRange(field: "bytes", text: "99999999999999999999", range: "0...18446744073709551615")),
        ("lost 18446744073709551615", .outOfRange(field: "bytes", text: "18446744073709551615", range: "0...9223372036854775807")),
        ("growing fast", .malformedReply(reply: "growing", text: "growing fast")),
        ("ready", .malformedReply(reply: "ready", text: "ready")),
        ("ready 0", .outOfRange(field: "pid", text: "0", range: "1...2147483647")),
        ("ready 2147483648", .outOfRange(field: "pid", text: "2147483648", range: "1...2147483647")),
        ("state fnv=1 launch=2 restored=true bytes=3", .missingField(reply: "state", field: "activations")),
        ("state fnv=1 launch=2 restored=true bytes=3 activations=4", .missingField(reply: "state", field: "frames")),
        ("state fnv=1 launch=2 restored=true bytes=3 activations=4 frames=0 color=red", .unknownField(reply: "state", field: "color")),
        ("state fnv=1 fnv=2 launch=2 restored=true bytes=3 activations=4 frames=0", .repeatedField(reply: "state", field: "fnv")),
        ("state fnv=1 launch=2 restored=yes bytes=3 activations=4 frames=0", .malformedField(reply: "state", field: "restored", text: "yes")),
        ("state fnv=xyz launch=2 restored=true bytes=3 activations=4 frames=0", .notANumber(field: "fnv", text: "xyz")),
        ("state fnv=12345678901234567 launch=2 restored=true bytes=3 activations=4 frames=0", .notANumber(field: "fnv", text: "12345678901234567")),
        ("state fnv=1 launch=2 restored=true bytes=3 activations=4 frames=-1", .notANumber(field: "frames", text: "-1")),
        ("state fnv=1 launch=2 restored=true bytes=3 activations", .malformedReply(reply: "state", text: "activations")),
        ("state fnv= launch=2 restored=true bytes=3 activations=4", .notANumber(field: "fnv", text: "")),
        ("restored images=1 stores=2 model=3 first=0 seconds=nan cpu=0 refault=0", .malformedField(reply: "restored", field: "seconds", text: "nan")),
        ("restored images=1 stores=2 model=3 first=0 seconds=-1 cpu=0 refault=0", .malformedField(reply: "restored", field: "seconds", text: "-1")),
        ("restored images=1 stores=2 model=3 first=0 seconds=inf cpu=0 refault=0", .malformedField(reply: "restored", field: "seconds", text: "inf")),
        ("restored images=1 stores=2 model=3 first=0 seconds=1", .missingField(reply: "restored", field: "cpu")),
        ("ramped crossed=1 before=1 started=1 ended=1 chunks=1 bytes=1", .missingField(reply: "ramped", field: "usage")),
        ("ramped crossed=-1 before=1 started=1 ended=1 chunks=1 bytes=1 usage=1", .malformedField(reply: "ramped", field: "crossed", text: "-1")),
        ("ramped crossed=1 before=1 started=1 ended=1 chunks=1 bytes=1 usage=1 line=5", .unknownField(reply: "ramped", field: "line")),
    ]

    @Test("a malformed or unknown reply is a typed error, never a trap or a default", arguments: badReplies)
    func badReply(_ line: String, _ expected: WorkloadProtocolError) {
        #expect(throws: expected) { try WorkloadReply(line: line) }
    }

    @Test("hostile bytes never trap, and what parses prints back to the same value")
    func hostile() {
        var lines = ["\u{0}", "state \u{FFFD}=1", "dirty \u{0661}", "lost ١٢", "restored seconds=1e400", "error", "state " + String(repeating: "a=1 ", count: 5000)]
        // Every prefix of every good line.
        for line in Self.replies.map(\.line) + Self.commands.map(\.line) {
            for n in 0...line.count { lines.append(String(line.prefix(n))) }
        }
        for line in lines {
            if let reply = try? WorkloadReply(line: line) { #expect((try? WorkloadReply(line: reply.line)) == reply, "\(line)") }
            if let command = try? WorkloadCommand(line: line) { #expect((try? WorkloadCommand(line: command.line)) == command, "\(line)") }
        }
    }

    @Test("a request reads the reply its command is answered with, and nothing else")
    func requests() throws {
        #expect(try WorkloadRequest.allocate(bytes: 5).reply("dirty 4096") == 4096)
        #expect(WorkloadRequest.allocate(bytes: 5).line == "allocate 5")
        #expect(try WorkloadRequest.verify(activations: 7).reply("lost 12") == 12)
        let state = try WorkloadRequest.state.reply("state fnv=a launch=b restored=false bytes=16 activations=1 frames=0")
        #expect(state.checksum == 0xa && state.launchChecksum == 0xb && !state.restoredFromDisk && state.bytes == 16 && state.activations == 1 && state.frames == 0)
        #expect(try WorkloadRequest.restored.reply(WorkloadReply.restored(WorkloadRebuild(images: 2)).line) == WorkloadRebuild(images: 2))
        try WorkloadRequest.grow(bytesPerSecond: 1, totalBytes: 2).reply("growing")
        #expect(WorkloadRequest.ramp(chunkBytes: 65536, lineBytes: 9, moreBytes: 8, limitBytes: 7).line == "ramp 65536 9 8 7")
        let ramp = try WorkloadRequest.ramp(chunkBytes: 1, lineBytes: 2, moreBytes: 3, limitBytes: 4).reply("ramped crossed=2.5 before=2 started=1 ended=3 chunks=5 bytes=20480 usage=4096")
        #expect(ramp == WorkloadRamp(crossedAt: 2.5, beforeAt: 2, startedAt: 1, endedAt: 3, chunks: 5, bytes: 20480, usageBytes: 4096))
        #expect(throws: WorkloadProtocolError.unexpectedReply(command: "ramp", reply: "growing")) {
            try WorkloadRequest.ramp(chunkBytes: 1, lineBytes: 2, moreBytes: 3, limitBytes: 4).reply("growing")
        }
        // Another command's reply, or the app's refusal, is an error that names the command.
        #expect(throws: WorkloadProtocolError.unexpectedReply(command: "verify", reply: "dirty 4096")) {
            try WorkloadRequest.verify(activations: 1).reply("dirty 4096")
        }
        #expect(throws: WorkloadProtocolError.unexpectedReply(command: "state", reply: "growing")) { try WorkloadRequest.state.reply("growing") }
        #expect(throws: WorkloadProtocolError.refused(command: "allocate 5", message: "mmap of 5 bytes refused")) {
            try WorkloadRequest.allocate(bytes: 5).reply("error: mmap of 5 bytes refused")
        }
    }

    @Test("send hands the command's line to the transport and reads its answer")
    func send() async throws {
        let lost = try await WorkloadRequest.verify(activations: 3).send { line in
            #expect(line == "verify 3")
            return "lost 0"
        }
        #expect(lost == 0)
        struct Gone: Error {}
        await #expect(throws: Gone.self) { try await WorkloadRequest.state.send { _ in throw Gone() } }
    }

    @Test("the state layout: a new state is its words, and each differing byte counts once")
    func stateLayout() {
        let words = 1024
        var state = (0..<words).map { WorkloadStateLayout.word($0, activations: 5) }
        state.withUnsafeBytes { raw in
            #expect(WorkloadStateLayout.lostBytes(raw, expectedBytes: words * 8, activations: 5) == 0)
            // Against another count only word 0 differs: 5 against 6 is one byte, against 256 two.
            #expect(WorkloadStateLayout.lostBytes(raw, expectedBytes: words * 8, activations: 6) == 1)
            #expect(WorkloadStateLayout.lostBytes(raw, expectedBytes: words * 8, activations: 256) == 2)
            // A state of another size counts whole.
            #expect(WorkloadStateLayout.lostBytes(raw, expectedBytes: words * 8 + 8, activations: 5) == words * 8 + 8)
        }
        state[17] ^= 0xFF00_0000_0000_00FF
        state.withUnsafeBytes { #expect(WorkloadStateLayout.lostBytes($0, expectedBytes: words * 8, activations: 5) == 2) }
        #expect(WorkloadStateLayout.word(1, activations: 9) == 0x9E37_79B9_7F4A_7C15)
        #expect(WorkloadStateLayout.lostBytesOfNewState(activations: 0) == 0)
        #expect(WorkloadStateLayout.lostBytesOfNewState(activations: 0x0102) == 2)
    }

    @Test("errors print one line naming what was wrong")
    func descriptions() {
        #expect(WorkloadProtocolError.unknownCommand("free").description == "unknown command 'free' (expected \(WorkloadCommand.usage))")
        #expect(WorkloadProtocolError.refused(command: "allocate 5", message: "no").description == "the app refused 'allocate 5': no")
        let long = String(repeating: "x", count: 500)
        #expect(throws: WorkloadProtocolError.unknownReply(String(repeating: "x", count: 60))) { try WorkloadReply(line: long) }
    }
}
