import Foundation
import PQ

/// The one home of `authorization_codes`' SQL (migration 0021): codes the Authorization
/// Challenge Endpoint issued, each standing for a sealed token response.
enum AuthorizationCodesTable {
    struct Row: Sendable {
        var clientID: String
        var codeChallenge: String
        var jkt: String?
        var sealed: [UInt8]
        var expiresAt: Date
        /// Set when the code was redeemed before this call: a reuse.
        var redeemedBefore: Date?
    }

    static func insert(hash: String, realm: String, clientID: String, codeChallenge: String, jkt: String?, sealed: [UInt8], expiresAt: Date) -> PQQuery {
        """
        INSERT INTO authorization_codes (code_hash, realm_id, client_id, code_challenge, jkt, sealed, expires_at)
        VALUES (\(hash), \(realm), \(clientID), \(codeChallenge), \(jkt), \(PQBytes(sealed)), \(expiresAt))
        """
    }

    /// Takes a code, whatever becomes of the redemption (RFC 6749 section 4.1.2: used at most
    /// once): the first call marks it redeemed and gets `redeemedBefore` nil; every later one
    /// gets the first one's time (a reuse). The row lock orders two racing calls.
    static func take(hash: String, realm: String, now: Date, pool: PQPool) async throws -> Row? {
        try await pool.query(
            """
            WITH prior AS (
                SELECT redeemed_at FROM authorization_codes WHERE code_hash = \(hash) AND realm_id = \(realm) FOR UPDATE
            )
            UPDATE authorization_codes SET redeemed_at = coalesce(authorization_codes.redeemed_at, \(now)) FROM prior
            WHERE code_hash = \(hash) AND realm_id = \(realm)
            RETURNING client_id, code_challenge, jkt, sealed, expires_at, prior.redeemed_at
            """
        ).rows.first.map { row in
            Row(
                clientID: try row.decode(String.self, at: 0), codeChallenge: try row.decode(String.self, at: 1), jkt: try row.decode(String?.self, at: 2),
                sealed: try row.decode(PQBytes.self, at: 3).bytes, expiresAt: try row.decode(Date.self, at: 4),
                redeemedBefore: try row.decode(Date?.self, at: 5))
        }
    }

    /// Deletes codes an hour past their expiry (kept that long to recognise a reuse).
    static func prune(before cutoff: Date, pool: PQPool) async throws {
        _ = try await pool.query("DELETE FROM authorization_codes WHERE expires_at < \(cutoff.addingTimeInterval(-3600))")
    }
}
