import Glibc
import MemPressureSystem

/// What a memory warning becomes for one app (`AppSpec.memoryWarning`): apps with a client get
/// the callback, any other program what its spec chooses — a signal it handles (a server that
/// drops caches on SIGUSR1), a command (one that tells the app in its own way), or nothing. The
/// log records what was done: "sent" only when something reached the app.
///
/// JSON (an app's `"memoryWarning"`): `"callback"`, `"none"`, a signal's name (`"SIGUSR1"`,
/// `"SIGRTMIN+2"`), or `{"command": ["PROGRAM", "ARG", ...]}`.
public enum MemoryWarningAction: Sendable, Hashable, Codable, CustomStringConvertible {
    /// `callback didReceiveMemoryWarning` on the app's control channel (the default for a client).
    case callback
    /// The signal, sent to the app's main process through its pidfd.
    case signal(Int32)
    /// The command, run by the supervisor (outside the app's cgroup) with `MEMPRESSURE_APP` and
    /// `MEMPRESSURE_PID` (the app's main process) in its environment; waited for up to the
    /// callback timeout, then killed.
    case command([String])
    /// Nothing (the default for a program without a client).
    case none

    /// The signals a warning may be: those a program can catch and that mean nothing else to
    /// the supervisor (not SIGKILL, SIGSTOP, SIGCONT, nor the faults).
    static let signalNames: [(String, Int32)] = [
        ("SIGHUP", SIGHUP), ("SIGINT", SIGINT), ("SIGQUIT", SIGQUIT), ("SIGUSR1", SIGUSR1), ("SIGUSR2", SIGUSR2),
        ("SIGTERM", SIGTERM), ("SIGURG", SIGURG), ("SIGWINCH", SIGWINCH), ("SIGPWR", SIGPWR),
    ]

    /// SIGRTMIN as the kernel numbers it (glibc keeps two below it for itself: its SIGRTMIN is 34).
    static let realTimeMinimum: Int32 = 34
    static let realTimeMaximum: Int32 = 64

    /// A signal from its name: `SIGUSR1` or `USR1`, `SIGRTMIN+N` (N from 0 to 30), any case.
    public static func signal(named text: String) -> Int32? {
        let upper = text.uppercased()
        let name = upper.hasPrefix("SIG") ? upper : "SIG" + upper
        if let (_, number) = signalNames.first(where: { $0.0 == name }) { return number }
        if name == "SIGRTMIN" { return realTimeMinimum }
        guard name.hasPrefix("SIGRTMIN+"), let n = Int32(name.dropFirst("SIGRTMIN+".count)), n >= 0,
            realTimeMinimum + n <= realTimeMaximum
        else { return nil }
        return realTimeMinimum + n
    }

    /// A signal's name as `signal(named:)` reads it.
    public static func name(ofSignal sig: Int32) -> String {
        if let (name, _) = signalNames.first(where: { $0.1 == sig }) { return name }
        if sig >= realTimeMinimum, sig <= realTimeMaximum { return sig == realTimeMinimum ? "SIGRTMIN" : "SIGRTMIN+\(sig - realTimeMinimum)" }
        return "signal \(sig)"
    }

    /// What the words of `--memory-warning` (and the JSON strings) may be.
    public static let choices = "callback, none, or a signal (SIGHUP, SIGINT, SIGQUIT, SIGUSR1, SIGUSR2, SIGTERM, SIGURG, SIGWINCH, SIGPWR, SIGRTMIN+N)"

    /// `callback`, `none`, or a signal's name.
    public init?(word: String) {
        switch word {
        case "callback": self = .callback
        case "none": self = .none
        default:
            guard let sig = Self.signal(named: word) else { return nil }
            self = .signal(sig)
        }
    }

    public var description: String {
        switch self {
        case .callback: "callback"
        case .none: "none"
        case .signal(let sig): Self.name(ofSignal: sig)
        case .command(let argv): "command \(argv.joined(separator: " "))"
        }
    }

    private enum Key: String, CodingKey, CaseIterable { case command }

    public init(from decoder: any Decoder) throws {
        let word: String
        do {
            word = try decoder.singleValueContainer().decode(String.self)
        } catch DecodingError.typeMismatch {
            // Not a word: the command form.
            try UnknownKeys.refuse(in: decoder, known: Key.self, what: "a memory warning")
            let c = try decoder.container(keyedBy: Key.self)
            let argv = try c.decode([String].self, forKey: .command)
            guard !argv.isEmpty, !argv[0].isEmpty else {
                throw DecodingError.dataCorruptedError(forKey: .command, in: c, debugDescription: "a memory warning's command needs a program")
            }
            self = .command(argv)
            return
        }
        guard let action = Self(word: word) else {
            throw DecodingError.dataCorrupted(
                .init(codingPath: decoder.codingPath, debugDescription: "a memory warning is \(Self.choices), or {\"command\": [...]}; not '\(word.prefix(40))'"))
        }
        self = action
    }

    public func encode(to encoder: any Encoder) throws {
        if case .command(let argv) = self {
            var c = encoder.container(keyedBy: Key.self)
            try c.encode(argv, forKey: .command)
        } else {
            var c = encoder.singleValueContainer()
            try c.encode(description)
        }
    }
}
