import AsyncTestSupport
import Logging
import ModgudService
import PQ
import Synchronization

/// Instances of a test that share one database, each with its settings listener (what
/// `modgud serve` runs), so a change answered on one is seen by the others.
enum SettingsListeners {
    /// Starts a listener per instance and waits until every one has subscribed; cancel the
    /// returned tasks at the end.
    static func start(_ pools: [PQPool], _ cores: [ModgudCore]) async throws -> [Task<Void, Never>] {
        let listening = ListeningCount()
        var listeners: [Task<Void, Never>] = []
        for (pool, core) in zip(pools, cores) {
            let listener = SettingsChangeListener(
                configuration: pool.configuration, invalidate: { core.settingsNotifier.invalidateLocally($0) }, logger: Logger(label: "test"),
                onListening: { listening.record() })
            listeners.append(Task { await listener.run() })
        }
        try await Eventually.wait("every instance listens") { listening.count >= cores.count }
        return listeners
    }
}

/// How many settings listeners have subscribed.
final class ListeningCount: Sendable {
    private let value = Mutex(0)
    var count: Int { value.withLock { $0 } }
    func record() { value.withLock { $0 += 1 } }
}
