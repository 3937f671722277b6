import PQ

/// Holds one dedicated LISTEN connection and waits on it; reconnects after a failure.
///
/// A wait that had to (re)subscribe returns at once: appends committed before the LISTEN took
/// effect sent their NOTIFY to nobody, so the daemon drains once more instead of sleeping
/// through them. After that, every commit wakes it. A notification lost any other way costs at
/// most one poll interval, because the daemon also polls.
public actor NotificationListener {
    private let configuration: PQConfiguration
    private let channel: String
    private var connection: PQConnection?

    public init(configuration: PQConfiguration, channel: String) {
        self.configuration = configuration
        self.channel = channel
    }

    /// The longest one blocking wait lasts, so that cancellation is noticed promptly.
    private let slice: Duration = .milliseconds(200)

    /// Returns after a notification, after `timeout`, or soon after the task is cancelled.
    public func wait(timeout: Duration) async {
        let clock = ContinuousClock()
        let deadline = clock.now + timeout
        while !Task.isCancelled {
            let remaining = deadline - clock.now
            if remaining <= .zero { return }
            do {
                guard let connection else {
                    try await subscribe()
                    return
                }
                let received = try await connection.waitForNotifications(timeout: min(remaining, slice))
                if !received.isEmpty { return }
            } catch {
                await close()
                try? await Task.sleep(for: min(remaining, slice))
            }
        }
    }

    public func close() async {
        await connection?.close()
        connection = nil
    }

    private func subscribe() async throws {
        let fresh = try await PQConnection.connect(configuration)
        try await fresh.listen(channel)
        connection = fresh
    }
}
