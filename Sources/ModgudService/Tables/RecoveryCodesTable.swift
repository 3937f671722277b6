import Foundation
import PQ

/// The `recovery_codes` table (migration 0023, issue 46): each code of a person's sets as its
/// slow hash, and when it was used. Which set is current is the user stream's to say.
enum RecoveryCodesTable {
    /// The SQLSTATE `modgud_spend_recovery_code` raises when no unused code of the set has
    /// that hash (the whole transaction fails with it).
    static let noSuchCodeState = "MGD02"

    /// A new set's rows (written before the event that makes it current: a failed append
    /// leaves rows of a set no stream names, which the next generation removes).
    static func insertSet(realm: String, userID: UUID, setID: UUID, salt: [UInt8], hashes: [String]) -> PQQuery {
        """
        INSERT INTO recovery_codes (realm_id, user_id, set_id, salt, code_hash)
        SELECT \(realm), \(userID), \(setID), \(PQBytes(salt)), hash FROM unnest(\(hashes)::text[]) AS hash
        """
    }

    /// The salt of a set (nil when it has no rows).
    static func salt(realm: String, userID: UUID, setID: UUID, pool: PQPool) async throws -> [UInt8]? {
        try await pool.query(
            "SELECT salt FROM recovery_codes WHERE realm_id = \(realm) AND user_id = \(userID) AND set_id = \(setID) LIMIT 1"
        ).rows.first.map { try $0.decode(PQBytes.self, at: 0).bytes }
    }

    /// Whether the set has an unused code with `hash` (a hint: the spend decides).
    static func isUnused(realm: String, userID: UUID, setID: UUID, hash: String, pool: PQPool) async throws -> Bool {
        try await !pool.query(
            """
            SELECT 1 FROM recovery_codes
            WHERE realm_id = \(realm) AND user_id = \(userID) AND set_id = \(setID) AND code_hash = \(hash) AND used_at IS NULL
            """
        ).rows.isEmpty
    }

    /// Spends the code with `hash` of the set, or fails the transaction (`noSuchCodeState`).
    static func spend(realm: String, userID: UUID, setID: UUID, hash: String, at time: Date) -> PQQuery {
        "SELECT modgud_spend_recovery_code(\(realm), \(userID), \(setID), \(hash), \(time))"
    }

    /// Removes every set of the person but `keep` (regeneration, revocation).
    static func removeSets(realm: String, userID: UUID, except keep: UUID?, pool: PQPool) async throws {
        _ = try await pool.query(
            """
            DELETE FROM recovery_codes WHERE realm_id = \(realm) AND user_id = \(userID)
              AND set_id IS DISTINCT FROM \(keep)
            """)
    }

    /// Erasure: every code of the person, in the erasure's own statements.
    static func removeAll(realm: String, userID: UUID) -> PQQuery {
        "DELETE FROM recovery_codes WHERE realm_id = \(realm) AND user_id = \(userID)"
    }
}
