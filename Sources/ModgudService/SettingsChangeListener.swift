import EventSourcing
import Foundation
import Logging
import PQ

/// Keeps this instance's settings caches honest when another instance (or an admin command)
/// changes a realm or a client: LISTEN on `modgud_settings`, drop what a notification names.
///
/// Notifications are sent after the change commits (`AdminService`); payloads are
/// `<n> realm <id>`, `<n> client <realm> <id>` and `<n> subject <s>`, `n` numbering the change
/// (`settings_changes`). A listener that lost its connection may have missed some, so every
/// (re)connect drops every cached entry.
///
/// The changer waits for the others (issue 40, docs/architecture.md "Caches"): each listener
/// beats once a second in `settings_instances` and records the last change it has applied,
/// and `announce` returns once every serving instance has applied the change, or once the
/// caches' age limit has passed (by then no copy from before the change is used anyway). So
/// when an operator's change is answered, the next request on every instance uses it.
public struct SettingsChangeListener: Sendable {
    public static let channel = "modgud_settings"
    /// How long a change waits for the other instances at most: the age limit of the settings
    /// caches (realms, clients, signing keys), after which no copy older than the change is used.
    public static let confirmationBound: Duration = .seconds(5)

    /// Tells every instance (this one included) that `change` happened, and returns once every
    /// serving instance has applied it or `bound` has passed. Never throws: a failed notification
    /// is waited out like an instance that does not answer.
    /// - Returns: the serving instances that did not confirm within `bound`.
    @discardableResult
    static func announce(_ change: SettingsChange, pool: PQPool, bound: Duration = confirmationBound) async -> [String] {
        let started = ContinuousClock.now
        var unconfirmed = ["(unknown)"]
        if let number = try? await pool.query(SettingsAcknowledgementsTable.nextChange).first?.decode(Int64.self, at: 0) {
            _ = try? await pool.query("SELECT pg_notify(\(channel), \(String(number) + " " + change.payload))")
            while ContinuousClock.now - started < bound {
                guard let rows = try? await pool.query(SettingsAcknowledgementsTable.behind(change: number)),
                    let behind = try? rows.rows.map({ try $0.decode(String.self, at: 0) })
                else { break }
                unconfirmed = behind
                if behind.isEmpty { return [] }
                try? await Task.sleep(for: .milliseconds(5))
            }
        }
        // Not every instance confirmed (or the database did not answer): wait out the age limit.
        try? await Task.sleep(until: started + bound, clock: .continuous)
        return unconfirmed
    }

    let configuration: PQConfiguration
    /// Drops this instance's cached copies after a change (`nil`: everything).
    let invalidate: @Sendable (SettingsChange?) -> Void
    let logger: Logger
    let onListening: @Sendable () -> Void
    /// This listener's row in `settings_instances`.
    let instance = UUID().uuidString.lowercased()
    /// Tests only: a pause before a received change is applied (an instance slow to hear).
    let applyDelay: Duration

    /// - Parameter onListening: called each time the listener has (re)subscribed, after which
    ///   no change is missed (tests wait for it instead of sleeping).
    public init(
        configuration: PQConfiguration, invalidate: @escaping @Sendable (SettingsChange?) -> Void, logger: Logger, applyDelay: Duration = .zero,
        onListening: @escaping @Sendable () -> Void = {}
    ) {
        self.configuration = configuration
        self.invalidate = invalidate
        self.logger = logger
        self.applyDelay = applyDelay
        self.onListening = onListening
    }

    /// Listens until the task is cancelled; never throws.
    public func run() async {
        var backoff = RetryBackoff()
        while !Task.isCancelled {
            do {
                let connection = try await PQConnection.connect(configuration)
                try await connection.listen(Self.channel)
                invalidate(nil)
                // Registered with every change numbered so far applied: everything was dropped.
                _ = try await connection.query(SettingsAcknowledgementsTable.register(instance: instance))
                var beat = ContinuousClock.now
                backoff.reset()
                onListening()
                while !Task.isCancelled {
                    var applied: Int64?
                    for notification in try await connection.waitForNotifications(timeout: .milliseconds(250)) {
                        let (number, change) = Self.parse(notification.payload)
                        if applyDelay > .zero { try? await Task.sleep(for: applyDelay) }
                        invalidate(change)
                        if let number { applied = max(applied ?? number, number) }
                    }
                    if let applied {
                        _ = try await connection.query(SettingsAcknowledgementsTable.acknowledge(instance: instance, change: applied))
                        beat = ContinuousClock.now
                    } else if ContinuousClock.now - beat >= .seconds(1) {
                        _ = try await connection.query(SettingsAcknowledgementsTable.heartbeat(instance: instance))
                        beat = ContinuousClock.now
                    }
                }
                // Leaving (a drain): nobody waits for this instance any more.
                _ = try? await connection.query(SettingsAcknowledgementsTable.leave(instance: instance))
                await connection.close()
            } catch {
                logger.warning("settings listener lost its connection; retrying", metadata: ["error": "\(error)"])
                invalidate(nil)
                try? await Task.sleep(for: backoff.nextDelay())
            }
        }
    }

    /// A payload's change number (none from a version before issue 40) and change (nil for one
    /// this version does not know: then everything is dropped).
    static func parse(_ payload: String) -> (number: Int64?, change: SettingsChange?) {
        let parts = payload.split(separator: " ", maxSplits: 1).map(String.init)
        if parts.count == 2, let number = Int64(parts[0]) { return (number, SettingsChange(payload: parts[1])) }
        return (nil, SettingsChange(payload: payload))
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
