import EventSourcing
import Foundation
import PQ
import ModgudDomain
import SMTP

/// The mail outbox table (schema 0004, 0011): rows written in the transaction of the event
/// that issues a code or link, claimed and delivered by `MailDispatcher`.
///
/// Nothing in a row is plaintext personal data or a live secret (issue 22). The message, the
/// recipient's address inside it, is sealed twice: under the data key of the person it is for
/// (`subject`, a user id: erasure shreds queued mail with everything else), then under the
/// master key (additional data `outbox/<id>`). Rows queued before migration 0011 have no
/// subject and only the master-key layer.
public struct MailOutbox: Sendable {
    /// A claimed row, opened.
    public struct Item: Sendable {
        public var id: UUID
        public var realm: String
        /// nil when the person was erased after the mail was queued: it is dropped, not sent.
        public var message: MailMessage?
        /// Failed attempts before this one.
        public var attempts: Int
    }

    /// Whose data key seals a message.
    public enum Sealing: Sendable {
        /// A subject with a key (a user): the vault seals.
        case subject(String)
        /// A key made in this transaction (a pending registration), written with it.
        case newSubject(NewSubjectKey)
    }

    public let pool: PQPool
    let secrets: ServerSecrets
    let vault: PersonalDataVault?

    /// - Parameter vault: the personal-data keys; needed to enqueue and to claim (listing,
    ///   counting and retrying dead rows work without it).
    public init(pool: PQPool, secrets: ServerSecrets, vault: PersonalDataVault?) {
        self.pool = pool
        self.secrets = secrets
        self.vault = vault
    }

    /// The statement that enqueues `message` for the person `sealing` names; run it with the
    /// event's append.
    /// - Throws: `PersonalDataVault.SubjectErased` when the person was erased.
    public func enqueue(_ message: MailMessage, realm: String, sealing: Sealing) async throws -> PQQuery {
        let id = UUID()
        let json = String(decoding: try EventJSON.encode(message), as: UTF8.self)
        let inner: SealedText
        let subject: String
        switch sealing {
        case .subject(let existing):
            guard let vault else { throw MasterKeyMissing() }
            subject = existing
            inner = try await vault.seal(json, subject: existing, realm: realm)
        case .newSubject(let key):
            subject = key.subject
            inner = try key.seal(json)
        }
        let sealed = try secrets.sealer.seal(Array(inner.stored.utf8), realm: realm, kid: Self.kid(id))
        return """
            INSERT INTO mail_outbox (id, realm_id, subject, sealed_message)
            VALUES (\(id), \(realm), \(subject), \(PQBytes(sealed)))
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
            RETURNING id, realm_id, sealed_message, attempts, subject
            """)
        var items: [Item] = []
        for row in rows.rows {
            let id = try row.decode(UUID.self, at: 0)
            let realm = try row.decode(String.self, at: 1)
            let opened = try secrets.sealer.open(try row.decode(PQBytes.self, at: 2).bytes, realm: realm, kid: Self.kid(id))
            var json: [UInt8]? = opened
            if try row.decode(String?.self, at: 4) != nil {
                // Sealed under the person's key too: nil once that key was shredded.
                guard let vault else { throw MasterKeyMissing() }
                json = nil
                if let inner = SealedText(stored: String(decoding: opened, as: UTF8.self)), let text = try await vault.open(inner) {
                    json = Array(text.utf8)
                }
            }
            items.append(
                Item(id: id, realm: realm, message: try json.map { try EventJSON.decode(MailMessage.self, from: $0) }, attempts: try row.decode(Int.self, at: 3)))
        }
        return items
    }

    static func kid(_ id: UUID) -> String { "outbox/\(id.uuidString.lowercased())" }

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

    /// A row as operators see it: never the message (a code or link) nor the address, only
    /// whose mail it is.
    public struct Entry: Sendable {
        public var id: UUID
        public var realm: String
        /// The person's subject (`user:<id>`); nil for rows queued before migration 0011.
        public var subject: String?
        public var status: String
        public var attempts: Int
        public var lastError: String?
        public var createdAt: Date
    }

    /// The rows waiting or dead, oldest first.
    public func entries(limit: Int = 100) async throws -> [Entry] {
        try await pool.query(
            """
            SELECT id, realm_id, subject, status, attempts, last_error, created_at FROM mail_outbox
            ORDER BY created_at LIMIT \(limit)
            """
        ).rows.map { row in
            Entry(
                id: try row.decode(UUID.self, at: 0), realm: try row.decode(String.self, at: 1), subject: try row.decode(String?.self, at: 2),
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
