import EventSourcing
import EventStorePostgres
import Foundation
import ModgudDomain
import PQ

/// The one home of the SQL of `realms`, `realm_hosts`, `signing_keys` (the realm directory's
/// read models) and `signing_key_secrets` (the sealed private keys, written beside the
/// rotation event): the statements `RealmDirectoryProjection` applies and every query of them
/// (docs/architecture.md, "House habits").
enum RealmTables {
    /// Whether an append failed because a host belongs to another realm (the primary key of
    /// `realm_hosts`, written by `RealmDirectoryProjection`).
    static func isHostTaken(_ error: any Error) -> Bool {
        guard case EventStoreError.uniqueValueTaken(let projection, _)? = error as? EventStoreError else { return false }
        return projection == RealmDirectoryProjection().name
    }

    /// Every host of every realm in this database (a cell's hosts, for `CellHostIndex`).
    static let allHosts: PQQuery = "SELECT host, realm_id FROM realm_hosts"
    /// Every realm's id (`modgud cell list`).
    static let realmIDs: PQQuery = "SELECT realm_id FROM realms ORDER BY realm_id"

    // MARK: Statements (applied inline by the projection; `tables` resolves live or rebuild names)

    static func create(realm: String, settings: RealmSettings, tables: ProjectionTables) throws -> [PQQuery] {
        [
            "INSERT INTO \(unescaped: tables("realms")) (realm_id, settings) VALUES (\(realm), \(try json(settings)))",
            insertHosts(settings.hosts, realm: realm, tables: tables),
        ]
    }

    static func change(realm: String, settings: RealmSettings, tables: ProjectionTables) throws -> [PQQuery] {
        [
            "UPDATE \(unescaped: tables("realms")) SET settings = \(try json(settings)), updated_at = now() WHERE realm_id = \(realm)",
            "DELETE FROM \(unescaped: tables("realm_hosts")) WHERE realm_id = \(realm)",
            insertHosts(settings.hosts, realm: realm, tables: tables),
        ]
    }

    static func publishKey(realm: String, _ rotated: SigningKeyRotated, tables: ProjectionTables) -> PQQuery {
        """
        INSERT INTO \(unescaped: tables("signing_keys")) (realm_id, kid, algorithm, public_jwk, rotated_at)
        VALUES (\(realm), \(rotated.kid), \(rotated.algorithm), \(PQJSON(rotated.publicJWK)), \(rotated.rotatedAt))
        """
    }

    static func unpublishKey(realm: String, kid: String, tables: ProjectionTables) -> PQQuery {
        "DELETE FROM \(unescaped: tables("signing_keys")) WHERE realm_id = \(realm) AND kid = \(kid)"
    }

    private static func insertHosts(_ hosts: [String], realm: String, tables: ProjectionTables) -> PQQuery {
        "INSERT INTO \(unescaped: tables("realm_hosts")) (host, realm_id) SELECT unnest(\(hosts)::text[]), \(realm)"
    }

    /// A retired key's sealed private key, destroyed in the transaction of its retirement.
    static func destroySecret(realm: String, kid: String) -> PQQuery {
        "DELETE FROM signing_key_secrets WHERE realm_id = \(realm) AND kid = \(kid)"
    }

    /// The sealed private key, stored in the transaction of its rotation event.
    static func storeSecret(realm: String, kid: String, sealed: [UInt8]) -> PQQuery {
        "INSERT INTO signing_key_secrets (realm_id, kid, sealed) VALUES (\(realm), \(kid), \(PQBytes(sealed)))"
    }

    // MARK: Queries

    /// The realm serving a normalized host name, with its settings.
    static func realm(forHost name: String, pool: PQPool) async throws -> (realmID: String, settings: RealmSettings)? {
        guard
            let row = try await pool.query(
                "SELECT r.realm_id, r.settings::text FROM realm_hosts h JOIN realms r ON r.realm_id = h.realm_id WHERE h.host = \(name)"
            ).first
        else { return nil }
        return (try row.decode(String.self, at: 0), try EventJSON.decode(RealmSettings.self, from: Array(try row.decode(String.self, at: 1).utf8)))
    }

    static func settings(realm: String, pool: PQPool) async throws -> RealmSettings? {
        guard let text = try await pool.query("SELECT settings::text FROM realms WHERE realm_id = \(realm)").first?.decode(String.self, at: 0)
        else { return nil }
        return try EventJSON.decode(RealmSettings.self, from: Array(text.utf8))
    }

    /// Every realm: id, hosts, whether native grants are on.
    static func list(pool: PQPool) async throws -> [(id: String, hosts: [String], nativeGrants: Bool)] {
        try await pool.query(
            """
            SELECT r.realm_id, coalesce((SELECT string_agg(h.host, ' ' ORDER BY h.host) FROM realm_hosts h WHERE h.realm_id = r.realm_id), ''),
                   coalesce((r.settings->'nativeGrants'->>'enabled')::boolean, false)
            FROM realms r ORDER BY r.realm_id
            """
        ).rows.map {
            (try $0.decode(String.self, at: 0), try $0.decode(String.self, at: 1).split(separator: " ").map(String.init), try $0.decode(Bool.self, at: 2))
        }
    }

    /// The realm's public keys as JWKs, newest first.
    static func publicJWKs(realm: String, pool: PQPool) async throws -> [String] {
        try await pool.query("SELECT public_jwk::text FROM signing_keys WHERE realm_id = \(realm) ORDER BY rotated_at DESC, kid").rows.map {
            try $0.decode(String.self, at: 0)
        }
    }

    /// The realm's keys with their sealed private halves, oldest first.
    static func sealedKeys(realm: String, pool: PQPool) async throws -> [(kid: String, algorithm: String, sealed: [UInt8])] {
        try await pool.query(
            """
            SELECT k.kid, k.algorithm, s.sealed FROM signing_keys k
            JOIN signing_key_secrets s ON s.realm_id = k.realm_id AND s.kid = k.kid
            WHERE k.realm_id = \(realm) ORDER BY k.rotated_at, k.kid
            """
        ).rows.map { (try $0.decode(String.self, at: 0), try $0.decode(String.self, at: 1), try $0.decode(PQBytes.self, at: 2).bytes) }
    }
}
