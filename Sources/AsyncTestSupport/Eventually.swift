/// Waiting in tests without sleeping as synchronisation and without wall-clock assertions.
///
/// A test that waits for something another task, process or server does polls the observable
/// outcome (a row, a file, a counter) until it holds. The time limit is a hang guard only: it is
/// far above anything a loaded 2-core machine needs, so a failure means "never happened", not
/// "happened slowly". Tests never assert how long something took.
public enum Eventually {
    /// The hang guard: how long a condition may take before the test gives up.
    public static let hangGuard: Duration = .seconds(120)

    /// The condition did not hold within the hang guard.
    public struct NeverHappened: Error, CustomStringConvertible {
        public var description: String
    }

    /// Polls `condition` until it returns true; throws `NeverHappened` after `within`.
    public static func wait(
        _ what: @autoclosure () -> String, within: Duration = hangGuard, every: Duration = .milliseconds(20),
        _ condition: () async throws -> Bool
    ) async throws {
        _ = try await value(what(), within: within, every: every) { try await condition() ? true : nil }
    }

    /// Polls `produce` until it returns a value, and returns it; throws `NeverHappened` after `within`.
    public static func value<T>(
        _ what: @autoclosure () -> String, within: Duration = hangGuard, every: Duration = .milliseconds(20),
        _ produce: () async throws -> T?
    ) async throws -> T {
        let clock = ContinuousClock()
        let deadline = clock.now + within
        while true {
            if let value = try await produce() { return value }
            guard clock.now < deadline else { throw NeverHappened(description: "never happened within \(within): \(what())") }
            try await Task.sleep(for: every)
        }
    }
}
