/// Why a process or an app could not be found from what the user typed.
public enum LookupError: Error, Sendable, Hashable, CustomStringConvertible {
    case noProcessNamed(String)
    case ambiguousName(String, candidates: [Int32])
    case emptyApp(String)
    case cgroupNotFound(String)

    public var description: String {
        switch self {
        case .noProcessNamed(let name):
            "no process is named '\(name)'"
        case .ambiguousName(let name, let pids):
            "'\(name)' matches \(pids.count) unrelated processes (pids \(pids.map(String.init).joined(separator: ", "))); pass a pid instead"
        case .emptyApp(let what):
            "\(what) has no processes"
        case .cgroupNotFound(let path):
            "cgroup \(path) does not exist"
        }
    }
}
