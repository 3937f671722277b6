import Foundation
import PQ

/// Reads tokens by hash from the inline read models.
public struct TokenDirectory: Sendable {
    /// A live access token: what introspection reports (RFC 7662 section 2.2).
    public struct AccessToken: Sendable, Equatable {
        public var familyID: UUID
        public var clientID: String
        public var userID: UUID?
        public var scopes: [String]
        public var audiences: [String]
        public var expiresAt: Date
    }

    /// A refresh token's family and whether it was spent.
    public struct RefreshToken: Sendable, Equatable {
        public var familyID: UUID
        public var spent: Bool
        public var expiresAt: Date
    }

    public let pool: PQPool

    public init(pool: PQPool) {
        self.pool = pool
    }

    /// The access token with this hash if it is live now: not expired, not revoked, its family
    /// not revoked, its client not deleted, and its user active with the security stamp the
    /// family started with.
    /// It joins tables a rebuild of the token projection swaps: a deadlock with the swap is
    /// run again (`retryingTransientConflicts`).
    public func accessToken(hash: String, realm: String, now: Date) async throws -> AccessToken? {
        let row = try await retryingTransientConflicts {
            try await pool.query(
                """
                SELECT t.family_id, t.client_id, t.user_id, t.scopes, t.audiences, t.expires_at
                FROM access_tokens t
                JOIN token_families f ON f.family_id = t.family_id
                JOIN clients c ON c.realm_id = t.realm_id AND c.client_id = t.client_id
                LEFT JOIN users u ON u.user_id = t.user_id
                WHERE t.token_hash = \(hash) AND t.realm_id = \(realm) AND NOT t.revoked AND f.revoked_reason IS NULL
                  AND t.expires_at > \(now)
                  AND (t.user_id IS NULL OR (u.status = 'active' AND u.security_stamp = f.security_stamp))
                """
            ).first
        }
        guard let row else { return nil }
        return AccessToken(
            familyID: try row.decode(UUID.self, at: 0), clientID: try row.decode(String.self, at: 1),
            userID: try row.decode(UUID?.self, at: 2), scopes: try PQTextArray.decode(row.decode(String.self, at: 3)),
            audiences: try PQTextArray.decode(row.decode(String.self, at: 4)), expiresAt: try row.decode(Date.self, at: 5))
    }

    /// The refresh token with this hash, spent or not.
    public func refreshToken(hash: String, realm: String) async throws -> RefreshToken? {
        let row = try await pool.query(
            "SELECT family_id, spent, expires_at FROM refresh_tokens WHERE token_hash = \(hash) AND realm_id = \(realm)"
        ).first
        guard let row else { return nil }
        return RefreshToken(familyID: try row.decode(UUID.self, at: 0), spent: try row.decode(Bool.self, at: 1), expiresAt: try row.decode(Date.self, at: 2))
    }
}

/// Parses PostgreSQL's text form of a one-dimensional text[] (`{a,"b c"}`).
enum PQTextArray {
    static func decode(_ text: String) throws -> [String] {
        var items: [String] = []
        var current = ""
        var quoted = false
        var escaped = false
        let body = text.dropFirst().dropLast()
        guard text.first == "{", text.last == "}" else { throw PQError(.decoding, message: "not an array: \(text.prefix(40))") }
        if body.isEmpty { return [] }
        for character in body {
            if escaped {
                current.append(character)
                escaped = false
            } else if character == "\\" && quoted {
                escaped = true
            } else if character == "\"" {
                quoted.toggle()
            } else if character == "," && !quoted {
                items.append(current)
                current = ""
            } else {
                current.append(character)
            }
        }
        items.append(current)
        return items
    }
}
