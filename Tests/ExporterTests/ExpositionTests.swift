import MemPressureExporter
import MemPressureSystem
import Prometheus
import Testing

@Suite struct ExpositionTests {
    @Test func labelTextKeepsUTF8AndEscapesTheRest() {
        #expect(Exposition.labelText(Array("héllo \"q\"\n".utf8)) == Array("héllo \"q\"\n".utf8))
        #expect(Exposition.labelText([0x61, 0xff, 0x5c]) == Array(#"a\xff\\"#.utf8))
        // A truncated UTF-8 sequence, an overlong encoding and a lone continuation byte.
        #expect(Exposition.labelText([0xe2, 0x82]) == Array(#"\xe2\x82"#.utf8))
        #expect(Exposition.labelText([0xc0, 0xaf]) == Array(#"\xc0\xaf"#.utf8))
        #expect(Exposition.labelText([0x80, 0x41]) == Array(#"\x80A"#.utf8))
    }

    @Test func labelTextIsReversibleAndKeepsNamesApart() throws {
        // The bytes 0xff and the four characters \xff must not give the same label.
        let raw: [UInt8] = [0xff]
        let literal = Array(#"\xff"#.utf8)
        #expect(Exposition.labelText(raw) != Exposition.labelText(literal))
        let names: [[UInt8]] = [raw, literal, Array(#"a\b"#.utf8), [0x71, 0x22, 0x5c, 0x0a, 0xfe, 0xc3, 0xa9], Array("日本".utf8)]
        for name in names {
            let text = Exposition.labelText(name)
            #expect(String(validating: text, as: UTF8.self) != nil)
            #expect(Exposition.bytes(fromLabelText: text) == name)
        }
    }

    @Test func labelValuesAndHelpAreEscapedPerFormat() {
        var set = LabelSet()
        set.add("app", bytes: [0x71, 0x22, 0x5c, 0x0a, 0xff])  // q " \ newline 0xff
        #expect(String(decoding: set.bytes, as: UTF8.self) == #"app="q\"\\\\\n\\xff""#)

        for format in ExpositionFormat.allCases {
            var w = ExpositionWriter(format: format)
            w.family("x_bytes", .gauge, help: #"a "quoted" back\slash"# + "\nline")
            w.sample(set, 1)
            let text = String(decoding: w.bytes, as: UTF8.self)
            let help = format == .openMetrics ? #"a \"quoted\" back\\slash\nline"# : #"a "quoted" back\\slash\nline"#
            #expect(text.hasPrefix("# HELP x_bytes \(help)\n# TYPE x_bytes gauge\n"))
        }
    }

    @Test func countersAreNamedAsEachFormatWants() {
        var labels = LabelSet()
        labels.add("pid", 42)
        var p = ExpositionWriter(format: .prometheus)
        p.family("x_seconds", .counter, help: "h")
        p.sample(labels, "mode", "user", double: 1.5)
        p.finish()
        #expect(String(decoding: p.bytes, as: UTF8.self) == """
            # HELP x_seconds_total h
            # TYPE x_seconds_total counter
            x_seconds_total{pid="42",mode="user"} 1.5

            """)
        var o = ExpositionWriter(format: .openMetrics)
        o.family("x_seconds", .counter, help: "h")
        o.sample(labels, "mode", "user", double: 1.5)
        o.finish()
        #expect(String(decoding: o.bytes, as: UTF8.self) == """
            # HELP x_seconds h
            # TYPE x_seconds counter
            x_seconds_total{pid="42",mode="user"} 1.5
            # EOF

            """)
    }

    @Test func numbers() {
        var out: [UInt8] = []
        Exposition.appendDecimal(UInt64.max, to: &out)
        out.append(32)
        Exposition.appendDecimal(0 as UInt64, to: &out)
        out.append(32)
        Exposition.appendDouble(.infinity, to: &out)
        out.append(32)
        Exposition.appendDouble(.nan, to: &out)
        out.append(32)
        Exposition.appendDouble(0.25, to: &out)
        out.append(32)
        Exposition.appendDouble(3, to: &out)
        #expect(String(decoding: out, as: UTF8.self) == "18446744073709551615 0 +Inf NaN 0.25 3")
    }

    @Test func contentNegotiation() {
        // What Prometheus 2.42 sends: OpenMetrics first.
        #expect(ExpositionFormat.negotiate(accept: "application/openmetrics-text;version=1.0.0,application/openmetrics-text;version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1") == .openMetrics)
        #expect(ExpositionFormat.negotiate(accept: nil) == .prometheus)
        #expect(ExpositionFormat.negotiate(accept: "*/*") == .prometheus)
        #expect(ExpositionFormat.negotiate(accept: "text/plain;version=0.0.4") == .prometheus)
        #expect(ExpositionFormat.negotiate(accept: "text/plain;q=1, application/openmetrics-text;q=0.5") == .prometheus)
        #expect(ExpositionFormat.negotiate(accept: "application/openmetrics-text; version=1.0.0; q=0") == .prometheus)
        #expect(ExpositionFormat.negotiate(accept: "garbage;;;q=zz,,") == .prometheus)
    }

    @Test func gzipIsTakenAsTheHeaderSays() throws {
        #expect(Gzip.accepted(by: "gzip"))
        #expect(Gzip.accepted(by: "deflate, gzip;q=1.0, *;q=0.5"))
        #expect(Gzip.accepted(by: "*"))
        #expect(Gzip.accepted(by: "x-gzip"))
        #expect(!Gzip.accepted(by: nil))
        #expect(!Gzip.accepted(by: "identity"))
        #expect(!Gzip.accepted(by: "gzip;q=0"))
        #expect(!Gzip.accepted(by: "gzip;q=0, *"))  // named and refused: the wildcard does not bring it back
        #expect(!Gzip.accepted(by: "gzip;q=zz"))
        #expect(!Gzip.accepted(by: ",,;;="))
        // An empty input is a valid gzip stream too (header and trailer).
        let empty = try Gzip.compress([])
        #expect(empty.starts(with: [0x1f, 0x8b]) && empty.count >= 18)
    }

    @Test func listenAddresses() throws {
        for (text, host, port) in [("127.0.0.1:29464", "127.0.0.1", 29464), ("[::1]:80", "::1", 80), (":9100", "0.0.0.0", 9100)] {
            let parsed = try ExporterConfiguration.parseListen(text)
            #expect(parsed.host == host && parsed.port == port)
        }
        for bad in ["29464", "host:", "host:65536", "host:-1", "::1:80", "[]:80", "host:x"] {
            #expect(throws: ExporterError.self) { try ExporterConfiguration.parseListen(bad) }
        }
    }
}
