import EventSourcing
import Foundation
import PQ
import ModgudDomain
import SMTP

/// The mail outbox (schema 0004, 0011; its SQL in `MailOutboxTable`): rows written in the transaction of the event
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

    let pool: PQPool
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
        return MailOutboxTable.insert(id: id, realm: realm, subject: subject, sealedMessage: sealed)
    }

    /// Claims up to `limit` due rows for `lease` seconds (other instances skip them meanwhile).
    public func claim(limit: Int, lease: TimeInterval) async throws -> [Item] {
        let rows = try await MailOutboxTable.claim(limit: limit, lease: lease, pool: pool)
        var items: [Item] = []
        for row in rows {
            let id = row.id
            let realm = row.realm
            let opened = try secrets.sealer.open(row.sealedMessage, realm: realm, kid: Self.kid(id))
            var json: [UInt8]? = opened
            if row.subject != nil {
                // Sealed under the person's key too: nil once that key was shredded.
                guard let vault else { throw MasterKeyMissing() }
                json = nil
                if let inner = SealedText(stored: String(decoding: opened, as: UTF8.self)), let text = try await vault.open(inner) {
                    json = Array(text.utf8)
                }
            }
            items.append(
                Item(id: id, realm: realm, message: try json.map { try EventJSON.decode(MailMessage.self, from: $0) }, attempts: row.attempts))
        }
        return items
    }

    static func kid(_ id: UUID) -> String { "outbox/\(id.uuidString.lowercased())" }

    /// Delivered: the row (and the secret in it) is gone.
    public func delivered(_ id: UUID) async throws {
        try await MailOutboxTable.delete(id: id, pool: pool)
    }

    /// Failed: due again after `retryAfter` seconds, or dead (kept for the operator) when `dead`.
    public func failed(_ id: UUID, error: String, retryAfter: TimeInterval, dead: Bool) async throws {
        try await MailOutboxTable.failed(id: id, error: String(error.prefix(500)), retryAfter: retryAfter, dead: dead, pool: pool)
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
        try await MailOutboxTable.entries(limit: limit, pool: pool)
    }

    /// Dead rows go back to pending, due now, with their attempts reset (after the operator
    /// fixed the SMTP settings, say). Returns how many.
    public func retryDead() async throws -> Int {
        try await MailOutboxTable.retryDead(pool: pool)
    }

    /// Counts by status, for operators and tests.
    public func counts() async throws -> (pending: Int, dead: Int) {
        try await MailOutboxTable.counts(pool: pool)
    }
}
