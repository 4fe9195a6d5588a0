import MemPressureSystem

/// Where the model app keeps its state and assets: a directory it writes in only through a
/// checked descriptor (`CheckedDirectory`), so that no other user can make it write through a
/// link.
///
/// `--data-dir DIR` is made (mode 0700) when missing; one that is there must be this user's or
/// root's, and closed to others unless sticky. Without it, the data live in
/// `mempressure-workload-NAME` in the user's runtime directory (`$XDG_RUNTIME_DIR`, else `/run`
/// for root, else `/run/user/UID`), a place no other user can make names in: kept there across
/// launches, as an app's data are (a relaunch restores the saved state). Never a fixed name in
/// /tmp, which anyone could make first.
enum DataDirectory {
    static func open(_ given: String?, appName: String) throws(FileWriteError) -> CheckedDirectory {
        if let given { return try CheckedDirectory.open(given, creating: true) }
        return try CheckedDirectory.open(CheckedDirectory.userRuntimeBase).subdirectory(defaultName(appName))
    }

    static func defaultName(_ appName: String) -> String { "mempressure-workload-\(appName)" }
}
