import EventSourcing
import EventStorePostgres
import ModgudDomain
import PQ

/// Client by id, with its settings, secret hash and Play Integrity keys (inline: client authentication reads it).
/// Its SQL lives in `ClientsTable`.
public struct ClientDirectoryProjection: SQLProjection, InlineProjection {
    public let name = "client_directory"
    public let eventTypes: Set<String>? = [
        ClientRegistered.eventType, ClientUpdated.eventType, ClientDisabled.eventType, ClientEnabled.eventType,
        ClientSecretRotated.eventType, ClientDeleted.eventType, ClientPlayIntegrityKeysSet.eventType, ClientPlayIntegrityKeysRemoved.eventType,
    ]
    public let tables = ["clients"]

    public init() {}

    public func statements(for event: EventEnvelope, tables: ProjectionTables) throws -> [PQQuery] {
        let realm = event.stream.realm
        let clientID = StreamNames.clientID(of: event.stream)
        let table = tables("clients")
        switch try ClientEvent(decoding: event, registry: ModgudEvents.registry) {
        case .registered(let registered):
            return [try ClientsTable.insert(table: table, realm: realm, registered)]
        case .updated(let updated):
            return [try ClientsTable.setSettings(table: table, realm: realm, clientID: clientID, updated.settings)]
        case .disabled:
            return [ClientsTable.setEnabled(table: table, realm: realm, clientID: clientID, false)]
        case .enabled:
            return [ClientsTable.setEnabled(table: table, realm: realm, clientID: clientID, true)]
        case .secretRotated(let rotated):
            return [ClientsTable.setSecretHash(table: table, realm: realm, clientID: clientID, rotated.secretHash)]
        case .deleted:
            return [ClientsTable.delete(table: table, realm: realm, clientID: clientID)]
        case .playIntegrityKeysSet(let set):
            return [try ClientsTable.setPlayIntegrityKeys(table: table, realm: realm, clientID: clientID, packageName: set.packageName, set.keys)]
        case .playIntegrityKeysRemoved(let removed):
            return [ClientsTable.removePlayIntegrityKeys(table: table, realm: realm, clientID: clientID, packageName: removed.packageName)]
        }
    }
}
