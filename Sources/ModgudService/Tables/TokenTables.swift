import EventStorePostgres
import Foundation
import ModgudDomain
import PQ

/// The one home of the SQL of the token read models, `token_families`, `access_tokens` and
/// `refresh_tokens` (docs/architecture.md, "House habits"): the statements `TokenProjection`
/// applies, the refresh grant's pipelined lookup, and every query of them.
public struct TokenTables: Sendable {
    /// A live access token: what introspection reports (RFC 7662 section 2.2).
    public struct AccessToken: Sendable, Equatable {
        public var familyID: UUID
        public var clientID: String
        public var userID: UUID?
        public var scopes: [String]
        public var audiences: [String]
        public var expiresAt: Date
        /// The DPoP key thumbprint the token is bound to (`cnf.jkt`), nil for a bearer token.
        public var dpopKey: String?
        /// The attested app instance it went to (issue 47).
        public var attestation: ClientAttestationFact? = nil
    }

    /// A refresh token's family. Whether it is spent, and whether the family still lives, the
    /// family decides (its aggregate, and `token_families.revoked_reason`): token rows are
    /// written once and never updated (issue 70).
    public struct RefreshToken: Sendable, Equatable {
        public var familyID: UUID
        public var expiresAt: Date
    }

    let pool: PQPool

    public init(pool: PQPool) {
        self.pool = pool
    }

    /// The access token with this hash if it is live now: not expired, its family not revoked
    /// (a revocation is one row, the family's), its client neither deleted nor disabled (issue 65: introspection, userinfo
    /// and the account endpoints refuse a disabled client's tokens as a refresh does), and its
    /// user active with the security stamp the family started with.
    /// It joins tables a rebuild of the token projection swaps: a deadlock with the swap is
    /// run again (`retryingTransientConflicts`).
    public func accessToken(hash: String, realm: String, now: Date) async throws -> AccessToken? {
        let row = try await retryingTransientConflicts {
            try await pool.query(
                """
                SELECT t.family_id, t.client_id, t.user_id, t.scopes, t.audiences, t.expires_at, t.jkt, t.attestation
                FROM access_tokens t
                JOIN token_families f ON f.family_id = t.family_id
                JOIN clients c ON c.realm_id = t.realm_id AND c.client_id = t.client_id AND c.enabled
                LEFT JOIN users u ON u.user_id = t.user_id
                WHERE t.token_hash = \(hash) AND t.realm_id = \(realm) AND f.revoked_reason IS NULL
                  AND t.expires_at > \(now)
                  AND (t.user_id IS NULL OR (u.status = 'active' AND u.security_stamp = f.security_stamp))
                """
            ).first
        }
        guard let row else { return nil }
        return AccessToken(
            familyID: try row.decode(UUID.self, at: 0), clientID: try row.decode(String.self, at: 1),
            userID: try row.decode(UUID?.self, at: 2), scopes: try PQTextArray.decode(row.decode(String.self, at: 3)),
            audiences: try PQTextArray.decode(row.decode(String.self, at: 4)), expiresAt: try row.decode(Date.self, at: 5),
            dpopKey: try row.decode(String?.self, at: 6),
            attestation: try row.decode(String?.self, at: 7).flatMap { try? JSONDecoder().decode(ClientAttestationFact.self, from: Data($0.utf8)) })
    }

    /// The refresh token with this hash, spent or not, its family revoked or not.
    public func refreshToken(hash: String, realm: String) async throws -> RefreshToken? {
        let row = try await pool.query(
            "SELECT family_id, expires_at FROM refresh_tokens WHERE token_hash = \(hash) AND realm_id = \(realm)"
        ).first
        guard let row else { return nil }
        return RefreshToken(familyID: try row.decode(UUID.self, at: 0), expiresAt: try row.decode(Date.self, at: 1))
    }

    /// The access token's family, live or not.
    func familyOfAccessToken(hash: String, realm: String) async throws -> UUID? {
        try await pool.query("SELECT family_id FROM access_tokens WHERE token_hash = \(hash) AND realm_id = \(realm)").first?.decode(UUID.self, at: 0)
    }

    /// Every family of a user, revoked ones included, with its client (the audit).
    func families(realm: String, userID: UUID) async throws -> [UUID: String] {
        var families: [UUID: String] = [:]
        for row in try await pool.query("SELECT family_id, client_id FROM token_families WHERE realm_id = \(realm) AND user_id = \(userID)").rows {
            families[try row.decode(UUID.self, at: 0)] = try row.decode(String.self, at: 1)
        }
        return families
    }

    /// The clients of some families (the failures list names a refresh's client by its family).
    func clients(ofFamilies ids: [UUID]) async throws -> [UUID: String] {
        guard !ids.isEmpty else { return [:] }
        var clients: [UUID: String] = [:]
        for row in try await pool.query("SELECT family_id, client_id FROM token_families WHERE family_id = ANY(\(ids.map { $0.uuidString.lowercased() })::uuid[])").rows {
            clients[try row.decode(UUID.self, at: 0)] = try row.decode(String.self, at: 1)
        }
        return clients
    }

    /// One of a user's sessions as operators see it (issue 31).
    public struct Session: Sendable {
        public var familyID: UUID
        public var clientID: String
        public var scopes: [String]
        public var startedAt: Date
        /// Not revoked, and started under the user's current security stamp.
        public var live: Bool
        /// Why it ended: a revocation reason, or `stamp` when the user's stamp moved on.
        public var endedBecause: String?
    }

    /// A user's sessions, live ones first, then newest first; at most `limit`.
    func sessions(realm: String, userID: UUID, limit: Int = 50) async throws -> [Session] {
        try await pool.query(
            """
            SELECT f.family_id, f.client_id, f.scopes, f.started_at, f.revoked_reason,
                   f.security_stamp IS NOT DISTINCT FROM u.security_stamp
            FROM token_families f LEFT JOIN users u ON u.user_id = f.user_id AND u.realm_id = f.realm_id
            WHERE f.realm_id = \(realm) AND f.user_id = \(userID)
            ORDER BY (f.revoked_reason IS NULL AND f.security_stamp IS NOT DISTINCT FROM u.security_stamp) DESC, f.started_at DESC
            LIMIT \(limit)
            """
        ).rows.map { row in
            let reason = try row.decode(String?.self, at: 4)
            let current = try row.decode(Bool?.self, at: 5) ?? false
            return Session(
                familyID: try row.decode(UUID.self, at: 0), clientID: try row.decode(String.self, at: 1),
                scopes: try PQTextArray.decode(row.decode(String.self, at: 2)), startedAt: try row.decode(Date.self, at: 3),
                live: reason == nil && current, endedBecause: reason ?? (current ? nil : "stamp"))
        }
    }

    /// The device session (Native SSO; issue 69) whose device secret has this hash, ended or not.
    func deviceSession(secretHash: String, realm: String) async throws -> UUID? {
        try await pool.query("SELECT family_id FROM token_families WHERE device_secret_hash = \(secretHash) AND realm_id = \(realm)")
            .first?.decode(UUID.self, at: 0)
    }

    /// The families of a device session not yet revoked, its own among them.
    func liveFamilies(realm: String, deviceSession: UUID) async throws -> [UUID] {
        try await pool.query(
            "SELECT family_id FROM token_families WHERE realm_id = \(realm) AND device_session = \(deviceSession) AND revoked_reason IS NULL"
        ).rows.map { try $0.decode(UUID.self, at: 0) }
    }

    /// The user's families not yet revoked.
    func liveFamilies(realm: String, userID: UUID) async throws -> [UUID] {
        try await pool.query(
            "SELECT family_id FROM token_families WHERE realm_id = \(realm) AND user_id = \(userID) AND revoked_reason IS NULL"
        ).rows.map { try $0.decode(UUID.self, at: 0) }
    }

    /// Every family of a user and whether it is revoked (an erasure's look before and after
    /// its steps).
    func familiesRevoked(realm: String, userID: UUID) async throws -> [UUID: Bool] {
        var families: [UUID: Bool] = [:]
        for row in try await pool.query(
            "SELECT family_id, revoked_reason IS NOT NULL FROM token_families WHERE realm_id = \(realm) AND user_id = \(userID)"
        ).rows {
            families[try row.decode(UUID.self, at: 0)] = try row.decode(Bool.self, at: 1)
        }
        return families
    }

    /// What the refresh grant learns in its one lookup (docs/decisions.md: it reads `streams`
    /// and `subject_keys` beside the read model).
    struct RefreshLookup: Sendable {
        var familyID: UUID
        var familyVersion: Int64
        var userVersion: Int64
        /// The user's sealed data key, so the claims open without a round trip of their own.
        var sealedUserKey: [UInt8]?
        /// The family's client as the store has it now (nil: deleted), whatever this
        /// instance's client cache says (issue 40: a disabled client or a rotated secret is
        /// refused on the next refresh on every instance).
        var clientEnabled: Bool?
        var clientSecretHash: String?
    }

    /// The refresh grant's lookup, to pipeline with the request's rate-limit count: the
    /// presented token's family, the current versions of the family's and the user's streams,
    /// the user's sealed data key, and the family's client's `enabled` and secret hash.
    /// Decode its answer with `refreshLookup(_:)`.
    static func refreshLookupQuery(presentedHash: String, realm: String) -> PQQuery {
        """
        SELECT r.family_id, f.user_id,
               \(unescaped: PostgresEventStore.streamVersionSQL(streamType: TokenFamily.streamType, idColumn: "r.family_id")),
               \(unescaped: PostgresEventStore.streamVersionSQL(streamType: User.streamType, idColumn: "f.user_id")),
               \(unescaped: SubjectKeysTable.sealedKeyOfUserSQL(idColumn: "f.user_id")),
               c.enabled, c.secret_hash
        FROM refresh_tokens r JOIN token_families f ON f.family_id = r.family_id
        LEFT JOIN clients c ON c.realm_id = f.realm_id AND c.client_id = f.client_id
        WHERE r.token_hash = \(presentedHash) AND r.realm_id = \(realm)
        """
    }

    static func refreshLookup(_ result: PQResult) throws -> RefreshLookup? {
        guard let row = result.first else { return nil }
        return RefreshLookup(
            familyID: try row.decode(UUID.self, at: 0), familyVersion: try row.decode(Int64.self, at: 2),
            userVersion: try row.decode(Int64.self, at: 3), sealedUserKey: try row.decode(PQBytes?.self, at: 4)?.bytes,
            clientEnabled: try row.decode(Bool?.self, at: 5), clientSecretHash: try row.decode(String?.self, at: 6))
    }
}

// MARK: Statements (applied inline by `TokenProjection`; `tables` resolves live or rebuild names)

extension TokenTables {
    static func startFamily(_ started: TokenFamilyStarted, family: UUID, realm: String, tables: ProjectionTables) -> [PQQuery] {
        var statements: [PQQuery] = [
            """
            INSERT INTO \(unescaped: tables("token_families"))
                (family_id, realm_id, client_id, user_id, scopes, audiences, security_stamp, device_session, device_secret_hash)
            VALUES (\(family), \(realm), \(started.clientID), \(started.userID), \(started.scopes), \(started.audiences),
                    \(started.securityStamp), \(started.deviceSession?.sessionID), \(started.startsDeviceSession ? started.deviceSession?.secretHash : nil))
            """,
            """
            INSERT INTO \(unescaped: tables("access_tokens")) (token_hash, realm_id, family_id, client_id, user_id, scopes, audiences, format, expires_at, jkt, attestation)
            VALUES (\(started.accessToken.hash), \(realm), \(family), \(started.clientID), \(started.userID), \(started.scopes), \(started.audiences),
                    \(started.accessToken.format.rawValue), \(started.accessToken.expiresAt), \(started.accessToken.dpopKey),
                    \(attestationText(started.accessToken)))
            """,
        ]
        if let hash = started.refreshTokenHash, let expiry = started.refreshExpiresAt {
            statements.append(insertRefresh(hash, expiresAt: expiry, family: family, realm: realm, tables: tables))
        }
        return statements
    }

    /// The family row names the client, user, scopes and audiences of every token. The spent
    /// token's row stays as it is: the family's stream knows it is spent, and the lookup only
    /// maps a hash to its family (issue 70: one update per refresh less).
    static func refreshFamily(_ refreshed: TokenFamilyRefreshed, family: UUID, realm: String, tables: ProjectionTables) -> [PQQuery] {
        [
            insertRefresh(refreshed.refreshTokenHash, expiresAt: refreshed.refreshExpiresAt, family: family, realm: realm, tables: tables),
            """
            INSERT INTO \(unescaped: tables("access_tokens"))
                (token_hash, realm_id, family_id, client_id, user_id, scopes, audiences, format, expires_at, jkt, attestation)
            SELECT \(refreshed.accessToken.hash), realm_id, family_id, client_id, user_id,
                   coalesce(\(refreshed.accessToken.scopes)::text[], scopes), coalesce(\(refreshed.accessToken.audiences)::text[], audiences),
                   \(refreshed.accessToken.format.rawValue), \(refreshed.accessToken.expiresAt), \(refreshed.accessToken.dpopKey),
                   \(attestationText(refreshed.accessToken))
            FROM \(unescaped: tables("token_families")) WHERE family_id = \(family)
            """,
        ]
    }

    /// The `attestation` column: the fact as JSON, or NULL.
    static func attestationText(_ token: IssuedAccessToken) -> String? {
        token.attestation.flatMap { try? JSONEncoder().encode($0) }.map { String(decoding: $0, as: UTF8.self) }
    }

    /// Every reader of a token joins its family, so the family's row alone ends them all.
    static func revokeFamily(_ revoked: TokenFamilyRevoked, family: UUID, tables: ProjectionTables) -> [PQQuery] {
        ["UPDATE \(unescaped: tables("token_families")) SET revoked_reason = \(revoked.reason.rawValue) WHERE family_id = \(family)"]
    }

    private static func insertRefresh(_ hash: String, expiresAt: Date, family: UUID, realm: String, tables: ProjectionTables) -> PQQuery {
        """
        INSERT INTO \(unescaped: tables("refresh_tokens")) (token_hash, realm_id, family_id, expires_at)
        VALUES (\(hash), \(realm), \(family), \(expiresAt))
        """
    }
}
