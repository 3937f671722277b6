import Foundation

/// The random 100–300 ms delay of docs/spec.md section 0 ("uniform failures").
///
/// The delay is measured from when the request started, not added after the work: the
/// answer leaves at `start + uniform(100…300 ms)`, so how long the work took (a user found
/// or not, a mail queued or not) does not show in the timing as long as it stays under
/// 100 ms, which it does by two orders of magnitude.
public struct ResponseJitter: Sendable {
    public var range: ClosedRange<Double>

    public init(milliseconds range: ClosedRange<Double> = 100...300) {
        self.range = range
    }

    /// Sleeps until `start` plus a fresh random delay (not at all if that moment passed).
    public func wait(since start: ContinuousClock.Instant) async {
        let target = start + .milliseconds(Double.random(in: range))
        let remaining = target - ContinuousClock.now
        if remaining > .zero { try? await Task.sleep(for: remaining) }
    }
}
