import PQ

/// Holds one dedicated LISTEN connection and waits on it; reconnects after a failure.
///
/// A lost notification costs at most one poll interval, because the daemon also polls.
actor NotificationListener {
    private let configuration: PQConfiguration
    private let channel: String
    private var connection: PQConnection?

    init(configuration: PQConfiguration, channel: String) {
        self.configuration = configuration
        self.channel = channel
    }

    /// Returns after a notification or after `timeout`.
    func wait(timeout: Duration) async {
        do {
            let connection = try await connected()
            _ = try await connection.waitForNotifications(timeout: timeout)
        } catch {
            await close()
            try? await Task.sleep(for: timeout)
        }
    }

    func close() async {
        await connection?.close()
        connection = nil
    }

    private func connected() async throws -> PQConnection {
        if let connection { return connection }
        let fresh = try await PQConnection.connect(configuration)
        try await fresh.listen(channel)
        connection = fresh
        return fresh
    }
}
