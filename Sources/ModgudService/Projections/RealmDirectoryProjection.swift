import EventSourcing
import EventStorePostgres
import ModgudDomain
import PQ

/// Realm by host, realm settings and public signing keys (inline: token issuance reads them).
/// Its SQL lives in `RealmTables`.
public struct RealmDirectoryProjection: SQLProjection, InlineProjection {
    public let name = "realm_directory"
    public let eventTypes: Set<String>? = [
        RealmCreated.eventType, RealmSettingsChanged.eventType, SigningKeyRotated.eventType, SigningKeyRetired.eventType,
    ]
    public let tables = ["realms", "realm_hosts", "signing_keys"]

    public init() {}

    public func statements(for event: EventEnvelope, tables: ProjectionTables) throws -> [PQQuery] {
        let realm = event.stream.realm
        switch try RealmEvent(decoding: event, registry: ModgudEvents.registry) {
        case .created(let created):
            return try RealmTables.create(realm: realm, settings: created.settings, tables: tables)
        case .settingsChanged(let changed):
            return try RealmTables.change(realm: realm, settings: changed.settings, tables: tables)
        case .signingKeyRotated(let rotated):
            return [RealmTables.publishKey(realm: realm, rotated, tables: tables)]
        case .signingKeyRetired(let retired):
            return [RealmTables.unpublishKey(realm: realm, kid: retired.kid, tables: tables)]
        }
    }

}

func json(_ value: some Encodable) throws -> PQJSON {
    PQJSON(bytes: try EventJSON.encode(value))
}
