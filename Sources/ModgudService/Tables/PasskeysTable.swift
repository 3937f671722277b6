import EventSourcing
import Crypto
import EventStorePostgres
import Foundation
import ModgudDomain
import PQ

/// The one home of the `passkeys` read model's SQL (docs/architecture.md, "One home per
/// table"): the statements `PasskeyDirectoryProjection` applies, and every query of it.
public struct PasskeysTable: Sendable {
    let pool: PQPool

    public init(pool: PQPool) {
        self.pool = pool
    }

    /// One passkey as stored: the display name is the event's sealed text, unopened.
    public struct Row: Sendable {
        public var passkeyID: UUID
        public var storedName: String
        public var rpID: String
        public var createdAt: Date
        public var lastUsedAt: Date?
        public var aaguid: String?
    }

    /// Whether an append failed because the credential is registered already (the unique
    /// credential index of `passkeys`, written by `PasskeyDirectoryProjection`).
    static func isCredentialTaken(_ error: any Error) -> Bool {
        guard case EventStoreError.uniqueValueTaken(let projection, _)? = error as? EventStoreError else { return false }
        return projection == PasskeyDirectoryProjection().name
    }

    /// The lookup key of a raw credential id: SHA-256, base64url.
    public static func credentialHash(_ rawID: [UInt8]) -> String {
        Base64URLText.encode(Array(SHA256.hash(data: rawID)))
    }

    // MARK: Statements (applied inline by the projection; `table` is live or its rebuild copy)

    static func insert(
        table: String, passkeyID: UUID, realm: String, enrolled: PasskeyEnrolled, credentialHash: String
    ) -> PQQuery {
        """
        INSERT INTO \(unescaped: table)
            (passkey_id, realm_id, user_id, credential_id, credential_hash, rp_id, display_name, created_at, aaguid)
        VALUES (\(passkeyID), \(realm), \(enrolled.userID), \(enrolled.credentialID), \(credentialHash), \(enrolled.rpID),
                \(enrolled.displayName.stored), \(enrolled.createdAt), \(enrolled.aaguid))
        """
    }

    static func markUsed(table: String, passkeyID: UUID, at usedAt: Date) -> PQQuery {
        "UPDATE \(unescaped: table) SET last_used_at = \(usedAt) WHERE passkey_id = \(passkeyID)"
    }

    static func rename(table: String, passkeyID: UUID, to name: PersonalText) -> PQQuery {
        "UPDATE \(unescaped: table) SET display_name = \(name.stored) WHERE passkey_id = \(passkeyID)"
    }

    static func delete(table: String, passkeyID: UUID) -> PQQuery {
        "DELETE FROM \(unescaped: table) WHERE passkey_id = \(passkeyID)"
    }

    // MARK: Queries

    /// A user's live passkeys, oldest first.
    public func list(realm: String, userID: UUID) async throws -> [Row] {
        try await pool.query(
            """
            SELECT passkey_id, display_name, rp_id, created_at, last_used_at, aaguid FROM passkeys
            WHERE realm_id = \(realm) AND user_id = \(userID) ORDER BY created_at, passkey_id
            """
        ).rows.map(Self.row)
    }

    /// One of a user's passkeys (nil for another user's).
    public func get(realm: String, userID: UUID, passkeyID: UUID) async throws -> Row? {
        try await pool.query(
            """
            SELECT passkey_id, display_name, rp_id, created_at, last_used_at, aaguid FROM passkeys
            WHERE realm_id = \(realm) AND user_id = \(userID) AND passkey_id = \(passkeyID)
            """
        ).first.map(Self.row)
    }

    /// The ids of a user's passkeys, oldest first.
    func ids(realm: String, userID: UUID) async throws -> [UUID] {
        try await pool.query(
            "SELECT passkey_id FROM passkeys WHERE realm_id = \(realm) AND user_id = \(userID) ORDER BY created_at, passkey_id"
        ).rows.map { try $0.decode(UUID.self, at: 0) }
    }

    /// The credential ids (base64url) a user holds under one RP-ID: excludeCredentials, in one
    /// indexed read.
    func credentialIDs(realm: String, userID: UUID, rpID: String) async throws -> [String] {
        try await pool.query(
            """
            SELECT credential_id FROM passkeys WHERE realm_id = \(realm) AND user_id = \(userID) AND rp_id = \(rpID)
            ORDER BY created_at, passkey_id
            """
        ).rows.map { try $0.decode(String.self, at: 0) }
    }

    /// How many live passkeys are enrolled under `rpID`.
    func count(realm: String, rpID: String) async throws -> Int {
        try await pool.query("SELECT count(*) FROM passkeys WHERE realm_id = \(realm) AND rp_id = \(rpID)").first?.decode(Int.self, at: 0) ?? 0
    }

    /// The passkey grant's lookup: the credential by the hash of its id (one indexed row, never
    /// a scan), with the current versions of the passkey's and its user's streams, so warm
    /// actors read nothing more (docs/decisions.md: the hot path reads `streams` beside the read model).
    /// The service sends it with the request's checks (issue 49); `credential(_:)` reads its answer.
    func credentialQuery(realm: String, rawID: [UInt8]) -> PQQuery {
        """
        SELECT p.passkey_id, p.user_id,
               \(unescaped: PostgresEventStore.streamVersionSQL(streamType: Passkey.streamType, idColumn: "p.passkey_id")),
               \(unescaped: PostgresEventStore.streamVersionSQL(streamType: User.streamType, idColumn: "p.user_id"))
        FROM passkeys p
        WHERE p.realm_id = \(realm) AND p.credential_hash = \(Self.credentialHash(rawID))
        """
    }

    /// The credential `credentialQuery` found, if any.
    static func credential(_ result: PQResult) throws -> (passkeyID: UUID, passkeyVersion: Int64, userVersion: Int64)? {
        guard let row = result.first else { return nil }
        return (try row.decode(UUID.self, at: 0), try row.decode(Int64.self, at: 2), try row.decode(Int64.self, at: 3))
    }

    private static func row(_ row: PQRow) throws -> Row {
        Row(
            passkeyID: try row.decode(UUID.self, at: 0), storedName: try row.decode(String.self, at: 1), rpID: try row.decode(String.self, at: 2),
            createdAt: try row.decode(Date.self, at: 3), lastUsedAt: try row.decode(Date?.self, at: 4), aaguid: try row.decode(String?.self, at: 5))
    }
}
