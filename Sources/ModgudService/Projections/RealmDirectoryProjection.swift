import EventSourcing
import EventStorePostgres
import ModgudDomain
import PQ

/// Realm by host, realm settings and public signing keys (inline: token issuance reads them).
public struct RealmDirectoryProjection: SQLProjection, InlineProjection {
    public let name = "realm_directory"
    public let eventTypes: Set<String>? = [RealmCreated.eventType, RealmSettingsChanged.eventType, SigningKeyRotated.eventType]
    public let tables = ["realms", "realm_hosts", "signing_keys"]

    public init() {}

    public func statements(for event: EventEnvelope, tables: ProjectionTables) throws -> [PQQuery] {
        let realm = event.stream.realm
        switch try RealmEvent(decoding: event, registry: ModgudEvents.registry) {
        case .created(let created):
            return [
                "INSERT INTO \(unescaped: tables("realms")) (realm_id, settings) VALUES (\(realm), \(try json(created.settings)))",
                insertHosts(created.settings.hosts, realm: realm, tables: tables),
            ]
        case .settingsChanged(let changed):
            return [
                "UPDATE \(unescaped: tables("realms")) SET settings = \(try json(changed.settings)), updated_at = now() WHERE realm_id = \(realm)",
                "DELETE FROM \(unescaped: tables("realm_hosts")) WHERE realm_id = \(realm)",
                insertHosts(changed.settings.hosts, realm: realm, tables: tables),
            ]
        case .signingKeyRotated(let rotated):
            return [
                """
                INSERT INTO \(unescaped: tables("signing_keys")) (realm_id, kid, algorithm, public_jwk, rotated_at)
                VALUES (\(realm), \(rotated.kid), \(rotated.algorithm), \(PQJSON(rotated.publicJWK)), \(rotated.rotatedAt))
                """
            ]
        }
    }

    private func insertHosts(_ hosts: [String], realm: String, tables: ProjectionTables) -> PQQuery {
        "INSERT INTO \(unescaped: tables("realm_hosts")) (host, realm_id) SELECT unnest(\(hosts)::text[]), \(realm)"
    }
}

func json(_ value: some Encodable) throws -> PQJSON {
    PQJSON(bytes: try EventJSON.encode(value))
}
