import CoreMetrics
import MemPressureLifecycleProtocol

/// The names of the metrics a supervisor emits through swift-metrics, to whichever backend the
/// process bootstrapped (`MetricsSystem.bootstrap`) or bound to the task that made the
/// supervisor (`withMetricsFactory`): the supervisor takes the factory current when it is made
/// and keeps it. With none bootstrapped, swift-metrics' no-op backend takes them.
///
/// Every metric has the label `app` (the registered name); the series of an app are made when it
/// is registered, at 0, so that a rate over them is defined from the start.
///
/// | name | kind | labels | what |
/// |---|---|---|---|
/// | `mempressure_supervisor_app_state` | gauge | `app`, `state` | 1 for the app's current state, 0 for the four others (a state set) |
/// | `mempressure_supervisor_state_seconds_total` | counter | `app`, `state` | seconds the app spent in each state since it was registered |
/// | `mempressure_supervisor_launches_total` | counter | `app` | processes started (the `launch` events) |
/// | `mempressure_supervisor_crashes_total` | counter | `app` | unexpected exits (the `crash` events) |
/// | `mempressure_supervisor_time_to_ready_seconds` | timer (a histogram) | `app` | launch to the first `ready` of each run |
/// | `mempressure_supervisor_memory_warnings_total` | counter | `app` | memory warnings that reached the app (its callback written to its channel, its signal delivered, its command started); not those withheld from a suspended app, nor those with nothing to reach it by |
/// | `mempressure_supervisor_freeze_drys_total` | counter | `app` | page-outs done (`Supervisor.pageOut`: freeze-dry) |
/// | `mempressure_jetsam_kills_total` | counter | `app`, `reason` | kills with a reason (`Supervisor.kill`), by `KillReason` |
///
/// How fresh they are: the events are counted as they happen; the seconds per state are added
/// at each transition and at every footprint sample (`sampleInterval`; with 0, at transitions
/// only). When the supervisor shuts down, the state-set gauges of its apps are destroyed (a
/// Prometheus registry stops exposing them): apps that no longer exist claim no state. The
/// counters stay.
public enum SupervisorMetrics {
    public static let appState = "mempressure_supervisor_app_state"
    public static let stateSeconds = "mempressure_supervisor_state_seconds_total"
    public static let launches = "mempressure_supervisor_launches_total"
    public static let crashes = "mempressure_supervisor_crashes_total"
    public static let timeToReady = "mempressure_supervisor_time_to_ready_seconds"
    public static let memoryWarnings = "mempressure_supervisor_memory_warnings_total"
    public static let freezeDrys = "mempressure_supervisor_freeze_drys_total"
    public static let jetsamKills = "mempressure_jetsam_kills_total"

    /// The buckets a backend that turns timers into histograms should give
    /// `timeToReady` (swift-prometheus: `PrometheusMetricsFactory.durationHistogramBuckets`):
    /// from 50 ms (a small program that is ready at once) to 60 s (an app that builds a large
    /// state), about two per decade, as a relaunch cost ranges from one to the other.
    public static let timeToReadyBuckets: [Duration] = [
        .milliseconds(50), .milliseconds(100), .milliseconds(250), .milliseconds(500), .seconds(1), .milliseconds(2500),
        .seconds(5), .seconds(10), .seconds(30), .seconds(60),
    ]
}

/// The supervisor's handles on its metrics: one set per registered app, made at registration.
/// Owned by the supervisor actor (only its methods call this).
final class SupervisorMetricsRecorder {
    private let factory: any MetricsFactory
    private var apps: [String: AppMetrics] = [:]

    /// One app's metrics, and where its seconds per state were last counted up to.
    private final class AppMetrics {
        let stateGauges: [LifecycleState: Gauge]
        let stateSeconds: [LifecycleState: FloatingPointCounter]
        let launches: Counter
        let crashes: Counter
        let timeToReady: Timer
        let warnings: Counter
        let freezeDrys: Counter
        let kills: [KillReason: Counter]
        var state = LifecycleState.notRunning
        /// Supervisor seconds (the log's clock) up to which the current state's seconds are counted.
        var countedUpTo: Double

        init(app: String, factory: any MetricsFactory, at t: Double) {
            let d = [("app", app)]
            var gauges: [LifecycleState: Gauge] = [:]
            var seconds: [LifecycleState: FloatingPointCounter] = [:]
            for s in LifecycleState.allCases {
                let labels = d + [("state", s.rawValue)]
                gauges[s] = Gauge(label: SupervisorMetrics.appState, dimensions: labels, factory: factory)
                seconds[s] = FloatingPointCounter(label: SupervisorMetrics.stateSeconds, dimensions: labels, factory: factory)
            }
            stateGauges = gauges
            stateSeconds = seconds
            launches = Counter(label: SupervisorMetrics.launches, dimensions: d, factory: factory)
            crashes = Counter(label: SupervisorMetrics.crashes, dimensions: d, factory: factory)
            timeToReady = Timer(label: SupervisorMetrics.timeToReady, dimensions: d, factory: factory)
            warnings = Counter(label: SupervisorMetrics.memoryWarnings, dimensions: d, factory: factory)
            freezeDrys = Counter(label: SupervisorMetrics.freezeDrys, dimensions: d, factory: factory)
            var k: [KillReason: Counter] = [:]
            for r in KillReason.allCases {
                k[r] = Counter(label: SupervisorMetrics.jetsamKills, dimensions: d + [("reason", r.rawValue)], factory: factory)
            }
            kills = k
            countedUpTo = t
            for s in LifecycleState.allCases { gauges[s]?.record(s == state ? 1 : 0) }
        }

        /// Adds the seconds since `countedUpTo` to the current state.
        func count(upTo t: Double) {
            if t > countedUpTo { stateSeconds[state]?.increment(by: t - countedUpTo) }
            countedUpTo = max(countedUpTo, t)
        }
    }

    /// Takes the factory current now (the task's `withMetricsFactory`, else the bootstrapped one).
    init(factory: any MetricsFactory = MetricsSystem.factory) {
        self.factory = factory
    }

    /// An app was registered at `t` (supervisor seconds): its series, in state notRunning.
    func registered(_ app: String, at t: Double) {
        apps[app] = AppMetrics(app: app, factory: factory, at: t)
    }

    /// Counts what a log event says: transitions, launches, crashes. The supervisor calls this
    /// for every event it records (its own and its policies').
    func observe(_ e: SupervisorEvent) {
        guard let name = e.app, let a = apps[name] else { return }
        switch e.payload {
        case .state(_, let to):
            guard to != a.state else { return }
            a.count(upTo: e.t)
            a.stateGauges[a.state]?.record(0)
            a.stateGauges[to]?.record(1)
            a.state = to
        case .launch: a.launches.increment()
        case .crash: a.crashes.increment()
        default: break
        }
    }

    func timeToReady(_ app: String, seconds: Double) {
        guard seconds.isFinite, seconds >= 0 else { return }
        apps[app]?.timeToReady.recordSeconds(seconds)
    }

    /// The app was forgotten: its series are destroyed (no label set outlives its app).
    func forget(_ app: String) {
        guard let a = apps.removeValue(forKey: app) else { return }
        for g in a.stateGauges.values { g.destroy() }
        for c in a.stateSeconds.values { c.destroy() }
        for c in [a.launches, a.crashes, a.warnings, a.freezeDrys] + Array(a.kills.values) { c.destroy() }
        a.timeToReady.destroy()
    }

    func warningSent(_ app: String) { apps[app]?.warnings.increment() }

    func frozeDry(_ app: String) { apps[app]?.freezeDrys.increment() }

    func killed(_ app: String, reason: KillReason) { apps[app]?.kills[reason]?.increment() }

    /// Counts every app's seconds in its current state up to `t`.
    func countStateSeconds(upTo t: Double) {
        for a in apps.values { a.count(upTo: t) }
    }

    /// The supervisor is closing at `t`: the seconds are counted, the state sets destroyed.
    func close(at t: Double) {
        countStateSeconds(upTo: t)
        for a in apps.values {
            for g in a.stateGauges.values { g.destroy() }
        }
        apps = [:]
    }
}
