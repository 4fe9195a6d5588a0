import MemPressureBacktrace
import CMemoryPressure
import Glibc
import MemPressureLifecycleProtocol
import MemPressureSystem
import Synchronization

/// What an app does at each point of its lifecycle (UIApplicationDelegate for Linux). Every
/// method has an empty default; they run one at a time on the client's thread, and the
/// supervisor waits for each to return.
public protocol LifecycleDelegate: AnyObject, Sendable {
    func didFinishLaunching(_ client: LifecycleClient)
    func willResignActive(_ client: LifecycleClient)
    func didEnterBackground(_ client: LifecycleClient)
    func willEnterForeground(_ client: LifecycleClient)
    func didBecomeActive(_ client: LifecycleClient)
    func willTerminate(_ client: LifecycleClient)
    func didReceiveMemoryWarning(_ client: LifecycleClient)
    /// A system change, once per kind: `count` changes happened (while the app was suspended, or
    /// one now), `value` is the latest.
    func didReceiveNotification(_ client: LifecycleClient, kind: String, value: String, count: Int)
    /// An app-defined command from the supervisor (`mempressure app allocate`, a scenario's
    /// `allocate` step: the model app's `allocate N` and `release N`); the returned text is the
    /// answer (one line). The default answers that the app does not support commands.
    func didReceiveCommand(_ client: LifecycleClient, _ text: String) -> String
}

extension LifecycleDelegate {
    public func didFinishLaunching(_ client: LifecycleClient) {}
    public func willResignActive(_ client: LifecycleClient) {}
    public func didEnterBackground(_ client: LifecycleClient) {}
    public func willEnterForeground(_ client: LifecycleClient) {}
    public func didBecomeActive(_ client: LifecycleClient) {}
    public func willTerminate(_ client: LifecycleClient) {}
    public func didReceiveMemoryWarning(_ client: LifecycleClient) {}
    public func didReceiveNotification(_ client: LifecycleClient, kind: String, value: String, count: Int) {}
    public func didReceiveCommand(_ client: LifecycleClient, _ text: String) -> String { "error: commands not supported" }
}

/// A background task: finish it with `LifecycleClient.endBackgroundTask`.
public struct BackgroundTask: Sendable, Hashable {
    public let id: Int
}

/// The library an app links to be supervised: it connects to the supervisor's control socket
/// (from the environment the supervisor set), runs the delegate's callbacks, and carries
/// background tasks and readiness reports.
public final class LifecycleClient: Sendable {
    /// The signal used to capture a task thread's stack for a crash report.
    public static let stackSignal = SIGUSR2

    private let fd: Int32
    public let appName: String
    private let delegate: any LifecycleDelegate
    private let tasks = Mutex<[Int: @Sendable () -> Void]>([:])
    private let nextTask = Atomic<Int>(1)
    private let writeLock = Mutex<Void>(())

    /// Connects when the process was started by a supervisor (MEMPRESSURE_SOCKET, MEMPRESSURE_APP
    /// and MEMPRESSURE_TOKEN set) and starts the client's thread; nil otherwise, or if the
    /// supervisor cannot be reached (the app then runs unsupervised).
    public static func start(delegate: any LifecycleDelegate) -> LifecycleClient? {
        guard let socketPath = getenv(ControlProtocol.socketVariable).map({ String(cString: $0) }),
            let app = getenv(ControlProtocol.appVariable).map({ String(cString: $0) }),
            let token = getenv(ControlProtocol.tokenVariable).map({ String(cString: $0) })
        else { return nil }
        return start(socketPath: socketPath, appName: app, token: token, delegate: delegate)
    }

    /// Connects to the control socket at `socketPath` as `appName` with `token` (what `start`
    /// reads from the environment; a test's fake supervisor passes them itself) and starts the
    /// client's thread; nil if the socket cannot be reached.
    public static func start(socketPath: String, appName app: String, token: String, delegate: any LifecycleDelegate) -> LifecycleClient? {
        let fd: Int32
        do {
            fd = try UnixSocket.connect(to: socketPath).releaseDescriptor()
        } catch {
            return nil
        }
        _ = Backtrace.installThreadCapture(signal: stackSignal)
        let client = LifecycleClient(fd: fd, appName: app, delegate: delegate)
        client.send(.hello(version: ControlProtocol.version, app: app, token: token))
        do {
            try OSThread.detached { client.run() }
        } catch {
            // No thread to run the callbacks on: the app runs unsupervised, as when the
            // supervisor cannot be reached; closing the connection tells the supervisor.
            let message = "mempressure client: \(error): running unsupervised\n"
            _ = message.withCString { write(2, $0, strlen($0)) }
            close(fd)
            return nil
        }
        return client
    }

    private init(fd: Int32, appName: String, delegate: any LifecycleDelegate) {
        self.fd = fd
        self.appName = appName
        self.delegate = delegate
    }

    /// Tells the supervisor the app is interactive (after launch, and after each resume).
    public func reportReady() { send(.ready) }

    /// Asks for time to finish `name` in the background; `expirationHandler` runs (on the
    /// client's thread, not the task's) shortly before the time is up, and must end the task.
    /// The calling thread is the task's thread: if the task overruns, the crash report shows its
    /// call stack, so begin the task on the thread that does the work.
    public func beginBackgroundTask(name: String, expirationHandler: @escaping @Sendable () -> Void) -> BackgroundTask {
        let id = nextTask.wrappingAdd(1, ordering: .relaxed).oldValue
        tasks.withLock { $0[id] = expirationHandler }
        let clean = String(name.unicodeScalars.map { $0.value < 0x21 || $0.value == 0x7f ? "_" : Character($0) })
        send(.taskBegin(id: id, tid: Int32(mp_gettid()), name: clean.isEmpty ? "task" : clean))
        return BackgroundTask(id: id)
    }

    public func endBackgroundTask(_ task: BackgroundTask) {
        guard tasks.withLock({ $0.removeValue(forKey: task.id) }) != nil else { return }
        send(.taskEnd(id: task.id))
    }

    func send(_ message: AppMessage) {
        let bytes = Array((message.line + "\n").utf8)
        writeLock.withLock { _ in
            do {
                try UnixSocket.sendAll(bytes, on: fd)
            } catch {
                return  // the supervisor went away: the client's thread sees the connection end
            }
        }
    }

    private func run() {
        var splitter = LineSplitter()
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let n = buffer.withUnsafeMutableBytes { raw in retryOnInterrupt { read(fd, raw.baseAddress!, raw.count) } }
            if n <= 0 { return }  // the supervisor went away: the app runs on, unsupervised
            // A line this client cannot take (too long, not UTF-8, a NUL) is skipped up to its
            // line feed: the app keeps its channel rather than losing its callbacks.
            let lines = buffer.withUnsafeBytes { raw in splitter.feedSkippingBadLines(UnsafeRawBufferPointer(rebasing: raw[0..<n])).lines }
            for line in lines {
                do {
                    handle(try SupervisorMessage.parse(line))
                } catch {
                    continue  // a newer supervisor's message this client does not know
                }
            }
        }
    }

    private func handle(_ message: SupervisorMessage) {
        switch message {
        case .welcome:
            break
        case .callback(let c):
            switch c {
            case .didFinishLaunching: delegate.didFinishLaunching(self)
            case .willResignActive: delegate.willResignActive(self)
            case .didEnterBackground: delegate.didEnterBackground(self)
            case .willEnterForeground: delegate.willEnterForeground(self)
            case .didBecomeActive: delegate.didBecomeActive(self)
            case .willTerminate: delegate.willTerminate(self)
            case .didReceiveMemoryWarning: delegate.didReceiveMemoryWarning(self)
            }
            send(.ack(c))
        case .notification(let kind, let count, let value):
            delegate.didReceiveNotification(self, kind: kind, value: value, count: count)
            send(.notified(kind: kind))
        case .expire(let id):
            if let handler = tasks.withLock({ $0[id] }) { handler() }
            send(.expired(id: id))
        case .reportStack(let tid):
            let frames = Backtrace.captureThread(tid: tid, signal: Self.stackSignal, timeout: 1) ?? []
            for f in frames { send(.stackFrame(String(f.description.prefix(300)))) }
            send(.stackEnd)
        case .command(let id, let text):
            let answer = delegate.didReceiveCommand(self, text)
            let oneLine = String(answer.unicodeScalars.map { $0.value < 0x20 || $0.value == 0x7f ? " " : Character($0) }.prefix(1000))
            send(.done(id: id, result: oneLine))
        }
    }
}
