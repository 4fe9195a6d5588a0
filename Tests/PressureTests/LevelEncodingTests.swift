import FoundationEssentials
import MemPressureMonitor
import MemPressureValues
import Testing

/// The one `PressureLevel` is written as a word, and reads every form it was ever written in:
/// the words (jetsam's former `PressureLevelValue`: episodes, ranking inputs, replays) and the
/// integers (the Pressure module's former `PressureLevel`, in `PressureEvent` JSON).
@Suite("pressure level encoding")
struct LevelEncodingTests {
    func decode<T: Decodable>(_ type: T.Type, _ text: String) throws -> T {
        try JSONDecoder().decode(type, from: Data(text.utf8))
    }

    func encode<T: Encodable>(_ value: T) throws -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        return String(decoding: try encoder.encode(value), as: UTF8.self)
    }

    @Test("written as words; read from words and from the old integers")
    func forms() throws {
        #expect(try encode([PressureLevel.normal, .warning, .critical]) == #"["normal","warning","critical"]"#)
        #expect(try decode([PressureLevel].self, #"["normal","warning","critical"]"#) == [.normal, .warning, .critical])
        #expect(try decode([PressureLevel].self, "[0, 1, 2]") == [.normal, .warning, .critical])
        #expect(PressureLevel.normal < .warning && PressureLevel.warning < .critical)
    }

    @Test("anything else is an error that says what it found", arguments: [#""severe""#, #""Warning""#, "3", "-1", "1.5", "true", "null", "{}"])
    func rejected(_ text: String) {
        #expect(throws: DecodingError.self) { try decode(PressureLevel.self, text) }
    }

    @Test("a PressureEvent as it was written before (an integer level, no wakeup) decodes; one written now says its wakeup")
    func oldEvent() throws {
        // The synthesized Codable form of the former `PressureEvent`, its level an Int raw value.
        let old = #"{"detail":"working set 61.2 MiB of 64.0 MiB (95.6%)","level":2,"source":"cgroup usage against its limit","time":1234.5}"#
        let event = try decode(PressureEvent.self, old)
        #expect(event.level == .critical && event.time == 1234.5 && event.wakeup == nil)
        let now = PressureEvent(level: .warning, source: "psi (/proc/pressure/memory)", detail: "some", time: 2, wakeup: .event)
        #expect(try encode(now) == #"{"detail":"some","level":"warning","source":"psi (\/proc\/pressure\/memory)","time":2,"wakeup":"event"}"#)
        #expect(try decode(PressureEvent.self, try encode(now)) == now)
    }

    @Test("a MemoryStatus written before it had a scope decodes, its scope told from its source")
    func oldMemoryStatus() throws {
        let cgroup = try decode(MemoryStatus.self, #"{"availableBytes":68464640,"budgetBytes":402653184,"source":"working set of /sys/fs/cgroup/memory/x (usage − total_inactive_file)","usedBytes":334188544}"#)
        #expect(cgroup.scope == .cgroup)
        let machine = try decode(MemoryStatus.self, #"{"availableBytes":1,"budgetBytes":2,"source":"MemAvailable of /proc/meminfo","usedBytes":1}"#)
        #expect(machine.scope == .machine)
        #expect(try encode(machine).contains(#""scope":"machine""#))
        #expect(try decode(MemoryStatus.self, try encode(machine)) == machine)
    }
}
