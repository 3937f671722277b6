import Foundation
import PQ

/// The one home of `authorization_sessions`' SQL (migration 0021): the Authorization Challenge
/// Endpoint's `auth_session`s, each found by its token's hash, its state sealed by the token.
enum AuthorizationSessionsTable {
    struct Row: Sendable {
        var clientID: String
        var jkt: String?
        var sealed: [UInt8]
        var expiresAt: Date
    }

    static func insert(hash: String, realm: String, clientID: String, jkt: String?, sealed: [UInt8], expiresAt: Date) -> PQQuery {
        """
        INSERT INTO authorization_sessions (session_hash, realm_id, client_id, jkt, sealed, expires_at)
        VALUES (\(hash), \(realm), \(clientID), \(jkt), \(PQBytes(sealed)), \(expiresAt))
        """
    }

    /// A live session of the realm, or nil.
    static func find(hash: String, realm: String, now: Date, pool: PQPool) async throws -> Row? {
        try await pool.query(
            """
            SELECT client_id, jkt, sealed, expires_at FROM authorization_sessions
            WHERE session_hash = \(hash) AND realm_id = \(realm) AND expires_at > \(now)
            """
        ).rows.first.map(row)
    }

    /// Replaces a session's state when it moves on a step (the same token; the same expiry).
    static func update(hash: String, realm: String, sealed: [UInt8], pool: PQPool) async throws {
        _ = try await pool.query("UPDATE authorization_sessions SET sealed = \(PQBytes(sealed)) WHERE session_hash = \(hash) AND realm_id = \(realm)")
    }

    /// Ends a session, answering whether this call ended it: of two racing final steps, the
    /// database lets exactly one through.
    static func end(hash: String, realm: String) -> PQQuery {
        "DELETE FROM authorization_sessions WHERE session_hash = \(hash) AND realm_id = \(realm) RETURNING 1"
    }

    static func prune(before cutoff: Date, pool: PQPool) async throws {
        _ = try await pool.query("DELETE FROM authorization_sessions WHERE expires_at < \(cutoff)")
    }

    private static func row(_ row: PQRow) throws -> Row {
        Row(
            clientID: try row.decode(String.self, at: 0), jkt: try row.decode(String?.self, at: 1), sealed: try row.decode(PQBytes.self, at: 2).bytes,
            expiresAt: try row.decode(Date.self, at: 3))
    }
}
