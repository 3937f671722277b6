import Foundation
import PQ

/// The one home of the `mail_outbox` table's SQL (docs/architecture.md, "House habits").
/// `MailOutbox` seals and opens what these statements store.
enum MailOutboxTable {
    /// A claimed row, still sealed.
    struct Claimed: Sendable {
        var id: UUID
        var realm: String
        var sealedMessage: [UInt8]
        var attempts: Int
        /// The person's subject; nil for rows queued before migration 0011.
        var subject: String?
    }

    /// The statement that queues a sealed message, run with the event's append.
    static func insert(id: UUID, realm: String, subject: String, sealedMessage: [UInt8]) -> PQQuery {
        """
        INSERT INTO mail_outbox (id, realm_id, subject, sealed_message)
        VALUES (\(id), \(realm), \(subject), \(PQBytes(sealedMessage)))
        """
    }

    /// Claims up to `limit` due rows for `lease` seconds (other instances skip them meanwhile).
    static func claim(limit: Int, lease: TimeInterval, pool: PQPool) async throws -> [Claimed] {
        try await pool.query(
            """
            UPDATE mail_outbox SET next_attempt_at = now() + make_interval(secs => \(lease))
            WHERE id IN (
                SELECT id FROM mail_outbox WHERE status = 'pending' AND next_attempt_at <= now()
                ORDER BY next_attempt_at LIMIT \(limit) FOR UPDATE SKIP LOCKED)
            RETURNING id, realm_id, sealed_message, attempts, subject
            """
        ).rows.map {
            Claimed(
                id: try $0.decode(UUID.self, at: 0), realm: try $0.decode(String.self, at: 1), sealedMessage: try $0.decode(PQBytes.self, at: 2).bytes,
                attempts: try $0.decode(Int.self, at: 3), subject: try $0.decode(String?.self, at: 4))
        }
    }

    static func delete(id: UUID, pool: PQPool) async throws {
        _ = try await pool.query("DELETE FROM mail_outbox WHERE id = \(id)")
    }

    /// Deletes a person's queued mail; returns how many rows went.
    static func delete(realm: String, subject: String, pool: PQPool) async throws -> Int {
        try await pool.query("DELETE FROM mail_outbox WHERE realm_id = \(realm) AND subject = \(subject) RETURNING id").rows.count
    }

    static func failed(id: UUID, error: String, retryAfter: TimeInterval, dead: Bool, pool: PQPool) async throws {
        _ = try await pool.query(
            """
            UPDATE mail_outbox SET attempts = attempts + 1, last_error = \(error),
                next_attempt_at = now() + make_interval(secs => \(retryAfter)),
                status = CASE WHEN \(dead) THEN 'dead' ELSE 'pending' END
            WHERE id = \(id)
            """)
    }

    /// The rows waiting or dead, oldest first, without their messages.
    static func entries(limit: Int, pool: PQPool) async throws -> [MailOutbox.Entry] {
        try await pool.query(
            """
            SELECT id, realm_id, subject, status, attempts, last_error, created_at FROM mail_outbox
            ORDER BY created_at LIMIT \(limit)
            """
        ).rows.map { row in
            MailOutbox.Entry(
                id: try row.decode(UUID.self, at: 0), realm: try row.decode(String.self, at: 1), subject: try row.decode(String?.self, at: 2),
                status: try row.decode(String.self, at: 3), attempts: try row.decode(Int.self, at: 4), lastError: try row.decode(String?.self, at: 5),
                createdAt: try row.decode(Date.self, at: 6))
        }
    }

    /// Dead rows back to pending, due now, attempts reset; returns how many.
    static func retryDead(pool: PQPool) async throws -> Int {
        try await pool.query(
            "UPDATE mail_outbox SET status = 'pending', attempts = 0, next_attempt_at = now() WHERE status = 'dead' RETURNING id"
        ).rows.count
    }

    static func counts(pool: PQPool) async throws -> (pending: Int, dead: Int) {
        let row = try await pool.query(
            "SELECT count(*) FILTER (WHERE status = 'pending'), count(*) FILTER (WHERE status = 'dead') FROM mail_outbox"
        ).first
        return (try row?.decode(Int.self, at: 0) ?? 0, try row?.decode(Int.self, at: 1) ?? 0)
    }
}
