import Foundation
import ModgudDomain
import PQ

/// Finds a live account by its address without the directory holding the address: by the
/// address's blind index (`PersonalDataVault.blindIndex`), or by the legacy key of a row
/// projected from an event written before sealing began.
enum UserLookup {
    /// - Parameter including: statuses found besides the live ones (`deleted`: erasure).
    static func userID(realm: String, email: EmailAddress, index: String, pool: PQPool, including: [String] = []) async throws -> UUID? {
        try await pool.query(
            """
            SELECT user_id FROM users
            WHERE realm_id = \(realm) AND email_key IN (\(index), \("plain:" + email.value))
              AND (status NOT IN ('deleted', 'erased') OR status = ANY(\(including)))
            ORDER BY email_key = \(index) DESC, status = 'deleted' LIMIT 1
            """
        ).first?.decode(UUID.self, at: 0)
    }
}
