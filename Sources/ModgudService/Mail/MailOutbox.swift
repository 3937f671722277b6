import EventSourcing
import Foundation
import PQ
import SMTP

/// The mail outbox table (schema 0004): rows written in the transaction of the event that
/// issues a code or link, claimed and delivered by `MailDispatcher`. Messages are sealed
/// under the master key (additional data `outbox/<id>`), so the database never holds a live
/// code or link in plaintext.
public struct MailOutbox: Sendable {
    /// A claimed row, opened.
    public struct Item: Sendable {
        public var id: UUID
        public var realm: String
        public var message: MailMessage
        /// Failed attempts before this one.
        public var attempts: Int
    }

    public let pool: PQPool
    let secrets: ServerSecrets

    public init(pool: PQPool, secrets: ServerSecrets) {
        self.pool = pool
        self.secrets = secrets
    }

    /// The statement that enqueues `message`; run it with the event's append.
    public func enqueue(_ message: MailMessage, realm: String) throws -> PQQuery {
        let id = UUID()
        let sealed = try secrets.sealer.seal(Array(try EventJSON.encode(message)), realm: realm, kid: "outbox/\(id.uuidString.lowercased())")
        return """
            INSERT INTO mail_outbox (id, realm_id, recipient, sealed_message)
            VALUES (\(id), \(realm), \(message.to), \(PQBytes(sealed)))
            """
    }

    /// Claims up to `limit` due rows for `lease` seconds (other instances skip them meanwhile).
    public func claim(limit: Int, lease: TimeInterval) async throws -> [Item] {
        let rows = try await pool.query(
            """
            UPDATE mail_outbox SET next_attempt_at = now() + make_interval(secs => \(lease))
            WHERE id IN (
                SELECT id FROM mail_outbox WHERE status = 'pending' AND next_attempt_at <= now()
                ORDER BY next_attempt_at LIMIT \(limit) FOR UPDATE SKIP LOCKED)
            RETURNING id, realm_id, sealed_message, attempts
            """)
        return try rows.rows.map { row in
            let id = try row.decode(UUID.self, at: 0)
            let realm = try row.decode(String.self, at: 1)
            let sealed = try row.decode(PQBytes.self, at: 2)
            let opened = try secrets.sealer.open(sealed.bytes, realm: realm, kid: "outbox/\(id.uuidString.lowercased())")
            return Item(id: id, realm: realm, message: try EventJSON.decode(MailMessage.self, from: opened), attempts: try row.decode(Int.self, at: 3))
        }
    }

    /// Delivered: the row (and the secret in it) is gone.
    public func delivered(_ id: UUID) async throws {
        _ = try await pool.query("DELETE FROM mail_outbox WHERE id = \(id)")
    }

    /// Failed: due again after `retryAfter` seconds, or dead (kept for the operator) when `dead`.
    public func failed(_ id: UUID, error: String, retryAfter: TimeInterval, dead: Bool) async throws {
        _ = try await pool.query(
            """
            UPDATE mail_outbox SET attempts = attempts + 1, last_error = \(String(error.prefix(500))),
                next_attempt_at = now() + make_interval(secs => \(retryAfter)),
                status = CASE WHEN \(dead) THEN 'dead' ELSE 'pending' END
            WHERE id = \(id)
            """)
    }

    /// A row as operators see it (never the message: it holds a code or link).
    public struct Entry: Sendable {
        public var id: UUID
        public var realm: String
        public var recipient: String
        public var status: String
        public var attempts: Int
        public var lastError: String?
        public var createdAt: Date
    }

    /// The rows waiting or dead, oldest first.
    public func entries(limit: Int = 100) async throws -> [Entry] {
        try await pool.query(
            """
            SELECT id, realm_id, recipient, status, attempts, last_error, created_at FROM mail_outbox
            ORDER BY created_at LIMIT \(limit)
            """
        ).rows.map { row in
            Entry(
                id: try row.decode(UUID.self, at: 0), realm: try row.decode(String.self, at: 1), recipient: try row.decode(String.self, at: 2),
                status: try row.decode(String.self, at: 3), attempts: try row.decode(Int.self, at: 4), lastError: try row.decode(String?.self, at: 5),
                createdAt: try row.decode(Date.self, at: 6))
        }
    }

    /// Dead rows go back to pending, due now, with their attempts reset (after the operator
    /// fixed the SMTP settings, say). Returns how many.
    public func retryDead() async throws -> Int {
        try await pool.query(
            "UPDATE mail_outbox SET status = 'pending', attempts = 0, next_attempt_at = now() WHERE status = 'dead' RETURNING id"
        ).rows.count
    }

    /// Counts by status, for operators and tests.
    public func counts() async throws -> (pending: Int, dead: Int) {
        let row = try await pool.query(
            "SELECT count(*) FILTER (WHERE status = 'pending'), count(*) FILTER (WHERE status = 'dead') FROM mail_outbox"
        ).first
        return (try row?.decode(Int.self, at: 0) ?? 0, try row?.decode(Int.self, at: 1) ?? 0)
    }
}
