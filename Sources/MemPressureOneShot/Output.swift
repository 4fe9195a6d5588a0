import FoundationEssentials
import Glibc
import MemPressureSystem

/// What `mempressure --version` prints: the one place the version is written.
package let mempressureVersion = "0.12.0"

/// An error a command describes in its own words.
package struct CLIError: Error, CustomStringConvertible {
    package var description: String
    package init(_ description: String) { self.description = description }
}

/// An option that cannot be taken as given. The command line (ArgumentParser) shows it as a
/// usage error, `ValidationError`; the quick reading leaves such a line to it.
package struct OptionError: Error, CustomStringConvertible, Equatable {
    package var description: String
    package init(_ description: String) { self.description = description }
}

/// A command that failed, its error already printed: the process ends with `status`.
package struct CommandFailed: Error, Equatable {
    package var status: Int32
    package init(status: Int32) { self.status = status }
}

/// Prints a one-line error naming what went wrong; the failure the process then ends with.
package func failed(_ error: any Error) -> CommandFailed {
    if let failure = error as? CommandFailed { return failure }
    // The project's errors describe themselves; a decoder's error is put in JSON's words.
    writeStandardError("mempressure: \(plainDescription(of: error))\n")
    return CommandFailed(status: 1)
}

/// --json and --csv, at most one of them.
package func checkFormat(json: Bool, csv: Bool) throws(OptionError) {
    if json && csv { throw OptionError("--json and --csv are exclusive") }
}

package func writeStandardError(_ text: String) {
    writeAll(2, text)
}

/// Writes to standard output directly, so that streamed rows appear at once even in a pipe.
package func output(_ text: String) {
    writeAll(1, text)
}

/// Everything the CLI prints goes through here, and reaches the terminal without control
/// characters whatever their source (a name in a report file, a trace key, a process's comm):
/// see `printableText`. JSON output stays valid and means the same.
package func writeAll(_ fd: CInt, _ text: String) {
    var text = printableText(text, keepingLineBreaks: true)
    text.withUTF8 { buf in
        do {
            try MemPressureSystem.writeAll(fd, UnsafeRawBufferPointer(buf))
        } catch {
            // Standard output or error is gone (a closed pipe): there is no one left to tell.
        }
    }
}

/// A report on standard output, as --json, --csv or the text table.
package func printReport(_ report: some Encodable, json: Bool, csv: Bool, renderCSV: () -> String, renderText: () -> String) throws {
    if json {
        output(try encodeJSON(report))
    } else if csv {
        output(renderCSV())
    } else {
        output(renderText())
    }
}

package func encodeJSON(_ value: some Encodable) throws -> String {
    let encoder = JSONEncoder()
    encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
    return String(decoding: try encoder.encode(value), as: UTF8.self) + "\n"
}

package func encodeJSONLine(_ value: some Encodable) throws -> String {
    let encoder = JSONEncoder()
    encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
    return String(decoding: try encoder.encode(value), as: UTF8.self) + "\n"
}
