/// Why the ranker refused an input as a whole.
///
/// What is an error and what is not (the rule): an input is refused when the supervisor's view
/// as a whole cannot be trusted — a format we do not read, an identity that is ambiguous or
/// broken (a kill needs an unambiguous process), or memory figures that contradict each other or
/// the configuration. Then nothing may be killed on it. A single app's *reading* that is broken
/// (a NaN or negative time, a negative count) does not make the other apps' readings wrong:
/// that app alone is spared with `SpareReason.invalid`, so the killer can still act before the
/// kernel's OOM killer does. Contradictions that a sampling race produces are repaired and
/// noted in the app's factors (see `Validation`).
///
/// A budget smaller than one app is not an error: the ranking is still well defined (that app
/// is ranked by its band and a kill gives its footprint back); its explanation says that its
/// footprint exceeds the whole budget, so the supervisor can report a relaunch that cannot fit.
public enum RankingError: Error, Sendable, Hashable, Codable, CustomStringConvertible {
    /// The input's `formatVersion` is not one this ranker reads.
    case unsupportedFormatVersion(Int)
    /// Two apps that are not `notRunning` share a PID: which one a kill would hit is ambiguous.
    case duplicatePID(Int32)
    /// Two apps share a name (compared by UTF-8 bytes); reports and explanations name apps.
    case duplicateName(String)
    /// An app's identity is broken: an empty name, or a PID ≤ 0 for an app that should have a
    /// process (signalling PID 0 or −1 would hit a process group or everything).
    case invalidField(app: String, field: String, reason: String)
    /// A field of the input itself contradicts another or is out of range (budget, available,
    /// target).
    case invalidInput(field: String, reason: String)
    /// A policy tunable is out of range.
    case invalidPolicy(field: String, reason: String)

    public var description: String {
        switch self {
        case .unsupportedFormatVersion(let version):
            "unsupported ranking input format version \(version) (this ranker reads \(RankingInput.currentFormatVersion))"
        case .duplicatePID(let pid):
            "two apps have PID \(pid): a kill would be ambiguous"
        case .duplicateName(let name):
            "two apps are named \"\(name)\""
        case .invalidField(let app, let field, let reason):
            "app \"\(app)\": \(field) \(reason)"
        case .invalidInput(let field, let reason):
            "ranking input: \(field) \(reason)"
        case .invalidPolicy(let field, let reason):
            "policy: \(field) \(reason)"
        }
    }
}
