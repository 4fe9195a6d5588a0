import FoundationEssentials
import Testing
import MemPressureVMTracker

/// `CgroupIdentity` over the cgroup path shapes of systemd, Docker, Podman, containerd, CRI-O and
/// the kubelet (cgroupfs and systemd drivers, v1 and v2 hierarchies: the paths are the same).
@Suite("cgroup identity")
struct CgroupIdentityTests {
    static let id64 = "0e768f8db752fcd648adb264498daa1d8f31562320e881d6a9ec593d24b1f779"
    static let short = "0e768f8db752"
    static let uid = "03f3f104-3215-44f2-9686-d4dd1f05a7ed"
    static let uidUnderscored = "03f3f104_3215_44f2_9686_d4dd1f05a7ed"

    struct Expected: Sendable, CustomTestStringConvertible {
        var path: String
        var name: String
        var unit: String? = nil
        var pod: String? = nil
        var container: String? = nil
        var runtime: String? = nil
        var testDescription: String { path }
    }

    static let shapes: [Expected] = [
        // The root and plain paths.
        .init(path: "/", name: "/"),
        .init(path: "", name: "/"),
        .init(path: "/init.scope", name: "init.scope", unit: "init.scope"),
        .init(path: "/batch/jobs", name: "jobs"),
        // systemd units.
        .init(path: "/system.slice/nginx.service", name: "nginx.service", unit: "nginx.service"),
        .init(path: "/system.slice/system-getty.slice/getty@tty1.service", name: "getty@tty1.service", unit: "getty@tty1.service"),
        .init(path: "/user.slice/user-1000.slice/session-3.scope", name: "session-3.scope", unit: "session-3.scope"),
        .init(path: "/user.slice/user-1000.slice/user@1000.service/init.scope", name: "init.scope", unit: "user@1000.service"),
        .init(
            path: "/user.slice/user-1000.slice/user@1000.service/app.slice/app-gnome-firefox-4242.scope",
            name: "app-gnome-firefox-4242.scope", unit: "user@1000.service"),
        .init(path: "/user.slice/user-1000.slice", name: "user-1000.slice", unit: "user-1000.slice"),
        .init(path: "/system.slice", name: "system.slice", unit: "system.slice"),
        // A cgroup namespace shows paths outside it with "..": they name nothing.
        .init(path: "/../../system.slice/cron.service", name: "cron.service", unit: "cron.service"),
        // Docker: cgroupfs and systemd drivers.
        .init(path: "/docker/\(id64)", name: "docker/\(short)", container: id64, runtime: "docker"),
        .init(path: "/system.slice/docker-\(id64).scope", name: "docker/\(short)", unit: "docker-\(id64).scope", container: id64, runtime: "docker"),
        .init(path: "/system.slice/docker.service", name: "docker.service", unit: "docker.service"),
        // Podman: systemd (root and rootless) and cgroupfs drivers; its monitor is not a container.
        .init(path: "/machine.slice/libpod-\(id64).scope", name: "podman/\(short)", unit: "libpod-\(id64).scope", container: id64, runtime: "podman"),
        .init(
            path: "/machine.slice/libpod-\(id64).scope/container", name: "podman/\(short)", unit: "libpod-\(id64).scope",
            container: id64, runtime: "podman"),
        .init(
            path: "/user.slice/user-1000.slice/user@1000.service/user.slice/libpod-\(id64).scope", name: "podman/\(short)",
            unit: "user@1000.service", container: id64, runtime: "podman"),
        .init(path: "/libpod_parent/libpod-\(id64)", name: "podman/\(short)", container: id64, runtime: "podman"),
        .init(path: "/machine.slice/libpod-conmon-\(id64).scope", name: "libpod-conmon-\(id64).scope", unit: "libpod-conmon-\(id64).scope"),
        // Kubernetes, cgroupfs driver: QoS classes, the guaranteed class has no directory of its own.
        .init(path: "/kubepods/burstable/pod\(uid)/\(id64)", name: "pod/\(uid)/\(short)", pod: uid, container: id64, runtime: "kubepods"),
        .init(path: "/kubepods/besteffort/pod\(uid)/\(id64)", name: "pod/\(uid)/\(short)", pod: uid, container: id64, runtime: "kubepods"),
        .init(path: "/kubepods/pod\(uid)/\(id64)", name: "pod/\(uid)/\(short)", pod: uid, container: id64, runtime: "kubepods"),
        .init(path: "/kubepods/burstable/pod\(uid)", name: "pod/\(uid)", pod: uid),
        .init(path: "/kubepods/besteffort", name: "besteffort"),
        // A static pod's UID is its manifest's hash: 32 hex digits without dashes.
        .init(
            path: "/kubepods/burstable/pod187bff14cccb94f179e943eacce55bb3/\(id64)", name: "pod/187bff14cccb94f179e943eacce55bb3/\(short)",
            pod: "187bff14cccb94f179e943eacce55bb3", container: id64, runtime: "kubepods"),
        // Kubernetes, systemd driver: the pod UID's dashes are underscores in the slice name.
        .init(
            path: "/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod\(uidUnderscored).slice/cri-containerd-\(id64).scope",
            name: "pod/\(uid)/\(short)", unit: "cri-containerd-\(id64).scope", pod: uid, container: id64, runtime: "containerd"),
        .init(
            path: "/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod\(uidUnderscored).slice/crio-\(id64).scope",
            name: "pod/\(uid)/\(short)", unit: "crio-\(id64).scope", pod: uid, container: id64, runtime: "cri-o"),
        .init(
            path: "/kubepods.slice/kubepods-pod\(uidUnderscored).slice/docker-\(id64).scope",
            name: "pod/\(uid)/\(short)", unit: "docker-\(id64).scope", pod: uid, container: id64, runtime: "docker"),
        .init(
            path: "/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod\(uidUnderscored).slice",
            name: "pod/\(uid)", unit: "kubepods-burstable-pod\(uidUnderscored).slice", pod: uid),
        // kind: the kubelet's slices below kubelet.slice.
        .init(
            path: "/kubelet.slice/kubelet-kubepods.slice/kubelet-kubepods-besteffort.slice/kubelet-kubepods-besteffort-pod\(uidUnderscored).slice/cri-containerd-\(id64).scope",
            name: "pod/\(uid)/\(short)", unit: "cri-containerd-\(id64).scope", pod: uid, container: id64, runtime: "containerd"),
        // containerd with the systemd driver, seen in a v1 controller's hierarchy: runc's
        // "<slice>:<prefix>:<id>" below containerd's own service.
        .init(
            path: "/system.slice/containerd.service/kubepods-burstable-pod\(uidUnderscored).slice:cri-containerd:\(id64)",
            name: "pod/\(uid)/\(short)", unit: "containerd.service", pod: uid, container: id64, runtime: "containerd"),
        .init(path: "/system.slice/containerd.service", name: "containerd.service", unit: "containerd.service"),
        // A pod in a kind node (itself a Docker container): the innermost container is the one.
        .init(
            path: "/docker/\(id64)/kubepods/burstable/pod\(uid)/aaaaaaaaaaaabbbbbbbbbbbbccccccccccccddddddddddddeeeeeeeeeeeeffff",
            name: "pod/\(uid)/aaaaaaaaaaaa", pod: uid, container: "aaaaaaaaaaaabbbbbbbbbbbbccccccccccccddddddddddddeeeeeeeeeeeeffff",
            runtime: "kubepods"),
    ]

    @Test("recognises the shape", arguments: shapes)
    func shape(_ e: Expected) {
        let id = CgroupIdentity(path: e.path)
        #expect(id.path == e.path)
        #expect(id.name == e.name)
        #expect(id.unit == e.unit)
        #expect(id.pod == e.pod)
        #expect(id.container == e.container)
        #expect(id.runtime == e.runtime)
    }

    @Test("a hex name outside a container parent is not taken for a container")
    func hexNameIsNotAContainer() {
        let id = CgroupIdentity(path: "/process_api/16482f482225626b4171e6b1269be176")
        #expect(id.name == "16482f482225626b4171e6b1269be176")
        #expect(id.container == nil && id.runtime == nil && id.pod == nil && id.unit == nil)
        // "pod<uid>" names a pod only below kubepods.
        let pod = CgroupIdentity(path: "/batch/pod\(Self.uid)")
        #expect(pod.pod == nil && pod.name == "pod\(Self.uid)")
        // Not a container ID: too short, or not hex.
        #expect(CgroupIdentity(path: "/system.slice/docker-abc.scope").container == nil)
        #expect(CgroupIdentity(path: "/system.slice/docker-\(Self.id64.uppercased()).scope").container == nil)
        #expect(CgroupIdentity(path: "/kubepods/burstable/pod\(Self.uid)/not-a-container").container == nil)
    }

    @Test("hostile paths give a name and never trap")
    func hostile() {
        for path in ["//", "/.", "/..", "/.scope", "/-.slice", "/docker-.scope", "/a:b:c", "/::", "/kubepods-pod.slice", "/kubepods/pod", "/x\u{7}y", "/\u{FFFD}.service"] {
            let id = CgroupIdentity(path: path)
            #expect(!id.name.isEmpty, "\(path)")
        }
        #expect(CgroupIdentity(path: "/..").name == "/")
        #expect(CgroupIdentity(path: "/-.slice").unit == "-.slice")
    }

    @Test("round-trips through JSON")
    func codable() throws {
        let id = CgroupIdentity(path: "/kubepods/burstable/pod\(Self.uid)/\(Self.id64)")
        let data = try JSONEncoder().encode(id)
        #expect(try JSONDecoder().decode(CgroupIdentity.self, from: data) == id)
    }
}
