// Reading back words a program wrote itself (a log or a report of an earlier format): the part
// after a known prefix, before a known suffix, on either side of a separator.

extension String {
    /// The rest after `prefix`, or nil when the string does not start with it.
    package func droppingPrefix(_ prefix: String) -> String? { hasPrefix(prefix) ? String(dropFirst(prefix.count)) : nil }

    /// What comes before `suffix`, or nil when the string does not end with it.
    package func droppingSuffix(_ suffix: String) -> String? { hasSuffix(suffix) ? String(dropLast(suffix.count)) : nil }

    /// Before and after the first `separator` (nil after when there is none).
    package func splitOnce(_ separator: String) -> (String, String?) {
        guard let r = firstRange(of: separator) else { return (self, nil) }
        return (String(self[..<r.lowerBound]), String(self[r.upperBound...]))
    }
}
