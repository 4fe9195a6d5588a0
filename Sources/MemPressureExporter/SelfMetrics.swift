import Glibc
import MemPressureSystem

/// What `mempressure_build_info` says: one series, value 1, the build in its labels (as Go
/// exporters' `*_build_info`), so that a dashboard or an alert can tell versions apart.
public struct BuildInfo: Sendable, Hashable {
    /// The release (`mempressure --version`).
    public var version: String
    /// The Swift compiler it was built with (major.minor).
    public var swiftVersion: String = BuildInfo.compiler
    /// debug or release.
    public var configuration: String = BuildInfo.buildConfiguration
    /// The CPU architecture it was built for (x86_64, aarch64, ...).
    public var architecture: String = BuildInfo.buildArchitecture

    public init(version: String) {
        self.version = version
    }

    /// The Swift compiler this module was built with.
    public static var compiler: String {
        #if compiler(>=6.5)
            "6.5"
        #elseif compiler(>=6.4)
            "6.4"
        #elseif compiler(>=6.3)
            "6.3"
        #elseif compiler(>=6.2)
            "6.2"
        #else
            "6.1"
        #endif
    }

    static var buildConfiguration: String {
        #if DEBUG
            "debug"
        #else
            "release"
        #endif
    }

    static var buildArchitecture: String {
        #if arch(x86_64)
            "x86_64"
        #elseif arch(arm64)
            "aarch64"
        #else
            "other"
        #endif
    }
}

/// The exporter's own families: `mempressure_build_info` and the standard `process_*` of the
/// process serving the scrape (the names every Prometheus client library gives them, so that
/// dashboards made for any exporter's own process work on this one).
enum SelfMetrics {
    /// Writes `build_info` and the `process_*` families read from `procRoot`'s `self` (the
    /// serving process itself: /proc by default, whatever the collector reads for apps). A
    /// family whose file cannot be read is left out of this scrape, never failing it: the
    /// exporter's own figures are not what the scrape is for.
    static func write(_ writer: inout ExpositionWriter, buildInfo: BuildInfo, procRoot: String = "/proc") {
        writer.family("mempressure_build_info", .gauge, help: "The exporter's build, in its labels (version, Swift compiler, configuration, architecture); the value is always 1.")
        var labels = LabelSet()
        labels.add("version", buildInfo.version)
        labels.add("swift_version", buildInfo.swiftVersion)
        labels.add("configuration", buildInfo.configuration)
        labels.add("architecture", buildInfo.architecture)
        writer.sample(labels, 1)

        var buffer = ReadBuffer(capacity: 4096)
        let stat: ProcessStat
        do throws(ProcError) {
            let pid = getpid()
            try ProcFS(root: procRoot).open(pid).read("stat", into: &buffer)
            stat = try buffer.withBytes { (b) throws(ProcError) in try ProcessStat.parse(b, pid: pid) }
        } catch {
            return  // not this scrape: the families below all come from it
        }
        let ticks = Double(max(1, sysconf(Int32(_SC_CLK_TCK))))
        writer.family("process_cpu_seconds", .counter, help: "Total user and system CPU time spent by the exporter's process, in seconds.")
        writer.sample(nil, double: Double(stat.userTicks + stat.systemTicks) / ticks)
        writer.family("process_resident_memory_bytes", .gauge, help: "Resident memory size of the exporter's process, in bytes.")
        writer.sample(nil, UInt64(max(0, stat.residentPages)) &* UInt64(max(1, sysconf(Int32(_SC_PAGESIZE)))))
        writer.family("process_virtual_memory_bytes", .gauge, help: "Virtual memory size of the exporter's process, in bytes.")
        writer.sample(nil, stat.virtualBytes)
        do {
            let fds = try ProcFS.listDirectory("\(procRoot)/\(getpid())/fd").count
            writer.family("process_open_fds", .gauge, help: "Open file descriptors of the exporter's process.")
            writer.sample(nil, UInt64(fds))
        } catch {
            // Not listable: no figure in this scrape.
        }
        var limit = rlimit()
        if getrlimit(__rlimit_resource_t(RLIMIT_NOFILE.rawValue), &limit) == 0 {
            writer.family("process_max_fds", .gauge, help: "The most file descriptors the exporter's process may open (its soft RLIMIT_NOFILE).")
            writer.sample(nil, UInt64(limit.rlim_cur))
        }
        if let bootTime = bootTime(procRoot: procRoot, buffer: &buffer) {
            writer.family("process_start_time_seconds", .gauge, help: "When the exporter's process started, in seconds since the Unix epoch.")
            writer.sample(nil, double: Double(bootTime) + Double(stat.startTicks) / ticks)
        }
    }

    /// `btime` of /proc/stat: when the machine booted, in seconds since the Unix epoch.
    private static func bootTime(procRoot: String, buffer: inout ReadBuffer) -> UInt64? {
        do {
            try ProcFS.readFile("\(procRoot)/stat", into: &buffer)
        } catch {
            return nil
        }
        return buffer.withBytes { bytes -> UInt64? in
            for line in bytes.split(separator: UInt8(ascii: "\n")) where line.starts(with: "btime ".utf8) {
                return ByteScanner.unsigned(line.dropFirst(6).filter { $0 != UInt8(ascii: " ") })
            }
            return nil
        }
    }
}
