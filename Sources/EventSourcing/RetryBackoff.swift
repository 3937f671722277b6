/// Exponential backoff for background loops that lose their store: the first retry comes
/// quickly (a restart of the database takes seconds), later ones at most `maximum` apart, so a
/// recovered database is noticed within that time. Pure: the loop sleeps, this only counts.
public struct RetryBackoff: Sendable, Equatable {
    public let initial: Duration
    public let maximum: Duration
    /// Failures in a row since the last success.
    public private(set) var failures = 0

    public init(initial: Duration = .milliseconds(250), maximum: Duration = .seconds(5)) {
        self.initial = initial
        self.maximum = max(initial, maximum)
    }

    /// Records a failure and returns how long to wait before the next attempt.
    public mutating func nextDelay() -> Duration {
        failures += 1
        var delay = initial
        for _ in 1..<min(failures, 32) {
            delay = delay * 2
            if delay >= maximum { return maximum }
        }
        return min(delay, maximum)
    }

    /// Records a success: the next failure starts from `initial` again.
    public mutating func reset() {
        failures = 0
    }
}
