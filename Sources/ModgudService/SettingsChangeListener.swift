import EventSourcing
import Logging
import PQ

/// Keeps this instance's settings caches honest when another instance (or an admin command)
/// changes a realm or a client: LISTEN on `modgud_settings`, drop what a notification names.
///
/// Notifications are sent after the change commits (`AdminService`); payloads are
/// `realm <id>` and `client <realm> <id>`. A listener that lost its connection may have
/// missed some, so every (re)connect drops every cached entry.
public struct SettingsChangeListener: Sendable {
    public static let channel = "modgud_settings"

    /// Tells every instance (this one included) that `change` happened; best effort (the
    /// caches' age bounds a lost notification).
    static func announce(_ change: SettingsChange, pool: PQPool) async {
        _ = try? await pool.query("SELECT pg_notify(\(channel), \(change.payload))")
    }

    let configuration: PQConfiguration
    let core: ModgudCore
    let logger: Logger
    let onListening: @Sendable () -> Void

    /// - Parameter onListening: called each time the listener has (re)subscribed, after which
    ///   no change is missed (tests wait for it instead of sleeping).
    public init(configuration: PQConfiguration, core: ModgudCore, logger: Logger, onListening: @escaping @Sendable () -> Void = {}) {
        self.configuration = configuration
        self.core = core
        self.logger = logger
        self.onListening = onListening
    }

    /// Listens until the task is cancelled; never throws.
    public func run() async {
        var backoff = RetryBackoff()
        while !Task.isCancelled {
            do {
                let connection = try await PQConnection.connect(configuration)
                try await connection.listen(Self.channel)
                core.invalidateSettings(nil)
                backoff.reset()
                onListening()
                while !Task.isCancelled {
                    for notification in try await connection.waitForNotifications(timeout: .milliseconds(250)) {
                        core.invalidateSettings(SettingsChange(payload: notification.payload))
                    }
                }
                await connection.close()
            } catch {
                logger.warning("settings listener lost its connection; retrying", metadata: ["error": "\(error)"])
                core.invalidateSettings(nil)
                try? await Task.sleep(for: backoff.nextDelay())
            }
        }
    }
}

/// What changed: a realm's settings or hosts, or a client.
public enum SettingsChange: Sendable, Equatable {
    case realm(String)
    case client(realm: String, id: String)
    /// A personal-data subject was erased: its key must not be used from any cache.
    case subject(String)

    /// Parses a notification payload; nil for one this version does not know.
    public init?(payload: String) {
        let parts = payload.split(separator: " ", maxSplits: 2).map(String.init)
        switch (parts.first, parts.count) {
        case ("realm", 2): self = .realm(parts[1])
        case ("client", 3): self = .client(realm: parts[1], id: parts[2])
        case ("subject", 2): self = .subject(parts[1])
        default: return nil
        }
    }

    public var payload: String {
        switch self {
        case .realm(let id): "realm \(id)"
        case .client(let realm, let id): "client \(realm) \(id)"
        case .subject(let subject): "subject \(subject)"
        }
    }
}
