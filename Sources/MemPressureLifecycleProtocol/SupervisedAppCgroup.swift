/// The cgroup a supervisor gives an app, recognised from its path.
///
/// A supervisor makes one group for its device at the top of each hierarchy it uses,
/// `mempressure-<supervisor PID>-<random>` (on cgroup v1 the same name in the memory and the
/// freezer hierarchies, on v2 in the unified one), and below it one cgroup per app, named by the
/// app: `/mempressure-4242-1795051733/Photos`. Every process an app starts stays in its cgroup,
/// whatever its parent: a helper that double-forked (and was reparented to init) is still the
/// app's. So `/proc/PID/cgroup` says which app a process belongs to, and whose supervisor.
public struct SupervisedAppCgroup: Sendable, Hashable, Codable, CustomStringConvertible {
    /// The app's name (`ControlProtocol.isAppName`).
    public var app: String
    /// The PID of the supervisor that made the device group (from its name).
    public var supervisorPID: Int32
    /// The device group's name, `mempressure-<supervisor PID>-<random>`.
    public var deviceGroup: String
    /// The app cgroup's path in its hierarchy, up to the app's component:
    /// `/mempressure-4242-1795051733/Photos` (deeper when the device group is not at the top).
    public var path: String

    public init(app: String, supervisorPID: Int32, deviceGroup: String, path: String) {
        self.app = app
        self.supervisorPID = supervisorPID
        self.deviceGroup = deviceGroup
        self.path = path
    }

    /// The name of a new device group for the supervisor with PID `supervisorPID`; `random`
    /// tells apart two device groups of one supervisor (and of a PID reused).
    public static func deviceGroupName(supervisorPID: Int32, random: UInt32) -> String {
        "\(deviceGroupPrefix)\(supervisorPID)-\(random)"
    }

    /// What every device group's name starts with.
    public static let deviceGroupPrefix = "mempressure-"

    /// Recognises a cgroup path as `/proc/PID/cgroup` gives it (relative to the hierarchy's
    /// root): the first component that names a device group (`mempressure-<PID>-<random>`, the
    /// PID a positive decimal, the random part 1 to 32 letters or digits), followed by an app's
    /// name. Cgroups an app made below its own are the app's too. Any other path is nil; this
    /// never traps, whatever the bytes.
    public init?(path: some StringProtocol) {
        let components = path.split(separator: "/", omittingEmptySubsequences: true)
        var i = components.startIndex
        while i < components.endIndex {
            let next = components.index(after: i)
            if let pid = Self.supervisorPID(ofDeviceGroup: components[i]), next < components.endIndex,
                ControlProtocol.isAppName(Substring(components[next]))
            {
                app = String(components[next])
                supervisorPID = pid
                deviceGroup = String(components[i])
                self.path = "/" + components[...next].joined(separator: "/")
                return
            }
            i = next
        }
        return nil
    }

    /// The supervisor's PID, if `component` names a device group.
    static func supervisorPID(ofDeviceGroup component: some StringProtocol) -> Int32? {
        guard component.hasPrefix(deviceGroupPrefix) else { return nil }
        let rest = component.utf8.dropFirst(deviceGroupPrefix.utf8.count)
        guard let dash = rest.firstIndex(of: UInt8(ascii: "-")) else { return nil }
        let digits = rest[..<dash], random = rest[rest.index(after: dash)...]
        guard !digits.isEmpty, digits.count <= 10, digits.first != UInt8(ascii: "0"),
            digits.allSatisfy({ $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }),
            !random.isEmpty, random.count <= 32,
            random.allSatisfy({ ($0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9")) || ($0 | 0x20 >= UInt8(ascii: "a") && $0 | 0x20 <= UInt8(ascii: "z")) })
        else { return nil }
        let value = digits.reduce(0) { $0 * 10 + Int($1 - UInt8(ascii: "0")) }
        return value <= Int(Int32.max) ? Int32(value) : nil
    }

    public var description: String { "\(app) (cgroup \(path), supervisor \(supervisorPID))" }
}
