import Glibc

// Which cgroup a process is in: `/proc/PID/cgroup`, read for the hierarchy of one controller.

extension CgroupDirectory {
    /// The cgroup path from the text of `/proc/PID/cgroup` ("hierarchy-ID:controller-list:path"
    /// lines): the v1 `controller` hierarchy's path if there is one, else the unified (v2, "0::")
    /// path (only that one for a nil `controller`); nil when neither is listed. Bytes a path
    /// should not hold are escaped (`escapedText`).
    public static func relativePath(inProcCgroup bytes: UnsafeRawBufferPointer, controller: String?) -> String? {
        var unified: String?
        for line in bytes.split(separator: 0x0a) {
            let parts = line.split(separator: 0x3a, maxSplits: 2, omittingEmptySubsequences: false)
            guard parts.count == 3 else { continue }
            if let controller, parts[1].split(separator: 0x2c).contains(where: { $0.elementsEqual(controller.utf8) }) {
                return escapedText(parts[2])
            }
            if parts[0].elementsEqual("0".utf8) && parts[1].isEmpty { unified = escapedText(parts[2]) }
        }
        return unified
    }

    /// The cgroup process `pid` ("self": the caller) is in, in the v1 hierarchy of `controller`
    /// under `root` or, where that is not mounted, in the unified (v2) one; nil when the process
    /// is in neither. Throws when `/proc/PID/cgroup` cannot be read.
    public static func of(process pid: String = "self", controller: String, root: String = "/sys/fs/cgroup", procRoot: String = "/proc") throws(CgroupError) -> CgroupDirectory? {
        let file = "\(procRoot)/\(pid)/cgroup"
        let bytes: [UInt8]
        do {
            bytes = try ProcFS.readBytes(file)
        } catch {
            throw .read(path: file, error.errno)
        }
        guard let hierarchy = v1(controller, root: root) ?? v2(root: root),
            let path = bytes.withUnsafeBytes({ Self.relativePath(inProcCgroup: $0, controller: hierarchy.controller) })
        else { return nil }
        return CgroupDirectory(hierarchy: hierarchy.hierarchy, controller: hierarchy.controller, relativePath: path)
    }

    /// The group above this one; nil for the hierarchy's root.
    public var parent: CgroupDirectory? {
        guard relativePath != "/", let slash = relativePath.lastIndex(of: "/") else { return nil }
        let up = String(relativePath[..<slash])
        return CgroupDirectory(hierarchy: hierarchy, controller: controller, relativePath: up.isEmpty ? "/" : up)
    }
}
