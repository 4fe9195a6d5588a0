import MemPressureLifecycleProtocol

/// What a cgroup path says about the processes in it: the systemd unit, the Kubernetes pod, the
/// container and its runtime, recognised from the path alone (no I/O).
///
/// The path is as `/proc/PID/cgroup` gives it, relative to the hierarchy's root; the same shapes
/// are recognised in cgroup v1 hierarchies and in v2's unified one, with the cgroupfs and the
/// systemd cgroup drivers:
///
/// | path | name | fields |
/// |---|---|---|
/// | `/system.slice/nginx.service` | `nginx.service` | unit |
/// | `/user.slice/user-1000.slice/session-3.scope` | `session-3.scope` | unit |
/// | `/user.slice/user-1000.slice/user@1000.service/app.slice/foo.service` | `foo.service` | unit `user@1000.service` |
/// | `/docker/<id>` | `docker/<short id>` | container, runtime `docker` |
/// | `/system.slice/docker-<id>.scope` | `docker/<short id>` | unit, container, runtime `docker` |
/// | `/machine.slice/libpod-<id>.scope` | `podman/<short id>` | unit, container, runtime `podman` |
/// | `/kubepods/burstable/pod<uid>/<id>` | `pod/<uid>/<short id>` | pod, container, runtime `kubepods` |
/// | `/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod<uid_>.slice/cri-containerd-<id>.scope` | `pod/<uid>/<short id>` | unit, pod, container, runtime `containerd` |
/// | `…/crio-<id>.scope` | `pod/<uid>/<short id>` | runtime `cri-o` |
/// | `/system.slice/containerd.service/kubepods-besteffort-pod<uid_>.slice:cri-containerd:<id>` | `pod/<uid>/<short id>` | unit `containerd.service`, pod, container, runtime `containerd` |
/// | `/mempressure-<supervisor PID>-<random>/<APP>` | `<APP>` | supervised (`SupervisedAppCgroup`) |
///
/// A systemd pod slice writes the pod UID with underscores for dashes (`-` separates a slice
/// name's parents); it is given back with dashes, as the Kubernetes API knows it. The runtime
/// `kubepods` means a container of a Kubernetes pod whose runtime the path does not say (the
/// cgroupfs driver names the container cgroup by its bare ID). A supervised app's cgroup (and any
/// below it) is named by the app, whatever else the path says. Any other shape falls back to the
/// path: its last component is the name, and "/" is the root cgroup.
///
/// Only IDs are in a path: a pod's name and namespace need the kubelet's API, a container's name
/// its runtime's.
public struct CgroupIdentity: Sendable, Hashable, Codable {
    /// The cgroup path, as in `/proc/PID/cgroup` (relative to the hierarchy's root).
    public var path: String
    /// What `top` shows as the app: the supervised app's name, else the container
    /// (`pod/<uid>/<short id>`, `docker/<short id>`, `<runtime>/<short id>`), else the pod
    /// (`pod/<uid>`), else the innermost systemd service or scope, else the last path component
    /// ("/" for the root cgroup).
    public var name: String
    /// The systemd unit the cgroup belongs to, as `systemctl status PID` names it (a service or
    /// scope of the system manager, such as `nginx.service`, `session-3.scope`,
    /// `user@1000.service`; a slice only when no service or scope is in the path); nil when the
    /// path has no systemd unit.
    public var unit: String?
    /// The Kubernetes pod UID, with dashes.
    public var pod: String?
    /// The full container ID.
    public var container: String?
    /// What runs the container: `docker`, `containerd`, `cri-o`, `podman`, or `kubepods` for a
    /// Kubernetes container whose runtime the path does not say.
    public var runtime: String?
    /// The app a supervisor launched in this cgroup (or in one above it), and its supervisor.
    public var supervised: SupervisedAppCgroup?

    /// Recognises `path` (pure: no I/O).
    public init(path: String) {
        self.path = path
        let components = path.split(separator: "/", omittingEmptySubsequences: true).map(String.init).filter { $0 != "." && $0 != ".." }
        var unit: String?
        var slice: String?
        var innermostUnit: String?
        var pod: String?
        var container: String?
        var runtime: String?
        var underKubepods = false
        var previous: String?

        for component in components {
            // runc's systemd path outside the systemd hierarchy: "<slice>:<prefix>:<id>".
            let colonParts = component.split(separator: ":", omittingEmptySubsequences: false)
            if colonParts.count == 3, let r = Self.runtime(ofPrefix: String(colonParts[1])), Self.isContainerID(colonParts[2]) {
                if let uid = Self.podUID(ofSliceComponent: String(colonParts[0])) { pod = uid }
                container = String(colonParts[2])
                runtime = r
                previous = component
                continue
            }
            if component == "kubepods" || component == "kubepods.slice" || component.hasSuffix("-kubepods.slice") {
                underKubepods = true
            }
            if let uid = Self.podUID(ofSliceComponent: component) {
                pod = uid
                underKubepods = true
            } else if component.hasPrefix("pod"), underKubepods, Self.isPodUID(component.dropFirst(3)) {
                pod = String(component.dropFirst(3))
            } else if let (r, id) = Self.containerScope(component) {
                container = id
                runtime = r
            } else if let r = Self.bareContainerRuntime(parent: previous, underKubepods: underKubepods || pod != nil),
                Self.isContainerID(Substring(component)), component.utf8.count >= 32
            {
                // A bare ID: the cgroupfs driver's container cgroup, below a parent that says whose.
                container = component
                runtime = r
            } else if previous == "libpod_parent", component.hasPrefix("libpod-"), Self.isContainerID(component.dropFirst("libpod-".count)) {
                container = String(component.dropFirst("libpod-".count))
                runtime = "podman"
            }
            if let kind = Self.unitKind(component) {
                if kind == "slice" {
                    slice = component
                } else {
                    if unit == nil { unit = component }
                    innermostUnit = component
                }
            }
            previous = component
        }

        self.unit = unit ?? slice
        self.pod = pod
        self.container = container
        self.runtime = runtime
        supervised = SupervisedAppCgroup(path: path)
        if let supervised {
            name = supervised.app
        } else if let container {
            let short = Self.shortID(container)
            if let pod {
                name = "pod/\(pod)/\(short)"
            } else {
                name = "\(runtime ?? "container")/\(short)"
            }
        } else if let pod {
            name = "pod/\(pod)"
        } else if let innermostUnit {
            name = innermostUnit
        } else if let last = components.last {
            name = last
        } else {
            name = "/"
        }
    }

    /// Whose container a cgroup named by a bare ID is, from where it is: below `/docker` (the
    /// cgroupfs driver of Docker), or in a Kubernetes pod (`kubepods`: the path does not say the
    /// runtime). Elsewhere a hex name is not taken for a container.
    static func bareContainerRuntime(parent: String?, underKubepods: Bool) -> String? {
        if parent == "docker" { return "docker" }
        return underKubepods ? "kubepods" : nil
    }

    /// The first 12 characters of a 64-hex container ID, as `docker ps` and `crictl ps` show it.
    static func shortID(_ id: String) -> String {
        id.utf8.count == 64 ? String(id.prefix(12)) : id
    }

    /// The systemd unit type of a path component ("service", "scope", "slice", ...), if it names one.
    static func unitKind(_ component: String) -> String? {
        guard let dot = component.lastIndex(of: "."), dot != component.startIndex else { return nil }
        let suffix = component[component.index(after: dot)...]
        switch suffix {
        case "service", "scope", "slice", "socket", "mount", "swap": return String(suffix)
        default: return nil
        }
    }

    /// The runtime of a systemd container scope's prefix (runc's `<prefix>-<id>.scope`).
    static func runtime(ofPrefix prefix: String) -> String? {
        switch prefix {
        case "docker": "docker"
        case "cri-containerd": "containerd"
        case "crio": "cri-o"
        case "libpod": "podman"
        default: nil
        }
    }

    /// `docker-<id>.scope`, `cri-containerd-<id>.scope`, `crio-<id>.scope`, `libpod-<id>.scope`:
    /// the runtime and the container ID. The runtimes' monitors (`crio-conmon-<id>.scope`,
    /// `libpod-conmon-<id>.scope`) are not containers and are not recognised here.
    static func containerScope(_ component: String) -> (runtime: String, id: String)? {
        guard component.hasSuffix(".scope") else { return nil }
        let stem = component.dropLast(".scope".count)
        guard let dash = stem.lastIndex(of: "-") else { return nil }
        let id = stem[stem.index(after: dash)...]
        guard let runtime = runtime(ofPrefix: String(stem[..<dash])), isContainerID(id) else { return nil }
        return (runtime, String(id))
    }

    /// A Kubernetes pod slice of the systemd driver (`kubepods-burstable-pod<uid_>.slice`,
    /// `kubepods-pod<uid_>.slice`, `kubelet-kubepods-besteffort-pod<uid_>.slice`): the pod UID
    /// with its underscores back to dashes.
    static func podUID(ofSliceComponent component: String) -> String? {
        guard component.hasSuffix(".slice"), component.contains("kubepods") else { return nil }
        let stem = component.dropLast(".slice".count)
        guard let dash = stem.lastIndex(of: "-") else { return nil }
        let last = stem[stem.index(after: dash)...]
        guard last.hasPrefix("pod") else { return nil }
        let uid = String(last.dropFirst(3)).replacing("_", with: "-")
        return isPodUID(Substring(uid)) ? uid : nil
    }

    /// A pod UID: a UUID with dashes, or the 32 hex digits static pods get (a hash of their manifest).
    static func isPodUID(_ s: Substring) -> Bool {
        guard !s.isEmpty, s.utf8.count <= 64 else { return false }
        let isHexOrDash = s.utf8.allSatisfy { isHex($0) || $0 == UInt8(ascii: "-") }
        let digits = s.utf8.filter { $0 != UInt8(ascii: "-") }.count
        return isHexOrDash && digits == 32
    }

    /// A container ID: at least 12 lowercase hex digits (runtimes write 64).
    static func isContainerID(_ s: Substring) -> Bool {
        s.utf8.count >= 12 && s.utf8.count <= 128 && s.utf8.allSatisfy(isHex)
    }

    static func isHex(_ b: UInt8) -> Bool {
        (b >= UInt8(ascii: "0") && b <= UInt8(ascii: "9")) || (b >= UInt8(ascii: "a") && b <= UInt8(ascii: "f"))
    }
}
