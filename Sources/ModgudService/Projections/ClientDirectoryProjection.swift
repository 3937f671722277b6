import EventSourcing
import EventStorePostgres
import ModgudDomain
import PQ

/// Client by id, with its settings and secret hash (inline: client authentication reads it).
public struct ClientDirectoryProjection: SQLProjection, InlineProjection {
    public let name = "client_directory"
    public let eventTypes: Set<String>? = [
        ClientRegistered.eventType, ClientUpdated.eventType, ClientDisabled.eventType, ClientEnabled.eventType,
        ClientSecretRotated.eventType, ClientDeleted.eventType,
    ]
    public let tables = ["clients"]

    public init() {}

    public func statements(for event: EventEnvelope, tables: ProjectionTables) throws -> [PQQuery] {
        let realm = event.stream.realm
        let clientID = StreamNames.clientID(of: event.stream)
        let table = tables("clients")
        switch try ClientEvent(decoding: event, registry: ModgudEvents.registry) {
        case .registered(let registered):
            return [
                """
                INSERT INTO \(unescaped: table) (realm_id, client_id, settings, secret_hash, enabled)
                VALUES (\(realm), \(registered.clientID), \(try json(registered.settings)), \(registered.secretHash), true)
                """
            ]
        case .updated(let updated):
            return ["UPDATE \(unescaped: table) SET settings = \(try json(updated.settings)) WHERE realm_id = \(realm) AND client_id = \(clientID)"]
        case .disabled:
            return ["UPDATE \(unescaped: table) SET enabled = false WHERE realm_id = \(realm) AND client_id = \(clientID)"]
        case .enabled:
            return ["UPDATE \(unescaped: table) SET enabled = true WHERE realm_id = \(realm) AND client_id = \(clientID)"]
        case .secretRotated(let rotated):
            return ["UPDATE \(unescaped: table) SET secret_hash = \(rotated.secretHash) WHERE realm_id = \(realm) AND client_id = \(clientID)"]
        case .deleted:
            return ["DELETE FROM \(unescaped: table) WHERE realm_id = \(realm) AND client_id = \(clientID)"]
        }
    }
}
