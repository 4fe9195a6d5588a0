/// Why a process or an app could not be found from what the user typed.
public enum LookupError: Error, Sendable, Hashable, CustomStringConvertible {
    case noProcessNamed(String)
    case ambiguousName(String, candidates: [Int32])
    case emptyApp(String)
    case cgroupNotFound(String)
    /// No process is in the cgroup of a supervised app of this name.
    case noSupervisedApp(String)
    /// Several supervised apps have this name (under several supervisors): their cgroups.
    case ambiguousSupervisedApp(String, cgroups: [String])

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
        case .noSupervisedApp(let name):
            "no process is in the cgroup of a supervised app named '\(name)'"
        case .ambiguousSupervisedApp(let name, let cgroups):
            "\(cgroups.count) supervised apps are named '\(name)' (cgroups \(cgroups.joined(separator: ", "))); pass --cgroup PATH instead"
        }
    }
}
