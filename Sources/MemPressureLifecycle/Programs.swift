import Glibc
import MemPressureSystem

/// Where this package's executables are, and how a program named in a command is found.
public enum Programs {
    /// The directory of the running executable (for a test bundle, the build directory).
    public static func ownDirectory() -> String {
        ProcFS.ownExecutableDirectory() ?? "."
    }

    /// A bare program name that is one of this package's executables ("mempressure-workload")
    /// is taken from `directory` (default: next to this executable); anything else is left as
    /// it is (to PATH when it has no slash).
    public static func resolve(_ program: String, in directory: String = ownDirectory()) -> String {
        guard !program.contains("/") else { return program }
        let candidate = "\(directory)/\(program)"
        return access(candidate, X_OK) == 0 ? candidate : program
    }
}
