/// The lifecycle states of an app, as on iOS.
public enum LifecycleState: String, Sendable, Hashable, Codable, CaseIterable {
    case notRunning
    /// In the foreground but not receiving events (launching, or interrupted).
    case inactive
    /// In the foreground and receiving events.
    case active
    /// In the background and executing (finishing didEnterBackground, or a background task).
    case backgroundRunning
    /// In the background, resident but not executing (stopped or frozen).
    case suspended

    /// Whether the app's code runs in this state.
    public var isRunning: Bool { self == .inactive || self == .active || self == .backgroundRunning }
}

/// The callbacks an app receives, as UIApplicationDelegate named them.
public enum LifecycleCallback: String, Sendable, Hashable, Codable, CaseIterable {
    case didFinishLaunching
    case willResignActive
    case didEnterBackground
    case willEnterForeground
    case didBecomeActive
    case willTerminate
    case didReceiveMemoryWarning
}
