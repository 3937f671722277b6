import Foundation
import PQ

/// The one home of the SQL of `subject_keys` (each person's sealed data key, with the blind
/// index of their address) and `erased_subjects` (the subjects whose key was shredded): the
/// vault, erasure, retention, the audit renderer and the legacy sealer all ask here
/// (docs/architecture.md, "House habits"). Shredding needs no master key, so every query is
/// static over a pool.
enum SubjectKeysTable {
    /// The statement that stores a fresh subject's key: run by the caller in the transaction
    /// of the first event it seals.
    static func insert(subject: String, realm: String, sealedKey: [UInt8], emailIndex: String?) -> PQQuery {
        """
        INSERT INTO subject_keys (subject, realm_id, sealed, email_index)
        VALUES (\(subject), \(realm), \(PQBytes(sealedKey)), \(emailIndex))
        """
    }

    /// The statement that fails its transaction with `PersonalDataVault.subjectKeyMissingState`
    /// when the subject's key is gone (an erasure that won a race with a registration).
    static func requireKey(subject: String) -> PQQuery {
        "SELECT modgud_require_subject_key(\(subject))"
    }

    /// A sealed key stored unless the subject was erased or already has one. Answers the key
    /// inserted, the key present, and whether the subject is erased.
    static func insertUnlessErased(subject: String, realm: String, sealedKey: [UInt8], pool: PQPool) async throws
        -> (inserted: [UInt8]?, present: [UInt8]?, erased: Bool)?
    {
        guard
            let row = try await pool.query(
                """
                WITH inserted AS (
                    INSERT INTO subject_keys (subject, realm_id, sealed)
                    SELECT \(subject), \(realm), \(PQBytes(sealedKey))
                    WHERE NOT EXISTS (SELECT 1 FROM erased_subjects WHERE subject = \(subject))
                    ON CONFLICT (subject) DO NOTHING RETURNING sealed)
                SELECT (SELECT sealed FROM inserted), (SELECT sealed FROM subject_keys WHERE subject = \(subject)),
                       EXISTS (SELECT 1 FROM erased_subjects WHERE subject = \(subject))
                """
            ).first
        else { return nil }
        return (try row.decode(PQBytes?.self, at: 0)?.bytes, try row.decode(PQBytes?.self, at: 1)?.bytes, try row.decode(Bool.self, at: 2))
    }

    /// A subject's sealed key, nil when it has none.
    static func sealedKey(subject: String, pool: PQPool) async throws -> [UInt8]? {
        try await pool.query("SELECT sealed FROM subject_keys WHERE subject = \(subject)").first?.decode(PQBytes.self, at: 0).bytes
    }

    /// The blind index kept beside a subject's key.
    static func emailIndex(subject: String, pool: PQPool) async throws -> String? {
        try await pool.query("SELECT email_index FROM subject_keys WHERE subject = \(subject)").first?.decode(String?.self, at: 0)
    }

    /// Sets the index of a key that has none (the legacy sealer, for users registered before sealing).
    static func setEmailIndexIfMissing(_ index: String, subject: String, pool: PQPool) async throws {
        _ = try await pool.query("UPDATE subject_keys SET email_index = \(index) WHERE subject = \(subject) AND email_index IS NULL")
    }

    /// An SQL expression for the users projection: the index beside the key of the user whose
    /// id is the statement's `$2` (kept here, as text the projection embeds).
    static let emailIndexOfUserParameter2 = "(SELECT email_index FROM subject_keys WHERE subject = 'user:' || $2::uuid::text)"

    /// An SQL expression: the sealed key of the user whose id is in `idColumn` (the refresh
    /// lookup's join, so the claims open without a round trip of their own).
    static func sealedKeyOfUserSQL(idColumn: String) -> String {
        "(SELECT sealed FROM subject_keys WHERE subject = 'user:' || \(idColumn)::text)"
    }

    /// Deletes a subject's key and marks it erased; true when a key was deleted.
    static func shred(subject: String, realm: String, pool: PQPool) async throws -> Bool {
        let row = try await pool.query(
            """
            WITH deleted AS (DELETE FROM subject_keys WHERE subject = \(subject) RETURNING 1),
                 marked AS (INSERT INTO erased_subjects (subject, realm_id) VALUES (\(subject), \(realm)) ON CONFLICT (subject) DO NOTHING RETURNING 1)
            SELECT (SELECT count(*) FROM deleted)::int8, (SELECT count(*) FROM marked)::int8
            """
        ).first
        return try (row?.decode(Int64.self, at: 0) ?? 0) > 0
    }

    /// Shreds every key of the realm carrying this blind index; returns their subjects.
    static func shred(emailIndex: String, realm: String, pool: PQPool) async throws -> [String] {
        try await pool.query(
            """
            WITH deleted AS (
                DELETE FROM subject_keys WHERE realm_id = \(realm) AND email_index = \(emailIndex) RETURNING subject),
            marked AS (
                INSERT INTO erased_subjects (subject, realm_id) SELECT subject, \(realm) FROM deleted ON CONFLICT (subject) DO NOTHING)
            SELECT subject FROM deleted ORDER BY subject
            """
        ).rows.map { try $0.decode(String.self, at: 0) }
    }

    /// Shreds the user keys made before `cutoff` that no user row has; returns their subjects.
    static func shredAbandoned(before cutoff: Date, pool: PQPool) async throws -> [String] {
        try await pool.query(
            """
            WITH gone AS (
                DELETE FROM subject_keys k
                WHERE k.subject LIKE 'user:%' AND k.created_at < \(cutoff)
                  AND NOT EXISTS (SELECT 1 FROM users u WHERE u.user_id = substr(k.subject, 6)::uuid)
                RETURNING subject, realm_id),
            marked AS (
                INSERT INTO erased_subjects (subject, realm_id) SELECT subject, realm_id FROM gone ON CONFLICT (subject) DO NOTHING)
            SELECT subject FROM gone
            """
        ).rows.map { try $0.decode(String.self, at: 0) }
    }

    /// The client-address subjects (`ip:<day>`) older than `boundary`, oldest first.
    static func addressSubjects(before boundary: String, pool: PQPool) async throws -> [String] {
        try await pool.query(
            "SELECT subject FROM subject_keys WHERE subject LIKE 'ip:%' AND subject < \(boundary) ORDER BY subject"
        ).rows.map { try $0.decode(String.self, at: 0) }
    }

    /// Which of `subjects` were erased.
    static func erased(among subjects: [String], pool: PQPool) async throws -> Set<String> {
        Set(try await pool.query("SELECT subject FROM erased_subjects WHERE subject = ANY(\(subjects))").rows.map { try $0.decode(String.self, at: 0) })
    }

    /// Keys and shredded keys, by kind: `user:` subjects and `ip:` days.
    static func counts(pool: PQPool) async throws -> (users: Int, erasedUsers: Int, addressDays: Int, expiredAddressDays: Int) {
        let row = try await pool.query(
            """
            SELECT (SELECT count(*) FROM subject_keys WHERE subject LIKE 'user:%'), (SELECT count(*) FROM erased_subjects WHERE subject LIKE 'user:%'),
                   (SELECT count(*) FROM subject_keys WHERE subject LIKE 'ip:%'), (SELECT count(*) FROM erased_subjects WHERE subject LIKE 'ip:%')
            """
        ).first
        return (
            try row?.decode(Int.self, at: 0) ?? 0, try row?.decode(Int.self, at: 1) ?? 0, try row?.decode(Int.self, at: 2) ?? 0,
            try row?.decode(Int.self, at: 3) ?? 0
        )
    }
}
