import Foundation
import PQ

/// The one home of `federated_identities`' SQL (migration 0026, issue 48): which user a
/// provider's account signs in, by the blind index of its subject.
enum FederatedIdentitiesTable {
    /// The link, for the transaction that makes it (its primary key refuses a second user for
    /// one provider account; its unique constraint a second account of one provider per user).
    static func insert(realm: String, provider: String, subjectIndex: String, userID: UUID, now: Date) -> PQQuery {
        """
        INSERT INTO federated_identities (realm_id, provider, subject_index, user_id, linked_at)
        VALUES (\(realm), \(provider), \(subjectIndex), \(userID), \(now))
        """
    }

    static func user(realm: String, provider: String, subjectIndex: String, pool: PQPool) async throws -> UUID? {
        try await pool.query(
            "SELECT user_id FROM federated_identities WHERE realm_id = \(realm) AND provider = \(provider) AND subject_index = \(subjectIndex)"
        ).first?.decode(UUID.self, at: 0)
    }

    /// The providers linked to a user, oldest first, with when.
    static func links(realm: String, userID: UUID, pool: PQPool) async throws -> [(provider: String, linkedAt: Date)] {
        try await pool.query(
            "SELECT provider, linked_at FROM federated_identities WHERE realm_id = \(realm) AND user_id = \(userID) ORDER BY linked_at, provider"
        ).rows.map { (try $0.decode(String.self, at: 0), try $0.decode(Date.self, at: 1)) }
    }

    static func delete(realm: String, userID: UUID, provider: String) -> PQQuery {
        "DELETE FROM federated_identities WHERE realm_id = \(realm) AND user_id = \(userID) AND provider = \(provider)"
    }

    /// Erasure: every link of the user.
    static func deleteAll(realm: String, userID: UUID) -> PQQuery {
        "DELETE FROM federated_identities WHERE realm_id = \(realm) AND user_id = \(userID)"
    }

    /// Whether `error` is the table refusing a link that exists (a race, or a second account of one provider).
    static func isTaken(_ error: any Error) -> Bool {
        guard let failure = error as? PQError else { return false }
        return failure.sqlState == "23505"
            && (failure.constraint == "federated_identities_pkey" || failure.constraint == "federated_identities_one_per_provider")
    }
}
