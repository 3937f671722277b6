import EventSourcing
import EventStorePostgres
import Foundation
import ModgudDomain
import PQ

/// The one home of the `clients` read model's SQL (docs/architecture.md, "House habits"): the
/// statements `ClientDirectoryProjection` applies, and every query of it.
enum ClientsTable {
    // MARK: Statements (applied inline by the projection; `table` is live or its rebuild copy)

    static func insert(table: String, realm: String, _ registered: ClientRegistered) throws -> PQQuery {
        """
        INSERT INTO \(unescaped: table) (realm_id, client_id, settings, secret_hash, enabled)
        VALUES (\(realm), \(registered.clientID), \(try json(registered.settings)), \(registered.secretHash), true)
        """
    }

    static func setSettings(table: String, realm: String, clientID: String, _ settings: ClientSettings) throws -> PQQuery {
        "UPDATE \(unescaped: table) SET settings = \(try json(settings)) WHERE realm_id = \(realm) AND client_id = \(clientID)"
    }

    static func setEnabled(table: String, realm: String, clientID: String, _ enabled: Bool) -> PQQuery {
        "UPDATE \(unescaped: table) SET enabled = \(enabled) WHERE realm_id = \(realm) AND client_id = \(clientID)"
    }

    static func setSecretHash(table: String, realm: String, clientID: String, _ hash: String?) -> PQQuery {
        "UPDATE \(unescaped: table) SET secret_hash = \(hash) WHERE realm_id = \(realm) AND client_id = \(clientID)"
    }

    static func setPlayIntegrityKeys(table: String, realm: String, clientID: String, packageName: String, _ keys: PlayIntegrityKeys) throws -> PQQuery {
        """
        UPDATE \(unescaped: table) SET play_integrity = play_integrity || jsonb_build_object(\(packageName)::text, \(try json(keys))::jsonb)
        WHERE realm_id = \(realm) AND client_id = \(clientID)
        """
    }

    static func removePlayIntegrityKeys(table: String, realm: String, clientID: String, packageName: String) -> PQQuery {
        "UPDATE \(unescaped: table) SET play_integrity = play_integrity - \(packageName)::text WHERE realm_id = \(realm) AND client_id = \(clientID)"
    }

    static func delete(table: String, realm: String, clientID: String) -> PQQuery {
        "DELETE FROM \(unescaped: table) WHERE realm_id = \(realm) AND client_id = \(clientID)"
    }

    // MARK: Queries

    /// One client's settings, secret hash and whether it is enabled.
    static func client(realm: String, clientID: String, pool: PQPool) async throws -> (settings: ClientSettings, secretHash: String?, enabled: Bool)? {
        guard
            let row = try await pool.query(
                "SELECT settings::text, secret_hash, enabled FROM clients WHERE realm_id = \(realm) AND client_id = \(clientID)"
            ).first
        else { return nil }
        return (
            try EventJSON.decode(ClientSettings.self, from: Array(try row.decode(String.self, at: 0).utf8)), try row.decode(String?.self, at: 1),
            try row.decode(Bool.self, at: 2)
        )
    }

    /// A client's Play Integrity keys by Android package (issue 47).
    static func playIntegrityKeys(realm: String, clientID: String, pool: PQPool) async throws -> [String: PlayIntegrityKeys] {
        guard
            let row = try await pool.query(
                "SELECT play_integrity::text FROM clients WHERE realm_id = \(realm) AND client_id = \(clientID) AND enabled"
            ).first
        else { return [:] }
        return try EventJSON.decode([String: PlayIntegrityKeys].self, from: Array(try row.decode(String.self, at: 0).utf8))
    }

    /// The settings of a realm's enabled clients, by client id (unreadable settings skipped).
    static func enabledSettings(realm: String, pool: PQPool) async throws -> [ClientSettings] {
        try await pool.query("SELECT settings::text FROM clients WHERE realm_id = \(realm) AND enabled ORDER BY client_id").rows.compactMap {
            try? JSONDecoder().decode(ClientSettings.self, from: Data(try $0.decode(String.self, at: 0).utf8))
        }
    }

    /// The realm's clients without an RP-ID of their own (their passkeys live under the
    /// realm's primary domain).
    static func clientsWithoutRPID(realm: String, pool: PQPool) async throws -> [String] {
        try await pool.query(
            "SELECT client_id FROM clients WHERE realm_id = \(realm) AND coalesce(settings->>'rpID', '') = '' ORDER BY client_id"
        ).rows.map { try $0.decode(String.self, at: 0) }
    }

    /// The realm's clients holding a native grant (issue 65, item 7), with those grants.
    static func nativeGrantHolders(realm: String, pool: PQPool) async throws -> [(id: String, grants: [GrantType])] {
        let native = GrantType.native.sorted().map(\.rawValue)
        return try await pool.query(
            "SELECT client_id, settings->>'grants' FROM clients WHERE realm_id = \(realm) AND settings->'grants' ?| \(native) ORDER BY client_id"
        ).rows.map { row in
            let grants = try JSONDecoder().decode([String].self, from: Data(try row.decode(String.self, at: 1).utf8)).compactMap(GrantType.init(rawValue:))
            return (try row.decode(String.self, at: 0), grants.filter(GrantType.native.contains).sorted())
        }
    }

    /// The realm's clients: id, type, enabled.
    static func list(realm: String, pool: PQPool) async throws -> [(id: String, type: String, enabled: Bool)] {
        try await pool.query(
            "SELECT client_id, settings->>'type', enabled FROM clients WHERE realm_id = \(realm) ORDER BY client_id"
        ).rows.map { (try $0.decode(String.self, at: 0), try $0.decode(String.self, at: 1), try $0.decode(Bool.self, at: 2)) }
    }
}
