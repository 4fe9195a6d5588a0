import Exporter
import Testing

@Suite struct ExpositionTests {
    @Test func labelTextKeepsUTF8AndEscapesTheRest() {
        #expect(Exposition.labelText(Array("héllo".utf8)) == Array("héllo".utf8))
        #expect(Exposition.labelText([0x61, 0xff, 0x5c]) == Array(#"a\xff\\"#.utf8))
    }
}
