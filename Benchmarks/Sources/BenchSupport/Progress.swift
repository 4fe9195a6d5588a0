// Progress for runs longer than a few seconds: what the harness is doing, how far along it is,
// and the time left (estimated from the pace so far). On a terminal one line is rewritten in
// place; otherwise (CI, a pipe) a line is printed at most every few seconds.

import Glibc
import MemPressureSystem

public final class Progress: @unchecked Sendable {
    private let tool: String
    private let total: Int
    private var done = 0
    private var what = ""
    private let start = monotonicSeconds()
    private var lastPrint = -1e9
    private let terminal = isatty(2) != 0

    /// `total` steps of work (rounds, points, runs).
    public init(_ tool: String, total: Int) {
        self.tool = tool
        self.total = max(1, total)
    }

    /// Says what is being done now (before the step starts).
    public func doing(_ text: String) {
        what = text
        show(force: false)
    }

    /// One step finished.
    public func step(_ count: Int = 1) {
        done = min(total, done + count)
        show(force: done == total)
    }

    private func show(force: Bool) {
        let now = monotonicSeconds()
        guard force || now - lastPrint >= (terminal ? 0.2 : 5) else { return }
        lastPrint = now
        let elapsed = now - start
        let left = done > 0 ? elapsed / Double(done) * Double(total - done) : nil
        var line = "\(tool): [\(done)/\(total) \(Int(Double(done) * 100 / Double(total)))%] \(what)"
        line += left.map { ", about \(Self.duration($0)) left" } ?? ""
        line = terminal ? "\r\u{1b}[K" + line + (done == total ? "\n" : "") : line + "\n"
        _ = line.withCString { write(2, $0, strlen($0)) }
    }

    static func duration(_ seconds: Double) -> String {
        let s = Int(seconds.rounded())
        return s >= 60 ? "\(s / 60) min \(s % 60) s" : "\(s) s"
    }
}
