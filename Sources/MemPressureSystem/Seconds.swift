/// Durations that come from outside — flags, scenario and admin JSON, configuration — are
/// numbers of seconds. They are checked where they enter (`Seconds.check`) and turned into a
/// `Duration` in one place (`Seconds.duration`), which cannot trap: `Duration.seconds(_:)` traps
/// on infinity, NaN and values near 1e20, and `{"wait": 1e300}` or `--interval inf` once did.
package enum Seconds {
    /// The longest duration accepted from outside: one day (86,400 s). A wait, timeout, interval
    /// or limit longer than that is a mistake in the input, refused with a message naming it.
    package static let maximum: Double = 86_400

    /// `value` if it is a number of seconds in range: finite, at most `maximum`, and above zero
    /// (or at least zero when `allowZero`). Otherwise an error naming `what` ("--interval",
    /// "callbackTimeout") and the range.
    @discardableResult
    package static func check(_ value: Double, _ what: String, allowZero: Bool = false) throws(SecondsError) -> Double {
        let low = allowZero ? value >= 0 : value > 0
        guard value.isFinite, low, value <= maximum else {
            throw SecondsError(what: what, value: value, allowZero: allowZero)
        }
        return value
    }

    /// The `Duration` of `seconds`, saturating: NaN and values below zero give zero, values above
    /// `maximum` (infinity included) give `maximum`. Inputs are checked where they enter; this is
    /// what makes a value that escaped the check harmless instead of fatal.
    package static func duration(_ seconds: Double) -> Duration {
        guard seconds > 0 else { return .zero }  // NaN and negatives too
        let clamped = min(seconds, maximum)
        let whole = clamped.rounded(.down)
        return .seconds(Int64(whole)) + .nanoseconds(Int64(((clamped - whole) * 1e9).rounded()))
    }

    /// Milliseconds for poll(2)-style timeouts, saturating into 0...Int32.max.
    package static func milliseconds(_ seconds: Double) -> Int32 {
        guard seconds > 0 else { return 0 }
        return Int32(min(seconds, maximum) * 1000)
    }
}

/// A number of seconds from outside that is not in range.
public struct SecondsError: Error, Sendable, Hashable, CustomStringConvertible {
    public let what: String
    public let value: Double
    public let allowZero: Bool

    public var description: String {
        let low = allowZero ? "at least 0" : "above 0"
        return "\(what) must be a number of seconds \(low) and at most \(Int(Seconds.maximum)) (a day), not \(value)"
    }
}
