import Foundation
import PQ

/// The one home of `console_sessions` (issue 31): operator console sign-ins, by the SHA-256 of
/// the cookie's token. A session is alive while its row is fresh (idle and absolute limits),
/// its token family is not revoked and still carries the user's security stamp, and the user
/// is active with the console's role: one statement decides all of it.
enum ConsoleSessionsTable {
    struct Row: Sendable {
        var realm: String
        var userID: UUID
        var familyID: UUID
        var createdAt: Date
    }

    static func insert(hash: String, realm: String, userID: UUID, familyID: UUID, now: Date, pool: PQPool) async throws {
        _ = try await pool.query(
            """
            INSERT INTO console_sessions (session_hash, realm_id, user_id, family_id, created_at, last_seen_at)
            VALUES (\(hash), \(realm), \(userID), \(familyID), \(now), \(now))
            """)
    }

    /// The live session with this hash, touched (its idle clock restarts), or nil.
    static func touch(hash: String, role: String, now: Date, idle: TimeInterval, absolute: TimeInterval, pool: PQPool) async throws -> Row? {
        try await pool.query(
            """
            UPDATE console_sessions s SET last_seen_at = \(now)
            FROM token_families f, users u
            WHERE s.session_hash = \(hash) AND s.last_seen_at > \(now.addingTimeInterval(-idle))
              AND s.created_at > \(now.addingTimeInterval(-absolute))
              AND f.family_id = s.family_id AND f.revoked_reason IS NULL
              AND u.user_id = s.user_id AND u.realm_id = s.realm_id AND u.status = 'active'
              AND u.security_stamp = f.security_stamp AND \(role) = ANY(u.roles)
            RETURNING s.realm_id, s.user_id, s.family_id, s.created_at
            """
        ).first.map {
            Row(realm: try $0.decode(String.self, at: 0), userID: try $0.decode(UUID.self, at: 1), familyID: try $0.decode(UUID.self, at: 2),
                createdAt: try $0.decode(Date.self, at: 3))
        }
    }

    /// Removes a session; returns its family (to revoke), or nil when there was none.
    static func delete(hash: String, pool: PQPool) async throws -> (realm: String, familyID: UUID)? {
        try await pool.query("DELETE FROM console_sessions WHERE session_hash = \(hash) RETURNING realm_id, family_id").first.map {
            (try $0.decode(String.self, at: 0), try $0.decode(UUID.self, at: 1))
        }
    }

    /// Sessions past both limits, removed by the maintenance loop.
    static func prune(before: Date, pool: PQPool) async throws -> Int {
        try await pool.query("DELETE FROM console_sessions WHERE last_seen_at < \(before) RETURNING 1").rows.count
    }
}
